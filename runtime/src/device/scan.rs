//! Scans over a role's threads: `src.exclusive_sum(dst, init)`, `inclusive_sum`, and
//! `exclusive_scan` / `inclusive_scan` with a combining closure. Element `i` of `dst` receives
//! `init` combined with the items before `i` (exclusive) or up to `i` (inclusive); the call
//! returns `init` combined with every item.
//!
//! The order of the combinations is part of the language, so that the simulator and the GPU give
//! the same bits for floats (integers are the same in any order); [`scan_order`] computes it.

use super::par::{ParItem, ParIter, ParScalar};

impl<I: Iterator> ParIter<I> {
    /// `dst[i] = init + src[0] + .. + src[i - 1]` (integers wrap); returns `init` plus every
    /// item. The length is the shorter of the two; the order is [`scan_order`]'s.
    pub fn exclusive_sum<'d, T, J>(self, dst: ParIter<J>, init: T) -> T
    where
        T: ParScalar + 'd,
        I::Item: ParItem<Scalar = T>,
        J: Iterator<Item = &'d mut T>,
    {
        self.scan_into(dst, init, T::ZERO, T::par_add, false)
    }

    /// `dst[i] = init + src[0] + .. + src[i]` (integers wrap); returns `init` plus every item.
    pub fn inclusive_sum<'d, T, J>(self, dst: ParIter<J>, init: T) -> T
    where
        T: ParScalar + 'd,
        I::Item: ParItem<Scalar = T>,
        J: Iterator<Item = &'d mut T>,
    {
        self.scan_into(dst, init, T::ZERO, T::par_add, true)
    }

    /// `dst[i] = op(..op(op(init, src[0]), src[1]).., src[i - 1])` in [`scan_order`]'s grouping;
    /// returns `init` combined with every item. `op` must be associative and `identity()` its
    /// identity (threads past the end contribute it).
    pub fn exclusive_scan<'d, T, J, ID, OP>(
        self,
        dst: ParIter<J>,
        init: T,
        identity: ID,
        op: OP,
    ) -> T
    where
        T: ParScalar + 'd,
        I::Item: ParItem<Scalar = T>,
        J: Iterator<Item = &'d mut T>,
        ID: Fn() -> T,
        OP: Fn(T, T) -> T,
    {
        self.scan_into(dst, init, identity(), op, false)
    }

    /// As [`exclusive_scan`](Self::exclusive_scan), with `dst[i]` including `src[i]`.
    pub fn inclusive_scan<'d, T, J, ID, OP>(
        self,
        dst: ParIter<J>,
        init: T,
        identity: ID,
        op: OP,
    ) -> T
    where
        T: ParScalar + 'd,
        I::Item: ParItem<Scalar = T>,
        J: Iterator<Item = &'d mut T>,
        ID: Fn() -> T,
        OP: Fn(T, T) -> T,
    {
        self.scan_into(dst, init, identity(), op, true)
    }

    fn scan_into<'d, T, J>(
        self,
        dst: ParIter<J>,
        init: T,
        identity: T,
        op: impl Fn(T, T) -> T,
        inclusive: bool,
    ) -> T
    where
        T: Copy + 'd,
        I::Item: ParItem<Scalar = T>,
        J: Iterator<Item = &'d mut T>,
    {
        let outs: Vec<&mut T> = dst.0.collect();
        let items: Vec<T> = self.0.take(outs.len()).map(ParItem::value).collect();
        let threads = crate::sim::current_role_threads();
        let (values, total) = scan_order(items, init, identity, threads, inclusive, op);
        for (o, v) in outs.into_iter().zip(values) {
            *o = v;
        }
        total
    }
}

/// What a scan over a role of `threads` threads (a multiple of 32) computes, in the order the
/// kernel language defines; returns each item's result and the total (`init` combined with every
/// item). For host code that needs the bit-identical result of a float scan.
///
/// The items go in rounds of `4 T` (`T` threads); in each round thread `t` holds items
/// `4t .. 4t + 4` of the round (the identity past the end), and:
///
/// 1. the thread folds its items left to right: `p0 = a0`, `pj = p(j-1) ⊕ aj`;
/// 2. each warp scans its lanes' totals `p3` inclusively, Hillis–Steele: at distances 1, 2, 4,
///    8, 16, lane `l >= d` takes `s(l-d) ⊕ s(l)`; a lane's exclusive prefix is lane `l - 1`'s
///    result (the identity for lane 0);
/// 3. the warps' totals are folded from the identity in warp order: warp `w`'s prefix is
///    `identity ⊕ tot(0) ⊕ .. ⊕ tot(w-1)`, the round's total the fold of all of them;
/// 4. the thread's base is `(carry ⊕ warp prefix) ⊕ lane prefix`; item `j`'s result is
///    `base ⊕ p(j-1)` (exclusive; `base` for `j = 0`) or `base ⊕ pj` (inclusive);
/// 5. `carry ⊕ round total` is the next round's carry, `init` the first's, the last the total.
pub fn scan_order<T: Copy>(
    items: impl IntoIterator<Item = T>,
    init: T,
    identity: T,
    threads: usize,
    inclusive: bool,
    op: impl Fn(T, T) -> T,
) -> (Vec<T>, T) {
    const LANES: usize = 32;
    let threads = threads.max(LANES) / LANES * LANES;
    let warps = threads / LANES;
    let items: Vec<T> = items.into_iter().collect();
    let mut out = Vec::with_capacity(items.len());
    let mut carry = init;
    for round in items.chunks(4 * threads) {
        // 1. Each thread's inclusive prefixes of its four items.
        let prefixes: Vec<[T; 4]> = (0..threads)
            .map(|t| {
                let at = |j: usize| round.get(4 * t + j).copied().unwrap_or(identity);
                let mut p = [at(0); 4];
                for j in 1..4 {
                    p[j] = op(p[j - 1], at(j));
                }
                p
            })
            .collect();
        // 2. Each warp's inclusive scan of its lanes' totals.
        let mut lane_excl = vec![identity; threads];
        let mut totals = Vec::with_capacity(warps);
        for w in 0..warps {
            let mut s: Vec<T> = (0..LANES).map(|l| prefixes[w * LANES + l][3]).collect();
            let mut d = 1;
            while d < LANES {
                let old = s.clone();
                for l in d..LANES {
                    s[l] = op(old[l - d], old[l]);
                }
                d *= 2;
            }
            for l in 1..LANES {
                lane_excl[w * LANES + l] = s[l - 1];
            }
            totals.push(s[LANES - 1]);
        }
        // 3. The warps' prefixes and the round's total.
        let mut warp_prefix = Vec::with_capacity(warps);
        let mut all = identity;
        for &t in &totals {
            warp_prefix.push(all);
            all = op(all, t);
        }
        // 4. The items' results.
        for (k, _) in round.iter().enumerate() {
            let (t, j) = (k / 4, k % 4);
            let base = op(op(carry, warp_prefix[t / LANES]), lane_excl[t]);
            out.push(match (inclusive, j) {
                (true, _) => op(base, prefixes[t][j]),
                (false, 0) => base,
                (false, _) => op(base, prefixes[t][j - 1]),
            });
        }
        // 5. The next round's carry.
        carry = op(carry, all);
    }
    (out, carry)
}
