//! How the end of a launch is observed: completion marks and their events, the watcher streams
//! that run completion callbacks, and the driver's callback itself.
//!
//! # Completion
//!
//! Nothing on a launch's stream waits for the host, and submitting a launch records nothing but
//! the kernel: an event per launch would cost about half a microsecond of the host's time on
//! every launch, most of them never awaited one by one. The stream keeps, in `finished`, the
//! latest launch known to have finished; every launch before it has finished too. A launch whose
//! outcome is asked for and that is not known to be finished gets a *completion mark*
//! ([`CompletionMark`]: an event, `CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC`, reused
//! across the stream's marks, recorded at the stream's current end, with the id of the last launch
//! submitted before it). Whoever wants the outcome asks the mark's event: `cuEventQuery` without
//! waiting, `cuEventSynchronize` to sleep until it completes; either way a completed mark tells
//! `finished` about every launch before it. A future that must be woken gets, on its first
//! pending poll, a `cuStreamWaitEvent` for the mark's event and then a `cuStreamAddCallback`
//! enqueued on one of the stream's *watcher streams* ([`StreamState::notify_on_completion`]): the
//! host round trip of the callback delays only the watcher, never the launch stream. The slot of
//! the launch in the record ring is read after completion, when the outcome is taken
//! ([`StreamState::failure_record`]).

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use cudarc::driver::{sys, CudaContext, CudaStream};

use super::stream::StreamState;
use super::{bind, cuda, driver_error};
use crate::abort::RECORD_SLOTS;
use crate::error::{Error, Result};

/// A stream that runs completion callbacks for the launches of one [`StreamState`]: it waits for
/// a launch's event, then runs the callback, in the order they were enqueued.
pub(super) struct Watcher {
    pub(super) stream: Arc<CudaStream>,
    /// `(epoch, launch id)` of the latest launch a callback was enqueued for. A launch after it
    /// may be appended: its callback then runs right when it finishes, since the launches of one
    /// stream finish in order.
    frontier: (u32, u32),
}

/// The order of launches of a stream across epochs: `epoch << 32 | launch_id`.
fn finished_key(epoch: u32, launch_id: u32) -> u64 {
    (u64::from(epoch) << 32) | u64::from(launch_id)
}

/// Flags of the completion events: no timing (cheaper to record), and blocking synchronization,
/// so that a thread waiting in `cuEventSynchronize` sleeps instead of spinning.
const COMPLETION_EVENT_FLAGS: u32 = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    | sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;

/// Most completion events a stream keeps for reuse: enough for four rings' worth of launches in
/// flight; beyond it, events of finished launches are destroyed.
pub(super) const EVENT_POOL_MAX: usize = 4 * RECORD_SLOTS as usize;

/// Most watcher streams of one stream. A launch polled for the first time while every watcher
/// already waits for a later launch is appended to the watcher with the earliest frontier: its
/// future is then woken when that later launch finishes, not earlier.
pub(super) const MAX_WATCHERS: usize = 8;

impl StreamState {
    /// Records a completion event at the current end of the stream: it completes when the work
    /// issued so far has finished, the last launch submitted included, which the mark names. The
    /// launch-id counter is held meanwhile, so that no launch is submitted between reading its id
    /// and recording the event. The stream does not wait for anything.
    pub(crate) fn mark_completion(&self) -> Result<CompletionMark> {
        bind(self.stream.context())?;
        let counter = self.counter.lock().unwrap_or_else(PoisonError::into_inner);
        let reused = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let event = match reused {
            Some(event) => event,
            None => LaunchEvent::new(self.stream.context())?,
        };
        event.record(&self.stream)?;
        Ok(CompletionMark {
            event,
            epoch: counter.epoch,
            launch_id: counter.last,
        })
    }

    /// Notes that launch `launch_id` of epoch `epoch` finished without a driver error (its
    /// completion event completed): so did every launch of the stream before it.
    pub(crate) fn mark_finished(&self, epoch: u32, launch_id: u32) {
        self.finished
            .fetch_max(finished_key(epoch, launch_id), Ordering::Release);
    }

    /// Whether launch `launch_id` of epoch `epoch` is known to have finished without a driver
    /// error, because it or a later launch of the stream was seen finished.
    pub(crate) fn finished_through(&self, epoch: u32, launch_id: u32) -> bool {
        finished_key(epoch, launch_id) <= self.finished.load(Ordering::Acquire)
    }

