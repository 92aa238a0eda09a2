//! A 3-point stencil, `y[i] = a x[i-1] + b x[i] + c x[i+1]` (with `x[-1] = x[n] = 0`), streamed
//! through a window of slots: one warp loads tiles of `x` into a ring, four warps compute each tile
//! from the slot that holds it and its neighbours' edges, and one warp stores the results with
//! bulk copies.
//!
//! ```text
//! cargo run --release --example stencil -- [elements] [blocks per multiprocessor, or `tiles`]
//! ```
//!
//! A tile's halo is in the neighbouring tiles: the compute role holds tile `i` and `i + 1` at once
//! (two slots of one receiver), takes the right neighbour from the first element of the next slot
//! and the left one from the last element of the previous slot (kept as a scalar), and receives
//! each tile once. Each block streams runs of [`RUN`] consecutive elements (`block_tiles` of the
//! runs), so that neighbouring tiles are in one block; only the two ends of a run read their
//! neighbour from global memory. The grid is one block per run by default (`tiles`), as the
//! pipeline's is one block per 8 tiles.

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, GridShape, Timing};
use gpu_async::{gpu_async, BackendKind, Device, DeviceBuffer, Grid};

#[gpu_async]
pub mod stencil {
    use gpu_async::device::*;

    /// Floats per tile (one slot).
    pub const TILE: usize = 1024;
    /// Consecutive elements one block streams in one go: 8 tiles.
    pub const RUN: usize = 8 * TILE;

    /// The stencil's weights.
    #[derive(Clone, Copy)]
    pub struct Taps {
        /// The weight of `x[i - 1]`.
        pub a: f32,
        /// The weight of `x[i]`.
        pub b: f32,
        /// The weight of `x[i + 1]`.
        pub c: f32,
    }

    /// `y[i] = a x[i-1] + b x[i] + c x[i+1]`, through load → compute → store roles.
    #[kernel(warps = 6)]
    pub async fn three_point(taps: Taps, x: &[f32], y: &mut [f32]) {
        let (load_tx, load_rx) = channel::<[f32; TILE], 4>();
        let (out_tx, out_rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, load(x, load_tx)),
            on_warps(1..5, compute(taps, x, load_rx, out_tx)),
            on_warps(5..6, store(x.len(), out_rx, y)),
        )
        .await;
    }

    /// Sends the block's runs, tile by tile.
    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 4>) {
        for run in block_tiles(x.len(), RUN) {
            let mut t = run.start;
            while t < run.end {
                let end = (t + TILE).min(run.end);
                let Some(mut slot) = tx.reserve().await else {
                    return;
                };
                slot.copy_from(&x[t..end]).await;
                slot.send();
                t = end;
            }
        }
    }

    /// Computes each tile of the block's runs from its slot (`cur`), the last element of the
    /// tile before it (`left`) and the first one of the tile after it (the next slot, held at
    /// the same time, or `x` at a run's end).
    async fn compute(
        k: Taps,
        x: &[f32],
        rx: Receiver<[f32; TILE], 4>,
        mut tx: Sender<[f32; TILE], 2>,
    ) {
        let n = x.len();
        for run in block_tiles(n, RUN) {
            // The run's outer neighbours, read before the first tile arrives.
            let mut left = if run.start > 0 { x[run.start - 1] } else { 0.0 };
            let after = if run.end < n { x[run.end] } else { 0.0 };
            let Some(mut cur) = rx.recv().await else {
                return;
            };
            let mut t = run.start;
            loop {
                let len = (t + TILE).min(run.end) - t;
                if t + len == run.end {
                    let Some(mut out) = tx.reserve().await else {
                        return;
                    };
                    apply(k, &cur[..], len, left, after, &mut out[..]);
                    out.send();
                    break;
                }
                let Some(next) = rx.recv().await else { return };
                let Some(mut out) = tx.reserve().await else {
                    return;
                };
                apply(k, &cur[..], len, left, next[0], &mut out[..]);
                out.send();
                left = cur[len - 1];
                cur = next;
                t += len;
            }
        }
    }

    /// `out[j] = a s[j-1] + b s[j] + c s[j+1]` for `j < len`, with `left` for `s[-1]` and
    /// `right` for `s[len]`: the neighbours' indices and values are selected, so the loop has no
    /// branch.
    fn apply(k: Taps, s: &[f32], len: usize, left: f32, right: f32, out: &mut [f32]) {
        out.par_iter_mut()
            .zip(s.par_iter())
            .enumerate()
            .for_each(|(j, (o, m))| {
                let first = j == 0;
                let last = j + 1 >= len;
                let jl = if first { 0 } else { j - 1 };
                let jr = if last { j } else { j + 1 };
                let l = unsafe { *s.get_unchecked(jl) };
                let r = unsafe { *s.get_unchecked(jr) };
                let l = if first { left } else { l };
                let r = if last { right } else { r };
                *o = k.a * l + k.b * *m + k.c * r;
            });
    }

    /// Copies each computed tile to `y`, in the order of the block's runs.
    async fn store(n: usize, rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        assert!(n == y.len(), "x and y differ in length");
        let mut runs = block_tiles(y.len(), RUN);
        let mut t = 0usize;
        let mut end = 0usize;
        while let Some(slot) = rx.recv().await {
            if t == end {
                let run = runs.next().unwrap();
                t = run.start;
                end = run.end;
            }
            let stop = (t + TILE).min(end);
            slot.copy_to(&mut y[t..stop]).await;
            t = stop;
        }
    }
}

