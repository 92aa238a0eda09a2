//! What a launch does while its kernel runs, the same on the simulator as on the GPU: `launch`
//! returns before the kernel has run, the future is woken when it is done (without blocking the
//! executor's thread), `cancel()` and dropping stop the kernel, host operations on buffers wait
//! for the work submitted before them (also for a launch leaked with `mem::forget`), streams run
//! in order and events order them, and the watchdog stops a role that spins while another waits.
//! On the simulator a launch also shows its progress, and a grid of 2^31 - 1 blocks is cancelled
//! within a second.

#[allow(dead_code)]
#[path = "common/long.rs"]
mod long;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use gpu_async::{BackendKind, Device, Error, Grid, Result, Schedule};
use gpu_async_testing::{needs_gpu, needs_ptxas, on_each_device};
use long::long as k;

/// The tests of this file run one at a time: they time kernels and cancellations, which other
/// tests running beside them on the same cores would stretch.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Rounds of `count` that take about `ms` milliseconds on `dev` (measured, so that the tests hold
/// on slow and fast machines alike).
fn rounds_for(dev: &Device, ms: u64) -> Result<u64> {
    let mut out = dev.alloc::<u32>(1)?;
    let probe = 1_000_000;
    // The faster of two runs: the first also starts the stream's worker.
    let mut took = f64::INFINITY;
    for _ in 0..2 {
        let start = Instant::now();
        k::count::launch(dev, Grid::blocks(1), (probe, &mut out)).wait()?;
        took = took.min(start.elapsed().as_secs_f64().max(1e-4));
    }
    Ok(((probe as f64) * (ms as f64 / 1e3) / took).max(1.0) as u64)
}

/// The line of `common/long.rs` that `location` (`file:line:column`) points at.
fn line_at(location: &str) -> &'static str {
    let line: usize = location
        .split(':')
        .nth(1)
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    include_str!("common/long.rs")
        .lines()
        .nth(line.saturating_sub(1))
        .unwrap_or("")
}

