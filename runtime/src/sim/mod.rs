//! The simulator backend: runs a kernel's shadow code (the user's async fns over the real types of
//! [`crate::device`]) on the CPU, one block after another.
//!
//! A launch does not run inside the call that issues it: it is a job on its stream's queue, which
//! a worker thread of the stream runs in submission order (`queue`), as a CUDA stream runs its
//! kernels; the job owns what it needs (the buffers' memory is shared and owned, `memory`), and
//! settles the state its [`Launch`](crate::Launch) shares with it (`run`). The kernel stops
//! itself, at its next block, step, await or loop iteration, when the launch is cancelled or a
//! role runs past the watchdog's bound without waiting (`watch`).
//!
//! Each block's kernel future is driven by a single-threaded executor whose order is a
//! [`Schedule`]: `join!` runs one role per *step*, from one await on a channel to the next (or
//! until it waits or finishes), and the schedule picks the role of each step among those that
//! can move: seeded random by default, the fixed round-robin order, or one schedule of a bounded
//! exhaustive exploration ([`explore()`](crate::explore())). Channels are bounded rings with the
//! GPU's slot discipline (the end-of-stream marker of a dropped sender takes a slot, as on the
//! GPU), and parallel iterators are plain loops. A role that waits on a channel can move again
//! once that channel changed; when no role can move while some are unfinished, every role waits on
//! another and the block can never finish: the launch fails with [`Error::Deadlock`], naming each
//! role and the await (with its source location) it is stuck on, and the schedule that replays
//! it, instead of hanging. A panic in kernel code (an index out of bounds, say) fails the launch
//! with [`Error::KernelPanic`] naming the role, the block and the panic's source location.
//!
//! A sender dropped while its ring is full cannot place its end-of-stream marker yet; since a
//! drop cannot wait, the close is *pending*: the role's later channel effects (sends, releases,
//! other closes) queue behind it, its next await waits for it (reported as ``is closing channel
//! `tx/rx` ``), and the role is not finished before it completes; which is what the role does on
//! the GPU, where the close is a wait of its own.
//!
//! To learn that location without printing the panic, the simulator installs a panic hook once
//! per process. It chains to the hook that was installed before it: a panic outside a simulated
//! kernel goes to the previous hook unchanged; one inside a simulated kernel is recorded for the
//! launch's error instead of printed. A program that later replaces the hook loses only the
//! location (the error then says `-`).

mod atomic;
mod memory;
mod queue;
mod run;
mod schedule;
mod trace;
mod watch;

pub use atomic::{AtomicScalar, AtomicView};
pub(crate) use memory::{queue_copy, SimMem};
pub use memory::{SimRead, SimSlice, SimSliceMut, SimWrite};
pub(crate) use queue::{submission_order, SimDevice, SimEvent, SimQueue, SimStream};
pub(crate) use run::{launch_job, SimLaunch};
pub use run::{SimRun, SimTarget};
pub use schedule::SimOptions;
pub(crate) use trace::SimTracing;
pub(crate) use watch::{checkpoint, tick};

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, VecDeque};
use std::future::Future;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::pin;
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};

use crate::error::{Error, Result, RoleWait};
use crate::schedule::Schedule;
use crate::spec::{KernelSpec, SiteKind};
use schedule::{Explorer, Picker};
use watch::Stop;

/// What the launches of one simulator device share: its schedule (or why the schedule asked for
/// in the environment is not one) and, for a [`Schedule::Replay`], the explorer whose choices run
/// on across the device's launches.
#[derive(Debug, Clone)]
pub(crate) struct SimConfig {
    schedule: std::result::Result<Schedule, String>,
    explorer: Option<Arc<Mutex<Explorer>>>,
}

impl SimConfig {
    pub(crate) fn new(options: SimOptions) -> SimConfig {
        let explorer = match &options.schedule {
            Schedule::Replay { choices } => {
                Some(Arc::new(Mutex::new(Explorer::new(choices.clone()))))
            }
            _ => None,
        };
        SimConfig {
            schedule: Ok(options.schedule),
            explorer,
        }
    }

    /// The configuration of [`SimOptions::from_env`]; a bad value fails every launch.
    pub(crate) fn from_env() -> SimConfig {
        match SimOptions::from_env() {
            Ok(options) => SimConfig::new(options),
            Err(err) => SimConfig {
                schedule: Err(err.to_string()),
                explorer: None,
            },
        }
    }

