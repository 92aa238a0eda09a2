//! A 256-bin histogram of bytes with per-block bins in shared memory: each block counts its tiles
//! of the input into a shared array of atomic counters (`red.shared.add`), then adds each of its
//! bins to the global histogram once (`red.global.add`). The input is uniform, or skewed (half of
//! the bytes fall in 16 bins), as real data often is.
//!
//! ```text
//! cargo run --release --example histogram -- [bytes] [blocks per multiprocessor]
//! ```
//!
//! The kernel reads the bytes four to a 32-bit word (16-byte vector loads), and keeps
//! [`histogram::COPIES`] copies of each bin: neighbouring threads count into different copies, so
//! that the 32 updates of one warp instruction do not all meet at the few hot bins of a skewed
//! input. `global_bins`, the same count with one global atomic per byte, is kept for comparison
//! (and for `examples/histogram_placement.rs`). Checked bin by bin against a CPU count; on a GPU it
//! prints each input's time (`time:` lines, read by `scripts/h200-blocks.sh`) next to the global
//! atomics' and a device-to-device copy's.

use gpu_async::bench::{arg, median_of, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod histogram {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Words (four bytes each) a block counts per step.
    pub const TILE: usize = 8192;
    /// Copies of each bin in shared memory; item `i` counts into copy `(i / 4) % COPIES`, so the
    /// threads of a warp spread their updates of one bin over the copies.
    pub const COPIES: usize = 8;

    /// `bins[b]` += the number of the first `n` bytes of `x` equal to `b`; `x` holds the bytes
    /// four to a word, little-endian, as they lie in memory.
    #[kernel(warps = 8)]
    pub async fn count(x: &[u32], n: usize, bins: &[AtomicU32]) {
        let counts = shared_array_2d::<AtomicU32, 256, COPIES>();
        join!(on_warps(0..8, tally(x, n, bins, &counts))).await;
    }

    async fn tally(
        x: &[u32],
        n: usize,
        bins: &[AtomicU32],
        counts: &SharedArray2d<AtomicU32, 256, COPIES>,
    ) {
        assert!(
            bins.len() == 256,
            "bins needs one counter per byte value, 256"
        );
        assert!(n <= 4 * x.len(), "x holds fewer than n bytes");
        for tile in block_tiles(x.len(), TILE) {
            let first = 4 * tile.start;
            x[tile].par_iter().enumerate().for_each(|(i, w)| {
                // A byte past `n` (in the last word) adds 0: the body stays without branches,
                // so the loop keeps its 16-byte loads.
                let at = first + 4 * i;
                let w = *w;
                counts[(w as u8) as usize][(i / 4) % COPIES]
                    .fetch_add((at < n) as u32, Ordering::Relaxed);
                counts[((w >> 8) as u8) as usize][(i / 4) % COPIES]
                    .fetch_add((at + 1 < n) as u32, Ordering::Relaxed);
                counts[((w >> 16) as u8) as usize][(i / 4) % COPIES]
                    .fetch_add((at + 2 < n) as u32, Ordering::Relaxed);
                counts[((w >> 24) as u8) as usize][(i / 4) % COPIES]
                    .fetch_add((at + 3 < n) as u32, Ordering::Relaxed);
            });
        }
        // The compiler puts the role barrier between the counting and these loads.
        (0..256).into_par_iter().for_each(|b| {
            let mut total = 0u32;
            for c in 0..COPIES {
                total += counts[b][c].load(Ordering::Relaxed);
            }
            if total != 0 {
                bins[b].fetch_add(total, Ordering::Relaxed);
            }
        });
    }

    /// `bins[b]` += the number of bytes of `x` equal to `b`, with one global atomic per byte:
    /// the histogram without shared memory, for comparison.
    #[kernel(warps = 5)]
    pub async fn global_bins(x: &[u8], bins: &[AtomicU32]) {
        let n = x.len();
        let (tx, rx) = channel::<[u8; 8192], 4>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, tally_global(n, rx, bins)),
        )
        .await;
    }

    async fn load(x: &[u8], mut tx: Sender<[u8; 8192], 4>) {
        for tile in block_tiles(x.len(), 8192) {
            let mut slot = tx.reserve().await;
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn tally_global(n: usize, mut rx: Receiver<[u8; 8192], 4>, bins: &[AtomicU32]) {
        assert!(
            bins.len() == 256,
            "bins needs one counter per byte value, 256"
        );
        let mut tiles = block_tiles(n, 8192);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            let len = tile.end - tile.start;
            slot.par_iter().enumerate().for_each(|(i, b)| {
                if i < len {
                    bins[*b as usize].fetch_add(1, Ordering::Relaxed);
                }
            });
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

/// `n` random bytes: uniform over 0..=255, or (`skewed`) half uniform and half over the 16
/// bins 0x40..0x50.
pub fn random_bytes(n: usize, seed: u64, skewed: bool) -> Vec<u8> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = (state >> 33) as u32;
            if !skewed || r & 1 == 0 {
                (r >> 8) as u8
            } else {
                0x40 + ((r >> 8) & 15) as u8
            }
        })
        .collect()
}

