//! Atomic slice parameters on the simulator: a kernel parameter `&[AtomicU32]` takes a
//! `&mut DeviceBuffer<u32>`; the simulator runs the kernel over atomics made from the buffer's
//! values and writes them back when the launch is done with them.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::memory::{SimSliceMut, SimWrite};
use crate::spec::KernelScalar;

mod sealed {
    pub trait Sealed {}
}

/// A scalar that has an atomic type (`std::sync::atomic`'s integers, the device's `AtomicF32` and
/// `AtomicF64`), for `&[AtomicU32]`-like kernel parameters.
pub trait AtomicScalar: KernelScalar + sealed::Sealed {
    /// Its atomic type.
    type Atomic: Send + Sync;
    /// A new atomic holding `v`.
    fn atomic(v: Self) -> Self::Atomic;
    /// The atomic's value.
    fn value(a: &Self::Atomic) -> Self;
}

macro_rules! atomic_scalar {
    ($($t:ty => $a:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicScalar for $t {
            type Atomic = $a;
            fn atomic(v: $t) -> $a {
                <$a>::new(v)
            }
            fn value(a: &$a) -> $t {
                a.load(Ordering::Relaxed)
            }
        }
    )*};
}

atomic_scalar!(u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64, i64 => AtomicI64, usize => AtomicUsize);
atomic_scalar!(f32 => crate::device::AtomicF32, f64 => crate::device::AtomicF64);

/// The simulator's view of an atomic slice parameter: atomics made from the elements a launch
/// writes, which go back to the buffer when it is dropped.
pub struct AtomicView<T: AtomicScalar> {
    values: SimSliceMut<T>,
    atoms: Vec<T::Atomic>,
}

impl<T: AtomicScalar> AtomicView<T> {
    /// The atomics the kernel's shadow code runs over.
    pub fn atoms(&self) -> &[T::Atomic] {
        &self.atoms
    }
}

impl<T: AtomicScalar> SimWrite<T> {
    /// Waits for the earlier uses of the buffer, then holds its elements as atomics until
    /// dropped.
    pub fn atomics(self) -> AtomicView<T> {
        let values = self.slice_mut();
        let atoms = values.iter().map(|&v| T::atomic(v)).collect();
        AtomicView { values, atoms }
    }
}

impl<T: AtomicScalar> Drop for AtomicView<T> {
    fn drop(&mut self) {
        for (v, a) in self.values.iter_mut().zip(&self.atoms) {
            *v = T::value(a);
        }
    }
}
