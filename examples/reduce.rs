//! The sum of many floats: one warp streams tiles of `x` into a 4-slot shared-memory ring, four
//! warps reduce each tile (`par_iter().sum()`) into the role's running total, and each block
//! writes its total; the host adds the blocks' totals in block order.
//!
//! ```text
//! cargo run --release --example reduce -- [elements] [blocks per multiprocessor]
//! ```
//!
//! The reduction order is part of the language (`gpu_async::device::reduction_order`), so the
//! CPU reference below computes the very same bits; the example also prints the relative error
//! against an `f64` sum. On a GPU it prints the bandwidth next to a device-to-device copy.

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::device::reduction_order;
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod reduce {
    use gpu_async::device::*;

    pub const TILE: usize = 4096;

    /// `partials[b]` = the sum of block `b`'s tiles of `x`.
    #[kernel(warps = 5)]
    pub async fn sum(x: &[f32], partials: &mut [f32]) {
        let n = x.len();
        let (tx, rx) = channel::<[f32; TILE], 4>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, add(n, rx, partials)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 4>) {
        for tile in block_tiles(x.len(), TILE) {
            let mut slot = tx.reserve().await;
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn add(n: usize, mut rx: Receiver<[f32; TILE], 4>, partials: &mut [f32]) {
        assert!(
            partials.len() == block_count(),
            "partials needs one element per block"
        );
        let mut total = 0.0f32;
        let mut tiles = block_tiles(n, TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            let len = tile.end - tile.start;
            // The last tile may be short: the rest of its slot holds older data.
            total += slot
                .par_iter()
                .enumerate()
                .map(|(i, v)| if i < len { *v } else { 0.0 })
                .sum();
        }
        let b = block_index();
        partials[b..b + 1].par_iter_mut().for_each(|p| *p = total);
    }
}

/// Threads of the reducing role (four warps).
const REDUCE_THREADS: usize = 128;

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(5),
    })
}

/// The kernel's result computed on the CPU in the language's reduction order.
pub fn reference(xs: &[f32], blocks: usize) -> f32 {
    let tile = reduce::TILE;
    let tiles = xs.len().div_ceil(tile);
    let mut partials = vec![0.0f32; blocks];
    for (b, partial) in partials.iter_mut().enumerate() {
        let mut total = 0.0f32;
        for t in (b..tiles).step_by(blocks) {
            let chunk = &xs[t * tile..xs.len().min((t + 1) * tile)];
            let padded = (0..tile).map(|i| chunk.get(i).copied().unwrap_or(0.0));
            total += reduction_order(padded, 0.0f32, REDUCE_THREADS, |a, b| a + b);
        }
        *partial = total;
    }
    partials.iter().sum()
}

/// Runs the kernel on `xs`; returns the sum of the blocks' totals, in block order.
pub fn run(dev: &Device, grid: Grid, xs: &[f32]) -> gpu_async::Result<f32> {
    let x = dev.upload(xs)?;
    let mut partials = dev.alloc::<f32>(grid.block_count() as usize)?;
    gpu_async::block_on(reduce::sum::launch(dev, grid, (&x, &mut partials)))?;
    Ok(partials.download()?.iter().sum())
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 5_000_000)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 4)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    let xs = random_f32(n, 5);
    let got = run(&dev, grid, &xs)?;
    let want = reference(&xs, grid.block_count() as usize);
    let exact: f64 = xs.iter().map(|&v| f64::from(v)).sum();
    println!(
        "check: {n} elements, {} blocks: sum {got}, CPU in the same order {want} ({}), relative error against an f64 sum {:.2e}",
        grid.block_count(),
        if got.to_bits() == want.to_bits() { "bit-identical" } else { "DIFFERENT" },
        ((f64::from(got) - exact) / exact).abs()
    );
    if got.to_bits() != want.to_bits() {
        return Err("the sum differs from the CPU reference".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&xs)?;
        let mut partials = dev.alloc::<f32>(grid.block_count() as usize)?;
        let src = dev.upload(&random_f32(n / 2, 12))?;
        let mut dst = dev.alloc::<f32>(n / 2)?;
        let mut timing = Timing::new(&dev)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| reduce::sum::launch(&dev, grid, (&x, &mut partials)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&src))?;
        // The kernel reads 4 bytes per element; the copy of n/2 floats moves as many bytes.
        let (k, c) = (gb_per_s(4 * n, kernel_ms), gb_per_s(4 * n, copy_ms));
        println!(
            "bandwidth: reduce {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
    }
    Ok(())
}
