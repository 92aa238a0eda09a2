//! Scans and reductions of one role over ranges of every length around their groups of four
//! items per thread, their rounds of `4 T` items and their steps of `16 T`, starting at 16-byte
//! aligned and unaligned elements: a role of eight warps and a role of one.

#[gpu_async::gpu_async]
pub mod edges {
    use gpu_async::device::*;

    /// [`scan_and_reduce`] by a role of eight warps.
    #[kernel(warps = 8)]
    #[allow(clippy::too_many_arguments)]
    pub async fn eight_warps(
        x: &[u32],
        f: &[f32],
        y: &mut [u32],
        z: &mut [f32],
        sums: &mut [u32],
        fsums: &mut [f32],
        a: usize,
        b: usize,
        c: usize,
        n: usize,
    ) {
        join!(on_warps(
            0..8,
            scan_and_reduce(x, f, y, z, sums, fsums, a, b, c, n)
        ))
        .await;
    }

    /// [`scan_and_reduce`] by a role of one warp.
    #[kernel(warps = 1)]
    #[allow(clippy::too_many_arguments)]
    pub async fn one_warp(
        x: &[u32],
        f: &[f32],
        y: &mut [u32],
        z: &mut [f32],
        sums: &mut [u32],
        fsums: &mut [f32],
        a: usize,
        b: usize,
        c: usize,
        n: usize,
    ) {
        join!(on_warps(
            0..1,
            scan_and_reduce(x, f, y, z, sums, fsums, a, b, c, n)
        ))
        .await;
    }

    /// Over `xs = x[a..a + n]` and `fs = f[b..b + n]`: `y[c..c + n]` = the exclusive sums of
    /// `xs` from 7 (wrapping), `z[c..c + n]` = the inclusive sums of `2 fs` from 0.25;
    /// `sums` = [the sum of `xs`, of `xs[i] (2i + 1)`, the exclusive scan's total]; `fsums` =
    /// [the sum of `fs`, of `(xs[i] % 1000) fs[i]`, the inclusive scan's total].
    #[allow(clippy::too_many_arguments)]
    async fn scan_and_reduce(
        x: &[u32],
        f: &[f32],
        y: &mut [u32],
        z: &mut [f32],
        sums: &mut [u32],
        fsums: &mut [f32],
        a: usize,
        b: usize,
        c: usize,
        n: usize,
    ) {
        let total = x[a..a + n]
            .par_iter()
            .exclusive_sum(y[c..c + n].par_iter_mut(), 7);
        let ftotal = f[b..b + n]
            .par_iter()
            .map(|v| *v * 2.0)
            .inclusive_sum(z[c..c + n].par_iter_mut(), 0.25);
        let s = x[a..a + n].par_iter().sum();
        let w = x[a..a + n]
            .par_iter()
            .enumerate()
            .map(|(i, v)| v.wrapping_mul(2 * i as u32 + 1))
            .sum();
        let fs = f[b..b + n].par_iter().sum();
        let mixed = x[a..a + n]
            .par_iter()
            .zip(f[b..b + n].par_iter())
            .map(|(u, v)| (*u % 1000) as f32 * *v)
            .sum();
        sums[0..1].par_iter_mut().for_each(|o| *o = s);
        sums[1..2].par_iter_mut().for_each(|o| *o = w);
        sums[2..3].par_iter_mut().for_each(|o| *o = total);
        fsums[0..1].par_iter_mut().for_each(|o| *o = fs);
        fsums[1..2].par_iter_mut().for_each(|o| *o = mixed);
        fsums[2..3].par_iter_mut().for_each(|o| *o = ftotal);
    }
}
