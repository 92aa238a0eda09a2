//! Launches are plain futures: they are awaited under a tokio current-thread runtime, a tokio
//! multi-thread runtime, `pollster::block_on` and `gpu_async::block_on`, on the simulator and on
//! the GPU. Work enqueued on one stream runs in order, so awaiting only the last launch is enough.

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[allow(dead_code)]
#[path = "common/host_kernels.rs"]
mod host_kernels;

#[path = "common/devices.rs"]
mod devices;

use std::time::{Duration, Instant};

use gpu_async::bench::random_f32;
use gpu_async::{BackendKind, Device, DeviceBuffer, Error, Grid, Launch, Result, Stream};
use gpu_async_testing::{needs_gpu, on_each_device};

/// The tests of this file run one at a time, and make their device once their turn has come: a
/// cancel issued while another thread creates a device (which allocates page-locked memory, a
/// synchronizing driver call) can wait for the running kernel to end (docs/design.md), and the
/// select test measures cancel latency.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn grid(device: &Device) -> Result<Grid> {
    saxpy::grid_for(device, 2)
}

/// The example's saxpy kernel launched on `stream`, through its generated `launch_on`.
fn saxpy_on<'a>(
    stream: &'a Stream,
    grid: Grid,
    a: f32,
    x: &'a DeviceBuffer<f32>,
    y: &'a mut DeviceBuffer<f32>,
) -> Launch<'a> {
    saxpy::stream::saxpy::launch_on(stream, grid, (a, x, y))
}

/// Mismatches of `got` against `a * x + y`, compared bit for bit.
fn mismatches(got: &[f32], a: f32, xs: &[f32], ys: &[f32]) -> usize {
    got.iter()
        .zip(xs.iter().zip(ys))
        .filter(|(g, (x, y))| g.to_bits() != (a * **x + **y).to_bits())
        .count()
}

/// Awaits saxpy on the default stream (the generated launcher), on a new stream, and two
/// launches in flight together on two streams; checks every element.
async fn workload(device: Device, seed: u64) -> Result<()> {
    let n = match device.kind() {
        BackendKind::Cuda => 1 << 20,
        _ => 10_000,
    };
    let grid = grid(&device)?;
    let (a, xs, ys) = (2.5f32, random_f32(n, seed), random_f32(n, seed + 1));
    let x = device.upload(&xs)?;

    let mut y = device.upload(&ys)?;
    saxpy::stream::saxpy::launch(&device, grid, (a, &x, &mut y)).await?;
    assert_eq!(mismatches(&y.download()?, a, &xs, &ys), 0);

    let stream = device.new_stream()?;
    let mut y = device.upload(&ys)?;
    saxpy_on(&stream, grid, a, &x, &mut y).await?;
    assert_eq!(mismatches(&y.download()?, a, &xs, &ys), 0);

    let other = device.new_stream()?;
    let (mut y1, mut y2) = (device.upload(&ys)?, device.upload(&ys)?);
    let first = saxpy_on(&stream, grid, a, &x, &mut y1);
    let second = saxpy_on(&other, grid, a, &x, &mut y2);
    second.await?;
    first.await?;
    for y in [&y1, &y2] {
        assert_eq!(mismatches(&y.download()?, a, &xs, &ys), 0);
    }
    Ok(())
}

#[on_each_device]
fn tokio_current_thread_runtime(device: fn() -> Device) -> Result<()> {
    let _serial = one_at_a_time();
    let device = device();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::Buffer(e.to_string()))?;
    runtime.block_on(workload(device, 1))?;
    Ok(())
}