fn expect_cancelled(outcome: Result<()>) {
    match outcome {
        Err(Error::Cancelled { kernel }) => assert!(kernel.ends_with("long::count"), "{kernel}"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
}

#[on_each_device]
fn cancel_then_wait_gives_cancelled(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let mut out = dev.alloc::<u32>(64)?;
    // Runs until stopped.
    let launch = k::count::launch(&dev, Grid::blocks(1), (u64::MAX, &mut out));
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        !launch.is_complete(),
        "{dev}: the launch returned before its kernel ran"
    );
    match dev.kind() {
        BackendKind::Simulator => assert!(launch.progress().is_some()),
        BackendKind::Cuda => assert!(launch.progress().is_none()),
    }
    let start = Instant::now();
    launch.cancel();
    expect_cancelled(launch.wait());
    let took = start.elapsed();
    eprintln!("{dev}: cancel to Cancelled in {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // It stopped before its end, where it would have written.
    assert!(out.download()?.iter().all(|&v| v == 0));
    let rounds = 1000;
    k::count::launch(&dev, Grid::blocks(1), (rounds, &mut out)).wait()?;
    assert_eq!(out.download()?, vec![long::count_value(rounds); 64]);
    Ok(())
}

#[on_each_device]
fn dropping_a_running_launch_cancels_it_and_returns_once_it_stopped(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let mut out = dev.alloc::<u32>(64)?;
    let launch = k::count::launch(&dev, Grid::blocks(1), (u64::MAX, &mut out));
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    drop(launch);
    let took = start.elapsed();
    eprintln!("{dev}: dropping the running launch took {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(out.download()?.iter().all(|&v| v == 0));
    // The stream goes on.
    k::count::launch(&dev, Grid::blocks(1), (3, &mut out)).wait()?;
    assert_eq!(out.download()?, vec![long::count_value(3); 64]);
    Ok(())
}

/// A launch cancelled before it starts reports `Cancelled`. On the simulator it never runs; on
/// the GPU it stops at its first check of the abort word, which a kernel without waits and with
/// fewer than 16 loop iterations never reaches, so what it wrote is unspecified there (as
/// `Error::Cancelled` says).
#[on_each_device]
fn a_cancelled_launch_queued_behind_another_does_not_run(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 100)?;
    let (mut first_out, mut queued_out) = (dev.alloc::<u32>(1)?, dev.alloc::<u32>(1)?);
    let first = k::count::launch(&dev, Grid::blocks(1), (rounds, &mut first_out));
    let queued = k::count::launch(&dev, Grid::blocks(4), (1, &mut queued_out));
    queued.cancel();
    match queued.wait() {
        Err(Error::Cancelled { .. }) => {}
        other => panic!("expected Cancelled, got {other:?}"),
    }
    first.wait()?;
    assert_eq!(first_out.download()?, [long::count_value(rounds)]);
    if dev.kind() == gpu_async::BackendKind::Simulator {
        assert_eq!(queued_out.download()?, [0]);
    }
    Ok(())
}

#[on_each_device]
fn a_forgotten_launch_finishes_before_the_next_download(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 100)?;
    let n = 1000;
    let mut out = dev.alloc::<u32>(n)?;
    let x = dev.upload(&vec![5u32; n])?;
    let mut y = dev.alloc::<u32>(n)?;
    let start = Instant::now();
    // Leaked: nothing awaits it, nothing cancels it.
    std::mem::forget(k::count::launch(&dev, Grid::blocks(2), (rounds, &mut out)));
    let stream = dev.new_stream()?;
    std::mem::forget(k::affine::launch_on(&stream, Grid::blocks(1), (&x, &mut y)));
    let submitted = start.elapsed();
    assert_eq!(out.download()?, vec![long::count_value(rounds); n]);
    assert_eq!(y.download()?, vec![11; n]);
    eprintln!(
        "{dev}: two launches forgotten in {submitted:?}, their outputs downloaded after {:?}",
        start.elapsed()
    );
    // Dropping the buffers and the stream of a forgotten launch is fine too.
    std::mem::forget(k::count::launch(&dev, Grid::blocks(1), (rounds, &mut out)));
    drop(out);
    drop(stream);
    dev.synchronize()
}

/// Two launches on two streams awaited together on a current-thread runtime, whose timer keeps
/// ticking while they run: the executor's thread is never blocked by a kernel.
#[on_each_device]
fn two_launches_awaited_together_leave_a_current_thread_runtime_free(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 200)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let (mut a, mut b) = (dev.alloc::<u32>(8)?, dev.alloc::<u32>(8)?);
    let done = Cell::new(0);
    let ticks = Cell::new(0u32);
    let start = Instant::now();
    let (first, second, ()) = runtime.block_on(async {
        let first = async {
            let outcome = k::count::launch_on(&s1, Grid::blocks(1), (rounds, &mut a)).await;
            done.set(done.get() + 1);
            outcome
        };
        let second = async {
            let outcome = k::count::launch_on(&s2, Grid::blocks(1), (rounds, &mut b)).await;
            done.set(done.get() + 1);
            outcome
        };
        let ticker = async {
            while done.get() < 2 {
                tokio::time::sleep(Duration::from_millis(2)).await;
                ticks.set(ticks.get() + 1);
            }
        };
        tokio::join!(first, second, ticker)
    });
    first?;
    second?;
    eprintln!(
        "{dev}: {} timer ticks while two launches ran for {:?}",
        ticks.get(),
        start.elapsed()
    );
    // A thread blocked by the kernels would tick once or twice.
    assert!(ticks.get() >= 10, "the timer ticked {} times", ticks.get());
    assert_eq!(a.download()?, vec![long::count_value(rounds); 8]);
    assert_eq!(b.download()?, vec![long::count_value(rounds); 8]);
    Ok(())
}

