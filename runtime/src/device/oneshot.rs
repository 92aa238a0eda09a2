//! One-shot values between roles: `let (tx, rx) = oneshot::<u32>();` in the kernel body, one
//! role calls `tx.send(v)` once and another `rx.recv().await` once.
//!
//! On the GPU the value is a cell of the block's shared memory and an `mbarrier` expecting one
//! arrival per warp of the sending role: `send` stores the value (the role's first thread) and
//! arrives with release semantics; `recv` waits for the barrier's one phase and reads it. A
//! sender dropped without sending leaves the receiver waiting: a deadlock, which the simulator
//! reports and the GPU's watchdog stops.

use std::cell::Cell;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::spec::KernelScalar;

struct State<T> {
    /// The simulator's id (in the channels' numbering, for waits and reports).
    id: usize,
    value: Cell<Option<T>>,
}

impl<T> std::fmt::Debug for State<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oneshot").field("id", &self.id).finish()
    }
}

/// The sending end of a one-shot value.
#[derive(Debug)]
pub struct OneshotSender<T: KernelScalar>(Rc<State<T>>);

/// The receiving end of a one-shot value.
#[derive(Debug)]
pub struct OneshotReceiver<T: KernelScalar>(Rc<State<T>>);

/// A new one-shot value of the block (kernel body only).
#[track_caller]
pub fn oneshot<T: KernelScalar>() -> (OneshotSender<T>, OneshotReceiver<T>) {
    let state = Rc::new(State {
        id: crate::sim::register_channel(Location::caller()),
        value: Cell::new(None),
    });
    (OneshotSender(state.clone()), OneshotReceiver(state))
}

impl<T: KernelScalar> OneshotSender<T> {
    /// Sends the value (role code; once, since it takes the sender).
    pub fn send(self, value: T) {
        self.0.value.set(Some(value));
        crate::sim::channel_changed(self.0.id);
    }
}

impl<T: KernelScalar> OneshotReceiver<T> {
    /// Waits for the value (role code; once, since it takes the receiver).
    #[track_caller]
    pub fn recv(self) -> OneshotRecv<T> {
        OneshotRecv {
            state: self.0,
            at: Location::caller(),
            polled: false,
        }
    }
}

/// The future of [`OneshotReceiver::recv`]: the value, once sent.
#[must_use = "recv() does nothing unless awaited"]
#[derive(Debug)]
pub struct OneshotRecv<T: KernelScalar> {
    state: Rc<State<T>>,
    at: &'static Location<'static>,
    polled: bool,
}

impl<T: KernelScalar> Future for OneshotRecv<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        crate::sim::checkpoint();
        if !std::mem::replace(&mut self.polled, true) && crate::sim::yield_now() {
            return Poll::Pending;
        }
        if !crate::sim::flush_current() {
            return Poll::Pending;
        }
        match self.state.value.get() {
            Some(v) => {
                crate::sim::wait_done(crate::sim::WaitKind::Oneshot, self.state.id, self.at);
                Poll::Ready(v)
            }
            None => {
                crate::sim::note_wait(crate::sim::WaitKind::Oneshot, self.state.id, self.at);
                Poll::Pending
            }
        }
    }
}
