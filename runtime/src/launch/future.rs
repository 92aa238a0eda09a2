//! The [`Launch`] future: what a submitted launch is, and how its outcome is asked for, awaited,
//! cancelled and read.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use super::completion::{block_until_done, lock, observe, Shared};
use super::Via;
use crate::abort::{decode_failure, overwritten_by, RECORD_SLOTS};
use crate::cuda::{CompletionMark, EventState, StreamState};
use crate::error::{Error, Result};
use crate::sim::SimLaunch;
use crate::spec::KernelSpec;

// For the links of the docs of `Launch`.
#[cfg(doc)]
use super::{launch, launch_on};

/// A kernel launch: a future that resolves when the kernel has finished, with its outcome.
///
/// On CUDA the kernel is already submitted when [`launch_on`] returns; the future does not need to
/// be polled for it to run, and the stream never waits for the host. Submitting records nothing
/// else on the stream: the launch's *completion mark*, an event at the end of the stream, is
/// recorded the first time the launch is asked about (a poll, [`Launch::wait`],
/// [`Launch::is_complete`], [`Launch::mark_completion`], or the drop of an unfinished launch), and
/// only if the launch is not already known to be finished because a later launch of its stream
/// was seen finished. So enqueueing many launches and awaiting the last costs one event in all;
/// the price is that **a launch first asked about after more work was enqueued on its stream
/// resolves when that work has finished too** (call [`Launch::mark_completion`] right after the
/// launch to pin its end). The first poll that finds the kernel unfinished enqueues, on a
/// separate *watcher* stream, a wait for the mark's event and a driver callback that wakes the
/// task (no polling thread, no busy wait), so it works under any executor; [`Launch::wait`]
/// instead sleeps on the event. A kernel of the abort protocol that stops itself resolves the
/// future to [`Error::KernelPanic`] (a device panic: role, block, thread, message and source
/// location) or [`Error::Deadlock`] (a wait the watchdog stopped), and the device stays usable.
/// A fault of the kernel (a trap, an invalid address) resolves it to [`Error::Cuda`] with `call`
/// `"kernel execution"`; the CUDA context is then unusable.
///
/// On the simulator the launch is a job on its stream, which the stream's worker thread runs
/// after the work issued there before it (see [`Device::simulator`](crate::Device::simulator)):
/// [`launch`] returns at once, the future's waker is woken when the job is done (no thread polls
/// or spins, any executor works), [`Launch::wait`] sleeps until then, [`Launch::is_complete`]
/// tells, and [`Launch::progress`] says how many blocks have run. The outcomes are the GPU's: a
/// panic, a deadlock (found at once) or a watchdog stop of a role that runs without waiting,
/// [`Error::Cancelled`] after [`Launch::cancel`], and the same rule for a dropped launch.
///
/// Failures are read from a ring of 4096 records per stream after the kernel has finished, so
/// they are reported exactly for up to 4096 launches of one stream in flight (submitted and not
/// yet resolved); with more, a launch whose record a later failing launch overwrote resolves to
/// [`Error::OutcomeUnknown`].
///
/// [`Launch::cancel`] asks a running kernel to stop (through the abort word of the abort
/// protocol); the launch then resolves to [`Error::Cancelled`], unless the kernel failed first.
///
/// The kernel's buffers stay borrowed for `'a`, and each of them remembers the launch as its
/// latest use: buffers are freed with stream-ordered frees after the last use's event, so even a
/// launch leaked with `mem::forget` cannot have its buffers freed under it (see
/// [`DeviceBuffer`](crate::DeviceBuffer)). On the simulator the launch's job shares the buffers'
/// memory rather than borrowing it, and the host's next download or overwrite of a buffer waits
/// for the job, so a leaked launch still finishes its work, and its outputs are there for the
/// host.
///
/// **Dropping a `Launch` whose kernel has not finished cancels it and then blocks the thread
/// until the kernel has stopped**: this is the choice for dropped futures (a `select!` that
/// lost, a task that was aborted, a thread that panicked): the work is no longer wanted, so it
/// is stopped rather than finished, and waited for so that the borrows end with it. Errors are
/// discarded then; await the launch, or call [`Launch::wait`], to see them. On CUDA the wait is
/// for the launch's completion mark: a launch never asked about before, dropped after more work
/// was enqueued on its stream, waits for that work too (only this launch is cancelled); a launch
/// polled once, or marked with [`Launch::mark_completion`], waits for its own kernel only. On
/// both backends a launch still queued behind other work on its stream waits for that work.
pub struct Launch<'a> {
    pub(super) kernel: &'static str,
    pub(super) via: Via<'a>,
    pub(super) stage: Stage,
    pub(super) submitted: bool,
    pub(super) _borrows: PhantomData<&'a mut ()>,
}

