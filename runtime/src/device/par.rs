//! Explicit data parallelism in rayon's shape: `par_iter`, `par_iter_mut`, `into_par_iter` of a
//! range, `zip`, `enumerate`, `for_each`, the reductions and the scans.
//!
//! On the GPU the iterations are spread over the threads of the role that runs them; in the
//! simulator they run as a plain loop. Writes go through the `&mut` elements the iterator hands
//! out, which is how safe Rust already proves that no two iterations write the same element, or
//! into a shared array the closure captures by `&mut` (`tile[i] = v`), with an index the compiler
//! proves is one per iteration. The compiler rejects assignments to other captured values: on the
//! GPU each thread has its own copy.

use std::panic::Location;

/// `par_iter()` on slices, arrays and channel slots.
pub trait ParSlice<T> {
    /// A parallel iterator over shared references to the elements.
    fn par_iter(&self) -> ParIter<std::slice::Iter<'_, T>>;
}

/// `par_iter_mut()` on mutable slices, arrays and channel slots.
pub trait ParSliceMut<T> {
    /// A parallel iterator over mutable references to the elements.
    fn par_iter_mut(&mut self) -> ParIter<std::slice::IterMut<'_, T>>;
}

/// `(a..b).into_par_iter()`: a parallel loop over the indices of a range, rayon's
/// `IntoParallelIterator` for ranges.
pub trait IntoParIter {
    /// The iterator.
    type Iter: Iterator;
    /// A parallel iterator over the items.
    fn into_par_iter(self) -> ParIter<Self::Iter>;
}

impl IntoParIter for std::ops::Range<usize> {
    type Iter = std::ops::Range<usize>;
    fn into_par_iter(self) -> ParIter<std::ops::Range<usize>> {
        ParIter(self)
    }
}

impl<T> ParSlice<T> for [T] {
    fn par_iter(&self) -> ParIter<std::slice::Iter<'_, T>> {
        ParIter(self.iter())
    }
}

impl<T> ParSliceMut<T> for [T] {
    fn par_iter_mut(&mut self) -> ParIter<std::slice::IterMut<'_, T>> {
        ParIter(self.iter_mut())
    }
}

/// A parallel iterator: its iterations are independent and may run in any order.
#[derive(Debug)]
#[must_use = "a parallel iterator does nothing until `for_each` consumes it"]
pub struct ParIter<I>(pub(super) I);

impl<I: Iterator> ParIter<I> {
    /// Pairs the elements of two parallel iterators; the shorter one sets the length.
    pub fn zip<J: Iterator>(self, other: ParIter<J>) -> ParIter<std::iter::Zip<I, J>> {
        ParIter(self.0.zip(other.0))
    }

    /// Pairs each element with its index.
    pub fn enumerate(self) -> ParIter<std::iter::Enumerate<I>> {
        ParIter(self.0.enumerate())
    }

    /// Runs `op` once per element. `op` is `FnMut` so that it can write a captured `&mut`
    /// shared array by index; the compiler checks that each iteration writes its own elements.
    #[track_caller]
    pub fn for_each<F: FnMut(I::Item)>(self, mut op: F) {
        let at = Location::caller();
        self.0.for_each(|item| {
            crate::sim::tick(at);
            op(item)
        })
    }
}

impl<I: Iterator> ParIter<I> {
    /// Maps each item to a scalar, for a reduction (`sum`, `min`, `max`, `reduce`) or a scan to
    /// consume. `op` is `FnMut` so that it can also write a captured `&mut` shared array by
    /// index, as `for_each`'s.
    pub fn map<R, F: FnMut(I::Item) -> R>(self, op: F) -> ParIter<std::iter::Map<I, F>> {
        ParIter(self.0.map(op))
    }

    /// The sum of the items, in the order the kernel language defines (see [`reduce`](Self::reduce)).
    /// Integers wrap.
    #[track_caller]
    pub fn sum(self) -> <I::Item as ParItem>::Scalar
    where
        I::Item: ParItem,
    {
        let items = self.0.map(ParItem::value);
        reduce_in_order(items, ParScalar::ZERO, ParScalar::par_add)
    }

    /// The smallest item (floats: NaNs are skipped, as by `f32::min`; NaN when every item is
    /// NaN or there are none; integers: `MAX` when there are none).
    #[track_caller]
    pub fn min(self) -> <I::Item as ParItem>::Scalar
    where
        I::Item: ParItem,
    {
        let items = self.0.map(ParItem::value);
        reduce_in_order(items, ParScalar::MIN_IDENTITY, ParScalar::par_min)
    }

    /// The largest item (floats: NaNs are skipped, as by `f32::max`; NaN when every item is
    /// NaN or there are none; integers: `MIN` when there are none).
    #[track_caller]
    pub fn max(self) -> <I::Item as ParItem>::Scalar
    where
        I::Item: ParItem,
    {
        let items = self.0.map(ParItem::value);
        reduce_in_order(items, ParScalar::MAX_IDENTITY, ParScalar::par_max)
    }

    /// Combines the items with `op`, starting each thread from `identity()`.
    ///
    /// The order is part of the language, so that the simulator and the GPU give the same bits:
    /// item `i` goes to the role's thread `(i / 4) % T` (`T` threads), which folds its items in
    /// increasing order; the 32 lanes of each warp then combine by a butterfly (partners at
    /// distance 16, 8, 4, 2, 1, the lower lane's value always on the left), and the warps' totals
    /// are folded in warp order. `op` should be associative; the result is the same on every
    /// thread even if it is not commutative.
    #[track_caller]
    pub fn reduce<T: ParScalar, ID: Fn() -> T, OP: Fn(T, T) -> T>(self, identity: ID, op: OP) -> T
    where
        I::Item: ParItem<Scalar = T>,
    {
        let items = self.0.map(ParItem::value);
        reduce_in_order(items, identity(), op)
    }
}

