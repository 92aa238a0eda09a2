//! Block-shared arrays: `shared_array::<T, N>()` and `shared_array_2d::<T, R, C>()` in the kernel
//! body, handed to roles as `&mut SharedArray<T, N>` (to write) or `&SharedArray<T, N>` (to read,
//! or to update atomic elements).
//!
//! On the GPU an array is a stretch of the block's shared memory, zeroed when the block starts.
//! A role writes it in parallel loops where each iteration owns the element it writes (through
//! `par_iter_mut()`, or `arr[i] = v` with an index the compiler proves is one per iteration) and
//! reads it anywhere after; the compiler places the role barrier between a loop that writes and
//! the accesses that follow. Rust's borrows keep two roles from writing one array, or a loop from
//! reading an array its own iterations write. In the simulator an array is a boxed Rust array.

use std::ops::{Deref, DerefMut};

use super::channel::PayloadElem;
use super::{AtomicF32, AtomicF64};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64};

/// What a shared array holds: a scalar, a struct of the module, or an atomic integer or float;
/// every element starts at zero.
pub trait SharedElem: Sized {
    /// The element with every bit zero.
    fn zeroed() -> Self;
}

impl<T: PayloadElem> SharedElem for T {
    fn zeroed() -> T {
        PayloadElem::zeroed()
    }
}

macro_rules! shared_atomic {
    ($($t:ty),*) => {$(
        impl SharedElem for $t {
            fn zeroed() -> $t {
                <$t>::new(Default::default())
            }
        }
    )*};
}

shared_atomic!(AtomicU32, AtomicI32, AtomicU64, AtomicI64, AtomicF32, AtomicF64);

/// `N` elements in the block's shared memory, made in the kernel body with [`shared_array`].
///
/// It dereferences to `[T]`: `arr[i]`, `arr.len()`, `arr.par_iter()`, `arr.par_iter_mut()`, and
/// for atomic elements `arr[i].fetch_add(v, order)`.
#[derive(Debug)]
pub struct SharedArray<T, const N: usize>(Box<[T]>);

/// A new array of the block's shared memory, every element zero.
pub fn shared_array<T: SharedElem, const N: usize>() -> SharedArray<T, N> {
    SharedArray((0..N).map(|_| T::zeroed()).collect())
}

impl<T, const N: usize> Deref for SharedArray<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T, const N: usize> DerefMut for SharedArray<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// `R` rows of `C` elements in the block's shared memory, made in the kernel body with
/// [`shared_array_2d`]: `tile[r][c]`.
///
/// On the GPU a row whose bytes are a multiple of 128 is followed by one element of padding, so
/// that the 32 lanes of a warp reading a column (`tile[lane][c]`) read 32 different banks; the
/// padding is not addressable.
#[derive(Debug)]
pub struct SharedArray2d<T, const R: usize, const C: usize>(Box<[[T; C]]>);

/// A new `R` × `C` array of the block's shared memory, every element zero.
pub fn shared_array_2d<T: SharedElem, const R: usize, const C: usize>() -> SharedArray2d<T, R, C> {
    SharedArray2d(
        (0..R)
            .map(|_| std::array::from_fn(|_| T::zeroed()))
            .collect(),
    )
}

impl<T, const R: usize, const C: usize> Deref for SharedArray2d<T, R, C> {
    type Target = [[T; C]];
    fn deref(&self) -> &[[T; C]] {
        &self.0
    }
}

impl<T, const R: usize, const C: usize> DerefMut for SharedArray2d<T, R, C> {
    fn deref_mut(&mut self) -> &mut [[T; C]] {
        &mut self.0
    }
}