pub(super) enum Stage {
    /// The outcome is known and not yet returned.
    Finished(Result<()>),
    /// Submitted to CUDA; not necessarily finished.
    Running(Running),
    /// Queued on a simulator stream; not necessarily finished.
    Sim(Arc<SimLaunch>),
    /// The outcome was returned.
    Reported,
}

/// A launch submitted to CUDA.
pub(super) struct Running {
    pub(super) shared: Arc<Shared>,
    /// The launch's id on its stream.
    pub(super) launch_id: u32,
    /// The epoch of the stream's launch-id counter the id belongs to.
    pub(super) epoch: u32,
    /// How to tell whether the kernel stopped itself (abort-protocol kernels only).
    pub(super) abort: Option<AbortCheck>,
    /// Where the launch's end is observed: a completion event recorded at the end of its stream
    /// the first time the outcome is asked for (see [`Launch`]), `None` inside when it could not
    /// be recorded. Unused for the launches the unit tests make up (they have no stream), which
    /// they complete by hand.
    pub(super) mark: OnceLock<Option<CompletionMark>>,
}

impl Running {
    /// The launch's completion mark, recorded at the end of `stream` now if it has none yet;
    /// `None` when it could not be recorded.
    pub(super) fn mark(&self, stream: &StreamState) -> Option<&CompletionMark> {
        self.mark
            .get_or_init(|| stream.mark_completion().ok())
            .as_ref()
    }
}

/// What a launch of the abort protocol needs to read its failure record.
#[derive(Clone, Copy)]
pub(super) struct AbortCheck {
    pub(super) spec: &'static KernelSpec,
    pub(super) launch_id: u32,
    /// The watchdog bound the launch ran with.
    pub(super) watchdog: Option<Duration>,
}

/// How far a simulator launch has come: [`Launch::progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Progress {
    /// The blocks that have run to their end.
    pub blocks_done: u32,
    /// The blocks of the grid.
    pub blocks: u32,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {} blocks", self.blocks_done, self.blocks)
    }
}