/// Pending until `done` reaches `until`; each poll counts as a tick and asks a helper thread to
/// wake it 2 ms later (a timer for executors without one).
struct Ticks<'a> {
    done: &'a Cell<u32>,
    until: u32,
    ticks: u32,
}

impl Future for Ticks<'_> {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.done.get() >= self.until {
            return Poll::Ready(self.ticks);
        }
        self.ticks += 1;
        let waker = cx.waker().clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2));
            waker.wake();
        });
        Poll::Pending
    }
}

/// The same under `gpu_async::block_on`: its thread sleeps between wake-ups, and the launches'
/// futures are woken by their jobs.
#[on_each_device]
fn two_launches_awaited_together_under_block_on_leave_its_thread_free(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 200)?;
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let (mut a, mut b) = (dev.alloc::<u32>(8)?, dev.alloc::<u32>(8)?);
    let done = Cell::new(0);
    let start = Instant::now();
    let (first, second, ticks) = gpu_async::block_on(async {
        let first = async {
            let outcome = k::count::launch_on(&s1, Grid::blocks(1), (rounds, &mut a)).await;
            done.set(done.get() + 1);
            outcome
        };
        let second = async {
            let outcome = k::count::launch_on(&s2, Grid::blocks(1), (rounds, &mut b)).await;
            done.set(done.get() + 1);
            outcome
        };
        let ticker = Ticks {
            done: &done,
            until: 2,
            ticks: 0,
        };
        tokio::join!(first, second, ticker)
    });
    first?;
    second?;
    eprintln!(
        "{dev}: {ticks} ticks under block_on while two launches ran for {:?}",
        start.elapsed()
    );
    // A thread blocked by the kernels would poll it once or twice.
    assert!(ticks >= 10, "the ticker was polled {ticks} times");
    assert_eq!(a.download()?, vec![long::count_value(rounds); 8]);
    assert_eq!(b.download()?, vec![long::count_value(rounds); 8]);
    Ok(())
}

#[on_each_device]
fn a_launch_that_loses_a_select_is_cancelled(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let mut out = dev.alloc::<u32>(16)?;
    let start = Instant::now();
    let finished = runtime.block_on(async {
        tokio::select! {
            r = k::count::launch(&dev, Grid::blocks(1), (u64::MAX, &mut out)) => Some(r),
            _ = tokio::time::sleep(Duration::from_millis(10)) => None,
        }
    });
    let took = start.elapsed();
    eprintln!("{dev}: the endless launch lost to a 10 ms timer; done after {took:?}");
    assert!(finished.is_none());
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(out.download()?.iter().all(|&v| v == 0));
    Ok(())
}

/// The borrows of a launch keep its buffers from other uses while it is alive; once it is leaked,
/// a use on another stream still comes after it.
#[on_each_device]
fn a_buffer_written_on_one_stream_is_read_in_order_on_another(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 100)?;
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let mut x = dev.alloc::<u32>(256)?;
    let mut y = dev.alloc::<u32>(256)?;
    std::mem::forget(k::count::launch_on(&s1, Grid::blocks(1), (rounds, &mut x)));
    // Launched on another stream, and short: it still reads what the first launch writes.
    k::affine::launch_on(&s2, Grid::blocks(1), (&x, &mut y)).wait()?;
    let v = long::count_value(rounds);
    assert_eq!(y.download()?, vec![v.wrapping_mul(2).wrapping_add(1); 256]);
    // A copy on the second stream is ordered the same way.
    let mut z = dev.alloc::<u32>(256)?;
    std::mem::forget(k::count::launch_on(
        &s1,
        Grid::blocks(1),
        (rounds / 2, &mut x),
    ));
    z.copy_from_buffer_on(&x, &s2)?;
    assert_eq!(z.download()?, vec![long::count_value(rounds / 2); 256]);
    dev.synchronize()
}

