//! Buffers stay valid whatever happens to the launch that uses them, on the GPU: a long launch
//! (a hand-written PTX kernel that spins ~20 ms on `%globaltimer`, polling its stream's abort
//! word, then writes its output) whose future is dropped early, leaked with `mem::forget`, or
//! owned by a thread that panics; and `cancel()`, with its latency. In each case no CUDA error
//! follows, buffers allocated afterwards hold what was written to them, and the next launch
//! works. Needs a GPU.
//!
//! Run under `compute-sanitizer --tool memcheck --leak-check full` too: no access may touch
//! freed memory.

#[allow(dead_code)]
#[path = "common/host_kernels.rs"]
mod host_kernels;

#[path = "common/devices.rs"]
mod devices;

use std::future::Future;
use std::time::{Duration, Instant};

use gpu_async::{block_on, Device, Error, Result, Stream};
use gpu_async_testing::needs_gpu;
use host_kernels::{affine, spin_write};

/// The spin of a long launch.
const SPIN_NS: usize = 20_000_000;
/// Elements of a long launch's output: 4 MiB.
const N: usize = 1 << 20;
const BLOCKS: u32 = 132;

/// The tests of this file run one at a time. Measured on an H200: a cancel issued while other
/// threads of the process were starting up (creating devices, loading modules) sometimes took
/// effect only when the running kernel ended; one at a time, every cancel landed in well under a
/// millisecond.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The GPU, created once this test's turn has come.
fn gpu() -> (Device, std::sync::MutexGuard<'static, ()>) {
    let guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (devices::gpu(), guard)
}

/// The device is healthy: no error is pending, buffers allocated now hold what is written to
/// them (also after the GPU had time to write to memory it should not), and launches work.
fn check_healthy(device: &Device, stream: &Stream) -> Result<()> {
    device.synchronize()?;
    let data: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let buffers: Vec<_> = (0..4)
        .map(|_| device.upload(&data))
        .collect::<Result<_>>()?;
    // Long enough for a kernel that outlived its buffers to write over these.
    std::thread::sleep(Duration::from_millis(40));
    device.synchronize()?;
    for b in &buffers {
        assert!(b.download()? == data, "a new buffer was overwritten");
    }
    let mut out = device.alloc::<u32>(N)?;
    block_on(spin_write(stream, BLOCKS, &mut out, 0, 7))?;
    assert!(out.download()?.iter().all(|&v| v == 7));
    let x = device.upload(&[1u32, 2, 3])?;
    let mut y = device.alloc::<u32>(3)?;
    block_on(affine(stream, &x, &mut y))?;
    assert_eq!(y.download()?, [3, 5, 7]);
    device.synchronize()
}

/// The default stream and a new one.
fn streams(device: &Device) -> Result<[(&'static str, Stream); 2]> {
    Ok([
        ("default stream", device.default_stream()),
        ("new stream", device.new_stream()?),
    ])
}

#[needs_gpu]
fn a_launch_dropped_early_is_cancelled_and_waited_for() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    for (name, stream) in streams(&device)? {
        let mut out = device.alloc::<u32>(N)?;
        let launch = spin_write(&stream, BLOCKS, &mut out, SPIN_NS, 1);
        std::thread::sleep(Duration::from_millis(2));
        assert!(!launch.is_complete());
        let start = Instant::now();
        drop(launch);
        let took = start.elapsed();
        eprintln!("{name}: dropping the running launch took {took:?}");
        // Bounds on times are loose (the tests also run under compute-sanitizer); that the
        // kernel was stopped shows in its output: it was cancelled before it wrote anything.
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert!(out.download()?.iter().all(|&v| v == 0));
        drop(out);
        check_healthy(&device, &stream)?;
    }
    Ok(())
}

#[needs_gpu]
fn a_forgotten_launch_keeps_its_buffers_until_it_is_done() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    for (name, stream) in streams(&device)? {
        let mut out = device.alloc::<u32>(N)?;
        let x = device.upload(&vec![5u32; N])?;
        let mut y = device.alloc::<u32>(N)?;
        let start = Instant::now();
        // Leaked: nothing waits for it, nothing cancels it. It writes 0xDEAD over all of `out`
        // after 20 ms.
        std::mem::forget(spin_write(&stream, BLOCKS, &mut out, SPIN_NS, 0xDEAD));
        // Queued behind it on the same stream, reading `x` and writing `y`.
        std::mem::forget(affine(&stream, &x, &mut y));
        drop(out);
        drop(x);
        drop(y);
        eprintln!(
            "{name}: forgot two launches and dropped their buffers in {:?}",
            start.elapsed()
        );
        check_healthy(&device, &stream)?;
        eprintln!("{name}: healthy after {:?}", start.elapsed());
    }
    Ok(())
}

