//! A 256-bin histogram of bytes with global atomics: one warp streams tiles of the input into a
//! 4-slot shared-memory ring, four warps add one to `bins[byte]` per byte with
//! `fetch_add(1, Ordering::Relaxed)`. The input is skewed (half of the bytes fall in 16 bins), as
//! real data often is.
//!
//! ```text
//! cargo run --release --example histogram -- [bytes] [blocks per multiprocessor]
//! ```
//!
//! Checked bin by bin against a CPU count; on a GPU it prints the bandwidth next to a
//! device-to-device copy.

use gpu_async::bench::{arg, gb_per_s, median_of, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod histogram {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    pub const TILE: usize = 8192;

    /// `bins[b]` += the number of bytes of `x` equal to `b`.
    #[kernel(warps = 5)]
    pub async fn count(x: &[u8], bins: &[AtomicU32]) {
        let n = x.len();
        let (tx, rx) = channel::<[u8; TILE], 4>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, tally(n, rx, bins)),
        )
        .await;
    }

    async fn load(x: &[u8], mut tx: Sender<[u8; TILE], 4>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn tally(n: usize, mut rx: Receiver<[u8; TILE], 4>, bins: &[AtomicU32]) {
        assert!(
            bins.len() == 256,
            "bins needs one counter per byte value, 256"
        );
        let mut tiles = block_tiles(n, TILE);
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

/// `n` skewed random bytes: half uniform over 0..=255, half over the 16 bins 0x40..0x50.
pub fn skewed_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = (state >> 33) as u32;
            if r & 1 == 0 {
                (r >> 8) as u8
            } else {
                0x40 + ((r >> 8) & 15) as u8
            }
        })
        .collect()
}

/// Runs the kernel on `n` skewed bytes; returns the number of bins that differ from a CPU count.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = skewed_bytes(n, seed);
    let x = dev.upload(&xs)?;
    let mut bins = dev.upload(&[0u32; 256])?;
    gpu_async::block_on(histogram::count::launch(dev, grid, (&x, &mut bins)))?;
    let got = bins.download()?;
    let mut want = [0u32; 256];
    for &b in &xs {
        want[usize::from(b)] += 1;
    }
    Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count())
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of bytes", 1 << 24)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 4)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let grid = grid_for(&dev, blocks_per_sm)?;
    let bad = run_and_check(&dev, grid, n, 17)?;
    println!(
        "check: {n} bytes, {} blocks, {bad} of 256 bins differ from the CPU count",
        grid.block_count()
    );
    if bad != 0 {
        return Err("histogram differs from the CPU count".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&skewed_bytes(n, 18))?;
        let mut bins = dev.upload(&[0u32; 256])?;
        let src = dev.upload(&skewed_bytes(n, 19))?;
        let mut dst = dev.alloc::<u8>(n)?;
        let mut timing = Timing::new(&dev)?;
        let kernel_ms = median_of(3, 20, || {
            timing.time_launch(|| histogram::count::launch(&dev, grid, (&x, &mut bins)))
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&src))?;
        // The kernel reads n bytes; the copy of n bytes reads and writes them.
        let (k, c) = (gb_per_s(n, kernel_ms), gb_per_s(2 * n, copy_ms));
        println!(
            "bandwidth: histogram {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
    }
    Ok(())
}