#[on_each_device]
fn an_event_orders_launches_across_streams(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 100)?;
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let (mut a, mut b) = (dev.alloc::<u32>(1)?, dev.alloc::<u32>(1)?);
    let first = k::count::launch_on(&s1, Grid::blocks(1), (rounds, &mut a));
    let event = s1.record_event()?;
    s2.wait_event(&event)?;
    let second = k::count::launch_on(&s2, Grid::blocks(1), (1, &mut b));
    second.wait()?;
    assert!(
        first.is_complete(),
        "{dev}: the event did not order the streams"
    );
    first.wait()?;
    // The event's time covers the first launch.
    let start = s2.record_event()?;
    let end = {
        let launch = k::count::launch_on(&s2, Grid::blocks(1), (rounds, &mut b));
        let end = s2.record_event()?;
        launch.wait()?;
        end
    };
    let ms = start.elapsed_ms(&end)?;
    assert!(
        ms > 10.0,
        "{dev}: the launch took {ms} ms between its events"
    );
    Ok(())
}

#[test]
fn streams_without_an_event_run_at_the_same_time_on_the_simulator() -> Result<()> {
    let _serial = one_at_a_time();
    let dev = Device::simulator();
    let rounds = rounds_for(&dev, 200)?;
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let (mut a, mut b) = (dev.alloc::<u32>(1)?, dev.alloc::<u32>(1)?);
    let first = k::count::launch_on(&s1, Grid::blocks(1), (rounds, &mut a));
    let second = k::count::launch_on(&s2, Grid::blocks(1), (1, &mut b));
    second.wait()?;
    assert!(!first.is_complete());
    first.wait()
}

#[on_each_device]
fn synchronize_waits_for_launches_never_awaited(dev: Device) -> Result<()> {
    let _serial = one_at_a_time();
    let rounds = rounds_for(&dev, 50)?;
    let stream = dev.new_stream()?;
    let (mut a, mut b) = (dev.alloc::<u32>(1)?, dev.alloc::<u32>(1)?);
    let on_default = k::count::launch(&dev, Grid::blocks(1), (rounds, &mut a));
    let on_stream = k::count::launch_on(&stream, Grid::blocks(1), (rounds, &mut b));
    stream.synchronize()?;
    assert!(on_stream.is_complete());
    dev.synchronize()?;
    assert!(on_default.is_complete());
    on_default.wait()?;
    on_stream.wait()
}

#[test]
fn a_huge_grid_shows_progress_and_is_cancelled_within_a_second() -> Result<()> {
    let _serial = one_at_a_time();
    let dev = Device::simulator();
    let mut out = dev.alloc::<u32>(1)?;
    let blocks = i32::MAX as u32;
    let launch = k::count::launch(&dev, Grid::blocks(blocks), (0, &mut out));
    let progress = launch
        .progress()
        .expect("a simulator launch shows its progress");
    assert_eq!(progress.blocks, blocks);
    let start = Instant::now();
    let mut seen = progress;
    while seen.blocks_done < 1000 {
        assert!(start.elapsed() < Duration::from_secs(30), "stuck at {seen}");
        std::thread::sleep(Duration::from_millis(1));
        seen = launch.progress().unwrap_or(seen);
    }
    std::thread::sleep(Duration::from_millis(10));
    let later = launch.progress().unwrap_or(seen);
    assert!(later.blocks_done > seen.blocks_done, "{seen} then {later}");
    eprintln!("{later} after {:?}", start.elapsed());
    assert!(!launch.is_complete());
    let cancelled = Instant::now();
    launch.cancel();
    let stopped_at = {
        expect_cancelled(launch.wait());
        cancelled.elapsed()
    };
    assert!(stopped_at < Duration::from_secs(1), "{stopped_at:?}");
    Ok(())
}

