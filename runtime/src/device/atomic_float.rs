//! `AtomicF32` and `AtomicF64`: floats updated atomically, in global memory (`&[AtomicF32]`
//! kernel parameters, which take a `&mut DeviceBuffer<f32>`) and in shared arrays
//! (`shared_array::<AtomicF32, N>()`). The standard library has no atomic floats; these have the
//! methods of its atomic integers that make sense for floats, with the GPU's semantics:
//!
//! - `fetch_add` / `fetch_sub` are PTX's `atom.add` (`red.add` when the result is unused): rounded
//!   to nearest even. For `f32`, PTX flushes subnormal inputs and results to zero of the same sign
//!   (the PTX ISA's `atom` notes), and so does the simulator; `f64` keeps subnormals.
//! - `fetch_max` / `fetch_min` order by [`f32::total_cmp`]: `-0.0 < +0.0`, NaNs with the sign
//!   bit clear above `+inf` and those with it set below `-inf`. PTX has no `atom.max.f32`; the GPU
//!   does one integer atomic on the bits, `atom.max.s32` for a value whose sign bit is clear and
//!   `atom.min.u32` for one whose sign bit is set, which is exactly the larger by that order.
//! - `compare_exchange` compares bits (`atom.cas.b32`), so `-0.0` and `+0.0` differ and a NaN
//!   equals itself.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The failure ordering of a compare-and-swap loop whose success ordering is `o`.
fn failure(o: Ordering) -> Ordering {
    match o {
        Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
        Ordering::SeqCst => Ordering::SeqCst,
        _ => Ordering::Acquire,
    }
}

macro_rules! atomic_float {
    ($name:ident, $f:ty, $bits:ty, $atomic:ty, $ftz:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Default)]
        #[repr(transparent)]
        pub struct $name($atomic);

        impl $name {
            /// A new atomic holding `v`.
            pub const fn new(v: $f) -> $name {
                $name(<$atomic>::new(v.to_bits()))
            }

            /// The value.
            pub fn load(&self, order: Ordering) -> $f {
                <$f>::from_bits(self.0.load(order))
            }

            /// Stores `v`.
            pub fn store(&self, v: $f, order: Ordering) {
                self.0.store(v.to_bits(), order)
            }

            /// Stores `v`; returns the previous value.
            pub fn swap(&self, v: $f, order: Ordering) -> $f {
                <$f>::from_bits(self.0.swap(v.to_bits(), order))
            }

            /// Adds `v`; returns the previous value.
            pub fn fetch_add(&self, v: $f, order: Ordering) -> $f {
                let flush: fn($f) -> $f = $ftz;
                self.update(order, |old| flush(flush(old) + flush(v)))
            }

            /// Subtracts `v`: adds `-v`; returns the previous value.
            pub fn fetch_sub(&self, v: $f, order: Ordering) -> $f {
                self.fetch_add(-v, order)
            }

            /// Stores the larger of the value and `v` by `total_cmp`; returns the previous value.
            pub fn fetch_max(&self, v: $f, order: Ordering) -> $f {
                self.update(order, |old| if v.total_cmp(&old).is_gt() { v } else { old })
            }

            /// Stores the smaller of the value and `v` by `total_cmp`; returns the previous value.
            pub fn fetch_min(&self, v: $f, order: Ordering) -> $f {
                self.update(order, |old| if v.total_cmp(&old).is_lt() { v } else { old })
            }

            /// Stores `new` if the value has the bits of `current`: `Ok(previous)` when it
            /// stored, `Err(previous)` when not.
            pub fn compare_exchange(
                &self,
                current: $f,
                new: $f,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$f, $f> {
                self.0
                    .compare_exchange(current.to_bits(), new.to_bits(), success, failure)
                    .map(<$f>::from_bits)
                    .map_err(<$f>::from_bits)
            }

            /// The same as [`compare_exchange`](Self::compare_exchange) (it never fails
            /// spuriously).
            pub fn compare_exchange_weak(
                &self,
                current: $f,
                new: $f,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$f, $f> {
                self.compare_exchange(current, new, success, failure)
            }

            /// The value, consuming the atomic.
            pub fn into_inner(self) -> $f {
                <$f>::from_bits(self.0.into_inner())
            }

            /// Replaces the value with `f(value)` atomically; returns the previous value.
            fn update(&self, order: Ordering, f: impl Fn($f) -> $f) -> $f {
                let mut old: $bits = self.0.load(failure(order));
                loop {
                    let new = f(<$f>::from_bits(old)).to_bits();
                    match self
                        .0
                        .compare_exchange_weak(old, new, order, failure(order))
                    {
                        Ok(prev) => return <$f>::from_bits(prev),
                        Err(now) => old = now,
                    }
                }
            }
        }
    };
}

/// `f32` flushed as `atom.add.f32` flushes: a subnormal becomes zero of the same sign.
fn flush_f32(v: f32) -> f32 {
    if v.is_subnormal() {
        0.0f32.copysign(v)
    } else {
        v
    }
}

atomic_float!(
    AtomicF32,
    f32,
    u32,
    AtomicU32,
    flush_f32,
    "An `f32` updated atomically, in global memory (a `&[AtomicF32]` kernel parameter takes a
`&mut DeviceBuffer<f32>`) or in a shared array.

`fetch_add`/`fetch_sub` round to nearest even and flush subnormal inputs and results to zero of
the same sign, as PTX's `atom.add.f32` does (the simulator does the same). `fetch_max`/`fetch_min`
order by [`f32::total_cmp`] (`-0.0 < +0.0`; NaNs with the sign bit clear above `+inf`, with it set
below `-inf`): on the GPU one integer atomic on the bits. `compare_exchange` compares bits."
);
atomic_float!(
    AtomicF64,
    f64,
    u64,
    AtomicU64,
    |v| v,
    "An `f64` updated atomically, in global memory (a `&[AtomicF64]` kernel parameter takes a
`&mut DeviceBuffer<f64>`) or in a shared array.

`fetch_add`/`fetch_sub` round to nearest even and keep subnormals (PTX's `atom.add.f64`).
`fetch_max`/`fetch_min` order by [`f64::total_cmp`]: on the GPU one integer atomic on the bits.
`compare_exchange` compares bits."
);
