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
//! cargo run --release --example launch_overhead -- [launches per timing] [rounds]
//! ```
//!
//! Every variant runs once per round, in turn, for 15 rounds by default: the host's speed drifts
//! between seconds (on the H200 machine a row measured alone moved by 30% from one process to
//! the next), so each ratio is taken within a round and the median of the rounds is printed.
//! Prints microseconds per launch (median, and the range) and the typed/raw ratios. Needs a GPU: on the simulator it
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

/// Seconds `work` took.
fn timed(work: &mut dyn FnMut() -> AnyResult<()>) -> AnyResult<f64> {
    let start = Instant::now();
    work()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The median of `values` (not empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// What is measured: a name and `n` launches of one kind.
type Variant<'a> = (&'static str, Box<dyn FnMut() -> AnyResult<()> + 'a>);

fn main() -> AnyResult<()> {
    let n: usize = arg(1, "a number of launches per timing", 10_000)?;
    let rounds: usize = arg(2, "a number of rounds", 15)?;
    let device = Device::default()?;
    if device.kind() != BackendKind::Cuda {
        println!("launch_overhead measures GPU launches and needs a GPU; this is {device}");
        return Ok(());
    }
    println!(
        "backend: {device}; {n} launches of an empty kernel (1 block, 1 warp) per timing, \
         {rounds} rounds of every variant in turn"
    );
    let stream = device
        .cudarc_stream()
        .ok_or("the CUDA device has no cudarc stream")?;

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
    // Raw launches followed by a completion event like the typed path's.
    let events: Vec<BlockingEvent> = (0..n)
        .map(|_| BlockingEvent::new(&stream))
        .collect::<AnyResult<_>>()?;
    // The same raw launches captured in a graph.
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    let captured = (0..n).try_for_each(|_| raw_launch(&stream, &func, &params));
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0))?;
    captured?;
    let graph = graph.ok_or("the capture produced no graph")?;
    graph.upload()?;

    let (device, stream, func, params, events, graph) =
        (&device, &stream, &func, &params, &events, &graph);
    let mut variants: Vec<Variant<'_>> = vec![
        (
            "typed launch + wait, each",
            Box::new(move || {
                for _ in 0..n {
                    typed(device).wait()?;
                }
                Ok(())
            }),
        ),
        (
            "typed launch + block_on, each",
            Box::new(move || {
                for _ in 0..n {
                    gpu_async::block_on(typed(device))?;
                }
                Ok(())
            }),
        ),
        (
            "typed, enqueue all, wait last",
            Box::new(move || {
                let mut launches: Vec<Launch<'_>> = (0..n).map(|_| typed(device)).collect();
                if let Some(last) = launches.pop() {
                    last.wait()?;
                }
                // All are finished: dropping them neither cancels nor waits.
                drop(launches);
                Ok(())
            }),
        ),
        (
            "raw cudarc launch + sync, each",
            Box::new(move || {
                for _ in 0..n {
                    raw_launch(stream, func, params)?;
                    stream.synchronize()?;
                }
                Ok(())
            }),
        ),
        (
            "raw + blocking event sync, each",
            Box::new(move || {
                for event in events {
                    raw_launch(stream, func, params)?;
                    event.record(stream)?;
                    event.synchronize()?;
                }
                Ok(())
            }),
        ),
        (
            "raw cudarc, enqueue all, sync",
            Box::new(move || {
                for _ in 0..n {
                    raw_launch(stream, func, params)?;
                }
                stream.synchronize()?;
                Ok(())
            }),
        ),
        (
            "raw + event, enqueue all, sync",
            Box::new(move || {
                for event in events {
                    raw_launch(stream, func, params)?;
                    event.record(stream)?;
                }
                stream.synchronize()?;
                Ok(())
            }),
        ),
        (
            "CUDA graph replay",
            Box::new(move || {
                graph.launch()?;
                stream.synchronize()?;
                Ok(())
            }),
        ),
    ];
    // Warm up: loads the module, fills the event pool, wakes the clocks.
    for (_, work) in &mut variants {
        work()?;
    }
    // Every variant once per round, one after another, so that the host's drifts (other work,
    // frequency) touch them alike; each ratio is taken within a round.
    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds.max(1) {
        for ((_, work), times) in variants.iter_mut().zip(&mut seconds) {
            times.push(timed(work.as_mut())?);
        }
    }
    device.synchronize()?;
    let names: Vec<&str> = variants.iter().map(|(name, _)| *name).collect();
    let column = |name: &str| -> &[f64] {
        names
            .iter()
            .position(|n| *n == name)
            .map_or(&[][..], |i| &seconds[i][..])
    };
    for (name, times) in names.iter().zip(&seconds) {
        let us: Vec<f64> = times.iter().map(|&t| per_launch(t, n)).collect();
        let (lo, hi) = us.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &u| {
            (lo.min(u), hi.max(u))
        });
        println!(
            "{name:34} {:8.2} us/launch (median; {lo:.2}-{hi:.2} over {} rounds)",
            median(us.clone()),
            us.len()
        );
    }
    let ratio = |a: &str, b: &str| -> f64 {
        median(
            column(a)
                .iter()
                .zip(column(b))
                .map(|(x, y)| x / y)
                .collect(),
        )
    };
    println!(
        "ratio typed/raw (median of the rounds' ratios): {:.2} (enqueue all), {:.2} (each, wait vs \
         sync); raw/graph {:.2} (enqueue all)",
        ratio("typed, enqueue all, wait last", "raw cudarc, enqueue all, sync"),
        ratio("typed launch + wait, each", "raw cudarc launch + sync, each"),
        ratio("raw cudarc, enqueue all, sync", "CUDA graph replay"),
    );
    println!(
        "ratio typed/raw with the same blocking event: {:.2} (enqueue all), {:.2} (each); \
         block_on/wait {:.2}",
        ratio(
            "typed, enqueue all, wait last",
            "raw + event, enqueue all, sync"
        ),
        ratio(
            "typed launch + wait, each",
            "raw + blocking event sync, each"
        ),
        ratio("typed launch + block_on, each", "typed launch + wait, each"),
    );
    Ok(())
}