impl Launch<'_> {
    /// Whether the kernel reached the device: it was submitted to the CUDA stream, or queued on
    /// the simulator's stream. `false` when the launch was rejected before that.
    pub fn is_submitted(&self) -> bool {
        self.submitted
    }

    /// Whether nothing more will happen: the kernel finished, or the launch was rejected. Does
    /// not wait (on CUDA it asks the launch's completion mark, recording it first if the launch
    /// has none and is not known to be finished; see [`Launch`]).
    pub fn is_complete(&self) -> bool {
        match &self.stage {
            Stage::Running(running) => observe(running, self.stream()),
            Stage::Sim(sim) => sim.is_finished(),
            Stage::Finished(_) | Stage::Reported => true,
        }
    }

    /// On the simulator, how many blocks of the launch's grid have run to their end (they run
    /// one after another, in order), so that a long launch shows that it moves; `None` on the
    /// GPU, whose blocks run in no observable order, and for a launch that was rejected or whose
    /// job ran no kernel. A launch that stopped (a failure, a cancel) keeps the count it stopped
    /// at.
    pub fn progress(&self) -> Option<Progress> {
        match &self.stage {
            Stage::Sim(sim) => {
                let (blocks_done, blocks) = sim.progress();
                Some(Progress {
                    blocks_done,
                    blocks,
                })
            }
            Stage::Running(_) | Stage::Finished(_) | Stage::Reported => None,
        }
    }

    /// Records the launch's completion mark now, if it has none: the launch then resolves as
    /// soon as its kernel (and the work before it on the stream) has finished, even if more work
    /// is enqueued on the stream before it is awaited. Without this, the mark is recorded when
    /// the launch is first asked about (see [`Launch`]). Costs one event record on the stream
    /// (about half a microsecond on an H200); does nothing on the simulator, for a launch that
    /// is already marked or finished, and for one that was not submitted. If the driver refuses
    /// the event, waiting for the launch later synchronizes its whole stream instead.
    pub fn mark_completion(&self) {
        if let (Stage::Running(running), Some(stream)) = (&self.stage, self.stream()) {
            if !lock(&running.shared).done {
                running.mark(stream);
            }
        }
    }

    /// Blocks the thread until the kernel has finished, and returns its outcome. On CUDA the
    /// thread first asks the launch's completion mark (see [`Launch`]) for up to 100 µs (a short
    /// kernel is seen as soon as it ends, where a sleeping wait adds ~13 µs of wake-up latency),
    /// then sleeps in `cuEventSynchronize` on it (a blocking-sync event: no spinning for long
    /// kernels).
    ///
    /// On the simulator the thread sleeps until the stream's worker has run the launch.
    pub fn wait(mut self) -> Result<()> {
        match &self.stage {
            Stage::Running(running) => block_until_done(running, self.stream()),
            Stage::Sim(sim) => sim.wait(),
            Stage::Finished(_) | Stage::Reported => {}
        }
        self.take_outcome()
    }

    /// Asks the kernel to stop, and makes the launch resolve to [`Error::Cancelled`] (unless the
    /// kernel reports a panic or a watchdog stop, or the driver an error: those win). Returns at
    /// once; await the launch to know when the kernel has stopped.
    ///
    /// On CUDA, for a kernel of the abort protocol (every kernel `#[gpu_async]` generates), the
    /// launch's id is written into its stream's abort word from the host, on a stream of its
    /// own: the kernel's warps stop at their next wait or role-loop iteration, or at their start
    /// if the kernel has not started yet. A kernel without the protocol runs to its end. A
    /// launch that finished before the request took effect reports `Cancelled` all the same:
    /// **the outputs of a cancelled launch are unspecified**. Cancelling twice is harmless.
    ///
    /// On the simulator the same holds: the kernel stops at its next block, role step, await
    /// or loop iteration (a launch still queued behind other work does not start), and a launch
    /// that finished before the request reports `Cancelled`. For a launch that was rejected
    /// before it was submitted, or whose outcome was already returned, this does nothing: the
    /// outcome stays what it was.
    pub fn cancel(&self) {
        let running = match &self.stage {
            Stage::Running(running) => running,
            Stage::Sim(sim) => return sim.cancel(),
            Stage::Finished(_) | Stage::Reported => return,
        };
        let done = {
            let mut state = lock(&running.shared);
            let first = !state.cancelled;
            state.cancelled = true;
            state.done || !first
        };
        if done || running.abort.is_none() {
            return;
        }
        if let Some((gpu, stream)) = self.via.cuda() {
            // Without the write the kernel runs to its end; the launch is still cancelled.
            let _ = gpu.request_abort(stream, running.launch_id);
        }
    }

    /// The outcome of a launch known to be over (or rejected), once.
    fn take_outcome(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.stage, Stage::Reported) {
            Stage::Finished(outcome) => outcome,
            Stage::Running(running) => {
                let outcome = self.outcome_of(&running);
                self.release(running);
                outcome
            }
            Stage::Sim(sim) => sim.take_outcome(),
            Stage::Reported => Err(Error::InvalidLaunch {
                kernel: self.kernel,
                reason: "the launch was polled again after it completed; await it once".to_string(),
            }),
        }
    }

    /// The outcome of a submitted launch that is over. A fault it caused is sticky in the
    /// stream's status; without one, its slot of the stream's record ring says whether the kernel
    /// stopped itself.
    fn outcome_of(&self, running: &Running) -> Result<()> {
        let (failed, record, cancelled) = {
            let state = lock(&running.shared);
            (state.failed, state.record, state.cancelled)
        };
        let stream = self.stream();
        if let Some(stream) = stream {
            stream.status("kernel execution")?;
        }
        if failed {
            return Err(Error::Cuda {
                call: "kernel execution",
                message: format!(
                    "the driver reported an error on the stream of kernel `{}`",
                    self.kernel
                ),
            });
        }
        if let Some(abort) = running.abort {
            let record = match (record, stream) {
                (Some(record), _) => Some(record),
                (None, Some(stream)) => {
                    match stream.failure_record(running.launch_id, running.epoch) {
                        Some(record) => Some(record),
                        None => {
                            return Err(Error::OutcomeUnknown {
                                kernel: self.kernel,
                                reason: "more than 2^32 launches were submitted on its stream \
                                         before its outcome was read, and its failure record is \
                                         gone"
                                    .to_string(),
                            })
                        }
                    }
                }
                (None, None) => None,
            };
            if let Some(record) = record {
                if let Some(newer) = overwritten_by(abort.launch_id, &record) {
                    return Err(Error::OutcomeUnknown {
                        kernel: self.kernel,
                        reason: format!(
                            "its failure record (launch {} of its stream) was overwritten by the \
                             failure of launch {newer}, {RECORD_SLOTS} or more launches later on \
                             the same stream, before its outcome was read; failures are reported \
                             exactly for up to {RECORD_SLOTS} launches in flight per stream",
                            abort.launch_id
                        ),
                    });
                }
                if let Some(err) =
                    decode_failure(abort.spec, abort.launch_id, record, abort.watchdog)
                {
                    return Err(err);
                }
            }
        }
        if cancelled {
            return Err(Error::Cancelled {
                kernel: self.kernel,
            });
        }
        Ok(())
    }

    /// Tells the stream a launch that is over finished (when it did, without a driver error), and
    /// gives its completion mark's event back to the stream for reuse once the event is known to
    /// have completed; otherwise the event is destroyed.
    fn release(&self, running: Running) {
        let Running {
            shared,
            mark,
            epoch,
            launch_id,
            ..
        } = running;
        let Some(stream) = self.stream() else {
            return;
        };
        let finished = {
            let state = lock(&shared);
            state.done && !state.failed
        };
        if !finished {
            return;
        }
        stream.mark_finished(epoch, launch_id);
        if let Some(mark) = mark.into_inner().flatten() {
            // The mark may lie after later launches: its event is reused only once it completed
            // (known already, or asked: after a completion callback, which waited for it).
            let completed = stream.finished_through(mark.epoch, mark.launch_id)
                || mark.event.query() == EventState::Complete;
            if completed {
                stream.mark_finished(mark.epoch, mark.launch_id);
                stream.recycle(mark.event);
            }
        }
    }

    /// The launch's CUDA stream (`None` on the simulator).
    fn stream(&self) -> Option<&StreamState> {
        self.via.cuda().map(|(_, stream)| stream)
    }
}

