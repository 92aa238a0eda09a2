//! Typed shared-memory channels: a ring of `DEPTH` slots of one payload type each.
//!
//! The sender reserves a free slot, fills it (by a bulk async copy from global memory, or by
//! writing it), and sends it; the receiver receives the oldest full slot, reads it, and releases it
//! to the sender by dropping it. Dropping the sender closes the channel: its end-of-stream marker
//! takes the next slot like an item (waiting for a free one when the ring is full), and once the
//! receiver has taken every item sent before that, `recv` answers `None`. Dropping the receiver
//! (or [`Receiver::close`]) closes it from the other side: once every receiver of the channel has
//! closed, `reserve` answers `None`, so that a producer whose consumer stopped early ends instead
//! of waiting for a slot that will never be released.
//!
//! rustc enforces the discipline: a reserved slot borrows its sender mutably, so a role holds at
//! most one reserved slot of a channel at a time; a received slot borrows its receiver, so the
//! receiver cannot be dropped or closed while a slot of it is held (a role may hold several
//! received slots at once, up to the ring's depth); `send` consumes the slot, so it cannot be
//! used afterwards; each end is a value that moves into exactly one role.
//!
//! On the GPU each slot has a `full` and an `empty` mbarrier and a state word; every wait is an
//! `mbarrier.try_wait.parity` whose phase bit the compiler tracks. In the simulator the ring is an
//! ordinary bounded queue with the same slot states and order; every `reserve()` and `recv()` is
//! a point where the simulator's schedule may switch roles, and a close that finds the ring full
//! is pending: the role's later channel effects wait behind it, as the role itself does on the
//! GPU (see `crate::sim`).

use std::cell::RefCell;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::spec::KernelScalar;

/// A type that can travel through a channel: an array of scalars or of the module's structs,
/// which lives in shared memory.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot travel through a gpu-async channel",
    label = "not a channel payload",
    note = "a channel payload is an array `[T; N]` of scalars or of `#[derive(Clone, Copy)]` structs of the module, which lives in shared memory; references, `Vec` and other heap types cannot be sent"
)]
pub trait Payload: Copy + 'static {
    /// The element type.
    type Elem: PayloadElem;
    /// The payload with every element zero (what a slot holds before its first use).
    fn zeroed() -> Self;
    /// The elements, in order.
    fn elems(&self) -> &[Self::Elem];
    /// The elements, in order, mutably.
    fn elems_mut(&mut self) -> &mut [Self::Elem];
}

/// An element of a channel payload: a kernel scalar, or a `#[derive(Clone, Copy)]` struct of a
/// `#[gpu_async]` module (the macro implements this for each of them).
pub trait PayloadElem: Copy + 'static {
    /// The element with every field zero (what a slot holds before its first use).
    fn zeroed() -> Self;
}

impl<T: KernelScalar> PayloadElem for T {
    fn zeroed() -> T {
        T::default()
    }
}

/// An array field of a struct payload.
impl<E: PayloadElem, const N: usize> PayloadElem for [E; N] {
    fn zeroed() -> Self {
        [E::zeroed(); N]
    }
}

