//! Explicit data parallelism in rayon's shape: `par_iter`, `par_iter_mut`, `zip`, `enumerate`,
//! `for_each`.
//!
//! On the GPU the iterations are spread over the threads of the role that runs them; in the
//! simulator they run as a plain loop. The closure given to `for_each` is a `Fn`: it may read
//! captured values but not mutate them, because on the GPU each thread has its own copy. Writes go
//! through the `&mut` elements the iterator hands out, which is how safe Rust already proves that
//! no two iterations write the same element.

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
pub struct ParIter<I>(I);

impl<I: Iterator> ParIter<I> {
    /// Pairs the elements of two parallel iterators; the shorter one sets the length.
    pub fn zip<J: Iterator>(self, other: ParIter<J>) -> ParIter<std::iter::Zip<I, J>> {
        ParIter(self.0.zip(other.0))
    }

    /// Pairs each element with its index.
    pub fn enumerate(self) -> ParIter<std::iter::Enumerate<I>> {
        ParIter(self.0.enumerate())
    }

    /// Runs `op` once per element.
    pub fn for_each<F: Fn(I::Item)>(self, op: F) {
        self.0.for_each(op)
    }
}