    /// Keeps the event of a completed completion mark for a later mark.
    pub(crate) fn recycle(&self, event: LaunchEvent) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if events.len() < EVENT_POOL_MAX {
            events.push(event);
        }
    }

    /// Arranges for `listener` to be told ([`CompletionListener::completed`]) from a driver thread
    /// once `event`, the event of a completion mark through launch `launch_id` of epoch `epoch`
    /// ([`CompletionMark`]), has completed
    /// (or the context has failed): on one of the stream's watcher streams, a
    /// `cuStreamWaitEvent` for the event followed by a `cuStreamAddCallback`. The launch's own
    /// stream waits for nothing.
    ///
    /// The watcher is the first whose latest callback is for an earlier launch, so that callbacks
    /// of launches polled in their submission order run as soon as each launch finishes; a launch
    /// polled after a later one of the same stream gets another watcher (up to
    /// [`MAX_WATCHERS`]).
    ///
    /// This uses `cuStreamAddCallback`, not `cuLaunchHostFunc`: after a kernel fault the driver
    /// (measured with driver 580 on an H200) never runs functions enqueued with
    /// `cuLaunchHostFunc`, which would leave the launch pending forever, while it does run stream
    /// callbacks, passing them the error.
    pub(crate) fn notify_on_completion(
        &self,
        event: &LaunchEvent,
        epoch: u32,
        launch_id: u32,
        listener: Arc<dyn CompletionListener>,
    ) -> Result<()> {
        bind(self.stream.context())?;
        let key = (epoch, launch_id);
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        let index = match watchers.iter().position(|w| w.frontier < key) {
            Some(index) => index,
            None if watchers.len() < MAX_WATCHERS => {
                let stream = self
                    .stream
                    .context()
                    .new_stream_with_priority(self.watcher_priority)
                    .map_err(cuda("cuStreamCreateWithPriority"))?;
                watchers.push(Watcher {
                    stream,
                    frontier: (0, 0),
                });
                watchers.len() - 1
            }
            None => watchers
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| w.frontier)
                .map_or(0, |(i, _)| i),
        };
        let Some(watcher) = watchers.get_mut(index) else {
            return Err(Error::Cuda {
                call: "cuStreamCreate",
                message: "no stream to watch the launch's completion on".to_string(),
            });
        };
        // SAFETY: both handles are valid: the watcher stream is owned by `watchers`, the event by
        // `event`, and both belong to this stream's context, which is current. The wait captures
        // the event's latest record now; later records of the event do not affect it.
        unsafe { sys::cuStreamWaitEvent(watcher.stream.cu_stream(), event.event, 0) }
            .result()
            .map_err(cuda("cuStreamWaitEvent"))?;
        let raw = Box::into_raw(Box::new(Completion { listener })).cast::<c_void>();
        // SAFETY: `stream_callback` is an `extern "C"` fn of the expected signature that never
        // unwinds and calls no CUDA function (nor may the listener it tells). `raw` owns a
        // `Box<Completion>` handed over to the callback, which the driver calls exactly once; the
        // box owns everything the callback touches. Flags must be 0. The stream is valid and its
        // context is current.
        let status = unsafe {
            sys::cuStreamAddCallback(watcher.stream.cu_stream(), Some(stream_callback), raw, 0)
        };
        if let Err(err) = status.result() {
            // SAFETY: the driver did not accept the callback, so it will never run; the box
            // `raw` owns is reclaimed here, exactly once.
            drop(unsafe { Box::from_raw(raw.cast::<Completion>()) });
            return Err(driver_error("cuStreamAddCallback", err));
        }
        watcher.frontier = watcher.frontier.max(key);
        Ok(())
    }
}

/// Whom the completion callback of a launch tells that the launch is over: the launch's shared
/// state, which the launch module hands to [`StreamState::notify_on_completion`]. This layer
/// knows nothing more of launches.
pub(crate) trait CompletionListener: Send + Sync {
    /// The watched work is over: `succeeded` unless the driver reported an error instead (a fault
    /// of this or earlier work). Called once, on a driver thread, inside a stream callback: it
    /// must not call CUDA, and a panic in it is swallowed.
    fn completed(&self, succeeded: bool);
}

/// What a completion callback owns: whom to tell, the launch's shared state.
struct Completion {
    listener: Arc<dyn CompletionListener>,
}