impl<E: PayloadElem, const N: usize> Payload for [E; N] {
    type Elem = E;
    fn zeroed() -> Self {
        [E::zeroed(); N]
    }
    fn elems(&self) -> &[E] {
        self
    }
    fn elems_mut(&mut self) -> &mut [E] {
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    Reserved,
    Full,
    Held,
    /// The end-of-stream marker of the dropped sender.
    Closed,
}

struct Ring<T> {
    /// A slot's payload is out of the ring (`None`) while a [`SendSlot`] owns it; a receiver
    /// reads a copy, so that every receiver of a broadcast sees the same item.
    data: Vec<Option<Box<T>>>,
    state: Vec<SlotState>,
    /// The next slot the sender reserves.
    head: usize,
    /// Per receiver (one, or more after [`Receiver::subscribe`]): the next slot it takes.
    tails: Vec<usize>,
    /// Per receiver: the items (and end marker) it has taken.
    taken: Vec<u64>,
    /// Per slot: the number of the item in it (items are numbered in send order).
    seq: Vec<u64>,
    /// Items sent so far, the end marker included.
    sent: u64,
    /// Per slot: receivers that have not released it yet.
    unreleased: Vec<usize>,
    /// Per receiver: it has not closed (dropped, or [`Receiver::close`]).
    open: Vec<bool>,
    /// The simulator's id of the channel in its block.
    id: usize,
}

type Shared<T> = Rc<RefCell<Ring<T>>>;

/// Creates a channel of `DEPTH` slots, each holding one `T`.
///
/// On the GPU its ring takes `DEPTH * size_of::<T>()` bytes of shared memory (plus 20 bytes of
/// barriers and state per slot); the compiler checks the total against the block's limit.
#[track_caller]
pub fn channel<T: Payload, const DEPTH: usize>() -> (Sender<T, DEPTH>, Receiver<T, DEPTH>) {
    assert!(DEPTH > 0, "a channel needs at least one slot");
    let ring = Rc::new(RefCell::new(Ring {
        data: (0..DEPTH).map(|_| Some(Box::new(T::zeroed()))).collect(),
        state: vec![SlotState::Free; DEPTH],
        head: 0,
        tails: vec![0],
        taken: vec![0],
        seq: vec![0; DEPTH],
        sent: 0,
        unreleased: vec![0; DEPTH],
        open: vec![true],
        id: crate::sim::register_channel(Location::caller()),
    }));
    (
        Sender { ring: ring.clone() },
        Receiver {
            ring,
            index: 0,
            closed: false,
        },
    )
}

/// The sending end of a channel. Dropping it closes the channel: the end-of-stream marker takes
/// a slot, so a sender dropped while the ring is full closes it once a slot is released (and the
/// role that dropped it waits for that, on the GPU and in the simulator). Once every receiver has
/// closed, there is no one to tell, and dropping the sender does nothing.
pub struct Sender<T: Payload, const DEPTH: usize> {
    ring: Shared<T>,
}

/// The receiving end of a channel. Dropping it (or [`close`](Receiver::close)) tells the sender
/// that nothing more will be received: the sender's next `reserve` that would wait answers
/// `None`.
pub struct Receiver<T: Payload, const DEPTH: usize> {
    ring: Shared<T>,
    /// Which receiver of the channel this is (0, or more for a broadcast).
    index: usize,
    /// This receiver has closed: `recv` answers `None`.
    closed: bool,
}

impl<T: Payload, const DEPTH: usize> Sender<T, DEPTH> {
    /// Waits for a free slot and reserves it, or answers `None` once every receiver of the
    /// channel has closed (dropped its receiver, or called [`Receiver::close`]): nothing sent
    /// would be received, and a slot may never be released. Holding the slot borrows the
    /// sender, so a role holds at most one reserved slot per channel.
    ///
    /// ```ignore
    /// for tile in block_tiles(x.len(), TILE) {
    ///     let Some(mut slot) = tx.reserve().await else { return };
    ///     slot.copy_from(&x[tile]).await;
    ///     slot.send();
    /// }
    /// ```
    #[track_caller]
    pub fn reserve(&mut self) -> Reserve<'_, T, DEPTH> {
        Reserve {
            sender: Some(self),
            at: Location::caller(),
            polled: false,
        }
    }
}

impl<T: Payload, const DEPTH: usize> Drop for Sender<T, DEPTH> {
    fn drop(&mut self) {
        let ring = self.ring.clone();
        let id = ring.borrow().id;
        crate::sim::submit(crate::sim::Deferred::new(
            id,
            Box::new(move || {
                let mut r = ring.borrow_mut();
                if !r.open.contains(&true) {
                    // Every receiver has closed: no one waits for the end marker.
                    return true;
                }
                let head = r.head;
                if r.state[head] != SlotState::Free {
                    return false;
                }
                r.state[head] = SlotState::Closed;
                r.seq[head] = r.sent;
                r.sent += 1;
                r.head = (head + 1) % DEPTH;
                drop(r);
                crate::sim::channel_changed(id);
                true
            }),
        ));
    }
}

/// The future of [`Sender::reserve`].
#[must_use = "reserve() does nothing unless awaited"]
pub struct Reserve<'a, T: Payload, const DEPTH: usize> {
    sender: Option<&'a mut Sender<T, DEPTH>>,
    at: &'static Location<'static>,
    /// Whether it was polled before (the first poll may yield to the simulator's schedule).
    polled: bool,
}

