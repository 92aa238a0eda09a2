//! Traced launches: what the generated `launch_traced` and `launch_traced_on` call, the
//! [`TracedLaunch`] future they return, and its output, [`Traced`].
//!
//! On CUDA a traced launch loads the kernel's traced PTX (`PTX_TRACED`, a [`KernelSpec`] of its
//! own), allocates the trace buffer (not cleared: each header the kernel writes carries the
//! launch's tag), appends the trace parameters after the hidden ones, and once the kernel is
//! over reads the buffer back and decodes it. On the simulator the launch's job records the
//! traced blocks as it runs them, and hands their timelines over as each block ends, so that a
//! block that failed is in the trace too.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use gpu_async_wire::trace::{Divisor, TraceParam, TRACE_PARAMS};

use super::future::Stage;
use super::{submit, Launch, Recording, Target, Via};
use crate::backend::Device;
use crate::cuda::{CudaDevice, DeviceMem};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::sim::SimTracing;
use crate::spec::KernelSpec;
use crate::stream::Stream;
use crate::trace::{decode, BlockTimeline, Clock, Plan, Trace, TraceOptions};

/// What a traced launch resolves to: the launch's outcome, as the [`Launch`] would have
/// resolved, and the trace.
///
/// The trace is there whatever the outcome: complete when the launch succeeded; up to the failure
/// when the kernel failed (on the simulator, a deadlocked block shows each role waiting until the
/// block stopped; on the GPU, a wait the watchdog stopped ends where its role left); empty when
/// the launch was rejected before it ran, or when the trace could not be read back (a fault
/// of the kernel leaves the CUDA context unusable).
#[derive(Debug)]
pub struct Traced {
    /// The launch's outcome.
    pub result: Result<()>,
    /// What the traced blocks' roles did.
    pub trace: Trace,
}

impl Traced {
    /// The trace of a launch that succeeded, or the launch's error (the trace is dropped then;
    /// read the fields to keep both).
    pub fn into_result(self) -> Result<Trace> {
        self.result.map(|()| self.trace)
    }
}

/// A traced kernel launch: a future that resolves, when the kernel has finished, to its outcome
/// and its trace ([`Traced`]). It is a [`Launch`] otherwise ([`TracedLaunch::launch`] gives it,
/// for [`Launch::cancel`], [`Launch::is_complete`] and the rest), and dropping it unfinished
/// cancels the kernel and waits for it, as dropping a `Launch` does.
pub struct TracedLaunch<'a> {
    launch: Launch<'a>,
    collect: Collect,
}

/// Where the trace comes from when the launch is over.
enum Collect {
    /// The launch was rejected before it ran: an empty trace.
    Nothing(&'static str),
    /// The trace buffer of a CUDA launch.
    Cuda {
        mem: DeviceMem,
        spec: &'static KernelSpec,
        plan: Plan,
        tag: u32,
    },
    /// The timelines a simulator launch's job hands over.
    Sim {
        sink: Arc<Mutex<Vec<BlockTimeline>>>,
        kernel: &'static str,
    },
}

impl<'a> TracedLaunch<'a> {
    /// The launch itself.
    pub fn launch(&self) -> &Launch<'a> {
        &self.launch
    }

    /// Blocks the thread until the kernel has finished ([`Launch::wait`]), and returns its
    /// outcome and trace.
    pub fn wait(self) -> Traced {
        let TracedLaunch { launch, collect } = self;
        let via = launch.via;
        let result = launch.wait();
        collect.finish(result, via)
    }
}

impl Future for TracedLaunch<'_> {
    type Output = Traced;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Traced> {
        let this = self.get_mut();
        let Poll::Ready(result) = Pin::new(&mut this.launch).poll(cx) else {
            return Poll::Pending;
        };
        let collect = std::mem::replace(&mut this.collect, Collect::Nothing(this.launch.kernel));
        Poll::Ready(collect.finish(result, this.launch.via))
    }
}

impl Collect {
    /// The trace of a launch through `via` that is over with `result`.
    fn finish(self, result: Result<()>, via: Via<'_>) -> Traced {
        let empty = |kernel, clock| Trace {
            kernel,
            clock,
            blocks: Vec::new(),
        };
        match self {
            Collect::Nothing(kernel) => Traced {
                result,
                trace: empty(kernel, Clock::Nanoseconds),
            },
            Collect::Sim { sink, kernel } => {
                let mut blocks =
                    std::mem::take(&mut *sink.lock().unwrap_or_else(PoisonError::into_inner));
                blocks.sort_by_key(|b| b.block);
                Traced {
                    result,
                    trace: Trace {
                        kernel,
                        clock: Clock::Steps,
                        blocks,
                    },
                }
            }
            Collect::Cuda {
                mem,
                spec,
                plan,
                tag,
            } => {
                let read = match via.cuda() {
                    Some((gpu, _)) => read_words(gpu, &mem, &plan),
                    None => Err(Error::Buffer(
                        "the trace buffer's device is gone".to_string(),
                    )),
                };
                match (read, result) {
                    (Ok(words), result) => Traced {
                        result,
                        trace: decode(spec, &plan, tag, &words),
                    },
                    // The kernel's own error says more than the read's.
                    (Err(_), Err(err)) => Traced {
                        result: Err(err),
                        trace: empty(spec.path, Clock::Nanoseconds),
                    },
                    (Err(err), Ok(())) => Traced {
                        result: Err(err),
                        trace: empty(spec.path, Clock::Nanoseconds),
                    },
                }
            }
        }
    }
}