    /// The device's schedule (`None` when the environment variable did not hold one).
    pub(crate) fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref().ok()
    }

    /// The choices a replay device has made so far (for [`explore()`](crate::explore())).
    pub(crate) fn explorer(&self) -> Option<Explorer> {
        let explorer = self.explorer.as_ref()?;
        Some(match explorer.lock() {
            Ok(e) => e.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        })
    }
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig::new(SimOptions::default())
    }
}

/// What the running block knows about itself; one per host thread.
#[derive(Default)]
struct BlockState {
    block: u32,
    grid: u32,
    /// Counts every state change (a channel's, a role's end).
    progress: u64,
    roles: Vec<RoleState>,
    current: Option<usize>,
    /// The launched kernel (its sites name the channels in reports); `None` outside a launch.
    spec: Option<&'static KernelSpec>,
    /// The device's schedule, for reports.
    schedule: Option<Schedule>,
    picker: Picker,
    /// The role of the previous step.
    previous: Option<usize>,
    /// Set when a step found no role that can move while some are unfinished.
    stuck: bool,
    /// `progress` when the running step began.
    step_start: u64,
    /// Per channel created in the block (by creation order).
    channels: Vec<ChannelState>,
    /// Closes by code outside the roles that wait for a free slot.
    outside: Vec<Deferred>,
    /// What the roles do when, in a traced block of a traced launch.
    trace: Option<trace::SimTrace>,
}

struct RoleState {
    name: &'static str,
    warps: Range<u32>,
    finished: bool,
    run: Run,
    wait: Option<Wait>,
    /// Channel effects behind a close that waits for a free slot, in program order.
    deferred: VecDeque<Deferred>,
}

/// Whether a role can be picked for a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Not stepped yet, or stepping now.
    Ready,
    /// It yielded at an await that may complete.
    Yielded,
    /// It waits until `channel` changes (`None`: until anything changes), as of `since` (the
    /// channel's version, or the block's progress).
    Waiting { channel: Option<usize>, since: u64 },
}

/// What a role waits for, as the channel futures report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitKind {
    /// A free slot, in `reserve()`.
    Reserve,
    /// A full slot, in `recv()`.
    Recv,
    /// A free slot for the end-of-stream marker of a dropped sender.
    Close,
    /// The other roles of a barrier, in `wait()`.
    Barrier,
    /// The value of a one-shot, in `recv()`.
    Oneshot,
}

#[derive(Debug, Clone, Copy)]
struct Wait {
    kind: WaitKind,
    channel: usize,
    at: Option<&'static Location<'static>>,
}

struct ChannelState {
    /// Counts the channel's state changes.
    version: u64,
    created_at: &'static Location<'static>,
    /// Where its `reserve()`s and `recv()`s were called (a few), to find its name in the spec.
    seen: Vec<(WaitKind, &'static Location<'static>)>,
}

/// A channel effect of a role: applied at once unless an earlier one of the same role waits.
pub(crate) struct Deferred {
    channel: usize,
    /// Applies the effect if it can; `false` while it must wait (only a close can).
    apply: Box<dyn FnMut() -> bool>,
}

impl Deferred {
    pub(crate) fn new(channel: usize, apply: Box<dyn FnMut() -> bool>) -> Deferred {
        Deferred { channel, apply }
    }
}

/// What [`join_roles`](crate::device::join_roles) does next.
pub(crate) enum Step {
    /// Step this role.
    Run(usize),
    /// Every role has finished.
    Finished,
    /// No role can move while some are unfinished: a deadlock.
    Stuck,
}