impl<'a, T: Payload, const DEPTH: usize> Future for Reserve<'a, T, DEPTH> {
    type Output = Option<SendSlot<'a, T, DEPTH>>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        crate::sim::checkpoint();
        if !std::mem::replace(&mut self.polled, true) && crate::sim::yield_now() {
            return Poll::Pending;
        }
        if !crate::sim::flush_current() {
            return Poll::Pending;
        }
        let Some(sender) = self.sender.take() else {
            panic!("reserve() polled after it completed");
        };
        let (taken, id) = {
            let mut ring = sender.ring.borrow_mut();
            if !ring.open.contains(&true) {
                let id = ring.id;
                drop(ring);
                crate::sim::channel_used(id, crate::sim::WaitKind::Reserve, self.at, false);
                return Poll::Ready(None);
            }
            let index = ring.head;
            let taken = if ring.state[index] == SlotState::Free {
                ring.state[index] = SlotState::Reserved;
                ring.data[index].take().map(|data| (index, data))
            } else {
                None
            };
            (taken, ring.id)
        };
        match taken {
            Some((index, data)) => {
                crate::sim::channel_used(id, crate::sim::WaitKind::Reserve, self.at, true);
                Poll::Ready(Some(SendSlot {
                    sender,
                    index,
                    data: Some(data),
                }))
            }
            None => {
                crate::sim::note_wait(crate::sim::WaitKind::Reserve, id, self.at);
                self.sender = Some(sender);
                Poll::Pending
            }
        }
    }
}

/// A reserved slot: fill it, then [`send`](SendSlot::send) it.
#[must_use = "a reserved slot must be sent with `send()`"]
pub struct SendSlot<'a, T: Payload, const DEPTH: usize> {
    sender: &'a mut Sender<T, DEPTH>,
    index: usize,
    data: Option<Box<T>>,
}

impl<T: Payload, const DEPTH: usize> SendSlot<'_, T, DEPTH> {
    /// Fills the slot from global memory with a bulk asynchronous copy of `src` (at most one
    /// payload's worth of elements; a shorter source fills the front of the slot).
    ///
    /// On the GPU one lane issues `cp.async.bulk` completing on the slot's `full` barrier with the
    /// byte count expected, and the receiver's `recv` waits for the bytes to land: awaiting the
    /// copy only issues it. After `copy_from`, the slot can only be sent.
    ///
    /// # Panics
    /// If `src` is longer than the slot (a device panic on the GPU).
    #[track_caller]
    pub fn copy_from(&mut self, src: &[T::Elem]) -> CopyFrom {
        let data = self.payload_mut();
        let dst = data.elems_mut();
        assert!(
            src.len() <= dst.len(),
            "copy_from: the source is longer than the slot's {} elements",
            dst.len()
        );
        dst[..src.len()].copy_from_slice(src);
        crate::sim::note_copy(true, self.sender.ring.borrow().id);
        CopyFrom(())
    }

    /// Hands the slot to the receiver.
    pub fn send(mut self) {
        let mut data = self.data.take();
        let index = self.index;
        let ring = self.sender.ring.clone();
        let id = ring.borrow().id;
        crate::sim::submit(crate::sim::Deferred::new(
            id,
            Box::new(move || {
                let mut r = ring.borrow_mut();
                r.data[index] = data.take();
                r.state[index] = SlotState::Full;
                r.seq[index] = r.sent;
                r.sent += 1;
                r.unreleased[index] = r.open.iter().filter(|&&o| o).count();
                r.head = (r.head + 1) % DEPTH;
                drop(r);
                crate::sim::channel_changed(id);
                true
            }),
        ));
    }

    fn payload_mut(&mut self) -> &mut T {
        match self.data.as_deref_mut() {
            Some(data) => data,
            None => unreachable!("a slot owns its payload until it is sent"),
        }
    }
}

impl<T: Payload, const DEPTH: usize> Deref for SendSlot<'_, T, DEPTH> {
    type Target = T;
    fn deref(&self) -> &T {
        match self.data.as_deref() {
            Some(data) => data,
            None => unreachable!("a slot owns its payload until it is sent"),
        }
    }
}

impl<T: Payload, const DEPTH: usize> DerefMut for SendSlot<'_, T, DEPTH> {
    fn deref_mut(&mut self) -> &mut T {
        self.payload_mut()
    }
}

impl<T: Payload, const DEPTH: usize> Drop for SendSlot<'_, T, DEPTH> {
    fn drop(&mut self) {
        // Dropped without `send` (the compiler rejects this in kernels; it happens in the
        // simulator when a role panics while holding a slot): give the slot back unsent.
        if let Some(data) = self.data.take() {
            let mut ring = self.sender.ring.borrow_mut();
            ring.data[self.index] = Some(data);
            ring.state[self.index] = SlotState::Free;
            let id = ring.id;
            drop(ring);
            crate::sim::channel_changed(id);
        }
    }
}

