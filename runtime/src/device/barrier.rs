//! A block-level barrier between roles: made in the kernel body with [`barrier`], passed to the
//! roles that meet at it as `&Barrier`, and awaited with `sync.wait().await`.
//!
//! Every role that takes the barrier waits at it the same number of times; the `k`-th wait of
//! each returns once all of them have reached their `k`-th wait. What a role wrote before its wait
//! (global memory, shared values) is seen by the others after theirs. On the GPU it is one
//! `mbarrier` expecting one arrival per warp of those roles (the compiler counts them); in the
//! simulator the roles are futures, and the wait completes when the last one arrives.

use std::cell::Cell;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A barrier between roles of one block (see the module documentation).
#[derive(Debug)]
pub struct Barrier {
    /// The simulator's id for it (it shares the channels' numbering, for waits and reports).
    id: usize,
    /// Roles that meet at it (set by the kernel's `join!`, which the macro rewrites).
    participants: Cell<usize>,
    /// Arrivals in the current phase.
    arrived: Cell<usize>,
    /// Completed phases.
    phase: Cell<u64>,
}

/// A new barrier of the block (kernel body only).
#[track_caller]
pub fn barrier() -> Barrier {
    Barrier {
        id: crate::sim::register_channel(Location::caller()),
        participants: Cell::new(0),
        arrived: Cell::new(0),
        phase: Cell::new(0),
    }
}

impl Barrier {
    /// How many roles meet at the barrier; the `#[gpu_async]` macro calls it before the kernel's
    /// roles start (it counts the roles that take the barrier).
    #[doc(hidden)]
    pub fn __participants(&self, roles: usize) -> &Self {
        self.participants.set(roles);
        self
    }

    /// Waits until every role that takes the barrier has reached this wait.
    #[track_caller]
    pub fn wait(&self) -> BarrierWait<'_> {
        BarrierWait {
            barrier: self,
            at: Location::caller(),
            joined: None,
            polled: false,
        }
    }
}

/// The future of [`Barrier::wait`].
#[must_use = "wait() does nothing unless awaited"]
#[derive(Debug)]
pub struct BarrierWait<'a> {
    barrier: &'a Barrier,
    at: &'static Location<'static>,
    /// The phase this wait arrived in, once it has.
    joined: Option<u64>,
    polled: bool,
}

impl Future for BarrierWait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        crate::sim::checkpoint();
        if !std::mem::replace(&mut self.polled, true) && crate::sim::yield_now() {
            return Poll::Pending;
        }
        if !crate::sim::flush_current() {
            return Poll::Pending;
        }
        let b = self.barrier;
        let joined = match self.joined {
            Some(p) => p,
            None => {
                let p = b.phase.get();
                self.joined = Some(p);
                b.arrived.set(b.arrived.get() + 1);
                if b.arrived.get() >= b.participants.get() {
                    b.arrived.set(0);
                    b.phase.set(p + 1);
                    crate::sim::channel_changed(b.id);
                    return Poll::Ready(());
                }
                p
            }
        };
        if b.phase.get() != joined {
            crate::sim::wait_done(crate::sim::WaitKind::Barrier, b.id, self.at);
            return Poll::Ready(());
        }
        crate::sim::note_wait(crate::sim::WaitKind::Barrier, b.id, self.at);
        Poll::Pending
    }
}
