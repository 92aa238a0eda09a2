//! Block-local shared values: one scalar in the block's shared memory that one role writes and
//! others read, ordered by a channel or a barrier between them.

use std::cell::Cell;

use crate::spec::KernelScalar;

/// A scalar in the block's shared memory, made in the kernel body with [`shared`] and passed to
/// roles as `&Shared<T>`.
///
/// `set` is role code: the role's first thread writes the value and the role's threads then meet,
/// so that the role reads its own write. Another role sees the value after it has awaited
/// something the writer did after `set` (a slot it sent, the close of a channel): the channel's
/// barrier orders the write before the read. Reading without such an order reads either value,
/// on the GPU as on the simulator (whose schedules may differ).
#[derive(Debug)]
pub struct Shared<T: KernelScalar>(Cell<T>);

/// A new shared value of the block, holding `T::default()` (0, `false`).
pub fn shared<T: KernelScalar>() -> Shared<T> {
    Shared(Cell::new(T::default()))
}

impl<T: KernelScalar> Shared<T> {
    /// The value.
    pub fn get(&self) -> T {
        self.0.get()
    }

    /// Writes the value (role code only).
    pub fn set(&self, value: T) {
        self.0.set(value);
    }
}
