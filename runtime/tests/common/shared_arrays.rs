//! Block-shared arrays: per-block bins updated with shared atomics, a transpose through a 2D
//! tile, a table written with `par_iter_mut` and read by index, scans of a role's threads, and
//! float atomics in global and shared memory.

use gpu_async::gpu_async;

#[gpu_async]
pub mod blocks {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    pub const TILE: usize = 32;

    /// `bins[b]` += the count of `b` in `x`: per-block bins in shared memory, then one global
    /// update per bin.
    #[kernel(warps = 4)]
    pub async fn bins(x: &[u8], out: &[AtomicU32]) {
        let counts = shared_array::<AtomicU32, 256>();
        join!(on_warps(0..4, tally(x, out, &counts))).await;
    }

    async fn tally(x: &[u8], out: &[AtomicU32], counts: &SharedArray<AtomicU32, 256>) {
        for tile in block_tiles(x.len(), 4096) {
            x[tile].par_iter().for_each(|b| {
                counts[*b as usize].fetch_add(1, Ordering::Relaxed);
            });
        }
        (0..256).into_par_iter().for_each(|i| {
            let c = counts[i].load(Ordering::Relaxed);
            if c != 0 {
                out[i].fetch_add(c, Ordering::Relaxed);
            }
        });
    }

    /// `y` = the transpose of the `n` × `n` matrix `x`, through a 32 × 32 tile.
    #[kernel(warps = 8)]
    pub async fn transpose(x: &[f32], y: &mut [f32], n: usize) {
        let mut tile = shared_array_2d::<f32, TILE, TILE>();
        join!(on_warps(0..8, move_tiles(x, y, n, &mut tile))).await;
    }

    async fn move_tiles(
        x: &[f32],
        y: &mut [f32],
        n: usize,
        tile: &mut SharedArray2d<f32, TILE, TILE>,
    ) {
        assert!(n % TILE == 0, "n is a multiple of the tile");
        assert!(x.len() == n * n && y.len() == n * n, "x and y are n x n");
        let per_row = n / TILE;
        let mut t = block_index();
        while t < per_row * per_row {
            let (r0, c0) = ((t / per_row) * TILE, (t % per_row) * TILE);
            (0..TILE * TILE).into_par_iter().for_each(|i| {
                tile[i / TILE][i % TILE] = x[(r0 + i / TILE) * n + c0 + i % TILE];
            });
            (0..TILE * TILE).into_par_iter().for_each(|i| {
                y[(c0 + i / TILE) * n + r0 + i % TILE] = tile[i % TILE][i / TILE];
            });
            t += block_count();
        }
    }

    /// `y[i]` = `x[i]` squared plus the table value of `i % 64`: a table written by
    /// `par_iter_mut` with its index, read by index in the next loop.
    #[kernel(warps = 2)]
    pub async fn table(x: &[u32], y: &mut [u32]) {
        let mut squares = shared_array::<u32, 64>();
        join!(on_warps(0..2, use_table(x, y, &mut squares))).await;
    }

