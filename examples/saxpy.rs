//! `y = a * x + y`, streamed through a 3-slot shared-memory ring by one loader warp while four
//! compute warps update `y`: the main example.
//!
//! ```text
//! cargo run --release --example saxpy -- [elements] [blocks per multiprocessor, or `tiles`]
//! ```
//!
//! The grid is one block per tile by default (`tiles`): each block's loader brings in its one
//! tile while the other resident blocks compute, which measures 1.05x the hand-written CUDA C++
//! saxpy on an H200 where a persistent grid of 4 blocks per multiprocessor, running the same
//! kernel, reached 0.98x (`docs/benchmarks.md`). A number instead runs that many blocks per
//! multiprocessor, each streaming its share of the tiles through the ring.
//!
//! Runs on the GPU when there is one and on the simulator otherwise, checks every element against
//! a plain CPU loop, and on the GPU prints the bandwidth next to the device's own copy bandwidth.

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, GridShape, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod stream {
    use gpu_async::device::*;

    pub const TILE: usize = 2048;

    /// y = a * x + y, streamed through a 3-slot shared-memory ring by one loader warp.
    #[kernel(warps = 5)]
    pub async fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        let n = x.len();
        let (tx, rx) = channel::<[f32; TILE], 3>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, update(a, n, rx, y)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 3>) {
        for tile in block_tiles(x.len(), TILE) {
            let mut slot = tx.reserve().await; // wait for a free slot
            slot.copy_from(&x[tile]).await; // bulk async copy into shared memory
            slot.send(); // hand it over
        } // dropping tx closes the channel
    }

    async fn update(a: f32, n: usize, mut rx: Receiver<[f32; TILE], 3>, y: &mut [f32]) {
        assert!(n == y.len(), "x and y differ in length");
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(yi, xi)| *yi += a * xi);
        } // slot dropped: released to the loader
    }
}

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(7),
    })
}

/// One block per tile of `n` elements on the GPU (at least one), a few on the simulator.
pub fn tile_grid(dev: &Device, n: usize) -> Grid {
    match dev.kind() {
        BackendKind::Cuda => Grid::per_tile(n, stream::TILE),
        _ => Grid::blocks(7),
    }
}

/// Runs saxpy once on `n` random elements and compares every element with a CPU loop.
/// Returns the number of mismatches.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let a = 1.5f32 + (seed % 7) as f32;
    let xs = random_f32(n, seed);
    let ys = random_f32(n, seed ^ 0xDEAD_BEEF);
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&ys)?;
    gpu_async::block_on(stream::saxpy::launch(dev, grid, (a, &x, &mut y)))?;
    let got = y.download()?;
    let mismatches = got
        .iter()
        .zip(xs.iter().zip(&ys))
        .filter(|(g, (x, y))| g.to_bits() != (a * **x + **y).to_bits())
        .count();
    Ok(mismatches)
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
        GridShape::Tiles => tile_grid(&dev, n),
        GridShape::PerSm(k) => grid_for(&dev, k)?,
    };
    let mismatches = run_and_check(&dev, grid, n, 42)?;
    println!(
        "check: {n} elements, {} blocks, {} mismatches against the CPU loop",
        grid.block_count(),
        mismatches
    );
    if mismatches != 0 {
        return Err("saxpy result differs from the CPU loop".into());
    }
    if dev.kind() == BackendKind::Cuda {
        bandwidth(&dev, grid, n)?;
    }
    Ok(())
}

/// Times the kernel and a device-to-device copy of as many bytes, median of 20 runs each.
fn bandwidth(dev: &Device, grid: Grid, n: usize) -> gpu_async::Result<()> {
    let x = dev.upload(&random_f32(n, 7))?;
    let mut y = dev.upload(&random_f32(n, 8))?;
    let src = dev.upload(&random_f32(3 * n / 2, 9))?;
    let mut dst = dev.alloc::<f32>(3 * n / 2)?;
    let mut timing = Timing::new(dev)?;
    let saxpy_ms = median_of(3, 20, || {
        timing.time_launch(|| stream::saxpy::launch(dev, grid, (0.5, &x, &mut y)))
    })?;
    let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&src))?;
    // saxpy reads x and y and writes y: 12 bytes per element; the copy moves as many.
    let bytes = 12 * n;
    let (k, c) = (
        gb_per_s(bytes, saxpy_ms),
        gb_per_s(2 * 4 * (3 * n / 2), copy_ms),
    );
    println!(
        "bandwidth: saxpy {k:.0} GB/s ({saxpy_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
        k / c
    );
    Ok(())
}
