//! Row-wise softmax of a matrix (4096 × 4096 by default): one warp streams rows into a 2-slot
//! shared-memory ring; four warps take one row per step: its maximum (`par_iter().max()`), the sum
//! of `exp(v - max)` (`map(..).sum()`), which also keeps each `exp(v - max)` in a shared array of
//! the row, then each element of that array times `1 / sum` to global memory.
//!
//! ```text
//! cargo run --release --example softmax -- [rows] [blocks per multiprocessor]
//! ```
//!
//! Where the time goes: `exp` of an `f32` is computed in `f64` (about 20 `f64` instructions, for
//! a result correctly rounded but in rare cases; `docs/language.md`), at half the `f32` rate, and
//! the kernel without the shared array computed it twice per element (once for the sum, once for
//! the output): that is most of its instructions. Keeping the row's exponentials in shared memory
//! computes it once. The ring is 2 slots deep (not 3), so that with the row's array a block still
//! takes 48 KiB and four blocks (16 computing warps) fit an SM, the default grid. The slot is
//! released as soon as the exponentials are in the array, before the row is written out.
//!
//! Checked against an `f64` CPU softmax (every element within 1e-5 relative); on a GPU it prints
//! the bandwidth next to a device-to-device copy (`time:` lines, read by
//! `scripts/h200-blocks.sh`, which compares it with `torch.softmax`).

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod softmax {
    use gpu_async::device::*;

    pub const COLS: usize = 4096;

    /// `y` = the softmax of each `COLS`-long row of `x`.
    #[kernel(warps = 5)]
    pub async fn rows(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; COLS], 2>();
        let mut e = shared_array::<f32, COLS>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, normalize(x.len(), rx, y, &mut e)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; COLS], 2>) {
        for row in block_tiles(x.len(), COLS) {
            let mut slot = tx.reserve().await;
            slot.copy_from(&x[row]).await;
            slot.send();
        }
    }

    async fn normalize(
        n: usize,
        mut rx: Receiver<[f32; COLS], 2>,
        y: &mut [f32],
        e: &mut SharedArray<f32, COLS>,
    ) {
        assert!(n == y.len(), "x and y differ in length");
        assert!(
            n % COLS == 0,
            "x is not a whole number of rows of COLS floats"
        );
        let mut rows = block_tiles(y.len(), COLS);
        while let Some(slot) = rx.recv().await {
            let row = rows.next().unwrap();
            let max = slot.par_iter().max();
            // Each exponential once: kept in `e` (item `i` writes its own element) and summed.
            let sum = slot
                .par_iter()
                .enumerate()
                .map(|(i, v)| {
                    let x = (*v - max).exp();
                    e[i] = x;
                    x
                })
                .sum();
            drop(slot);
            let scale = 1.0 / sum;
            y[row]
                .par_iter_mut()
                .zip(e.par_iter())
                .for_each(|(o, x)| *o = *x * scale);
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

/// Inputs: logits spread over [-20, 20), so that `exp` sees a wide range.
pub fn logits(rows: usize, seed: u64) -> Vec<f32> {
    random_f32(rows * softmax::COLS, seed)
        .iter()
        .map(|v| (v - 0.5) * 40.0)
        .collect()
}

/// Runs the kernel on `rows` random rows; returns the largest relative error against an `f64`
/// softmax on the CPU.
pub fn run_and_check(dev: &Device, grid: Grid, rows: usize, seed: u64) -> gpu_async::Result<f64> {
    let xs = logits(rows, seed);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(xs.len())?;
    gpu_async::block_on(softmax::rows::launch(dev, grid, (&x, &mut y)))?;
    let got = y.download()?;
    let mut worst = 0.0f64;
    for (row, out) in xs.chunks(softmax::COLS).zip(got.chunks(softmax::COLS)) {
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let sum: f64 = row.iter().map(|&v| (f64::from(v) - max).exp()).sum();
        for (&v, &o) in row.iter().zip(out) {
            let want = (f64::from(v) - max).exp() / sum;
            let err = if want == 0.0 {
                f64::from(o).abs()
            } else {
                ((f64::from(o) - want) / want).abs()
            };
            worst = worst.max(err);
        }
    }
    Ok(worst)
}

/// The documented tolerance: every element within this relative error of the `f64` softmax.
pub const TOLERANCE: f64 = 1e-5;

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: usize = arg(1, "a number of rows", 4096)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 4)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    let worst = run_and_check(&dev, grid, rows, 21)?;
    println!(
        "check: {rows} x {} matrix, {} blocks: largest relative error against an f64 softmax {worst:.2e} (tolerance {TOLERANCE:e})",
        softmax::COLS,
        grid.block_count()
    );
    if worst > TOLERANCE {
        return Err("softmax result is off".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let n = rows * softmax::COLS;
        let x = dev.upload(&logits(rows, 22))?;
        let mut y = dev.alloc::<f32>(n)?;
        let src = dev.upload(&random_f32(n, 23))?;
        let mut dst = dev.alloc::<f32>(n)?;
        let mut timing = Timing::new(&dev)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| softmax::rows::launch(&dev, grid, (&x, &mut y)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&src))?;
        // Both read n floats and write n floats.
        let (k, c) = (gb_per_s(8 * n, kernel_ms), gb_per_s(8 * n, copy_ms));
        println!(
            "bandwidth: softmax {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
        println!("time: softmax {kernel_ms:.4} ms");
    }
    Ok(())
}
