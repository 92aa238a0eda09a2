//! Atomic slice parameters on the simulator: a kernel parameter `&[AtomicU32]` takes a
//! `&mut DeviceBuffer<u32>`; the simulator runs the kernel over atomics made from the buffer's
//! values and writes them back when the launch is done.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

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

/// The simulator's view of an atomic slice parameter; the values go back to the buffer on drop.
pub struct AtomicView<'a, T: AtomicScalar> {
    values: &'a mut [T],
    atoms: Vec<T::Atomic>,
}

impl<'a, T: AtomicScalar> AtomicView<'a, T> {
    /// A view of `values` as atomics, which go back to `values` when it is dropped.
    pub(crate) fn new(values: &'a mut [T]) -> AtomicView<'a, T> {
        let atoms = values.iter().map(|&v| T::atomic(v)).collect();
        AtomicView { values, atoms }
    }

    /// The atomics the kernel's shadow code runs over.
    pub fn atoms(&self) -> &[T::Atomic] {
        &self.atoms
    }
}

impl<T: AtomicScalar> Drop for AtomicView<'_, T> {
    fn drop(&mut self) {
        for (v, a) in self.values.iter_mut().zip(&self.atoms) {
            *v = T::value(a);
        }
    }
}