thread_local! {
    /// Set while this thread polls a simulated kernel: its panics are recorded, not printed.
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    /// Where the last captured panic happened.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CAPTURING.with(Cell::get) {
                let location = info.location().map(|l| l.to_string());
                PANIC_LOCATION.with(|p| *p.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
}

thread_local! {
    static BLOCK: RefCell<BlockState> = RefCell::new(BlockState { grid: 1, ..Default::default() });
}

/// Runs `f` on the block's state. `f` must not call back into the simulator (nor apply a
/// [`Deferred`], which does).
fn with_block<R>(f: impl FnOnce(&mut BlockState) -> R) -> R {
    BLOCK.with(|b| f(&mut b.borrow_mut()))
}

/// `(block index, blocks in the grid)` of the running block; `(0, 1)` outside a launch.
pub(crate) fn block_position() -> (u32, u32) {
    with_block(|b| (b.block, b.grid))
}

/// A new channel of the running block, created at `at`; returns its id.
pub(crate) fn register_channel(at: &'static Location<'static>) -> usize {
    with_block(|b| {
        b.channels.push(ChannelState {
            version: 0,
            created_at: at,
            seen: Vec::new(),
        });
        b.channels.len() - 1
    })
}

/// Channel `id` changed state: roles waiting on it may move.
pub(crate) fn channel_changed(id: usize) {
    with_block(|b| {
        b.progress += 1;
        if let Some(c) = b.channels.get_mut(id) {
            c.version += 1;
        }
    });
}

/// A `reserve()` or `recv()` at `at` ran on channel `id` (and changed it, when `changed`).
pub(crate) fn channel_used(
    id: usize,
    kind: WaitKind,
    at: &'static Location<'static>,
    changed: bool,
) {
    with_block(|b| {
        if changed {
            b.progress += 1;
        }
        if let Some(c) = b.channels.get_mut(id) {
            if changed {
                c.version += 1;
            }
            c.remember(kind, at);
        }
        if let (Some(t), Some(role)) = (b.trace.as_mut(), b.current) {
            t.done(role, kind, id, at);
        }
    });
}

/// An await of `kind` on `id` at `at` (a barrier's, a one-shot's) completed.
pub(crate) fn wait_done(kind: WaitKind, id: usize, at: &'static Location<'static>) {
    with_block(|b| {
        if let (Some(t), Some(role)) = (b.trace.as_mut(), b.current) {
            t.done(role, kind, id, at);
        }
    });
}

/// The running role copied into (`into`) or out of a slot of channel `id`.
pub(crate) fn note_copy(into: bool, id: usize) {
    with_block(|b| {
        if let (Some(t), Some(role)) = (b.trace.as_mut(), b.current) {
            t.copy(role, into, id);
        }
    });
}

impl ChannelState {
    fn remember(&mut self, kind: WaitKind, at: &'static Location<'static>) {
        if self.seen.len() < 8 && !self.seen.iter().any(|&(k, l)| k == kind && l == at) {
            self.seen.push((kind, at));
        }
    }
}

/// Called by an await on a channel when it is first polled: whether the running role yields
/// here (returns `Pending` once) so that the schedule picks the next step's role.
pub(crate) fn yield_now() -> bool {
    with_block(|b| {
        if !b.picker.yields() {
            return false;
        }
        match b.current.and_then(|i| b.roles.get_mut(i)) {
            Some(role) => {
                role.run = Run::Yielded;
                true
            }
            None => false,
        }
    })
}

/// The running role is about to return `Pending` from the await at `at`, which waits for
/// channel `id` to change.
pub(crate) fn note_wait(kind: WaitKind, id: usize, at: &'static Location<'static>) {
    with_block(|b| {
        let version = b.channels.get(id).map_or(0, |c| c.version);
        if let Some(c) = b.channels.get_mut(id) {
            c.remember(kind, at);
        }
        let step_start = b.step_start;
        if let (Some(t), Some(role)) = (b.trace.as_mut(), b.current) {
            t.wait(role, kind, id, Some(at));
        }
        if let Some(role) = b.current.and_then(|i| b.roles.get_mut(i)) {
            // The first await the step finds waiting is the one reported; a role that runs
            // several futures (`join!`, `select!`) may wait on several at once.
            if role.wait.is_none() {
                role.wait = Some(Wait {
                    kind,
                    channel: id,
                    at: Some(at),
                });
            }
            role.run = match role.run {
                // Another future of the step yielded and can go on: the role can move.
                Run::Yielded => Run::Yielded,
                // Waits on two channels: anything that changes after this step began may
                // release one of them.
                Run::Waiting {
                    channel: Some(other),
                    ..
                } if other != id => Run::Waiting {
                    channel: None,
                    since: step_start,
                },
                Run::Waiting { channel: None, .. } => Run::Waiting {
                    channel: None,
                    since: step_start,
                },
                _ => Run::Waiting {
                    channel: Some(id),
                    since: version,
                },
            };
        }
    });
}

/// Applies a channel effect of the running code: at once, unless an earlier effect of the same
/// role waits (then it queues behind it); a close that finds no free slot waits.
pub(crate) fn submit(effect: Deferred) {
    let mut effect = Some(effect);
    let role = with_block(|b| {
        let current = b.current?;
        let role = b.roles.get_mut(current)?;
        if !role.deferred.is_empty() {
            role.deferred.extend(effect.take());
        }
        Some(current)
    });
    let Some(mut effect) = effect else {
        return;
    };
    if (effect.apply)() {
        return;
    }
    with_block(|b| match role.filter(|&i| i < b.roles.len()) {
        Some(i) => b.block_on(i, effect),
        None => b.outside.push(effect),
    });
}

/// Applies what waits in the running role's queue (or outside the roles); `false` when a close
/// still waits for a free slot (the role's wait then says so).
pub(crate) fn flush_current() -> bool {
    match with_block(|b| b.current) {
        Some(index) => flush_role(index),
        None => {
            flush_outside();
            true
        }
    }
}

fn flush_role(index: usize) -> bool {
    loop {
        let next = with_block(|b| b.roles.get_mut(index).and_then(|r| r.deferred.pop_front()));
        let Some(mut effect) = next else {
            return true;
        };
        if (effect.apply)() {
            continue;
        }
        with_block(|b| b.block_on(index, effect));
        return false;
    }
}

fn flush_outside() {
    let waiting = with_block(|b| std::mem::take(&mut b.outside));
    if waiting.is_empty() {
        return;
    }
    let mut still = Vec::new();
    for mut effect in waiting {
        if !(effect.apply)() {
            still.push(effect);
        }
    }
    with_block(|b| b.outside.extend(still));
}

impl BlockState {
    /// Role `index` waits for `effect` (a close) at the head of its queue.
    fn block_on(&mut self, index: usize, effect: Deferred) {
        let channel = effect.channel;
        let version = self.channels.get(channel).map_or(0, |c| c.version);
        if let Some(t) = self.trace.as_mut() {
            t.wait(index, WaitKind::Close, channel, None);
        }
        if let Some(role) = self.roles.get_mut(index) {
            role.wait = Some(Wait {
                kind: WaitKind::Close,
                channel,
                at: None,
            });
            role.run = Run::Waiting {
                channel: Some(channel),
                since: version,
            };
            role.deferred.push_front(effect);
        }
    }

    fn can_move(&self, role: &RoleState) -> bool {
        if role.finished {
            return false;
        }
        match role.run {
            Run::Ready | Run::Yielded => true,
            Run::Waiting {
                channel: Some(c),
                since,
            } => self.channels.get(c).is_none_or(|c| c.version != since),
            Run::Waiting {
                channel: None,
                since,
            } => self.progress != since,
        }
    }
}

pub(crate) fn register_roles(roles: impl Iterator<Item = (&'static str, Range<u32>)>) {
    with_block(|b| {
        b.roles = roles
            .map(|(name, warps)| RoleState {
                name,
                warps,
                finished: false,
                run: Run::Ready,
                wait: None,
                deferred: VecDeque::new(),
            })
            .collect();
        if let Some(t) = b.trace.as_mut() {
            t.roles(b.roles.len());
        }
        b.previous = None;
        b.progress += 1;
    });
}

/// Picks the role of the next step (after retrying the closes outside the roles).
pub(crate) fn next_step() -> Step {
    flush_outside();
    with_block(|b| {
        let candidates: Vec<usize> = (0..b.roles.len())
            .filter(|&i| b.can_move(&b.roles[i]))
            .collect();
        if candidates.is_empty() {
            if b.roles.iter().all(|r| r.finished) {
                return Step::Finished;
            }
            b.stuck = true;
            return Step::Stuck;
        }
        let continuing = b
            .previous
            .filter(|&p| b.roles.get(p).is_some_and(|r| r.run == Run::Yielded));
        let pick = b.picker.pick(&candidates, b.previous, continuing);
        b.previous = Some(pick);
        Step::Run(pick)
    })
}

/// Role `index` runs its step (unless the launch was cancelled: then the kernel stops here).
pub(crate) fn enter_role(index: usize) {
    with_block(|b| {
        b.current = Some(index);
        b.step_start = b.progress;
        if let Some(t) = b.trace.as_mut() {
            t.enter(index);
        }
        if let Some(role) = b.roles.get_mut(index) {
            role.wait = None;
            role.run = Run::Ready;
        }
    });
    watch::new_step();
    checkpoint();
}

/// Whether a role of the block other than the running one is unfinished (the watchdog bounds
/// the running role's step only then).
pub(crate) fn others_unfinished() -> bool {
    with_block(|b| {
        b.current.is_some_and(|current| {
            b.roles
                .iter()
                .enumerate()
                .any(|(i, r)| i != current && !r.finished)
        })
    })
}

/// Threads of the role being polled (32 per warp); 32 outside a role.
pub(crate) fn current_role_threads() -> usize {
    with_block(|b| {
        b.current
            .and_then(|i| b.roles.get(i))
            .map_or(32, |r| 32 * r.warps.len().max(1))
    })
}

/// Role `index` ended its step; `returned` when its future has completed. A role whose future
/// completed has finished once its queued effects (a pending close) are applied.
pub(crate) fn leave_role(index: usize, returned: bool) {
    let finished = returned && flush_role(index);
    with_block(|b| {
        b.current = None;
        if let Some(t) = b.trace.as_mut() {
            t.leave(index, finished);
        }
        let progress = b.progress;
        let Some(role) = b.roles.get_mut(index) else {
            return;
        };
        if finished {
            role.finished = true;
            role.wait = None;
            b.progress += 1;
        } else if role.run == Run::Ready && !returned {
            // Pending without a channel wait: a future outside gpu-async.
            role.run = Run::Waiting {
                channel: None,
                since: progress,
            };
        }
    });
}

/// One block of a simulated launch.
pub struct SimBlock {
    kernel: &'static str,
    block: u32,
}

impl SimBlock {
    /// Drives the block's kernel future to completion on the device's schedule.
    pub fn run<F: Future<Output = ()>>(&mut self, kernel: F) -> Result<()> {
        let mut kernel = pin!(kernel);
        let mut cx = Context::from_waker(Waker::noop());
        install_panic_hook();
        loop {
            let before = with_block(|b| {
                b.stuck = false;
                b.progress
            });
            CAPTURING.with(|c| c.set(true));
            let polled = catch_unwind(AssertUnwindSafe(|| kernel.as_mut().poll(&mut cx)));
            CAPTURING.with(|c| c.set(false));
            match polled {
                Ok(Poll::Ready(())) => return Ok(()),
                Ok(Poll::Pending) => {
                    let (stuck, progress) = with_block(|b| (b.stuck, b.progress));
                    if stuck || progress == before {
                        return Err(self.deadlock());
                    }
                }
                Err(payload) => match payload.downcast::<Stop>() {
                    Ok(stop) => return Err(self.stopped(*stop)),
                    Err(payload) => return Err(self.panic(payload)),
                },
            }
        }
    }

    fn deadlock(&self) -> Error {
        self.waits(|b, _, r| match r.wait {
            Some(wait) => b.describe(wait),
            None => (
                "waits on a future outside gpu-async".to_string(),
                "-".to_string(),
            ),
        })
    }

    /// The error of a kernel that stopped itself: cancelled, or its running role stopped by the
    /// watchdog (reported as the GPU's watchdog reports a wait, with the other roles' states).
    fn stopped(&self, stop: Stop) -> Error {
        let (at, bound) = match stop {
            Stop::Cancelled => {
                with_block(|b| b.current = None);
                return Error::Cancelled {
                    kernel: self.kernel,
                };
            }
            Stop::Watchdog { at, bound } => (at, bound),
        };
        let current = with_block(|b| b.current.take());
        self.waits(|b, i, r| match (r.run, r.wait) {
            _ if Some(i) == current => (
                format!(
                    "was stopped by the watchdog after {bound:?} in a loop that does not await"
                ),
                at.to_string(),
            ),
            (Run::Waiting { .. }, Some(wait)) => b.describe(wait),
            (Run::Waiting { .. }, None) => (
                "waits on a future outside gpu-async".to_string(),
                "-".to_string(),
            ),
            _ => (
                "is ready to run, but the simulator runs one role at a time and cannot switch \
                 away from a loop that does not await"
                    .to_string(),
                "-".to_string(),
            ),
        })
    }

    /// An [`Error::Deadlock`] of the block: each role with what `unfinished` says of it (what it
    /// does and where), unless it has finished, and the schedule that replays it.
    fn waits(
        &self,
        unfinished: impl Fn(&BlockState, usize, &RoleState) -> (String, String),
    ) -> Error {
        let (waits, schedule) = with_block(|b| {
            let waits = b
                .roles
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let (waiting_on, location) = if r.finished {
                        ("has finished".to_string(), String::from("-"))
                    } else {
                        unfinished(b, i, r)
                    };
                    RoleWait {
                        role: r.name.to_string(),
                        warps: r.warps.clone(),
                        waiting_on,
                        location,
                    }
                })
                .collect();
            let schedule = match (&b.schedule, &b.picker) {
                (Some(Schedule::Replay { .. }), Picker::Replay(explorer)) => {
                    let choices = match explorer.lock() {
                        Ok(e) => e.choices(),
                        Err(poisoned) => poisoned.into_inner().choices(),
                    };
                    Some(Schedule::Replay { choices })
                }
                (schedule, _) => schedule.clone(),
            };
            (waits, schedule)
        });
        Error::Deadlock {
            kernel: self.kernel,
            block: self.block,
            waits,
            schedule,
        }
    }

    fn panic(&self, payload: Box<dyn std::any::Any + Send>) -> Error {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-string payload".to_string()
        };
        let role = with_block(|b| {
            b.current
                .and_then(|i| b.roles.get(i))
                .map_or_else(|| "kernel".to_string(), |r| r.name.to_string())
        });
        with_block(|b| b.current = None);
        Error::KernelPanic {
            kernel: self.kernel,
            role,
            block: self.block,
            message,
            location: PANIC_LOCATION
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "-".to_string()),
            thread: None,
        }
    }
}

