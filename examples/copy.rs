//! `y = x` two ways. Through shared memory: one warp streams tiles of `x` into a 4-slot ring with
//! bulk copies (`copy_from`), another writes each slot back out to `y` with bulk copies
//! (`copy_to`); no thread touches the data. And without: eight warps copy a tile with 16-byte
//! accesses, on a grid of one block per tile. The peer is the device's own copy (`cudaMemcpy`).
//!
//! ```text
//! cargo run --release --example copy -- [elements] [blocks per multiprocessor]
//! ```

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod copy {
    use gpu_async::device::*;

    pub const TILE: usize = 4096;

    /// `y = x`, tile by tile through shared memory.
    #[kernel(warps = 2)]
    pub async fn copy(x: &[f32], y: &mut [f32]) {
        let n = x.len();
        let (tx, rx) = channel::<[f32; TILE], 4>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(n, rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 4>) {
        for tile in block_tiles(x.len(), TILE) {
            let mut slot = tx.reserve().await;
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(n: usize, mut rx: Receiver<[f32; TILE], 4>, y: &mut [f32]) {
        assert!(n == y.len(), "x and y differ in length");
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            slot.copy_to(&mut y[tile]).await;
        }
    }
}

/// `y = x` without shared memory: the block's eight warps copy a tile of 4096 floats with 16-byte
/// loads, all issued before the stores (the vector loop's four groups per thread). Launched with
/// one block per tile (`tile_grid`), the hardware's block scheduler hands out the tiles. Of 70
/// hand-written copy kernels measured on the H200, this order (one 16 KiB tile per block, a grid
/// of 2^18 blocks) was the only one at 0.95x of `cudaMemcpy`; persistent loops stayed at
/// 0.90-0.93x.
#[gpu_async]
pub mod tiles {
    use gpu_async::device::*;

    pub const TILE: usize = 4096;

    /// `y = x`, each block its tiles (one, with [`super::tile_grid`]).
    #[kernel(warps = 8)]
    pub async fn copy(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..8, copy_tiles(x, y))).await;
    }

    async fn copy_tiles(x: &[f32], y: &mut [f32]) {
        assert!(x.len() == y.len(), "x and y differ in length");
        for tile in block_tiles(x.len(), TILE) {
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, i)| *o = *i);
        }
    }
}

/// One block per tile of [`tiles::copy`] (at least one block).
pub fn tile_grid(n: usize) -> Grid {
    Grid::per_tile(n, tiles::TILE)
}

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(3),
    })
}

/// Copies `n` random floats with both kernels (the ring on `grid`, the tiles on one block per
/// tile); returns the mismatches. The output is poisoned before each.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = random_f32(n, seed);
    let x = dev.upload(&xs)?;
    let poison = vec![f32::from_bits(0x7fc0_dead); n];
    let mut y = dev.upload(&poison)?;
    gpu_async::block_on(copy::copy::launch(dev, grid, (&x, &mut y)))?;
    let count = |got: Vec<f32>| {
        got.iter()
            .zip(&xs)
            .filter(|(g, x)| g.to_bits() != x.to_bits())
            .count()
    };
    let mut bad = count(y.download()?);
    y.upload_from(&poison)?;
    gpu_async::block_on(tiles::copy::launch(dev, tile_grid(n), (&x, &mut y)))?;
    bad += count(y.download()?);
    Ok(bad)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 5_000_000)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 3)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    let bad = run_and_check(&dev, grid, n, 31)?;
    println!(
        "check: {n} elements, {} blocks, {bad} mismatches",
        grid.block_count()
    );
    if bad != 0 {
        return Err("the copy differs from its source".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&random_f32(n, 32))?;
        let mut y = dev.alloc::<f32>(n)?;
        let mut dst = dev.alloc::<f32>(n)?;
        let mut timing = Timing::new(&dev)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| copy::copy::launch(&dev, grid, (&x, &mut y)))
        })?;
        let tiles_ms = median_of(3, 20, || {
            timing.time_launch(|| tiles::copy::launch(&dev, tile_grid(n), (&x, &mut y)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&x))?;
        let (k, t, c) = (
            gb_per_s(8 * n, kernel_ms),
            gb_per_s(8 * n, tiles_ms),
            gb_per_s(8 * n, copy_ms),
        );
        println!(
            "bandwidth: copy kernel {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
        println!(
            "bandwidth: tile copy, one block per tile ({} blocks), {t:.0} GB/s ({tiles_ms:.3} ms), ratio {:.2}",
            tile_grid(n).block_count(),
            t / c
        );
    }
    Ok(())
}