/// `n` skewed random bytes: half uniform over 0..=255, half over the 16 bins 0x40..0x50.
pub fn skewed_bytes(n: usize, seed: u64) -> Vec<u8> {
    random_bytes(n, seed, true)
}

/// The bytes four to a little-endian word, as they lie in memory (the last word padded).
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// The count of each byte value.
pub fn cpu_count(bytes: &[u8]) -> [u32; 256] {
    let mut want = [0u32; 256];
    for &b in bytes {
        want[usize::from(b)] += 1;
    }
    want
}

/// Runs the kernel on `n` random bytes (skewed for an odd seed); returns the number of bins that
/// differ from a CPU count.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = random_bytes(n, seed, seed % 2 == 1);
    let x = dev.upload(&words(&xs))?;
    let mut bins = dev.upload(&[0u32; 256])?;
    gpu_async::block_on(histogram::count::launch(dev, grid, (&x, n, &mut bins)))?;
    let got = bins.download()?;
    let want = cpu_count(&xs);
    Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count())
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of bytes", 1 << 26)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 4)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    for (seed, kind) in [(16, "uniform"), (17, "skewed")] {
        let bad = run_and_check(&dev, grid, n, seed)?;
        println!(
            "check: {n} {kind} bytes, {} blocks, {bad} of 256 bins differ from the CPU count",
            grid.block_count()
        );
        if bad != 0 {
            return Err("histogram differs from the CPU count".into());
        }
    }
    if dev.kind() != BackendKind::Cuda {
        return Ok(());
    }
    let mut timing = Timing::new(&dev)?;
    let src = dev.upload(&random_bytes(n, 19, false))?;
    let mut dst = dev.alloc::<u8>(n)?;
    let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&src))?;
    for (seed, kind) in [(18, "uniform"), (19, "skewed")] {
        let xs = random_bytes(n, seed, kind == "skewed");
        let (x, raw) = (dev.upload(&words(&xs))?, dev.upload(&xs)?);
        let mut bins = dev.upload(&[0u32; 256])?;
        let ms = median_of(3, 20, || {
            timing.time_launch(|| histogram::count::launch(&dev, grid, (&x, n, &mut bins)))
        })?;
        let global_ms = median_of(3, 20, || {
            timing.time_launch(|| histogram::global_bins::launch(&dev, grid, (&raw, &mut bins)))
        })?;
        println!(
            "bandwidth: histogram {kind} {:.0} GB/s ({ms:.3} ms), with global atomics {global_ms:.3} ms, device copy of the bytes {copy_ms:.3} ms",
            n as f64 / (ms * 1e-3) / 1e9
        );
        println!("time: histogram_{kind} {ms:.4} ms");
    }
    Ok(())
}