    async fn use_table(x: &[u32], y: &mut [u32], squares: &mut SharedArray<u32, 64>) {
        squares
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, s)| *s = (i * i) as u32 + 7);
        y.par_iter_mut()
            .zip(x.par_iter())
            .enumerate()
            .for_each(|(i, (o, v))| *o = *v * *v + squares[i % 64]);
    }

    /// Per block, `y[tile]` = the exclusive prefix sums of `x[tile]` (from `init`) and
    /// `z[tile]` the inclusive ones; `totals[b]` = block `b`'s last total.
    #[kernel(warps = 4)]
    pub async fn scans(x: &[u32], y: &mut [u32], z: &mut [u32], totals: &mut [u32], init: u32) {
        join!(on_warps(0..4, scan_tiles(x, y, z, totals, init))).await;
    }

    async fn scan_tiles(x: &[u32], y: &mut [u32], z: &mut [u32], totals: &mut [u32], init: u32) {
        let mut last = 0u32;
        for tile in block_tiles(x.len(), 3000) {
            let (a, b) = (tile.start, tile.end);
            let total = x[a..b]
                .par_iter()
                .exclusive_sum(y[a..b].par_iter_mut(), init);
            last = x[a..b]
                .par_iter()
                .inclusive_sum(z[a..b].par_iter_mut(), init);
            assert!(last == total, "the exclusive and inclusive totals differ");
        }
        let b = block_index();
        totals[b..b + 1].par_iter_mut().for_each(|t| *t = last);
    }

    /// Float scans and a custom operation, in the scans' defined order: `y` = the exclusive
    /// sums of `x` per block tile, `m` = the running maximum of `x`.
    #[kernel(warps = 2)]
    pub async fn float_scans(x: &[f32], y: &mut [f32], m: &mut [f32]) {
        join!(on_warps(0..2, float_scan_tiles(x, y, m))).await;
    }

    async fn float_scan_tiles(x: &[f32], y: &mut [f32], m: &mut [f32]) {
        for tile in block_tiles(x.len(), 1000) {
            let (a, b) = (tile.start, tile.end);
            x[a..b]
                .par_iter()
                .exclusive_sum(y[a..b].par_iter_mut(), 0.5);
            x[a..b].par_iter().map(|v| *v * 2.0).inclusive_scan(
                m[a..b].par_iter_mut(),
                f32::NEG_INFINITY,
                || f32::NEG_INFINITY,
                |p, q| p.max(q),
            );
        }
    }

    /// Float atomics: `sums[i % 4]` += `x[i]` (global), `top[0]` = the largest `x[i]` by
    /// `total_cmp`, and per block the sum of `x` through a shared `AtomicF64`.
    #[kernel(warps = 2)]
    pub async fn float_atomics(
        x: &[f32],
        sums: &[AtomicF32],
        top: &[AtomicF32],
        low: &[AtomicF64],
        blocks: &[AtomicF64],
    ) {
        let acc = shared_array::<AtomicF64, 1>();
        join!(on_warps(
            0..2,
            float_updates(x, sums, top, low, blocks, &acc)
        ))
        .await;
    }

    async fn float_updates(
        x: &[f32],
        sums: &[AtomicF32],
        top: &[AtomicF32],
        low: &[AtomicF64],
        blocks: &[AtomicF64],
        acc: &SharedArray<AtomicF64, 1>,
    ) {
        x.par_iter().enumerate().for_each(|(i, v)| {
            if i % block_count() == block_index() {
                sums[i % 4].fetch_add(*v, Ordering::Relaxed);
                top[0].fetch_max(*v, Ordering::Relaxed);
                low[0].fetch_min(*v as f64, Ordering::Relaxed);
                acc[0].fetch_add(f64::from_bits((*v as f64).to_bits()), Ordering::Relaxed);
            }
        });
        (0..1).into_par_iter().for_each(|_| {
            blocks[block_index()].store(acc[0].load(Ordering::Relaxed), Ordering::Relaxed);
        });
    }

    /// A role of one warp: a fresh array reads zero, a scan without shared scratch (its warp
    /// total by a shuffle), and shared `fetch_max`/`fetch_min` of floats by `total_cmp`.
    #[kernel(warps = 1)]
    pub async fn one_warp(x: &[f32], y: &mut [f32], extremes: &mut [f32]) {
        let fresh = shared_array::<u32, 40>();
        let mut sums = shared_array::<f32, 100>();
        let top = shared_array::<AtomicF32, 2>();
        join!(on_warps(
            0..1,
            one_warp_role(x, y, extremes, &fresh, &mut sums, &top)
        ))
        .await;
    }

    async fn one_warp_role(
        x: &[f32],
        y: &mut [f32],
        extremes: &mut [f32],
        fresh: &SharedArray<u32, 40>,
        sums: &mut SharedArray<f32, 100>,
        top: &SharedArray<AtomicF32, 2>,
    ) {
        let zeros = fresh.par_iter().map(|v| *v).sum();
        assert!(zeros == 0, "a fresh shared array is zero");
        (0..2).into_par_iter().for_each(|i| {
            top[i].store(
                if i == 0 {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                },
                Ordering::Relaxed,
            );
        });
        let n = x.len().min(100);
        x[0..n].par_iter().inclusive_sum(sums.par_iter_mut(), 1.0);
        x.par_iter().for_each(|v| {
            top[0].fetch_max(*v, Ordering::Relaxed);
            top[1].fetch_min(*v, Ordering::Relaxed);
        });
        y[0..n]
            .par_iter_mut()
            .zip(sums.par_iter())
            .for_each(|(o, s)| *o = *s);
        extremes[0..2]
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, e)| *e = top[i].load(Ordering::Relaxed));
    }

    /// `sums[0]` += every `x[i]` with `fetch_add` on an `AtomicF32`, whose subnormals PTX flushes.
    #[kernel(warps = 1)]
    pub async fn f32_adds(x: &[f32], sums: &[AtomicF32]) {
        join!(on_warps(0..1, f32_add_all(x, sums))).await;
    }

    async fn f32_add_all(x: &[f32], sums: &[AtomicF32]) {
        x.par_iter().enumerate().for_each(|(i, v)| {
            sums[i].fetch_add(*v, Ordering::Relaxed);
        });
    }
}
