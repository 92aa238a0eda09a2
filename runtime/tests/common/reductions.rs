//! Parallel reductions (`sum`, `min`, `max`, `map(..).sum()`, `reduce`) in a one-warp role and a
//! three-warp role, over tiles of global memory with a short last tile.

use gpu_async::gpu_async;

#[gpu_async]
pub mod reductions {
    use gpu_async::device::*;

    pub const TILE: usize = 1000;

    #[kernel(warps = 4)]
    #[allow(clippy::too_many_arguments)]
    pub async fn reduce(
        x: &[f32],
        k: &[i32],
        sums: &mut [f32],
        mins: &mut [f32],
        maxs: &mut [f32],
        squares: &mut [f32],
        wide_sums: &mut [i64],
        xors: &mut [i32],
        big: &mut [i32],
        sums3: &mut [f32],
    ) {
        join!(
            on_warps(0..1, floats(x, sums, mins, maxs, squares)),
            on_warps(1..4, ints(x, k, wide_sums, xors, big, sums3)),
        )
        .await;
    }

    async fn floats(
        x: &[f32],
        sums: &mut [f32],
        mins: &mut [f32],
        maxs: &mut [f32],
        squares: &mut [f32],
    ) {
        for tile in block_tiles(x.len(), TILE) {
            let t = tile.start / TILE;
            let s = x[tile.start..tile.end].par_iter().sum();
            let lo = x[tile.start..tile.end].par_iter().min();
            let hi = x[tile.start..tile.end].par_iter().max();
            let sq = x[tile.start..tile.end].par_iter().map(|v| *v * *v).sum();
            sums[t..t + 1].par_iter_mut().for_each(|o| *o = s);
            mins[t..t + 1].par_iter_mut().for_each(|o| *o = lo);
            maxs[t..t + 1].par_iter_mut().for_each(|o| *o = hi);
            squares[t..t + 1].par_iter_mut().for_each(|o| *o = sq);
        }
    }

    async fn ints(
        x: &[f32],
        k: &[i32],
        wide_sums: &mut [i64],
        xors: &mut [i32],
        big: &mut [i32],
        sums3: &mut [f32],
    ) {
        for tile in block_tiles(k.len(), TILE) {
            let t = tile.start / TILE;
            let w = k[tile.start..tile.end]
                .par_iter()
                .zip(x[tile.start..tile.end].par_iter())
                .map(|(a, b)| *a as i64 * 3 + (*b > 0.0) as i64)
                .sum();
            let xr = k[tile.start..tile.end]
                .par_iter()
                .reduce(|| 0, |a, b| a ^ b);
            let m = k[tile.start..tile.end]
                .par_iter()
                .fold(|| i32::MIN, |a, b| a.max(b));
            let s = x[tile.start..tile.end].par_iter().sum();
            wide_sums[t..t + 1].par_iter_mut().for_each(|o| *o = w);
            xors[t..t + 1].par_iter_mut().for_each(|o| *o = xr);
            big[t..t + 1].par_iter_mut().for_each(|o| *o = m);
            sums3[t..t + 1].par_iter_mut().for_each(|o| *o = s);
        }
    }
}
