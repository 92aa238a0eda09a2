//! A simulator buffer's memory: owned and shared (the buffer, and every job that uses it, hold an
//! `Arc`), so that no job borrows a user's [`DeviceBuffer`](crate::DeviceBuffer) and a launch
//! leaked with `mem::forget` can still finish its work on memory of its own.
//!
//! Uses are ordered as on the GPU: each job's use is registered when the job is submitted (a read
//! or a write); when the job runs, a read waits for the earlier writes, a write for every earlier
//! use, and the use ends when the job is done with it. A write takes the elements out of the
//! buffer while it runs and puts them back; reads share them. Host operations wait the same way:
//! a download for the registered writes, an overwrite for every registered use, so whatever a
//! launch was submitted to do is done before the host looks, whether or not the launch was
//! awaited or kept.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::queue::{submission_order, SimQueue};

/// The elements of a simulator buffer and their registered uses.
pub(crate) struct SimMem<T> {
    state: Mutex<MemState<T>>,
    changed: Condvar,
}

struct MemState<T> {
    /// The elements (an empty placeholder while a write holds them).
    data: Arc<Vec<T>>,
    /// The uses registered and not yet over, in submission order: their tickets and whether
    /// each writes.
    uses: VecDeque<(u64, bool)>,
    next_ticket: u64,
}

impl<T: Copy + Send + Sync + 'static> SimMem<T> {
    pub(crate) fn new(data: Vec<T>) -> Arc<SimMem<T>> {
        Arc::new(SimMem {
            state: Mutex::new(MemState {
                data: Arc::new(data),
                uses: VecDeque::new(),
                next_ticket: 0,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, MemState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until `ready` holds for the state, then returns it locked.
    fn wait_until(&self, ready: impl Fn(&MemState<T>) -> bool) -> MutexGuard<'_, MemState<T>> {
        let mut state = self.lock();
        while !ready(&state) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state
    }

    /// Registers a read by a job submitted now (call under
    /// [`submission_order`]).
    pub(crate) fn register_read(self: &Arc<Self>) -> SimRead<T> {
        SimRead(self.register(false))
    }

    /// Registers a write by a job submitted now (call under
    /// [`submission_order`]).
    pub(crate) fn register_write(self: &Arc<Self>) -> SimWrite<T> {
        SimWrite(self.register(true))
    }

    fn register(self: &Arc<Self>, write: bool) -> Ticket<T> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.uses.push_back((ticket, write));
        Ticket {
            mem: Arc::clone(self),
            ticket,
        }
    }

    /// Runs `f` on the elements once the registered writes are over (a host read).
    pub(crate) fn host_read<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        let state = self.wait_until(|s| s.uses.iter().all(|&(_, write)| !write));
        f(&state.data)
    }

    /// Runs `f` on the elements once every registered use is over (a host write).
    pub(crate) fn host_write<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> R {
        let mut state = self.wait_until(|s| s.uses.is_empty());
        f(Arc::make_mut(&mut state.data).as_mut_slice())
    }
}

/// Queues on `queue` a copy of `src`'s elements over `dst`'s (of the same length), after the
/// earlier uses of both.
pub(crate) fn queue_copy<T: Copy + Send + Sync + 'static>(
    queue: &Arc<SimQueue>,
    dst: &Arc<SimMem<T>>,
    src: &Arc<SimMem<T>>,
) {
    let _order = submission_order();
    let (from, to) = (src.register_read(), dst.register_write());
    queue.push(Box::new(move || {
        let from = from.slice();
        let mut to = to.slice_mut();
        to.copy_from_slice(&from);
    }));
}

/// A registered use, not yet begun; dropping it ends it (a job that never ran).
struct Ticket<T: Copy + Send + Sync + 'static> {
    mem: Arc<SimMem<T>>,
    ticket: u64,
}

impl<T: Copy + Send + Sync + 'static> Ticket<T> {
    /// Waits until the uses registered before this one allow it: the writes for a read, every
    /// use for a write.
    fn begin(&self, write: bool) -> MutexGuard<'_, MemState<T>> {
        let ticket = self.ticket;
        self.mem.wait_until(|s| {
            for &(t, w) in &s.uses {
                if t == ticket {
                    return true;
                }
                if write || w {
                    return false;
                }
            }
            true
        })
    }
}