impl Future for Launch<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        if let Stage::Sim(sim) = &this.stage {
            if !sim.poll_finished(cx) {
                return Poll::Pending;
            }
        }
        if let Stage::Running(running) = &this.stage {
            if !observe(running, this.stream()) {
                let first_pending_poll = {
                    let mut state = lock(&running.shared);
                    if state.done {
                        // The callback ran meanwhile.
                        None
                    } else {
                        match &state.waker {
                            Some(waker) if waker.will_wake(cx.waker()) => {}
                            _ => state.waker = Some(cx.waker().clone()),
                        }
                        Some(!std::mem::replace(&mut state.watched, true))
                    }
                };
                let stream = this.stream();
                match (
                    first_pending_poll,
                    stream.and_then(|s| Some((s, running.mark(s)?))),
                ) {
                    (None, _) => {}
                    (Some(true), Some((stream, mark))) => {
                        let watched = stream.notify_on_completion(
                            &mark.event,
                            mark.epoch,
                            mark.launch_id,
                            Arc::<Shared>::clone(&running.shared),
                        );
                        if watched.is_ok() {
                            return Poll::Pending;
                        }
                        // Its completion cannot be watched: wait for it here.
                        block_until_done(running, Some(stream));
                    }
                    // No mark could be recorded: wait for the stream here.
                    (Some(true), None) if stream.is_some() => block_until_done(running, stream),
                    // Watched already, or made up by the unit tests (completed by hand).
                    (Some(_), _) => return Poll::Pending,
                }
            }
        }
        Poll::Ready(this.take_outcome())
    }
}

impl Drop for Launch<'_> {
    /// Cancels an unfinished launch, then blocks until its kernel has stopped; see [`Launch`].
    fn drop(&mut self) {
        if let Stage::Sim(sim) = &self.stage {
            if !sim.is_finished() {
                sim.cancel();
                sim.wait();
            }
        }
        if let Stage::Running(running) = &self.stage {
            if !observe(running, self.stream()) {
                self.cancel();
                block_until_done(running, self.stream());
            }
        }
        if let Stage::Running(running) = std::mem::replace(&mut self.stage, Stage::Reported) {
            self.release(running);
        }
    }
}
