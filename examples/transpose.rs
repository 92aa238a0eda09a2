//! The transpose of a square matrix (8192 × 8192 `f32` by default) through a shared tile: one
//! block per 64 × 64 tile reads the tile's rows from `x` into a shared 2D array and writes its
//! columns as rows of `y`. Both global accesses are whole rows (a warp instruction reads or
//! writes 32 consecutive floats, one 128-byte line); the tile's rows are 65 floats apart in
//! shared memory (the compiler pads a row of a multiple of 128 bytes by one element), so that a
//! warp reading a column of the tile reads 32 different banks.
//!
//! ```text
//! cargo run --release --example transpose -- [n, a multiple of 64]
//! ```
//!
//! Checked element by element against the CPU; on a GPU it prints its time next to a
//! device-to-device copy of as many bytes (`time:` lines, read by `scripts/h200-blocks.sh`).

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod transpose {
    use gpu_async::device::*;

    /// Rows and columns of a tile.
    pub const TILE: usize = 64;

    /// `y` = the transpose of the `n` × `n` matrix `x` (row-major), block `t` taking tile `t`
    /// (a grid of one block per tile). Eight warps take the tile's 4096 elements, 16 per
    /// thread: each parallel loop is 16 straight-line steps whose 16 loads are all issued
    /// before the first is used. On the H200 one tile per block is faster than blocks that walk
    /// several tiles in a `while` loop, whose bounds-checked stores keep ptxas from overlapping
    /// the tile's accesses (`docs/benchmarks.md`).
    #[kernel(warps = 8)]
    pub async fn transpose(x: &[f32], y: &mut [f32], n: usize) {
        let mut tile = shared_array_2d::<f32, TILE, TILE>();
        join!(on_warps(0..8, tiles(x, y, n, &mut tile))).await;
    }

    async fn tiles(x: &[f32], y: &mut [f32], n: usize, tile: &mut SharedArray2d<f32, TILE, TILE>) {
        assert!(n % TILE == 0, "n is not a multiple of the tile, 64");
        assert!(
            x.len() == n * n && y.len() == n * n,
            "x and y are not n x n"
        );
        let per_row = n / TILE;
        let t = block_index();
        if t < per_row * per_row {
            let (r0, c0) = ((t / per_row) * TILE, (t % per_row) * TILE);
            // Item `i` is the tile's element (i / 64, i % 64): a warp reads half a row.
            (0..TILE * TILE).into_par_iter().for_each(|i| {
                // SAFETY: r0 + i / 64 and c0 + i % 64 are below n, and x has n * n elements.
                let v = unsafe { *x.get_unchecked((r0 + i / TILE) * n + c0 + i % TILE) };
                tile[i / TILE][i % TILE] = v;
            });
            // The compiler's role barrier: every element is in the tile before it is read.
            // Item `i` writes y's row c0 + i / 64 at column r0 + i % 64: a warp writes half a
            // row from half a column of the tile.
            (0..TILE * TILE).into_par_iter().for_each(|i| {
                y[(c0 + i / TILE) * n + r0 + i % TILE] = tile[i % TILE][i / TILE];
            });
        }
    }
}

/// One block per 64 x 64 tile of an `n` x `n` matrix, on either backend.
pub fn tile_grid(n: usize) -> Grid {
    Grid::per_tile(n * n, transpose::TILE * transpose::TILE)
}

/// Transposes a random `n` × `n` matrix; returns the number of elements that differ from the
/// CPU's transpose.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = random_f32(n * n, seed);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(n * n)?;
    gpu_async::block_on(transpose::transpose::launch(dev, grid, (&x, &mut y, n)))?;
    let got = y.download()?;
    let mut bad = 0;
    for r in 0..n {
        for c in 0..n {
            bad += usize::from(got[c * n + r].to_bits() != xs[r * n + c].to_bits());
        }
    }
    Ok(bad)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a matrix size (a multiple of 64)", 8192)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = tile_grid(n);
    let bad = run_and_check(&dev, grid, n, 31)?;
    println!(
        "check: {n} x {n} transpose, {} blocks, {bad} elements differ from the CPU's",
        grid.block_count()
    );
    if bad != 0 {
        return Err("the transpose differs from the CPU's".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&random_f32(n * n, 32))?;
        let mut y = dev.alloc::<f32>(n * n)?;
        let mut dst = dev.alloc::<f32>(n * n)?;
        let mut timing = Timing::new(&dev)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| transpose::transpose::launch(&dev, grid, (&x, &mut y, n)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&x))?;
        // Both read n * n floats and write n * n floats.
        let bytes = 8 * n * n;
        let (k, c) = (gb_per_s(bytes, kernel_ms), gb_per_s(bytes, copy_ms));
        println!(
            "bandwidth: transpose {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
        println!("time: transpose {kernel_ms:.4} ms");
        println!("time: transpose_peer_copy {copy_ms:.4} ms");
    }
    Ok(())
}
