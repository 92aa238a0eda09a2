//! A three-role pipeline over two channels: one warp loads tiles of `x` into shared memory, four
//! warps compute `a * x + b` into the slots of a second channel, one warp stores them to `y`
//! with bulk asynchronous copies (`copy_to`).
//!
//! ```text
//! cargo run --release --example pipeline -- [elements] [blocks per multiprocessor, or `tiles`]
//! ```
//!
//! The grid is one block per 8 tiles by default (`tiles`): more blocks than an SM holds, each
//! streaming 8 tiles through its rings, which measured 3% faster on an H200 than a grid of 2 to 8
//! blocks per multiprocessor streaming all the tiles (the hand-written peer gains as much from the
//! same grid; `docs/design.md`, *Grids*). A number instead runs that many blocks per
//! multiprocessor.

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, GridShape, Timing};
use gpu_async::{gpu_async, BackendKind, Device, DeviceBuffer, Grid, Launch};

#[gpu_async]
pub mod pipeline {
    use gpu_async::device::*;

    pub const TILE: usize = 1024;

    /// y = a * x + b, through load → transform → store roles.
    #[kernel(warps = 6)]
    pub async fn scale_shift(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        let (load_tx, load_rx) = channel::<[f32; TILE], 4>();
        let (out_tx, out_rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, load(x, load_tx)),
            on_warps(1..5, transform(a, b, load_rx, out_tx)),
            on_warps(5..6, store(x.len(), out_rx, y)),
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

    async fn transform(
        a: f32,
        b: f32,
        mut rx: Receiver<[f32; TILE], 4>,
        mut tx: Sender<[f32; TILE], 2>,
    ) {
        while let Some(input) = rx.recv().await {
            let mut output = tx.reserve().await;
            output
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = a * i + b);
            output.send();
        }
    }

    async fn store(n: usize, mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        assert!(n == y.len(), "x and y differ in length");
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            slot.copy_to(&mut y[tile]).await; // bulk async copy to global memory
        }
    }
}

/// Tiles per block of the default grid ([`tile_group_grid`]).
pub const TILES_PER_BLOCK: usize = 8;

/// One block per [`TILES_PER_BLOCK`] tiles of `n` elements on the GPU (at least one), a few on
/// the simulator.
pub fn tile_group_grid(dev: &Device, n: usize) -> Grid {
    match dev.kind() {
        BackendKind::Cuda => Grid::per_tile(n, TILES_PER_BLOCK * pipeline::TILE),
        _ => Grid::blocks(5),
    }
}

/// `blocks_per_sm` blocks per multiprocessor on the GPU, a few on the simulator.
pub fn grid_for(dev: &Device, blocks_per_sm: u32) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(blocks_per_sm * dev.sm_count()?),
        _ => Grid::blocks(5),
    })
}

/// The typed launch of a kernel with the pipeline's parameters (`a`, `b`, `x`, `y`): this
/// example's, or one of `pipeline_variants`'.
pub type ScaleShift = for<'a> fn(
    &'a Device,
    Grid,
    (f32, f32, &'a DeviceBuffer<f32>, &'a mut DeviceBuffer<f32>),
) -> Launch<'a>;

/// The median time in ms of `launch` on `grid` (`a = 2`, `b = 1`, from `x` into `y`) and of a
/// device copy from `src` to `dst`, 20 runs each after 3 warm-ups, timed by `timing` (on `dev`).
/// Both read and write as many floats, so their bandwidths compare.
pub fn time_against_copy(
    launch: ScaleShift,
    (dev, timing): (&Device, &mut Timing),
    grid: Grid,
    (x, y): (&DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
    (src, dst): (&DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
) -> gpu_async::Result<(f64, f64)> {
    let kernel_ms = median_of(3, 20, || {
        timing.time_launch(|| launch(dev, grid, (2.0, 1.0, x, &mut *y)))
    })?;
    let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(src))?;
    Ok((kernel_ms, copy_ms))
}

/// Runs the pipeline once on `n` random elements; returns the mismatches against a CPU loop.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    run_and_check_kernel(pipeline::scale_shift::launch, dev, grid, n, seed)
}

/// Runs `launch` once on `n` random elements; returns the mismatches against a CPU loop.
pub fn run_and_check_kernel(
    launch: ScaleShift,
    dev: &Device,
    grid: Grid,
    n: usize,
    seed: u64,
) -> gpu_async::Result<usize> {
    let ab = (0.75f32 + (seed % 5) as f32, -0.25f32);
    let xs = random_f32(n, seed);
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&random_f32(n, seed + 1))?;
    launch_and_check(launch, dev, grid, ab, (&xs, &x), &mut y)
}

/// Runs `launch` with `(a, b)` on `x` (whose values are `xs`) into `y`; returns the elements of
/// `y` that differ, bit for bit, from `a * x + b` computed on the CPU.
pub fn launch_and_check(
    launch: ScaleShift,
    dev: &Device,
    grid: Grid,
    (a, b): (f32, f32),
    (xs, x): (&[f32], &DeviceBuffer<f32>),
    y: &mut DeviceBuffer<f32>,
) -> gpu_async::Result<usize> {
    gpu_async::block_on(launch(dev, grid, (a, b, x, y)))?;
    let got = y.download()?;
    Ok(got
        .iter()
        .zip(xs)
        .filter(|(g, x)| g.to_bits() != (a * **x + b).to_bits())
        .count())
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
        GridShape::Tiles => tile_group_grid(&dev, n),
        GridShape::PerSm(k) => grid_for(&dev, k)?,
    };
    let mismatches = run_and_check(&dev, grid, n, 3)?;
    println!(
        "check: {n} elements, {} blocks, {mismatches} mismatches against the CPU loop",
        grid.block_count()
    );
    if mismatches != 0 {
        return Err("pipeline result differs from the CPU loop".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&random_f32(n, 11))?;
        let mut y = dev.alloc::<f32>(n)?;
        let src = dev.upload(&random_f32(n, 12))?;
        let mut dst = dev.alloc::<f32>(n)?;
        let mut timing = Timing::new(&dev)?;
        let (kernel_ms, copy_ms) = time_against_copy(
            pipeline::scale_shift::launch,
            (&dev, &mut timing),
            grid,
            (&x, &mut y),
            (&src, &mut dst),
        )?;
        // Both read n floats and write n floats.
        let (k, c) = (gb_per_s(8 * n, kernel_ms), gb_per_s(8 * n, copy_ms));
        println!(
            "bandwidth: pipeline {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
    }
    Ok(())
}