#[needs_gpu]
fn a_launch_owned_by_a_panicking_thread_is_cancelled() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    for use_new_stream in [false, true] {
        let owner = device.clone();
        let start = Instant::now();
        let joined = std::thread::spawn(move || {
            let stream = if use_new_stream {
                owner
                    .new_stream()
                    .unwrap_or_else(|_| owner.default_stream())
            } else {
                owner.default_stream()
            };
            let mut out = owner
                .alloc::<u32>(N)
                .unwrap_or_else(|e| panic!("alloc: {e}"));
            let _launch = spin_write(&stream, BLOCKS, &mut out, SPIN_NS, 3);
            panic!("the owner of a running launch panics");
        })
        .join();
        assert!(joined.is_err(), "the thread should have panicked");
        eprintln!(
            "new stream {use_new_stream}: the panicking owner was joined after {:?}",
            start.elapsed()
        );
        check_healthy(&device, &device.new_stream()?)?;
    }
    Ok(())
}

#[needs_gpu]
fn cancel_stops_a_running_launch_quickly() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    for (name, stream) in streams(&device)? {
        let mut out = device.alloc::<u32>(N)?;
        // Two seconds of spinning, unless cancelled.
        let launch = spin_write(&stream, BLOCKS, &mut out, 2_000_000_000, 9);
        std::thread::sleep(Duration::from_millis(5));
        assert!(!launch.is_complete());
        let start = Instant::now();
        launch.cancel();
        let outcome = block_on(launch);
        let latency = start.elapsed();
        eprintln!("{name}: cancel() to resolution: {latency:?} ({outcome:?})");
        assert!(
            matches!(
                outcome,
                Err(Error::Cancelled {
                    kernel: "host_kernels::spin_write"
                })
            ),
            "{outcome:?}"
        );
        assert!(latency < Duration::from_secs(1), "{latency:?}");
        assert!(out.download()?.iter().all(|&v| v == 0));
        check_healthy(&device, &stream)?;
    }
    Ok(())
}

/// Polls `launch` once, without an executor: the launch enqueues its completion callback on a
/// watcher stream, which then waits for the kernel while the test goes on.
fn poll_once(launch: &mut gpu_async::Launch<'_>) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::Pin::new(launch).poll(&mut cx).is_pending()
}

#[needs_gpu]
fn a_launch_polled_before_it_is_cancelled_or_dropped_stops_quickly() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    for (name, stream) in streams(&device)? {
        for drop_it in [false, true] {
            let mut out = device.alloc::<u32>(N)?;
            // Two seconds of spinning, unless cancelled; a watcher waits for it once polled.
            let mut launch = spin_write(&stream, BLOCKS, &mut out, 2_000_000_000, 9);
            assert!(poll_once(&mut launch));
            std::thread::sleep(Duration::from_millis(5));
            let start = Instant::now();
            let outcome = if drop_it {
                drop(launch);
                None
            } else {
                launch.cancel();
                Some(block_on(launch))
            };
            let took = start.elapsed();
            eprintln!("{name}: polled, then drop {drop_it}: stopped after {took:?} ({outcome:?})");
            assert!(took < Duration::from_secs(1), "{took:?}");
            if let Some(outcome) = outcome {
                assert!(
                    matches!(outcome, Err(Error::Cancelled { .. })),
                    "{outcome:?}"
                );
            }
            assert!(out.download()?.iter().all(|&v| v == 0));
            check_healthy(&device, &stream)?;
        }
    }
    Ok(())
}

#[needs_gpu]
fn cancel_of_a_queued_launch_leaves_the_one_before_it_alone() -> Result<()> {
    let (device, _one_at_a_time) = gpu();
    let stream = device.new_stream()?;
    let mut first = device.alloc::<u32>(N)?;
    let mut second = device.alloc::<u32>(N)?;
    let a = spin_write(&stream, BLOCKS, &mut first, SPIN_NS, 1);
    let b = spin_write(&stream, BLOCKS, &mut second, 2_000_000_000, 2);
    let start = Instant::now();
    b.cancel();
    // A launch that finished is cancelled all the same if asked to before its outcome is read.
    let ra = block_on(a);
    let rb = block_on(b);
    let took = start.elapsed();
    eprintln!("queued cancel: first {ra:?}, second {rb:?} after {took:?}");
    assert!(ra.is_ok(), "{ra:?}");
    assert!(matches!(rb, Err(Error::Cancelled { .. })), "{rb:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert!(first.download()?.iter().all(|&v| v == 1));
    assert!(second.download()?.iter().all(|&v| v == 0));
    check_healthy(&device, &stream)
}