impl<I: Iterator> ParIter<I> {
    /// The same as [`reduce`](Self::reduce): each thread folds its items into `identity()` with
    /// `op`, then the threads' partial results are combined with `op` too, so `op` must be
    /// associative and the accumulator has the items' type (unlike rayon's `fold`, this returns
    /// the combined value).
    #[track_caller]
    pub fn fold<T: ParScalar, ID: Fn() -> T, OP: Fn(T, T) -> T>(self, identity: ID, op: OP) -> T
    where
        I::Item: ParItem<Scalar = T>,
    {
        self.reduce(identity, op)
    }
}

/// The defined reduction order (see [`ParIter::reduce`]) over the running role's threads; each
/// item is a loop iteration of the caller's (see `__loop_tick`).
#[track_caller]
fn reduce_in_order<T: Copy>(
    items: impl Iterator<Item = T>,
    identity: T,
    op: impl Fn(T, T) -> T,
) -> T {
    let at = Location::caller();
    let items = items.inspect(|_| crate::sim::tick(at));
    reduction_order(items, identity, crate::sim::current_role_threads(), op)
}

/// What a reduction over a role of `threads` threads (a multiple of 32) computes, in the order
/// the kernel language defines (see [`ParIter::reduce`]), for host code that needs the
/// bit-identical result: CPU references of kernels that reduce floats.
pub fn reduction_order<T: Copy>(
    items: impl IntoIterator<Item = T>,
    identity: T,
    threads: usize,
    op: impl Fn(T, T) -> T,
) -> T {
    let threads = threads.max(1);
    let mut partial = vec![identity; threads];
    for (i, v) in items.into_iter().enumerate() {
        let t = (i / 4) % threads;
        partial[t] = op(partial[t], v);
    }
    let mut totals = Vec::with_capacity(threads / 32);
    for lanes in partial.chunks(32) {
        let mut warp = [identity; 32];
        warp[..lanes.len()].copy_from_slice(lanes);
        totals.push(butterfly_prefix(warp, lanes.len(), &op));
    }
    let mut total = totals[0];
    for &t in &totals[1..] {
        total = op(total, t);
    }
    total
}

/// The 32 lanes' values combined by the warp butterfly of the language's reductions: partners
/// at distance 16, 8, 4, 2, 1, the lower lane's value always on the left. Every lane ends with
/// the same value; this is lane 0's.
pub(crate) fn butterfly<T: Copy>(lanes: [T; 32], op: impl Fn(T, T) -> T) -> T {
    butterfly_prefix(lanes, 32, &op)
}

/// [`butterfly`] over the first `live` lanes (a role narrower than a warp has no partners
/// past them).
fn butterfly_prefix<T: Copy>(mut lanes: [T; 32], live: usize, op: &impl Fn(T, T) -> T) -> T {
    let mut k = 16;
    while k > 0 {
        let old = lanes;
        for (l, lane) in lanes[..live].iter_mut().enumerate() {
            let p = l ^ k;
            if p < live {
                *lane = if l & k == 0 {
                    op(old[l], old[p])
                } else {
                    op(old[p], old[l])
                };
            }
        }
        k /= 2;
    }
    lanes[0]
}

mod sealed {
    pub trait Sealed {}
}

/// A scalar that parallel reductions combine.
pub trait ParScalar: Copy + sealed::Sealed {
    /// The sum's identity.
    const ZERO: Self;
    /// `min`'s identity (`MAX`, or NaN for floats).
    const MIN_IDENTITY: Self;
    /// `max`'s identity (`MIN`, or NaN for floats).
    const MAX_IDENTITY: Self;
    /// Wrapping (integers) or rounded (floats) addition.
    fn par_add(self, other: Self) -> Self;
    /// The smaller (floats: `f32::min`).
    fn par_min(self, other: Self) -> Self;
    /// The larger (floats: `f32::max`).
    fn par_max(self, other: Self) -> Self;
}

/// An item a reduction reads as a scalar: the scalar itself or a reference to one.
pub trait ParItem {
    /// The scalar.
    type Scalar: ParScalar;
    /// The scalar's value.
    fn value(self) -> Self::Scalar;
}

macro_rules! par_scalar {
    (int: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ParScalar for $t {
            const ZERO: $t = 0;
            const MIN_IDENTITY: $t = <$t>::MAX;
            const MAX_IDENTITY: $t = <$t>::MIN;
            fn par_add(self, other: $t) -> $t {
                self.wrapping_add(other)
            }
            fn par_min(self, other: $t) -> $t {
                Ord::min(self, other)
            }
            fn par_max(self, other: $t) -> $t {
                Ord::max(self, other)
            }
        }
        par_item!($t);
    )*};
    (float: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ParScalar for $t {
            const ZERO: $t = 0.0;
            const MIN_IDENTITY: $t = <$t>::NAN;
            const MAX_IDENTITY: $t = <$t>::NAN;
            fn par_add(self, other: $t) -> $t {
                self + other
            }
            fn par_min(self, other: $t) -> $t {
                self.min(other)
            }
            fn par_max(self, other: $t) -> $t {
                self.max(other)
            }
        }
        par_item!($t);
    )*};
}

macro_rules! par_item {
    ($t:ty) => {
        impl ParItem for $t {
            type Scalar = $t;
            fn value(self) -> $t {
                self
            }
        }
        impl ParItem for &$t {
            type Scalar = $t;
            fn value(self) -> $t {
                *self
            }
        }
        impl ParItem for &mut $t {
            type Scalar = $t;
            fn value(self) -> $t {
                *self
            }
        }
    };
}

par_scalar!(int: i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
par_scalar!(float: f32, f64);