#[test]
fn a_role_that_spins_while_another_waits_is_stopped_by_the_watchdog_on_the_simulator() -> Result<()>
{
    let _serial = one_at_a_time();
    // The fixed schedule steps `waiter` first, so that it waits when `spinner` starts to spin.
    let dev = Device::simulator_with(Schedule::Fixed);
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let stop = dev.alloc::<u32>(1)?;
    let mut out = dev.alloc::<u32>(32)?;
    let start = Instant::now();
    let err = k::spin::launch(&dev, Grid::blocks(3), (&stop, &mut out))
        .wait()
        .expect_err("the spin never ends");
    let took = start.elapsed();
    eprintln!("{err} (after {took:?})");
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(5));
    let Error::Deadlock {
        kernel,
        block,
        waits,
        schedule,
    } = &err
    else {
        panic!("expected the watchdog's Deadlock, got {err:?}");
    };
    assert!(kernel.ends_with("long::spin"), "{kernel}");
    assert_eq!(*block, 0);
    assert_eq!(*schedule, Some(Schedule::Fixed));
    assert_eq!(waits.len(), 2);
    assert_eq!(
        (waits[1].role.as_str(), waits[1].warps.clone()),
        ("spinner", 1..2)
    );
    assert_eq!(
        waits[1].waiting_on,
        "was stopped by the watchdog after 200ms in a loop that does not await"
    );
    assert!(
        line_at(&waits[1].location).contains("while seen == 0"),
        "{}",
        waits[1].location
    );
    assert_eq!(waits[0].role, "waiter");
    assert!(
        waits[0]
            .waiting_on
            .starts_with("waits for a full slot in `recv()` on channel"),
        "{}",
        waits[0].waiting_on
    );
    assert!(line_at(&waits[0].location).contains("rx.recv().await"));
    let message = err.to_string();
    assert!(
        message.contains("role `spinner` (warps 1..2) was stopped by the watchdog after 200ms"),
        "{message}"
    );
    // Without the watchdog the launch runs until cancelled.
    dev.set_watchdog(None);
    let launch = k::spin::launch(&dev, Grid::blocks(1), (&stop, &mut out));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!launch.is_complete());
    launch.cancel();
    match launch.wait() {
        Err(Error::Cancelled { .. }) => Ok(()),
        other => panic!("expected Cancelled, got {other:?}"),
    }
}

#[needs_gpu]
fn a_role_that_spins_while_another_waits_is_stopped_by_the_watchdog_on_the_gpu() -> Result<()> {
    let _serial = one_at_a_time();
    let dev = Device::cuda(0)?;
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let stop = dev.alloc::<u32>(1)?;
    let mut out = dev.alloc::<u32>(32)?;
    let err = k::spin::launch(&dev, Grid::blocks(3), (&stop, &mut out))
        .wait()
        .expect_err("the spin never ends");
    eprintln!("{err}");
    let Error::Deadlock { waits, .. } = &err else {
        panic!("expected the watchdog's Deadlock, got {err:?}");
    };
    // The GPU's watchdog bounds waits: it stops the role that waits for the spinning one.
    assert_eq!(waits[0].role, "waiter");
    assert!(waits[0].waiting_on.contains("watchdog"), "{err}");
    assert!(
        line_at(&waits[0].location).contains("rx.recv().await"),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_kernel_whose_one_role_runs_long_is_not_stopped_by_the_watchdog() -> Result<()> {
    let _serial = one_at_a_time();
    let dev = Device::simulator();
    let rounds = rounds_for(&dev, 200)?;
    dev.set_watchdog(Some(Duration::from_millis(20)));
    let mut out = dev.alloc::<u32>(4)?;
    k::count::launch(&dev, Grid::blocks(1), (rounds, &mut out)).wait()?;
    assert_eq!(out.download()?, vec![long::count_value(rounds); 4]);
    Ok(())
}

#[needs_ptxas]
fn the_kernels_assemble() {
    let _serial = one_at_a_time();
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    for (name, ptx) in [
        ("count", k::count::PTX),
        ("affine", k::affine::PTX),
        ("spin", k::spin::PTX),
    ] {
        if let Err(e) = gpu_async_compiler::ptxas::assemble(&ptxas, name, ptx) {
            panic!("ptxas rejected `{name}`: {e}");
        }
    }
}