impl<T: Copy + Send + Sync + 'static> Drop for Ticket<T> {
    fn drop(&mut self) {
        let mut state = self.mem.lock();
        let ticket = self.ticket;
        state.uses.retain(|&(t, _)| t != ticket);
        drop(state);
        self.mem.changed.notify_all();
    }
}

/// A read of a buffer by a submitted job (a `&[T]` parameter, the source of a copy): the job
/// turns it into the elements with [`SimRead::slice`] when it runs.
pub struct SimRead<T: Copy + Send + Sync + 'static>(Ticket<T>);

/// A write of a buffer by a submitted job (a `&mut [T]` or atomic parameter, the destination of
/// a copy): the job takes the elements with [`SimWrite::slice_mut`] when it runs.
pub struct SimWrite<T: Copy + Send + Sync + 'static>(Ticket<T>);

impl<T: Copy + Send + Sync + 'static> SimRead<T> {
    /// Waits for the earlier writes of the buffer, then shares its elements until dropped.
    pub fn slice(self) -> SimSlice<T> {
        let data = Arc::clone(&self.0.begin(false).data);
        SimSlice {
            data,
            _ticket: self.0,
        }
    }
}

impl<T: Copy + Send + Sync + 'static> SimWrite<T> {
    /// Waits for the earlier uses of the buffer, then holds its elements until dropped.
    pub fn slice_mut(self) -> SimSliceMut<T> {
        let taken = std::mem::take(&mut self.0.begin(true).data);
        // The earlier uses are over, so nothing else shares the elements.
        let data = Arc::try_unwrap(taken).unwrap_or_else(|shared| shared.to_vec());
        SimSliceMut {
            data,
            ticket: self.0,
        }
    }
}

/// The elements of a buffer a job reads; the read ends when it is dropped.
pub struct SimSlice<T: Copy + Send + Sync + 'static> {
    // Dropped before the ticket (fields drop in order), so a write that waits for this read
    // finds the elements unshared.
    data: Arc<Vec<T>>,
    _ticket: Ticket<T>,
}

impl<T: Copy + Send + Sync + 'static> Deref for SimSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

/// The elements of a buffer a job writes; they go back to the buffer, and the write ends, when
/// it is dropped.
pub struct SimSliceMut<T: Copy + Send + Sync + 'static> {
    data: Vec<T>,
    ticket: Ticket<T>,
}

impl<T: Copy + Send + Sync + 'static> Deref for SimSliceMut<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

impl<T: Copy + Send + Sync + 'static> DerefMut for SimSliceMut<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T: Copy + Send + Sync + 'static> Drop for SimSliceMut<T> {
    fn drop(&mut self) {
        let data = std::mem::take(&mut self.data);
        self.ticket.mem.lock().data = Arc::new(data);
        // The ticket's own drop then ends the use and wakes the waiters.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn uses_begin_in_submission_order() {
        let mem = SimMem::new(vec![1u32, 2, 3]);
        let first = mem.register_write();
        let read = mem.register_read();
        let second = mem.register_write();
        // Reads share the elements; a write waits for every earlier use.
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let s = read.slice();
                tx.send(("read", s.to_vec())).ok();
            })
        };
        let writer = std::thread::spawn(move || {
            let mut s = second.slice_mut();
            s[0] = 30;
            tx.send(("second", s.to_vec())).ok();
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            rx.try_recv().is_err(),
            "nothing may begin before the first write ends"
        );
        {
            let mut s = first.slice_mut();
            s[1] = 20;
        }
        let got: Vec<_> = (0..2).filter_map(|_| rx.recv().ok()).collect();
        assert_eq!(
            got,
            vec![("read", vec![1, 20, 3]), ("second", vec![30, 20, 3])]
        );
        assert!(reader.join().is_ok() && writer.join().is_ok());
        assert_eq!(mem.host_read(<[u32]>::to_vec), vec![30, 20, 3]);
        // A use that never began ends when dropped.
        drop(mem.register_write());
        mem.host_write(|d| d[2] = 7);
        assert_eq!(mem.host_read(<[u32]>::to_vec), vec![30, 20, 7]);
    }
}
