//! The simulator's streams: each is a queue of jobs (launches, copies, event records and waits)
//! that a worker thread of its own runs in submission order, as a CUDA stream runs its work. So a
//! launch returns before its kernel has run, no thread that issues work runs it, and work on two
//! streams runs at the same time.
//!
//! What orders work across streams: the jobs' uses of buffers (a job waits for the earlier
//! conflicting uses of its buffers, `memory`), and events (a job that waits for an event of
//! another stream). Every use is registered and every job queued under one process-wide lock
//! ([`submission_order`]), so each wait is for work submitted before the waiting job, and the
//! waits cannot form a cycle.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::SimConfig;

/// One unit of a stream's work, run once on the stream's worker thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How long a worker without work waits for more before its thread ends (the next job starts
/// another).
const IDLE: Duration = Duration::from_secs(1);

/// The stack of a worker thread: kernels' futures live on it, with their local arrays.
const WORKER_STACK: usize = 16 << 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Held while a launch registers its buffers' uses and is queued, and while copies and event
/// records and waits are queued: the one order of submissions that every wait follows.
pub(crate) fn submission_order() -> MutexGuard<'static, ()> {
    static ORDER: Mutex<()> = Mutex::new(());
    lock(&ORDER)
}

/// A stream's queue of jobs and the state of its worker.
pub(crate) struct SimQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    jobs: VecDeque<Job>,
    /// Jobs queued so far.
    queued: u64,
    /// Jobs finished so far (the first `finished` of the queued ones).
    finished: u64,
    /// A worker thread runs the queue.
    worker: bool,
    /// No stream handle is left: the worker ends once the queue is empty.
    closed: bool,
}

impl SimQueue {
    fn new() -> Arc<SimQueue> {
        Arc::new(SimQueue {
            state: Mutex::new(QueueState {
                jobs: VecDeque::new(),
                queued: 0,
                finished: 0,
                worker: false,
                closed: false,
            }),
            changed: Condvar::new(),
        })
    }

    /// Queues `job` behind the stream's earlier work, starting the worker if none runs.
    pub(crate) fn push(self: &Arc<Self>, job: Job) {
        let mut state = lock(&self.state);
        state.jobs.push_back(job);
        state.queued += 1;
        if state.worker {
            drop(state);
            self.changed.notify_all();
            return;
        }
        state.worker = true;
        drop(state);
        let queue = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("gpu-async-sim".to_string())
            .stack_size(WORKER_STACK)
            .spawn(move || queue.work());
        if spawned.is_err() {
            // No thread could be made: run the queue here rather than lose its work.
            lock(&self.state).worker = false;
            self.drain_here();
        }
    }

    /// The worker's loop: runs the jobs in order; ends when the queue stays empty for [`IDLE`]
    /// or its stream is gone.
    fn work(&self) {
        while let Some(job) = self.next_job() {
            self.run(job);
        }
    }