/// The future of [`SendSlot::copy_from`]: the copy is issued; the receiver waits for it to land.
#[must_use = "copy_from() must be awaited"]
pub struct CopyFrom(());

impl CopyFrom {
    /// The future of a copy the simulator has made already (a tile's `load`).
    pub(crate) fn issued() -> CopyFrom {
        CopyFrom(())
    }
}

impl Future for CopyFrom {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

impl<T: Payload, const DEPTH: usize> Receiver<T, DEPTH> {
    /// Another receiver of the same channel: every receiver gets every item (a broadcast), and a
    /// slot is free again once all of them have released it. Made in the kernel body, before the
    /// roles start, and passed to a role of its own.
    pub fn subscribe(&self) -> Receiver<T, DEPTH> {
        let mut ring = self.ring.borrow_mut();
        let start = ring.tails[self.index];
        let taken = ring.taken[self.index];
        ring.tails.push(start);
        ring.taken.push(taken);
        let open = ring.open[self.index];
        ring.open.push(open);
        let index = ring.tails.len() - 1;
        drop(ring);
        Receiver {
            ring: self.ring.clone(),
            index,
            closed: self.closed,
        }
    }

    /// Waits for the oldest full slot and takes it, or answers `None` once the sender is dropped
    /// and every item sent before that was received, or once this receiver has closed. Holding
    /// the slot borrows the receiver: the receiver cannot be closed or dropped while a slot of
    /// it is held. A role may hold several slots at once (a window over the stream, such as the
    /// current tile and the next one), as many as the ring has slots: the next `recv` waits for
    /// the sender, which waits for a slot to be released.
    #[track_caller]
    pub fn recv(&self) -> Recv<'_, T, DEPTH> {
        self.recv_at(Location::caller())
    }

    /// [`Receiver::recv`] reported, should it wait forever, at `at` (the user's call of a
    /// library operation that receives).
    pub(crate) fn recv_at(&self, at: &'static Location<'static>) -> Recv<'_, T, DEPTH> {
        Recv {
            receiver: Some(self),
            at,
            polled: false,
        }
    }

    /// Closes the channel from the receiving side: `recv` answers `None` from now on (items
    /// already sent and not received are dropped), and once every receiver of the channel has
    /// closed, the sender's `reserve` answers `None`, so that the producer can end. Dropping the
    /// receiver does the same.
    ///
    /// On the GPU the receiving role releases every slot of the ring once and marks the channel
    /// closed in shared memory, so that a sender waiting in `reserve` wakes up and reads the
    /// mark (`docs/design.md`, "Closing from the receiving side").
    pub fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let ring = self.ring.clone();
        let me = self.index;
        let id = ring.borrow().id;
        crate::sim::submit(crate::sim::Deferred::new(
            id,
            Box::new(move || {
                let mut r = ring.borrow_mut();
                if !std::mem::replace(&mut r.open[me], false) {
                    return true;
                }
                // The items this receiver has not taken are released for it, so that the other
                // receivers of a broadcast go on without it.
                let taken = r.taken[me];
                for s in 0..DEPTH {
                    let pending = matches!(r.state[s], SlotState::Full | SlotState::Held)
                        && r.seq[s] >= taken;
                    if pending {
                        r.unreleased[s] = r.unreleased[s].saturating_sub(1);
                        if r.unreleased[s] == 0 {
                            r.state[s] = SlotState::Free;
                        }
                    }
                }
                drop(r);
                crate::sim::channel_changed(id);
                true
            }),
        ));
    }
}

impl<T: Payload, const DEPTH: usize> Drop for Receiver<T, DEPTH> {
    fn drop(&mut self) {
        self.close();
    }
}

/// The future of [`Receiver::recv`].
#[must_use = "recv() does nothing unless awaited"]
pub struct Recv<'a, T: Payload, const DEPTH: usize> {
    receiver: Option<&'a Receiver<T, DEPTH>>,
    at: &'static Location<'static>,
    /// Whether it was polled before (the first poll may yield to the simulator's schedule).
    polled: bool,
}