impl BlockState {
    /// What a role waits on and where, for [`RoleWait`].
    fn describe(&self, wait: Wait) -> (String, String) {
        let name = self.channel_name(wait.channel);
        let at = |at: Option<&Location<'_>>| at.map_or_else(|| "-".to_string(), |l| l.to_string());
        let created = self.channels.get(wait.channel).map(|c| c.created_at);
        let on = match &name {
            Some(n) => format!(" on channel `{n}`"),
            None => format!(" on the channel created at {}", at(created)),
        };
        match wait.kind {
            WaitKind::Reserve => (
                format!("waits for a free slot in `reserve()`{on}"),
                at(wait.at),
            ),
            WaitKind::Recv => (
                format!("waits for a full slot in `recv()`{on}"),
                at(wait.at),
            ),
            WaitKind::Oneshot => (
                format!(
                    "waits for the value in `recv()` of the one-shot created at {}",
                    at(created)
                ),
                at(wait.at),
            ),
            WaitKind::Barrier => (
                format!(
                    "waits for the other roles in `wait()` on the barrier created at {}",
                    at(created)
                ),
                at(wait.at),
            ),
            WaitKind::Close => {
                let (what, location) = match &name {
                    Some(n) => (format!("is closing channel `{n}`"), self.close_sites(n)),
                    None => (
                        format!("is closing the channel created at {}", at(created)),
                        "-".to_string(),
                    ),
                };
                (
                    format!("{what} (dropping its sender waits for a free slot)"),
                    location,
                )
            }
        }
    }