/// The trace buffer `mem` of `gpu`, laid out by `plan`, read back as words.
fn read_words(gpu: &CudaDevice, mem: &DeviceMem, plan: &Plan) -> Result<Vec<u32>> {
    let words = usize::try_from(plan.bytes() / 4)
        .map_err(|_| Error::Buffer("the trace buffer is too large".to_string()))?;
    let mut out = vec![0u32; words];
    gpu.read(mem, &mut out)?;
    Ok(out)
}

/// Launches the kernel of `spec` (a traced PTX module) on `device`'s default stream, recording
/// what `options` asks for; the generated `launch_traced` of every kernel calls this. Otherwise
/// the same as [`launch`](super::launch).
pub fn launch_traced<'a>(
    device: &'a Device,
    spec: &'static KernelSpec,
    grid: Grid,
    options: TraceOptions,
    body: impl FnOnce(Target<'_, 'a>) -> Result<()>,
) -> TracedLaunch<'a> {
    submit_traced(Via::Device(device), spec, grid, options, body)
}

/// Launches the kernel of `spec` like [`launch_traced`], on `stream`; the generated
/// `launch_traced_on` of every kernel calls this.
pub fn launch_traced_on<'a>(
    stream: &'a Stream,
    spec: &'static KernelSpec,
    grid: Grid,
    options: TraceOptions,
    body: impl FnOnce(Target<'_, 'a>) -> Result<()>,
) -> TracedLaunch<'a> {
    submit_traced(Via::Stream(stream), spec, grid, options, body)
}

/// The traced launch of a kernel the macro could not compile: it fails at once, as
/// [`not_compiled`](super::not_compiled) does.
pub fn not_compiled_traced<'a>(device: &'a Device, kernel: &'static str) -> TracedLaunch<'a> {
    TracedLaunch {
        launch: super::not_compiled(device, kernel),
        collect: Collect::Nothing(kernel),
    }
}

/// A new tag for a traced launch's buffer: never 0, and different from the last 2^32 - 1.
fn next_tag() -> u32 {
    static TAGS: AtomicU32 = AtomicU32::new(1);
    loop {
        let tag = TAGS.fetch_add(1, Ordering::Relaxed);
        if tag != 0 {
            return tag;
        }
    }
}

/// The trace parameters of a launch with `plan`, its buffer at `buffer` and tagged `tag`, each in
/// the first bytes of an 8-byte slot as the launch's parameters are.
fn trace_params(plan: &Plan, buffer: u64, tag: u32) -> [u64; TRACE_PARAMS] {
    let word = |v: u32| {
        let mut slot = [0u8; 8];
        slot[..4].copy_from_slice(&v.to_ne_bytes());
        u64::from_ne_bytes(slot)
    };
    let divisor = Divisor::new(plan.stride);
    TraceParam::ALL.map(|p| match p {
        TraceParam::Buffer => buffer,
        TraceParam::Magic => divisor.magic,
        TraceParam::Shift => word(divisor.shift),
        TraceParam::Stride => word(plan.stride),
        TraceParam::Slots => word(plan.slots),
        TraceParam::Capacity => word(plan.capacity),
        TraceParam::Tag => word(tag),
    })
}

fn submit_traced<'a>(
    via: Via<'a>,
    spec: &'static KernelSpec,
    grid: Grid,
    options: TraceOptions,
    body: impl FnOnce(Target<'_, 'a>) -> Result<()>,
) -> TracedLaunch<'a> {
    let rejected = |err: Error| TracedLaunch {
        launch: Launch {
            kernel: spec.path,
            via,
            stage: Stage::Finished(Err(err)),
            submitted: false,
            _borrows: PhantomData,
        },
        collect: Collect::Nothing(spec.path),
    };
    let plan = match Plan::new(spec.path, options, grid.block_count(), spec.roles.len()) {
        Ok(plan) => plan,
        Err(err) => return rejected(err),
    };
    match via.cuda() {
        Some((gpu, _)) => {
            let mem = usize::try_from(plan.bytes())
                .map_err(|_| Error::Buffer("the trace buffer is too large".to_string()))
                .and_then(|bytes| gpu.alloc_scratch(bytes));
            let mem = match mem {
                Ok(mem) => mem,
                Err(err) => return rejected(err),
            };
            let tag = next_tag();
            let params = trace_params(&plan, mem.address(), tag);
            let launch = submit(via, spec, grid, body, Recording::Cuda(&mem, params));
            TracedLaunch {
                launch,
                collect: Collect::Cuda {
                    mem,
                    spec,
                    plan,
                    tag,
                },
            }
        }
        None => {
            let tracing = SimTracing {
                plan,
                sink: Arc::default(),
            };
            let sink = Arc::clone(&tracing.sink);
            let launch = submit(via, spec, grid, body, Recording::Sim(tracing));
            TracedLaunch {
                launch,
                collect: Collect::Sim {
                    sink,
                    kernel: spec.path,
                },
            }
        }
    }
}
