//! A matrix copied through shared memory in tiles: one warp loads 32 x 32 tiles of `a` with tile
//! loads (the TMA on the GPU: one `cp.async.bulk.tensor` per tile, zeros past the edges) into a
//! 4-slot ring, another writes each tile's elements back out to `y`, row by row. Any shape
//! works, ragged edges included. The peer is the device's own copy of as many bytes.
//!
//! ```text
//! cargo run --release --example tile_copy -- [rows] [cols] [blocks per multiprocessor]
//! ```

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod tiles {
    use gpu_async::device::*;

    /// Rows of a tile.
    pub const R: usize = 32;
    /// Columns of a tile: 128 bytes of `f32`, the 128-byte swizzle.
    pub const C: usize = 32;

    /// `y = a`, with `y` the matrix's `rows * cols` elements in row-major order.
    #[kernel(warps = 2)]
    pub async fn tile_copy(a: &Matrix<f32>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<f32, R, C>, 4>();
        join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(a, rx, y))).await;
    }

    /// The tiles of the block, in row-major order of the matrix's tiles.
    async fn load(a: &Matrix<f32>, mut tx: Sender<Tile<f32, R, C>, 4>) {
        let per_row = (a.cols() + C - 1) / C;
        let count = (a.rows() + R - 1) / R * per_row;
        for t in block_tiles(count, 1) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.load(a, [t.start / per_row * R, t.start % per_row * C])
                .await;
            slot.send();
        }
    }

    /// Each received tile's elements that lie inside the matrix, to their place in `y`: row by
    /// row, a lane per column.
    async fn store(a: &Matrix<f32>, mut rx: Receiver<Tile<f32, R, C>, 4>, y: &mut [f32]) {
        let (rows, cols) = (a.rows(), a.cols());
        assert!(y.len() == rows * cols, "y is not the matrix's size");
        let per_row = (cols + C - 1) / C;
        let count = (rows + R - 1) / R * per_row;
        for t in block_tiles(count, 1) {
            let Some(tile) = rx.recv().await else {
                return;
            };
            let (r0, c0) = (t.start / per_row * R, t.start % per_row * C);
            let width = if cols - c0 < C { cols - c0 } else { C };
            let height = if rows - r0 < R { rows - r0 } else { R };
            for r in 0..height {
                let start = (r0 + r) * cols + c0;
                y[start..start + width]
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(c, o)| *o = tile[r][c]);
            }
        }
    }
}

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(3),
    })
}

/// Copies a random `rows` x `cols` matrix on `grid`; returns the elements that differ from it.
/// The output is poisoned first.
pub fn run_and_check(
    dev: &Device,
    grid: Grid,
    rows: usize,
    cols: usize,
    seed: u64,
) -> gpu_async::Result<usize> {
    let host = random_f32(rows * cols, seed);
    let buf = dev.upload(&host)?;
    let mut y = dev.upload(&vec![f32::from_bits(0x7fc0_dead); rows * cols])?;
    gpu_async::block_on(tiles::tile_copy::launch(
        dev,
        grid,
        (buf.as_matrix(rows, cols)?, &mut y),
    ))?;
    Ok(y.download()?
        .iter()
        .zip(&host)
        .filter(|(g, x)| g.to_bits() != x.to_bits())
        .count())
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::default()?;
    let gpu = dev.kind() == BackendKind::Cuda;
    let rows: usize = arg(1, "rows", if gpu { 8192 } else { 300 })?;
    let cols: usize = arg(2, "columns", if gpu { 8192 } else { 260 })?;
    let blocks_per_sm: u32 = arg(3, "blocks per multiprocessor", 8)?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    let bad = run_and_check(&dev, grid, rows, cols, 41)?;
    println!(
        "check: {rows} x {cols}, {} blocks, {bad} mismatches",
        grid.block_count()
    );
    if bad != 0 {
        return Err("the copy differs from its source".into());
    }
    if gpu {
        let n = rows * cols;
        let buf = dev.upload(&random_f32(n, 42))?;
        let mut y = dev.alloc::<f32>(n)?;
        let mut dst = dev.alloc::<f32>(n)?;
        let mut timing = Timing::new(&dev)?;
        let a = buf.as_matrix(rows, cols)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| tiles::tile_copy::launch(&dev, grid, (a, &mut y)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&buf))?;
        let (k, c) = (gb_per_s(8 * n, kernel_ms), gb_per_s(8 * n, copy_ms));
        println!(
            "bandwidth: tile copy {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
    }
    Ok(())
}