    fn next_job(&self) -> Option<Job> {
        let mut state = lock(&self.state);
        let deadline = Instant::now() + IDLE;
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            let now = Instant::now();
            if state.closed || now >= deadline {
                state.worker = false;
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Runs one job; a job that panics (a bug: kernels' panics are caught inside) still counts
    /// as finished, so that nothing waits for it forever.
    fn run(&self, job: Job) {
        let _ = catch_unwind(AssertUnwindSafe(job));
        lock(&self.state).finished += 1;
        self.changed.notify_all();
    }

    /// Runs the queued jobs on the calling thread (when no worker thread could be started).
    fn drain_here(&self) {
        loop {
            let job = {
                let mut state = lock(&self.state);
                if state.worker {
                    return;
                }
                match state.jobs.pop_front() {
                    Some(job) => job,
                    None => return,
                }
            };
            self.run(job);
        }
    }

    /// Blocks until the jobs queued before the call have finished.
    pub(crate) fn synchronize(&self) {
        let mut state = lock(&self.state);
        let target = state.queued;
        while state.finished < target {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.changed.notify_all();
    }
}

/// A simulator stream: what [`Stream`](crate::Stream) handles share. When the last handle goes,
/// the worker finishes the queued work and ends.
pub(crate) struct SimStream {
    queue: Arc<SimQueue>,
}

impl SimStream {
    pub(crate) fn queue(&self) -> &Arc<SimQueue> {
        &self.queue
    }

    /// Queues an event record: `event` completes when the stream reaches it.
    pub(crate) fn record(&self, event: &Arc<SimEvent>) {
        let event = Arc::clone(event);
        let _order = submission_order();
        self.queue.push(Box::new(move || event.complete()));
    }

    /// Makes the stream's later work wait until `event` has completed.
    pub(crate) fn wait_event(&self, event: &Arc<SimEvent>) {
        let event = Arc::clone(event);
        let _order = submission_order();
        self.queue.push(Box::new(move || {
            event.wait();
        }));
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        self.queue.close();
    }
}

/// A point in a simulator stream: complete, with the host's clock at that moment, once the
/// stream's worker has run the work queued before it.
pub(crate) struct SimEvent {
    reached: Mutex<Option<Instant>>,
    changed: Condvar,
}

impl SimEvent {
    pub(crate) fn new() -> Arc<SimEvent> {
        Arc::new(SimEvent {
            reached: Mutex::new(None),
            changed: Condvar::new(),
        })
    }

    fn complete(&self) {
        *lock(&self.reached) = Some(Instant::now());
        self.changed.notify_all();
    }

    /// Blocks until the event has completed; returns when the stream reached it.
    pub(crate) fn wait(&self) -> Instant {
        let mut reached = lock(&self.reached);
        loop {
            if let Some(at) = *reached {
                return at;
            }
            reached = self
                .changed
                .wait(reached)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// What a simulator [`Device`](crate::Device) holds: its schedule and its streams.
pub(crate) struct SimDevice {
    pub(crate) config: SimConfig,
    default: Arc<SimStream>,
    /// Every stream of the device (for [`SimDevice::synchronize`]); a stream whose handles are
    /// gone stays here while its worker still runs its work.
    queues: Mutex<Vec<Weak<SimQueue>>>,
}

impl SimDevice {
    pub(crate) fn new(config: SimConfig) -> SimDevice {
        let default = Arc::new(SimStream {
            queue: SimQueue::new(),
        });
        let queues = Mutex::new(vec![Arc::downgrade(&default.queue)]);
        SimDevice {
            config,
            default,
            queues,
        }
    }

    /// The default stream.
    pub(crate) fn default_stream(&self) -> &Arc<SimStream> {
        &self.default
    }

    /// A new stream of the device.
    pub(crate) fn new_stream(&self) -> Arc<SimStream> {
        let stream = Arc::new(SimStream {
            queue: SimQueue::new(),
        });
        let mut queues = lock(&self.queues);
        queues.retain(|q| q.strong_count() > 0);
        queues.push(Arc::downgrade(&stream.queue));
        stream
    }

    /// Blocks until the work queued on every stream of the device before the call has finished.
    pub(crate) fn synchronize(&self) {
        let queues: Vec<Arc<SimQueue>> = lock(&self.queues)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for queue in queues {
            queue.synchronize();
        }
    }
}

impl std::fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevice")
            .field("config", &self.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_runs_its_jobs_in_order_on_a_worker_that_ends_with_the_stream() {
        let device = SimDevice::new(SimConfig::default());
        let stream = device.new_stream();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let caller = std::thread::current().id();
        for i in 0..50 {
            let seen = Arc::clone(&seen);
            stream.queue().push(Box::new(move || {
                assert_ne!(std::thread::current().id(), caller);
                lock(&seen).push(i);
            }));
        }
        let event = SimEvent::new();
        stream.record(&event);
        // The default stream waits for the event of the other one.
        let after = Arc::clone(&seen);
        device.default_stream().wait_event(&event);
        device
            .default_stream()
            .queue()
            .push(Box::new(move || lock(&after).push(50)));
        device.synchronize();
        assert_eq!(*lock(&seen), (0..=50).collect::<Vec<_>>());
        let queue = Arc::clone(stream.queue());
        drop(stream);
        // The worker ends once its stream's handles are gone.
        let start = Instant::now();
        while lock(&queue.state).worker {
            assert!(start.elapsed() < IDLE / 2, "the worker outlived its stream");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