use stencil::{Taps, RUN};

/// One block per run of `n` elements on the GPU (at least one), a few on the simulator.
pub fn run_grid(dev: &Device, n: usize) -> Grid {
    match dev.kind() {
        BackendKind::Cuda => Grid::per_tile(n, RUN),
        _ => Grid::blocks(3),
    }
}

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(3),
    })
}

/// The weights every run uses.
pub const TAPS: Taps = Taps {
    a: 0.25,
    b: 0.5,
    c: -0.75,
};

/// The stencil on the CPU, as the kernel computes it (each product rounded, then the sums left
/// to right).
pub fn cpu_stencil(k: Taps, xs: &[f32]) -> Vec<f32> {
    let n = xs.len();
    (0..n)
        .map(|i| {
            let l = if i > 0 { xs[i - 1] } else { 0.0 };
            let r = if i + 1 < n { xs[i + 1] } else { 0.0 };
            k.a * l + k.b * xs[i] + k.c * r
        })
        .collect()
}

/// Runs the stencil once on `n` random elements; returns the elements of `y` that differ, bit for
/// bit, from the CPU loop.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = random_f32(n, seed);
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&random_f32(n, seed + 1))?;
    gpu_async::block_on(stencil::three_point::launch(dev, grid, (TAPS, &x, &mut y)))?;
    let got = y.download()?;
    Ok(got
        .iter()
        .zip(cpu_stencil(TAPS, &xs))
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count())
}

/// The median time in ms of the stencil on `grid` from `x` into `y`, and of a device copy from
/// `src` to `dst`, 20 runs each after 3 warm-ups: both read and write as many floats.
pub fn time_against_copy(
    (dev, timing): (&Device, &mut Timing),
    grid: Grid,
    (x, y): (&DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
    (src, dst): (&DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
) -> gpu_async::Result<(f64, f64)> {
    let kernel_ms = median_of(3, 20, || {
        timing.time_launch(|| stencil::three_point::launch(dev, grid, (TAPS, x, &mut *y)))
    })?;
    let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(src))?;
    Ok((kernel_ms, copy_ms))
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 5_000_000)?;
    let shape = arg(
        2,
        "a number of blocks per multiprocessor or `tiles`",
        GridShape::Tiles,
    )?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = match shape {
        GridShape::Tiles => run_grid(&dev, n),
        GridShape::PerSm(k) => grid_for(&dev, k)?,
    };
    let mismatches = run_and_check(&dev, grid, n, 5)?;
    println!(
        "check: {n} elements, {} blocks, {mismatches} mismatches against the CPU loop",
        grid.block_count()
    );
    if mismatches != 0 {
        return Err("stencil result differs from the CPU loop".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&random_f32(n, 21))?;
        let mut y = dev.alloc::<f32>(n)?;
        let src = dev.upload(&random_f32(n, 22))?;
        let mut dst = dev.alloc::<f32>(n)?;
        let mut timing = Timing::new(&dev)?;
        let (kernel_ms, copy_ms) =
            time_against_copy((&dev, &mut timing), grid, (&x, &mut y), (&src, &mut dst))?;
        // Both read n floats and write n floats.
        let (k, c) = (gb_per_s(8 * n, kernel_ms), gb_per_s(8 * n, copy_ms));
        println!(
            "bandwidth: stencil {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.3}",
            k / c
        );
        println!("time: stencil {kernel_ms:.4} ms");
        println!("time: stencil_peer_copy {copy_ms:.4} ms");
    }
    Ok(())
}
