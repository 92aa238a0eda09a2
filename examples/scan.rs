//! The exclusive prefix sum of 2^28 `u32`s (wrapping) in one pass: a single-pass scan with
//! decoupled look-back. Each block takes one tile of the input (block `b`, tile `b`), sums it
//! (`par_iter().sum()`), publishes that total in a status word for the later tiles, looks back at
//! the earlier tiles' status words with one warp until it has its tile's prefix, publishes its
//! inclusive prefix, then scans the tile from that prefix (`exclusive_sum`).
//!
//! ```text
//! cargo run --release --example scan -- [elements]
//! ```
//!
//! Why one pass: a reduce-then-scan in two launches reads the input twice from memory (3n words of
//! traffic for 2n of a copy); here the second read of a tile follows the first within the block
//! and comes from the L2. The look-back needs the blocks to start in tile order, which CUDA's
//! dispatch of a grid's blocks in increasing index gives (CUB's scans rely on it too): a block
//! only ever waits for blocks with lower indices, which have started. Each status word carries
//! the launch's `epoch`, so words left by an earlier launch are never taken for this one's, and
//! the buffer needs no clearing between launches.
//!
//! Checked element by element against the CPU; on a GPU it prints its time next to a
//! device-to-device copy of as many bytes (`time:` lines, read by `scripts/h200-blocks.sh`,
//! which compares it with `torch.cumsum`).

use gpu_async::bench::{arg, gb_per_s, median_of, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

#[gpu_async]
pub mod scan {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    /// Elements per tile, one tile per block. A block pays its look-back and its barriers once
    /// per tile: on the H200, tiles of 32768 scanned 2^28 words in 0.820 ms where tiles of 8192
    /// took 0.882 ms (most of its warps' stalls were at the block's barriers while one warp
    /// looked back).
    pub const TILE: usize = 32768;
    /// The flag of a status word holding the tile's own total.
    pub const AGGREGATE: u64 = 1;
    /// The flag of a status word holding the total of the tile and every tile before it.
    pub const PREFIX: u64 = 2;
    /// Look-back rounds after which a block gives up (the earlier blocks never came).
    pub const PATIENCE: u32 = 1 << 28;

    /// `y[i]` = `x[0] + .. + x[i - 1]`, wrapping; `status` has a word per tile, `epoch` differs
    /// from every earlier launch's over the same `status` (and is not 0).
    #[kernel(warps = 8)]
    pub async fn exclusive(x: &[u32], y: &mut [u32], status: &[AtomicU64], epoch: u32) {
        let carry = shared_array::<AtomicU32, 1>();
        join!(on_warps(0..8, scan_tile(x, y, status, epoch, &carry))).await;
    }

    /// A status word: the epoch and flag above the value.
    fn word(epoch: u32, flag: u64, value: u32) -> u64 {
        ((epoch as u64 * 4 + flag) << 32) | value as u64
    }

    async fn scan_tile(
        x: &[u32],
        y: &mut [u32],
        status: &[AtomicU64],
        epoch: u32,
        carry: &SharedArray<AtomicU32, 1>,
    ) {
        assert!(x.len() == y.len(), "x and y differ in length");
        assert!(
            status.len() * TILE >= x.len(),
            "status needs a word per tile of x"
        );
        let t = block_index();
        let start = t * TILE;
        if start < x.len() {
            let end = x.len().min(start + TILE);
            let total = x[start..end].par_iter().sum();
            // Publish the tile's total (tile 0's is its prefix already).
            (0..1).into_par_iter().for_each(|_| {
                let flag = if t == 0 { PREFIX } else { AGGREGATE };
                status[t].store(word(epoch, flag, total), Ordering::Release);
            });
            if t > 0 {
                // One warp looks back: lane j reads the status of tile `back - 1 - j`, until a
                // lane finds a prefix; the totals up to it add to this tile's prefix.
                (0..32).into_par_iter().for_each_lane(async |lane, j| {
                    let mut prefix = 0u32;
                    let mut back = t;
                    let mut rounds = 0u32;
                    loop {
                        let s = if back > j {
                            status[back - 1 - j].load(Ordering::Acquire)
                        } else {
                            word(epoch, PREFIX, 0)
                        };
                        let tag = (s >> 32) as u32;
                        let ready = tag == epoch * 4 + 1 || tag == epoch * 4 + 2;
                        rounds += 1;
                        assert!(
                            rounds < PATIENCE,
                            "the look-back waited too long for an earlier tile"
                        );
                        if !lane.all(ready).await {
                            continue;
                        }
                        let prefixes = lane.ballot(tag == epoch * 4 + 2).await;
                        // Lanes up to the first prefix (the nearest tile) count.
                        let nearest = if prefixes == 0 {
                            32
                        } else {
                            prefixes.trailing_zeros()
                        };
                        let part = if (j as u32) <= nearest { s as u32 } else { 0 };
                        prefix = prefix.wrapping_add(lane.sum(part).await);
                        if prefixes != 0 {
                            break;
                        }
                        back -= 32;
                    }
                    if j == 0 {
                        status[t].store(
                            word(epoch, PREFIX, prefix.wrapping_add(total)),
                            Ordering::Release,
                        );
                        carry[0].store(prefix, Ordering::Relaxed);
                    }
                });
            }
            // The compiler's role barrier: the look-back's carry is stored before it is read.
            let before = carry[0].load(Ordering::Relaxed);
            x[start..end]
                .par_iter()
                .exclusive_sum(y[start..end].par_iter_mut(), before);
        }
    }
}

/// One block per tile of `n` elements (at least one).
pub fn grid_for(n: usize) -> Grid {
    Grid::blocks(n.div_ceil(scan::TILE).max(1) as u32)
}

/// Pseudo-random words, deterministic for a seed.
pub fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut state = seed ^ 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u32
        })
        .collect()
}

