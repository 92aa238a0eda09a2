//! A launch on the simulator: what the generated launcher hands it (the uses of its buffers and
//! a job that runs the kernel's blocks), the job on the stream's worker, and the state the
//! [`Launch`](crate::Launch) future shares with it (outcome, waker, cancel flag, progress).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};
use std::time::Duration;

use super::queue::Job;
use super::schedule::{Explorer, Picker, Rng};
use super::{watch, with_block, BlockState, SimBlock, SimConfig, SimTracing};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::schedule::Schedule;
use crate::spec::KernelSpec;

/// The kernel part of a simulator launch, as the generated launcher gives it: run on the stream's
/// worker, it takes its buffers' elements and runs the blocks.
pub(crate) type KernelJob = Box<dyn FnOnce(&mut SimRun) -> Result<()> + Send>;

/// A launch on the simulator while the generated launcher prepares it: the launcher registers
/// the uses of the buffers (`read`, `write`) and hands over the job that runs the kernel
/// ([`SimTarget::run`]), owning everything it needs, since it runs later on another thread.
pub struct SimTarget {
    pub(crate) spec: &'static KernelSpec,
    pub(crate) device_id: u64,
    job: Option<KernelJob>,
}

impl SimTarget {
    pub(crate) fn new(spec: &'static KernelSpec, device_id: u64) -> SimTarget {
        SimTarget {
            spec,
            device_id,
            job: None,
        }
    }

    /// Hands over the job that runs the kernel: when the launch's stream reaches it, its worker
    /// calls `job`, which takes the buffers' elements (waiting for their earlier uses) and runs
    /// the blocks with [`SimRun::run_blocks`].
    pub fn run(
        &mut self,
        job: impl FnOnce(&mut SimRun) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.job = Some(Box::new(job));
        Ok(())
    }

    pub(crate) fn take_job(&mut self) -> Option<KernelJob> {
        self.job.take()
    }
}

/// A simulator launch running on its stream's worker: runs the kernel's blocks.
pub struct SimRun {
    spec: &'static KernelSpec,
    grid: Grid,
    config: SimConfig,
    launch: Arc<SimLaunch>,
    watchdog: Option<Duration>,
    /// The trace of a traced launch: which blocks, and where their timelines go.
    tracing: Option<SimTracing>,
}

impl SimRun {
    /// Runs `block` once per block of the grid, in order, under the device's schedule, stopping
    /// at the first error, and at the first block or kernel step after a cancel.
    pub fn run_blocks(&mut self, block: impl FnMut(&mut SimBlock) -> Result<()>) -> Result<()> {
        let launch = Arc::clone(&self.launch);
        let watchdog = self.watchdog;
        watch::watching(launch, watchdog, || self.blocks(block))
    }

