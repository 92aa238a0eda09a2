//! How a submitted CUDA launch learns that it is over: the state it shares with the driver's
//! completion callback, and the two ways of asking, without waiting (`observe`) and waiting
//! (`block_until_done`), through the launch's completion mark.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use super::future::Running;
use crate::abort::Record;
use crate::cuda::{CompletionListener, EventState, StreamState};

/// The completion state of a submitted CUDA launch, shared with the completion callback (when one
/// was enqueued).
pub(super) struct State {
    /// The launch is known to be over: its completion mark completed (or failed), a later launch
    /// of its stream was seen finished, or the callback ran.
    pub(super) done: bool,
    /// The driver reported an error instead of completion (a fault of this or earlier work).
    pub(super) failed: bool,
    /// A copy of the launch's failure record, when one was handed to [`complete`] (the unit tests
    /// do); otherwise the record is read from the stream's ring when the outcome is taken.
    pub(super) record: Option<Record>,
    /// [`Launch::cancel`](super::Launch::cancel) was called before the outcome was taken.
    pub(super) cancelled: bool,
    /// A completion callback was enqueued for the launch (the first pending poll does it).
    pub(super) watched: bool,
    pub(super) waker: Option<Waker>,
    /// A thread sleeps on the condvar for `done` (only for the launches the unit tests make up,
    /// which have no completion mark): [`complete`] wakes the condvar only then, since a
    /// notification is a system call even when nobody waits.
    pub(super) sleeping: bool,
}

impl State {
    pub(super) fn new() -> State {
        State {
            done: false,
            failed: false,
            record: None,
            cancelled: false,
            watched: false,
            waker: None,
            sleeping: false,
        }
    }
}

/// What [`Launch`](super::Launch) shares with the completion callback: the state and a condvar, on
/// which [`Launch::wait`](super::Launch::wait) blocks for launches without a completion event
/// (those the unit tests make up).
pub(super) type Shared = (Mutex<State>, Condvar);

/// The completion callback of a CUDA launch tells its shared state.
impl CompletionListener for Shared {
    fn completed(&self, succeeded: bool) {
        complete(self, succeeded, None);
    }
}

pub(super) fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.0.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Marks a launch complete (the first observation decides whether it `succeeded`; later ones
/// change nothing), keeps `record` if there is one, and wakes whoever waits on it. Called by the
/// driver's completion callback, on a driver thread (so it must not call CUDA), and by the
/// launch itself when its event says it is over.
pub(super) fn complete(shared: &Shared, succeeded: bool, record: Option<Record>) {
    let (waker, sleeping) = {
        let mut state = lock(shared);
        if !state.done {
            state.done = true;
            state.failed = !succeeded;
        }
        if state.record.is_none() {
            state.record = record;
        }
        (state.waker.take(), state.sleeping)
    };
    if sleeping {
        shared.1.notify_all();
    }
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// Whether `running`, a launch on `stream` (`None` only for the launches the unit tests make up),
/// is known to be over: its state says so, or a later launch of its stream finished (the launches
/// of a stream finish in order), or else its event says so when asked without waiting. Records
/// what it learnt.
pub(super) fn observe(running: &Running, stream: Option<&StreamState>) -> bool {
    if lock(&running.shared).done {
        return true;
    }
    let Some(stream) = stream else {
        return false;
    };
    if stream.finished_through(running.epoch, running.launch_id) {
        complete(&running.shared, true, None);
        return true;
    }
    let Some(mark) = running.mark(stream) else {
        return false;
    };
    match mark.event.query() {
        EventState::Complete => {
            complete(&running.shared, true, None);
            stream.mark_finished(mark.epoch, mark.launch_id);
        }
        EventState::Failed => complete(&running.shared, false, None),
        EventState::Pending => return false,
    }
    true
}

/// Blocks until `running`, a launch on `stream`, is over: sleeping in `cuEventSynchronize` on its
/// completion mark (a blocking-sync event), in `cuStreamSynchronize` when no mark could be
/// recorded, or, for a launch the unit tests made up, on the condvar until it is completed by
/// hand.
pub(super) fn block_until_done(running: &Running, stream: Option<&StreamState>) {
    if observe(running, stream) {
        return;
    }
    let Some(stream) = stream else {
        let mut state = lock(&running.shared);
        state.sleeping = true;
        while !state.done {
            state = running
                .shared
                .1
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        return;
    };
    // Sleep on the mark; without one, on the whole stream. Either way, what succeeded tells the
    // stream that every launch up to the point waited for has finished.
    let (succeeded, epoch, launch_id) = match running.mark(stream) {
        None => (
            stream.synchronize().is_ok(),
            running.epoch,
            running.launch_id,
        ),
        Some(mark) => {
            // A short launch ends within microseconds, and the sleeping wait costs ~13 µs of
            // wake-up latency on an H200: ask the event for up to `WAIT_SPIN` first, then sleep.
            // A long launch costs at most that much CPU more.
            let start = std::time::Instant::now();
            while start.elapsed() < WAIT_SPIN {
                std::hint::spin_loop();
                if observe(running, Some(stream)) {
                    return;
                }
            }
            (mark.event.synchronize().is_ok(), mark.epoch, mark.launch_id)
        }
    };
    complete(&running.shared, succeeded, None);
    if succeeded {
        stream.mark_finished(epoch, launch_id);
    }
}

/// How long [`Launch::wait`](super::Launch::wait) asks the completion mark's event before it sleeps
/// on it.
const WAIT_SPIN: std::time::Duration = std::time::Duration::from_micros(100);
