//! The host cost of a launch: 10,000 launches of an empty kernel (hand-written PTX with the abort
//! protocol's four hidden parameters, one warp, one block) through
//!
//! 1. the typed path, `gpu_async::__private::launch` (what every generated `launch` calls):
//!    waited one by one with `.wait()`, awaited one by one with `gpu_async::block_on` (the
//!    future's path: a completion callback wakes it), and all enqueued then only the last waited
//!    for;
//! 2. a raw cudarc launch of the same PTX with the same parameters (`launch_builder`): one by one
//!    with a stream synchronization each (cudarc's default: the driver spins), and all enqueued
//!    then one synchronization;
//! 3. the raw launch followed by a completion event like the typed path's
//!    (`CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC`): one by one, sleeping in
//!    `cuEventSynchronize` (the peer of a wait that does not spin), and all enqueued with one
//!    event each (what recording the event costs);
//! 4. the same raw launches captured in a CUDA graph and replayed.
//!
//! ```text
//! cargo run --release --example launch_overhead -- [launches]
//! ```
//!
//! Prints microseconds per launch and the typed/raw ratios. Needs a GPU: on the simulator it
//! says so and exits successfully.

use std::time::Instant;

use gpu_async::__private::{launch, Target};
use gpu_async::bench::arg;
use gpu_async::cudarc::driver::{sys, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use gpu_async::cudarc::nvrtc::Ptx;
use gpu_async::{BackendKind, Device, Error, Grid, KernelSpec, Launch};

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry empty(
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    ret;
}
"#;

static EMPTY: KernelSpec = KernelSpec {
    entry: "empty",
    path: "launch_overhead::empty",
    ptx: PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[],
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn typed(device: &Device) -> Launch<'_> {
    launch(device, &EMPTY, Grid::blocks(1), |target| match target {
        Target::Cuda(_) => Ok(()),
        Target::Sim(_) => Err(Error::Buffer("a GPU is needed".to_string())),
    })
}

/// The hidden parameters the raw launches pass: the same kinds of values as the typed path's.
struct RawParams {
    abort_word: u64,
    launch_id: u32,
    record: u64,
    watchdog_ns: u64,
}

fn raw_launch(stream: &CudaStream, func: &CudaFunction, p: &RawParams) -> AnyResult<()> {
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut builder = stream.launch_builder(func);
    builder
        .arg(&p.abort_word)
        .arg(&p.launch_id)
        .arg(&p.record)
        .arg(&p.watchdog_ns);
    // SAFETY: `empty` takes exactly these four parameters, of these types (.u64, .u32, .u64,
    // .u64), and reads none of them; the values live across the call.
    unsafe { builder.launch(config) }?;
    Ok(())
}

/// An event with the typed path's completion-event flags, destroyed on drop.
struct BlockingEvent(sys::CUevent);

impl BlockingEvent {
    fn new(stream: &CudaStream) -> AnyResult<BlockingEvent> {
        stream.context().bind_to_thread()?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
            | sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
        // SAFETY: `event` is a valid out-pointer and the flags are valid event flags; the
        // stream's context is current.
        unsafe { sys::cuEventCreate(&mut event, flags) }.result()?;
        Ok(BlockingEvent(event))
    }

    fn record(&self, stream: &CudaStream) -> AnyResult<()> {
        // SAFETY: the event is alive; the stream is alive and of the event's context, which the
        // launch just before made current on this thread.
        unsafe { sys::cuEventRecord(self.0, stream.cu_stream()) }.result()?;
        Ok(())
    }

    fn synchronize(&self) -> AnyResult<()> {
        // SAFETY: the event is alive and its context current on this thread.
        unsafe { sys::cuEventSynchronize(self.0) }.result()?;
        Ok(())
    }
}

impl Drop for BlockingEvent {
    fn drop(&mut self) {
        // SAFETY: the event was created by `BlockingEvent::new` and is destroyed once, here;
        // the benchmark synchronized its work before.
        let _ = unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

/// Microseconds per launch of `n` launches taking `seconds`.
fn per_launch(seconds: f64, n: usize) -> f64 {
    seconds * 1e6 / n as f64
}

/// The best of `runs` timings of `work`, in seconds.
fn best_of(runs: usize, mut work: impl FnMut() -> AnyResult<()>) -> AnyResult<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        work()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn main() -> AnyResult<()> {
    let n: usize = arg(1, "a number of launches", 10_000)?;
    let device = Device::default()?;
    if device.kind() != BackendKind::Cuda {
        println!("launch_overhead measures GPU launches and needs a GPU; this is {device}");
        return Ok(());
    }
    println!("backend: {device}; {n} launches of an empty kernel (1 block, 1 warp)");
    let stream = device
        .cudarc_stream()
        .ok_or("the CUDA device has no cudarc stream")?;

    // Typed: warm up (loads the module), then time.
    for _ in 0..1000 {
        typed(&device).wait()?;
    }
    let typed_each = best_of(3, || {
        for _ in 0..n {
            typed(&device).wait()?;
        }
        Ok(())
    })?;
    let typed_block_on = best_of(3, || {
        for _ in 0..n {
            gpu_async::block_on(typed(&device))?;
        }
        Ok(())
    })?;
    let typed_batch = best_of(3, || {
        let mut launches: Vec<Launch<'_>> = (0..n).map(|_| typed(&device)).collect();
        if let Some(last) = launches.pop() {
            last.wait()?;
        }
        // All are finished: dropping them neither cancels nor waits.
        drop(launches);
        Ok(())
    })?;

    // Raw cudarc launches of the same PTX, in the same context, on the same stream.
    let module = stream.context().load_module(Ptx::from_src(PTX))?;
    let func = module.load_function("empty")?;
    let abort = stream.alloc_zeros::<u32>(1)?;
    let params = RawParams {
        abort_word: {
            use gpu_async::cudarc::driver::DevicePtr;
            let (address, _sync) = abort.device_ptr(&stream);
            address
        },
        launch_id: 1,
        record: 0,
        watchdog_ns: 5_000_000_000,
    };
    for _ in 0..1000 {
        raw_launch(&stream, &func, &params)?;
    }
    stream.synchronize()?;
    let raw_each = best_of(3, || {
        for _ in 0..n {
            raw_launch(&stream, &func, &params)?;
            stream.synchronize()?;
        }
        Ok(())
    })?;
    let raw_batch = best_of(3, || {
        for _ in 0..n {
            raw_launch(&stream, &func, &params)?;
        }
        stream.synchronize()?;
        Ok(())
    })?;

    // Raw launches followed by a completion event like the typed path's.
    let events: Vec<BlockingEvent> = (0..n)
        .map(|_| BlockingEvent::new(&stream))
        .collect::<AnyResult<_>>()?;
    let raw_event_each = best_of(3, || {
        for event in &events {
            raw_launch(&stream, &func, &params)?;
            event.record(&stream)?;
            event.synchronize()?;
        }
        Ok(())
    })?;
    let raw_event_batch = best_of(3, || {
        for event in &events {
            raw_launch(&stream, &func, &params)?;
            event.record(&stream)?;
        }
        stream.synchronize()?;
        Ok(())
    })?;
    stream.synchronize()?;
    drop(events);

    // The same raw launches captured in a graph, replayed.
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    let captured = (0..n).try_for_each(|_| raw_launch(&stream, &func, &params));
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0))?;
    captured?;
    let graph = graph.ok_or("the capture produced no graph")?;
    graph.upload()?;
    graph.launch()?;
    stream.synchronize()?;
    let graph_replay = best_of(3, || {
        graph.launch()?;
        stream.synchronize()?;
        Ok(())
    })?;
    drop(graph);
    device.synchronize()?;

    let rows = [
        ("typed launch + wait, each", per_launch(typed_each, n)),
        (
            "typed launch + block_on, each",
            per_launch(typed_block_on, n),
        ),
        ("typed, enqueue all, wait last", per_launch(typed_batch, n)),
        ("raw cudarc launch + sync, each", per_launch(raw_each, n)),
        (
            "raw + blocking event sync, each",
            per_launch(raw_event_each, n),
        ),
        ("raw cudarc, enqueue all, sync", per_launch(raw_batch, n)),
        (
            "raw + event, enqueue all, sync",
            per_launch(raw_event_batch, n),
        ),
        ("CUDA graph replay", per_launch(graph_replay, n)),
    ];
    for (name, us) in rows {
        println!("{name:34} {us:8.2} us/launch");
    }
    println!(
        "ratio typed/raw: {:.2} (each, wait vs sync), {:.2} (enqueue all); raw/graph {:.2} \
         (enqueue all)",
        typed_each / raw_each,
        typed_batch / raw_batch,
        raw_batch / graph_replay
    );
    println!(
        "ratio typed/raw with the same blocking event: {:.2} (each), {:.2} (enqueue all); \
         block_on/wait {:.2}",
        typed_each / raw_event_each,
        typed_batch / raw_event_batch,
        typed_block_on / typed_each
    );
    Ok(())
}