impl<'a, T: Payload, const DEPTH: usize> Future for Recv<'a, T, DEPTH> {
    type Output = Option<RecvSlot<'a, T, DEPTH>>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        crate::sim::checkpoint();
        if !std::mem::replace(&mut self.polled, true) && crate::sim::yield_now() {
            return Poll::Pending;
        }
        if !crate::sim::flush_current() {
            return Poll::Pending;
        }
        let Some(receiver) = self.receiver.take() else {
            panic!("recv() polled after it completed");
        };
        if receiver.closed {
            return Poll::Ready(None);
        }
        enum Outcome<T> {
            Item(usize, Box<T>),
            Closed,
            Wait,
        }
        let (outcome, id) = {
            let mut ring = receiver.ring.borrow_mut();
            let me = receiver.index;
            let index = ring.tails[me];
            // The slot holds this receiver's next item only if its number is the next one (a
            // faster receiver of a broadcast cannot take an item twice).
            let next = ring.seq[index] == ring.taken[me];
            let outcome = match ring.state[index] {
                SlotState::Full | SlotState::Held if next => {
                    ring.state[index] = SlotState::Held;
                    ring.tails[me] = (index + 1) % DEPTH;
                    ring.taken[me] += 1;
                    match ring.data[index].as_deref() {
                        Some(data) => Outcome::Item(index, Box::new(*data)),
                        None => unreachable!("a full slot holds its payload"),
                    }
                }
                SlotState::Closed if next => Outcome::Closed,
                _ => Outcome::Wait,
            };
            (outcome, ring.id)
        };
        let at = self.at;
        match outcome {
            Outcome::Item(index, data) => {
                crate::sim::channel_used(id, crate::sim::WaitKind::Recv, at, true);
                Poll::Ready(Some(RecvSlot {
                    receiver,
                    index,
                    data: Some(data),
                }))
            }
            Outcome::Closed => {
                crate::sim::channel_used(id, crate::sim::WaitKind::Recv, at, false);
                Poll::Ready(None)
            }
            Outcome::Wait => {
                crate::sim::note_wait(crate::sim::WaitKind::Recv, id, at);
                self.receiver = Some(receiver);
                Poll::Pending
            }
        }
    }
}

/// A received slot: read it; dropping it releases the slot to the sender.
pub struct RecvSlot<'a, T: Payload, const DEPTH: usize> {
    receiver: &'a Receiver<T, DEPTH>,
    index: usize,
    data: Option<Box<T>>,
}

impl<T: Payload, const DEPTH: usize> RecvSlot<'_, T, DEPTH> {
    /// Copies the slot's first `dst.len()` elements to `dst` in global memory: on the GPU, one
    /// bulk asynchronous copy (`cp.async.bulk` from shared to global memory) of the 16-byte-aligned
    /// part, issued by the role's first thread, and the rest by the role's threads. Awaiting it
    /// only issues the copy; releasing the slot waits until the copy has read it.
    ///
    /// # Panics
    /// If `dst` is longer than the slot (a device panic on the GPU).
    pub fn copy_to(&self, dst: &mut [T::Elem]) -> CopyTo {
        let src = self.elems();
        assert!(
            dst.len() <= src.len(),
            "copy_to: the destination is longer than the slot's {} elements",
            src.len()
        );
        let n = dst.len();
        dst.copy_from_slice(&src[..n]);
        self.copy_to_event();
        CopyTo(())
    }

    /// Records a copy out of the slot in the simulator's trace.
    pub(crate) fn copy_to_event(&self) {
        crate::sim::note_copy(false, self.receiver.ring.borrow().id);
    }
}

/// The future of [`RecvSlot::copy_to`]: the copy is issued; releasing the slot waits for it to
/// have read the slot.
#[must_use = "copy_to() must be awaited"]
pub struct CopyTo(());

impl CopyTo {
    /// The future of a copy out of a slot that has been issued.
    pub(crate) fn issued() -> CopyTo {
        CopyTo(())
    }
}

impl Future for CopyTo {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

impl<T: Payload, const DEPTH: usize> Deref for RecvSlot<'_, T, DEPTH> {
    type Target = T;
    fn deref(&self) -> &T {
        match self.data.as_deref() {
            Some(data) => data,
            None => unreachable!("a slot owns its payload until it is released"),
        }
    }
}

impl<T: Payload, const DEPTH: usize> Drop for RecvSlot<'_, T, DEPTH> {
    fn drop(&mut self) {
        let mut data = self.data.take();
        let index = self.index;
        let ring = self.receiver.ring.clone();
        let id = ring.borrow().id;
        crate::sim::submit(crate::sim::Deferred::new(
            id,
            Box::new(move || {
                // The receiver's copy goes; the slot is free once every receiver released it.
                drop(data.take());
                let mut r = ring.borrow_mut();
                r.unreleased[index] = r.unreleased[index].saturating_sub(1);
                if r.unreleased[index] == 0 {
                    r.state[index] = SlotState::Free;
                }
                drop(r);
                crate::sim::channel_changed(id);
                true
            }),
        ));
    }
}