    fn blocks(&mut self, mut block: impl FnMut(&mut SimBlock) -> Result<()>) -> Result<()> {
        let schedule = match self.config.schedule.as_ref() {
            Ok(schedule) => schedule.clone(),
            Err(reason) => {
                return Err(Error::InvalidLaunch {
                    kernel: self.spec.path,
                    reason: reason.clone(),
                })
            }
        };
        let grid = self.grid.block_count();
        for index in 0..grid {
            if self.launch.is_cancelled() {
                return Err(Error::Cancelled {
                    kernel: self.spec.path,
                });
            }
            let picker = match (&schedule, &self.config.explorer) {
                (Schedule::Fixed, _) => Picker::Fixed,
                (Schedule::Random { seed }, _) => Picker::Random(Rng::new(*seed, u64::from(index))),
                (Schedule::Replay { .. }, Some(explorer)) => Picker::Replay(explorer.clone()),
                (Schedule::Replay { choices }, None) => {
                    Picker::Replay(Arc::new(Mutex::new(Explorer::new(choices.clone()))))
                }
            };
            with_block(|b| {
                *b = BlockState {
                    block: index,
                    grid,
                    spec: Some(self.spec),
                    schedule: Some(schedule.clone()),
                    picker,
                    trace: self.tracing.as_ref().and_then(|t| t.block(index)),
                    ..Default::default()
                }
            });
            watch::new_step();
            let result = block(&mut SimBlock {
                kernel: self.spec.path,
                block: index,
            });
            // Dropping the old state drops the effects still queued, and with them the rings
            // they hold.
            let mut old = with_block(|b| {
                std::mem::replace(
                    b,
                    BlockState {
                        grid: 1,
                        ..Default::default()
                    },
                )
            });
            if let (Some(tracing), Some(trace)) = (&self.tracing, old.trace.take()) {
                // Kept whatever the block's outcome: a deadlock's trace shows it.
                tracing.keep(trace.finish(&old));
            }
            drop(old);
            result?;
            self.launch.blocks_done.store(index + 1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// The job a simulator launch puts on its stream: unless the launch was cancelled before its
/// turn, runs `kernel` (with `device`'s schedule and watchdog bound `watchdog`, recording the
/// blocks `tracing` chooses), then settles `launch` with the outcome.
pub(crate) fn launch_job(
    launch: &Arc<SimLaunch>,
    spec: &'static KernelSpec,
    grid: Grid,
    (config, watchdog): (SimConfig, Option<Duration>),
    tracing: Option<SimTracing>,
    kernel: KernelJob,
) -> Job {
    let launch = Arc::clone(launch);
    Box::new(move || {
        // Settles the launch even if the simulator itself panics below.
        let settle = Settle(Arc::clone(&launch));
        let outcome = if launch.is_cancelled() {
            Err(Error::Cancelled { kernel: spec.path })
        } else {
            let mut run = SimRun {
                spec,
                grid,
                config,
                launch: Arc::clone(&launch),
                watchdog,
                tracing,
            };
            // The job's buffer uses end when it returns, before the launch is settled.
            kernel(&mut run)
        };
        launch.finish(outcome);
        drop(settle);
    })
}

/// Settles a launch whose job unwound outside the kernel's code (a bug of the simulator) with an
/// error, so that nothing waits for it forever.
struct Settle(Arc<SimLaunch>);

impl Drop for Settle {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.0.finish(Err(Error::KernelPanic {
                kernel: self.0.kernel,
                role: "kernel".to_string(),
                block: self.0.blocks_done.load(Ordering::Relaxed),
                message: "the simulator failed outside the kernel's code".to_string(),
                location: "-".to_string(),
                thread: None,
            }));
        }
    }
}

/// What a simulator [`Launch`](crate::Launch) shares with its job.
pub(crate) struct SimLaunch {
    kernel: &'static str,
    state: Mutex<LaunchState>,
    finished: Condvar,
    cancel: AtomicBool,
    blocks_done: AtomicU32,
    blocks: u32,
}

struct LaunchState {
    /// Set once the job is over.
    outcome: Option<Result<()>>,
    finished: bool,
    waker: Option<Waker>,
}

impl SimLaunch {
    pub(crate) fn new(kernel: &'static str, grid: Grid) -> Arc<SimLaunch> {
        Arc::new(SimLaunch {
            kernel,
            state: Mutex::new(LaunchState {
                outcome: None,
                finished: false,
                waker: None,
            }),
            finished: Condvar::new(),
            cancel: AtomicBool::new(false),
            blocks_done: AtomicU32::new(0),
            blocks: grid.block_count(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LaunchState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the kernel to stop at its next block, step, await or loop iteration.
    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Whether the job is over.
    pub(crate) fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// Whether the job is over; if not, `cx`'s waker is woken when it is.
    pub(crate) fn poll_finished(&self, cx: &mut Context<'_>) -> bool {
        let mut state = self.lock();
        if state.finished {
            return true;
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        false
    }

    /// Blocks until the job is over.
    pub(crate) fn wait(&self) {
        let mut state = self.lock();
        while !state.finished {
            state = self
                .finished
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The outcome of a launch whose job is over, once: a cancelled launch reports
    /// [`Error::Cancelled`] unless the kernel failed first (a panic, a deadlock, a watchdog stop
    /// win), also when it finished before the request, as on the GPU.
    pub(crate) fn take_outcome(&self) -> Result<()> {
        let outcome = self.lock().outcome.take();
        match outcome {
            Some(Ok(())) if self.is_cancelled() => Err(Error::Cancelled {
                kernel: self.kernel,
            }),
            Some(outcome) => outcome,
            None => Err(Error::InvalidLaunch {
                kernel: self.kernel,
                reason: "the launch's outcome was taken before it finished".to_string(),
            }),
        }
    }

    /// `(blocks finished, blocks in the grid)`.
    pub(crate) fn progress(&self) -> (u32, u32) {
        (self.blocks_done.load(Ordering::Relaxed), self.blocks)
    }

    fn finish(&self, outcome: Result<()>) {
        let waker = {
            let mut state = self.lock();
            state.outcome = Some(outcome);
            state.finished = true;
            state.waker.take()
        };
        self.finished.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}
