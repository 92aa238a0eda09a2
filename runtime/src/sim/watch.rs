//! Stopping a simulated kernel from inside: cancellation and the watchdog.
//!
//! The simulator runs a role's code until it awaits something that is not ready, so a role that
//! loops without waiting would never give the thread back. The shadow code therefore calls
//! [`tick`] at the top of every loop body of kernel code (`::gpu_async::device::__loop_tick()`,
//! which the checker inserts), parallel loops call it once per item, and every await on a
//! channel, barrier or one-shot and every step of a role is a [`checkpoint`]. A tick costs a
//! thread-local countdown; every [`TICK_PERIOD`]th one looks at the launch's cancel flag and the
//! clock. To stop, they unwind with a [`Stop`] payload (not a panic: no hook runs, nothing is
//! printed), which [`SimBlock::run`](super::SimBlock::run) turns into the launch's error.
//!
//! The watchdog bounds a *step*, the time a role runs between two awaits that suspend it, by
//! the device's [`watchdog`](crate::Device::watchdog) bound, while another role of the block is
//! unfinished: on the GPU that role would be waiting for this one (or running beside it), and
//! the GPU's watchdog bounds each wait. A kernel body without roles, or the last unfinished role,
//! may run as long as it needs, as on the GPU, where nothing waits for it either.

use std::cell::{Cell, RefCell};
use std::panic::{resume_unwind, Location};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::run::SimLaunch;

/// Ticks between two looks at the cancel flag and the clock.
const TICK_PERIOD: u32 = 1024;

/// Why a simulated kernel stops from inside: the payload it unwinds with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// The launch was cancelled.
    Cancelled,
    /// The running role's step took longer than `bound` while another role was unfinished; the
    /// tick that saw it was called at `at` (a loop of the kernel's code).
    Watchdog {
        at: &'static Location<'static>,
        bound: Duration,
    },
}

/// What the thread's ticks watch while it runs a launch.
struct Watch {
    launch: Arc<SimLaunch>,
    bound: Option<Duration>,
    /// The step the clock reading `since` belongs to.
    step: u64,
    /// The first reading of the clock in that step.
    since: Instant,
}

thread_local! {
    static COUNTDOWN: Cell<u32> = const { Cell::new(TICK_PERIOD) };
    /// Counts the steps of the roles run on this thread.
    static STEP: Cell<u64> = const { Cell::new(0) };
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// Runs `f` (a launch's blocks) with its ticks watching `launch`'s cancel flag and, with a
/// `bound`, its steps' durations.
pub(crate) fn watching<R>(
    launch: Arc<SimLaunch>,
    bound: Option<Duration>,
    f: impl FnOnce() -> R,
) -> R {
    struct Unwatch;
    impl Drop for Unwatch {
        fn drop(&mut self) {
            WATCH.with(|w| *w.borrow_mut() = None);
        }
    }
    WATCH.with(|w| {
        *w.borrow_mut() = Some(Watch {
            launch,
            bound,
            step: STEP.with(Cell::get),
            since: Instant::now(),
        })
    });
    let _unwatch = Unwatch;
    f()
}

/// A new step begins (a role is stepped, a block starts): the watchdog's clock starts again.
pub(crate) fn new_step() {
    STEP.with(|s| s.set(s.get().wrapping_add(1)));
}

/// Unwinds with [`Stop::Cancelled`] when the running launch was cancelled.
pub(crate) fn checkpoint() {
    let cancelled = WATCH.with(|w| w.borrow().as_ref().is_some_and(|w| w.launch.is_cancelled()));
    if cancelled {
        resume_unwind(Box::new(Stop::Cancelled));
    }
}

/// One iteration of a loop of kernel code at `at`; see the module docs.
#[inline]
pub(crate) fn tick(at: &'static Location<'static>) {
    let left = COUNTDOWN.with(|c| {
        let left = c.get().wrapping_sub(1);
        c.set(left);
        left
    });
    if left == 0 {
        tick_slowly(at);
    }
}

#[cold]
#[inline(never)]
fn tick_slowly(at: &'static Location<'static>) {
    COUNTDOWN.with(|c| c.set(TICK_PERIOD));
    let step = STEP.with(Cell::get);
    let over = WATCH.with(|w| {
        let mut w = w.borrow_mut();
        let w = w.as_mut()?;
        if w.launch.is_cancelled() {
            return Some(Stop::Cancelled);
        }
        let bound = w.bound?;
        let now = Instant::now();
        if w.step != step {
            w.step = step;
            w.since = now;
            return None;
        }
        (now.duration_since(w.since) > bound).then_some(Stop::Watchdog { at, bound })
    });
    match over {
        Some(Stop::Watchdog { .. }) if !super::others_unfinished() => {}
        Some(stop) => resume_unwind(Box::new(stop)),
        None => {}
    }
}