#[on_each_device]
fn tokio_multi_thread_runtime(device: fn() -> Device) -> Result<()> {
    let _serial = one_at_a_time();
    let device = device();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .map_err(|e| Error::Buffer(e.to_string()))?;
    runtime.block_on(async {
        // Several tasks at once, on any worker thread.
        let tasks: Vec<_> = (0..6)
            .map(|i| tokio::spawn(workload(device.clone(), 10 + i)))
            .collect();
        for task in tasks {
            task.await.map_err(|e| Error::Buffer(e.to_string()))??;
        }
        Ok::<(), Error>(())
    })?;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
#[allow(clippy::await_holding_lock)] // one thread, one test at a time: the point of the lock
async fn tokio_test_attribute_on_the_simulator() -> Result<()> {
    let _serial = one_at_a_time();
    workload(Device::simulator(), 20).await
}

#[needs_gpu]
#[tokio::test(flavor = "current_thread")]
#[allow(clippy::await_holding_lock)] // one thread, one test at a time: the point of the lock
async fn tokio_test_attribute_on_the_gpu() -> Result<()> {
    let _serial = one_at_a_time();
    workload(devices::gpu(), 20).await
}

#[on_each_device]
fn pollster_block_on(device: fn() -> Device) -> Result<()> {
    let _serial = one_at_a_time();
    pollster::block_on(workload(device(), 30))
}

#[on_each_device]
fn gpu_async_block_on(device: fn() -> Device) -> Result<()> {
    let _serial = one_at_a_time();
    let device = device();
    gpu_async::block_on(workload(device.clone(), 40))?;
    let bad = saxpy::run_and_check(&device, grid(&device)?, 50_000, 41)?;
    assert_eq!(bad, 0);
    Ok(())
}

/// Ten launches and three copies on one stream; only the last launch is awaited. Launches `0..3`
/// read `x0`, then `x1` is copied from `x0` and launches `3..6` read it, and so on; each launch
/// writes its own `y`. Every result is right, and every launch is complete once the last is.
fn ten_launches_and_three_copies(device: &Device, stream: &Stream) -> Result<()> {
    let n = match device.kind() {
        BackendKind::Cuda => 300_000,
        _ => 5_000,
    };
    let grid = grid(device)?;
    let a = 1.25f32;
    let xs = random_f32(n, 7);
    let ys: Vec<Vec<f32>> = (0..10).map(|i| random_f32(n, 100 + i)).collect();
    let x0 = device.upload(&xs)?;
    let (mut x1, mut x2, mut x3) = (
        device.alloc::<f32>(n)?,
        device.alloc::<f32>(n)?,
        device.alloc::<f32>(n)?,
    );
    let mut outs: Vec<DeviceBuffer<f32>> =
        ys.iter().map(|y| device.upload(y)).collect::<Result<_>>()?;
    let mut outs_iter = outs.iter_mut();
    let mut next = || {
        outs_iter
            .next()
            .ok_or_else(|| Error::Buffer("out of outputs".to_string()))
    };
    let mut launches = Vec::new();
    for _ in 0..3 {
        launches.push(saxpy_on(stream, grid, a, &x0, next()?));
    }
    x1.copy_from_buffer_on(&x0, stream)?;
    for _ in 0..3 {
        launches.push(saxpy_on(stream, grid, a, &x1, next()?));
    }
    x2.copy_from_buffer_on(&x1, stream)?;
    for _ in 0..3 {
        launches.push(saxpy_on(stream, grid, a, &x2, next()?));
    }
    x3.copy_from_buffer_on(&x2, stream)?;
    let last = saxpy_on(stream, grid, a, &x3, next()?);
    gpu_async::block_on(last)?;
    assert!(launches.iter().all(Launch::is_complete));
    drop(launches);
    for (i, (out, y)) in outs.iter().zip(&ys).enumerate() {
        let bad = mismatches(&out.download()?, a, &xs, y);
        assert_eq!(bad, 0, "launch {i}: {bad} mismatches");
    }
    assert_eq!(x3.download()?, xs);
    Ok(())
}

#[on_each_device]
fn ten_launches_and_three_copies_on_one_stream_await_only_the_last(
    device: fn() -> Device,
) -> Result<()> {
    let _serial = one_at_a_time();
    let device = device();
    ten_launches_and_three_copies(&device, &device.new_stream()?)?;
    ten_launches_and_three_copies(&device, &device.default_stream())?;
    Ok(())
}

#[needs_gpu]
fn a_launch_that_loses_a_select_is_cancelled() -> Result<()> {
    let _serial = one_at_a_time();
    let device = devices::gpu();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::Buffer(e.to_string()))?;
    let stream = device.new_stream()?;
    let mut out = device.alloc::<u32>(1 << 16)?;
    let start = Instant::now();
    let finished = runtime.block_on(async {
        tokio::select! {
            r = host_kernels::spin_write(&stream, 8, &mut out, 2_000_000_000, 1) => Some(r),
            _ = tokio::time::sleep(Duration::from_millis(10)) => None,
        }
    });
    let took = start.elapsed();
    eprintln!("select: the 2 s launch lost to a 10 ms timer; done after {took:?}");
    assert!(finished.is_none());
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert!(out.download()?.iter().all(|&v| v == 0));
    Ok(())
}