/// The driver's completion callback of a launch, on a watcher stream; see
/// [`StreamState::notify_on_completion`].
unsafe extern "C" fn stream_callback(
    _stream: sys::CUstream,
    status: sys::CUresult,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the pointer `notify_on_completion` produced with `Box::into_raw`
    // from a `Box<Completion>`, and the driver calls this callback exactly once, so the box is
    // reclaimed exactly once.
    let completion = unsafe { Box::from_raw(user_data.cast::<Completion>()) };
    let succeeded = status == sys::CUresult::CUDA_SUCCESS;
    // A panic must not unwind into the driver (a waker could panic); there is no one to tell.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        completion.listener.completed(succeeded)
    }));
}

/// Whether a launch's completion event has completed; see [`LaunchEvent::query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventState {
    /// The work before the event has not finished yet.
    Pending,
    /// It has finished.
    Complete,
    /// The driver reported an error instead (a fault of the context).
    Failed,
}

/// A completion event recorded at some point of a stream ([`StreamState::mark_completion`]), and
/// the last launch submitted on the stream before that point: when the event completes, that
/// launch and every launch of the stream before it have finished.
pub(crate) struct CompletionMark {
    pub(crate) event: LaunchEvent,
    /// The epoch of the stream's launch-id counter that `launch_id` belongs to.
    pub(crate) epoch: u32,
    /// The id of the last launch submitted before the event (0 before the first).
    pub(crate) launch_id: u32,
}

/// The event of a [`CompletionMark`] (`CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC`), reused
/// across the marks of the stream.
pub(crate) struct LaunchEvent {
    ctx: Arc<CudaContext>,
    event: sys::CUevent,
}

// SAFETY: an event handle is a plain driver handle; the driver API is thread-safe, and the event
// stays valid on every thread until `LaunchEvent` destroys it, once, on drop.
unsafe impl Send for LaunchEvent {}

// SAFETY: as for `Send`; `&LaunchEvent` only queries and synchronizes the event, both
// thread-safe driver calls.
unsafe impl Sync for LaunchEvent {}

impl LaunchEvent {
    fn new(ctx: &Arc<CudaContext>) -> Result<LaunchEvent> {
        bind(ctx)?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        // SAFETY: `event` is a valid out-pointer; the flags are valid event flags. The context
        // is current on this thread.
        unsafe { sys::cuEventCreate(&mut event, COMPLETION_EVENT_FLAGS) }
            .result()
            .map_err(cuda("cuEventCreate"))?;
        Ok(LaunchEvent {
            ctx: Arc::clone(ctx),
            event,
        })
    }

    /// Records the event at the current end of `stream`, a stream of the event's context.
    fn record(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: the event is valid while `self` is; the stream is valid while the caller's
        // reference is, and belongs to the event's context, which the caller made current
        // (`mark_completion` binds it first).
        unsafe { sys::cuEventRecord(self.event, stream.cu_stream()) }
            .result()
            .map_err(cuda("cuEventRecord"))
    }

    /// Whether the work before the event has finished, without waiting (`cuEventQuery`). When
    /// the context cannot be made current, the event counts as pending.
    pub(crate) fn query(&self) -> EventState {
        if bind(&self.ctx).is_err() {
            return EventState::Pending;
        }
        // SAFETY: the event is valid while `self` is; its context is current.
        match unsafe { sys::cuEventQuery(self.event) } {
            sys::CUresult::CUDA_SUCCESS => EventState::Complete,
            sys::CUresult::CUDA_ERROR_NOT_READY => EventState::Pending,
            _ => EventState::Failed,
        }
    }

    /// Blocks the thread until the work before the event has finished (`cuEventSynchronize`;
    /// the thread sleeps, as the event was created with `CU_EVENT_BLOCKING_SYNC`). An error
    /// means the driver reported a failure instead, or the context could not be made current.
    pub(crate) fn synchronize(&self) -> Result<()> {
        bind(&self.ctx)?;
        // SAFETY: the event is valid while `self` is; its context is current.
        unsafe { sys::cuEventSynchronize(self.event) }
            .result()
            .map_err(cuda("cuEventSynchronize"))
    }
}

impl Drop for LaunchEvent {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: the event was created by `LaunchEvent::new` in this context and is
            // destroyed only here, once. Destroying an event that is still recorded on a stream,
            // or waited for by one, is allowed: the driver releases it once that work is done.
            let _ = unsafe { sys::cuEventDestroy_v2(self.event) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_keys_order_epochs_before_ids() {
        assert!(finished_key(0, u32::MAX) < finished_key(1, 1));
        assert!(finished_key(0, 1) < finished_key(0, 2));
        assert_eq!(finished_key(0, 0), 0);
    }
}
