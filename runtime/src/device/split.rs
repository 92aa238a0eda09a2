//! `&mut y[..mid]` and `&mut y[mid..]` in a kernel body: two mutable borrows of `y` that rustc
//! refuses, though the ranges do not overlap. When the compiler proves that they do not, the
//! shadow code takes them with [`split_disjoint_mut`].

use std::ops::Range;

/// The parts `ranges` of `slice`, each `&mut` on its own, in the order of `ranges` (which need
/// not be sorted).
///
/// # Panics
/// If a range starts after it ends, ends past the slice, or overlaps another one (the compiler
/// writes this call only for ranges it proved disjoint; the bounds are still the caller's).
#[doc(hidden)]
pub fn split_disjoint_mut<T, const N: usize>(
    slice: &mut [T],
    ranges: [Range<usize>; N],
) -> [&mut [T]; N] {
    let mut order: Vec<usize> = (0..N).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut parts: [Option<&mut [T]>; N] = std::array::from_fn(|_| None);
    let mut rest: &mut [T] = slice;
    let mut offset = 0;
    let mut previous: Option<Range<usize>> = None;
    for i in order {
        let r = ranges[i].clone();
        assert!(
            r.start <= r.end,
            "slice index starts at {} but ends at {}",
            r.start,
            r.end
        );
        if let Some(p) = previous.as_ref().filter(|p| r.start < p.end) {
            panic!("the parts {p:?} and {r:?} of one slice overlap");
        }
        let taken = std::mem::take(&mut rest);
        assert!(
            r.end - offset <= taken.len(),
            "range end index {} out of range for slice of length {}",
            r.end,
            offset + taken.len()
        );
        let (_, tail) = taken.split_at_mut(r.start - offset);
        let (part, tail) = tail.split_at_mut(r.end - r.start);
        parts[i] = Some(part);
        rest = tail;
        offset = r.end;
        previous = Some(r);
    }
    parts.map(|p| p.unwrap_or_default())
}