/// Scans `n` random words (`epoch` for the launch); returns the number of elements that differ
/// from the CPU's exclusive prefix sums.
pub fn run_and_check(dev: &Device, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = random_u32(n, seed);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<u32>(n)?;
    let tiles = n.div_ceil(scan::TILE).max(1);
    let mut status = dev.upload(&vec![0u64; tiles])?;
    for epoch in 1..=2 {
        gpu_async::block_on(scan::exclusive::launch(
            dev,
            grid_for(n),
            (&x, &mut y, &mut status, epoch),
        ))?;
    }
    let got = y.download()?;
    let mut acc = 0u32;
    let mut bad = 0;
    for (g, v) in got.iter().zip(&xs) {
        bad += usize::from(*g != acc);
        acc = acc.wrapping_add(*v);
    }
    Ok(bad)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 1 << 28)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let checked = if dev.kind() == BackendKind::Cuda {
        n
    } else {
        n.min(100_000)
    };
    let bad = run_and_check(&dev, checked, 41)?;
    println!(
        "check: exclusive prefix sum of {checked} words, {} blocks, {bad} elements differ from the CPU's",
        grid_for(checked).block_count()
    );
    if bad != 0 {
        return Err("the prefix sums differ from the CPU's".into());
    }
    if dev.kind() == BackendKind::Cuda {
        let x = dev.upload(&random_u32(n, 42))?;
        let mut y = dev.alloc::<u32>(n)?;
        let mut dst = dev.alloc::<u32>(n)?;
        let mut status = dev.upload(&vec![0u64; n.div_ceil(scan::TILE)])?;
        let mut timing = Timing::new(&dev)?;
        let mut epoch = 10u32;
        let kernel_ms = median_of(3, 20, || {
            epoch += 1;
            timing.time_launch(|| {
                scan::exclusive::launch(&dev, grid_for(n), (&x, &mut y, &mut status, epoch))
            })
        })?;
        let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(&x))?;
        // Both read n words and write n words.
        let (k, c) = (gb_per_s(8 * n, kernel_ms), gb_per_s(8 * n, copy_ms));
        println!(
            "bandwidth: scan {k:.0} GB/s ({kernel_ms:.3} ms), device copy {c:.0} GB/s ({copy_ms:.3} ms), ratio {:.2}",
            k / c
        );
        println!("time: scan {kernel_ms:.4} ms");
        println!("time: scan_copy {copy_ms:.4} ms");
    }
    Ok(())
}