    /// The channel's name in the kernel (`tx/rx`); `None` when the spec does not tell.
    fn channel_name(&self, id: usize) -> Option<String> {
        self.channel_names().get(id).cloned().flatten()
    }

    /// The names of the block's channels in the kernel (`tx/rx`), from the spec's wait sites
    /// at the places where their `reserve()`s and `recv()`s were called. A helper inlined for
    /// several channels has one place but several sites (one per channel); since each channel is
    /// one name, a name certain for one channel is ruled out for the others.
    fn channel_names(&self) -> Vec<Option<String>> {
        let Some(spec) = self.spec else {
            return vec![None; self.channels.len()];
        };
        let mut candidates: Vec<Option<BTreeSet<&str>>> = self
            .channels
            .iter()
            .map(|channel| {
                let mut names: Option<BTreeSet<&str>> = None;
                for &(kind, at) in &channel.seen {
                    let prefix = match kind {
                        WaitKind::Reserve => "`reserve()` on channel `",
                        WaitKind::Recv => "`recv()` on channel `",
                        WaitKind::Close | WaitKind::Barrier | WaitKind::Oneshot => continue,
                    };
                    let here: BTreeSet<&str> = spec
                        .sites
                        .iter()
                        .filter(|s| {
                            s.kind == SiteKind::Wait && s.file == at.file() && s.line == at.line()
                        })
                        .filter_map(|s| s.message.strip_prefix(prefix)?.split('`').next())
                        .collect();
                    if here.is_empty() {
                        continue;
                    }
                    names = Some(match names {
                        None => here,
                        Some(before) => before.intersection(&here).copied().collect(),
                    });
                }
                names
            })
            .collect();
        // Rule out the names that are certain elsewhere until nothing changes.
        let mut changed = true;
        while changed {
            changed = false;
            let certain: Vec<(usize, &str)> = candidates
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match c {
                    Some(names) if names.len() == 1 => names.first().map(|n| (i, *n)),
                    _ => None,
                })
                .collect();
            for (i, names) in candidates.iter_mut().enumerate() {
                let Some(names) = names else { continue };
                for &(j, name) in &certain {
                    if i != j && names.len() > 1 && names.remove(name) {
                        changed = true;
                    }
                }
            }
        }
        candidates
            .into_iter()
            .map(|c| match c {
                Some(names) if names.len() == 1 => names.first().map(|n| n.to_string()),
                _ => None,
            })
            .collect()
    }

    /// Where the kernel closes channel `name` (`file:line:column`, several joined by ` or `).
    fn close_sites(&self, name: &str) -> String {
        let prefix = format!("closing channel `{name}`");
        let sites: Vec<String> = self
            .spec
            .map(|spec| {
                spec.sites
                    .iter()
                    .filter(|s| s.kind == SiteKind::Wait && s.message.starts_with(&prefix))
                    .map(|s| format!("{}:{}:{}", s.file, s.line, s.column))
                    .collect()
            })
            .unwrap_or_default();
        if sites.is_empty() {
            "-".to_string()
        } else {
            sites.join(" or ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SiteSpec;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    fn site(message: &'static str, at: &'static Location<'static>) -> SiteSpec {
        SiteSpec {
            kind: SiteKind::Wait,
            message,
            file: at.file(),
            line: at.line(),
            column: at.column(),
        }
    }

    fn channel(seen: Vec<(WaitKind, &'static Location<'static>)>) -> ChannelState {
        ChannelState {
            version: 0,
            created_at: here(),
            seen,
        }
    }

    #[test]
    fn channels_are_named_from_the_sites_of_their_waits() {
        // A helper's `recv()` line serves channels `a` and `b`; a `reserve()` line names `b`
        // only, so the ring seen only at the shared line is `a`.
        let shared = here();
        let only_b = here();
        let sites: &'static [SiteSpec] = Box::leak(Box::new([
            site("`recv()` on channel `a`", shared),
            site("`recv()` on channel `b`", shared),
            site("`reserve()` on channel `b`", only_b),
            site(
                "closing channel `a` (dropping its sender waits for a free slot)",
                only_b,
            ),
        ]));
        let spec: &'static KernelSpec = Box::leak(Box::new(KernelSpec {
            entry: "k",
            path: "m::k",
            ptx: "",
            warps: 2,
            shared_bytes: 0,
            params: &[],
            roles: &[],
            sites,
            abort_protocol: true,
        }));
        let block = BlockState {
            spec: Some(spec),
            channels: vec![
                channel(vec![(WaitKind::Recv, shared)]),
                channel(vec![(WaitKind::Recv, shared), (WaitKind::Reserve, only_b)]),
                channel(vec![]),
            ],
            ..Default::default()
        };
        assert_eq!(
            block.channel_names(),
            vec![Some("a".to_string()), Some("b".to_string()), None]
        );
        let close = |channel| Wait {
            kind: WaitKind::Close,
            channel,
            at: None,
        };
        let (what, location) = block.describe(close(0));
        assert_eq!(
            what,
            "is closing channel `a` (dropping its sender waits for a free slot)"
        );
        assert_eq!(
            location,
            format!("{}:{}:{}", only_b.file(), only_b.line(), only_b.column())
        );
        let (what, location) = block.describe(close(2));
        assert!(
            what.starts_with("is closing the channel created at "),
            "{what}"
        );
        assert_eq!(location, "-");
        let (what, _) = block.describe(Wait {
            kind: WaitKind::Recv,
            channel: 1,
            at: Some(shared),
        });
        assert_eq!(what, "waits for a full slot in `recv()` on channel `b`");
    }
}
