//! Parallel loops written as straight-line steps, whose values the PTX writer computes from the
//! first step where it can: every item on both backends against the same arithmetic in plain
//! Rust.

#[allow(dead_code, clippy::all)]
#[path = "common/index_steps.rs"]
mod index_steps;

use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use index_steps::index_steps::{three_warps, two_warps, ITEMS};

/// What the kernels' three outputs hold.
#[derive(Debug, PartialEq)]
struct Outputs {
    wide: Vec<u64>,
    narrow: Vec<u32>,
    signed: Vec<i64>,
}

fn inputs() -> Vec<u64> {
    (0..ITEMS as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11)
        .collect()
}

/// `two_warps`' outputs, computed in plain Rust.
fn two_warps_want(x: &[u64], n: usize, k: u32) -> Outputs {
    let wide = (0..ITEMS)
        .map(|i| {
            let a = (i / 32) * n + i % 32 + (i >> 7) * 5 + (i & 127);
            let b = (i << 3) ^ (i / 64) ^ x[(i * 37) % ITEMS] as usize;
            (a as u64).wrapping_mul(1 << 20).wrapping_add(b as u64)
        })
        .collect();
    let narrow = (0..ITEMS)
        .map(|i| {
            let wraps = (i as u32).wrapping_sub(100) >> 4;
            ((i as u32).wrapping_mul(k))
                .wrapping_sub(7)
                .wrapping_add((i * 3) as u32 >> 2)
                .wrapping_add(wraps)
        })
        .collect();
    let signed = (0..ITEMS)
        .map(|i| {
            let s = i as i64 - 500;
            s / 4 + (s * 3) % 7 + (((i as u32).wrapping_mul(k)) as u64 as i64) * 2
        })
        .collect();
    Outputs {
        wide,
        narrow,
        signed,
    }
}

/// `three_warps`' outputs (960 items; the rest stay zero), computed in plain Rust.
fn three_warps_want(x: &[u64], n: usize, k: u32) -> Outputs {
    let mut out = Outputs {
        wide: vec![0; ITEMS],
        narrow: vec![0; ITEMS],
        signed: vec![0; ITEMS],
    };
    for i in 0..960 {
        let a = (i / 32) * n + i % 32 + (i / 64) * 5 + i % 64;
        out.wide[i] = (a as u64)
            .wrapping_mul(1 << 20)
            .wrapping_add(x[(i * 37) % ITEMS]);
        out.narrow[i] = (i as u32)
            .wrapping_mul(k)
            .wrapping_sub(7)
            .wrapping_add(i as u32 & 31)
            .wrapping_add(i.wrapping_mul(n) as u32);
        out.signed[i] = (i as i64 - 500) / 4 + i64::from((i * 3) as u32);
    }
    out
}

fn run(dev: &Device, three: bool, n: usize, k: u32) -> gpu_async::Result<Outputs> {
    let x = dev.upload(&inputs())?;
    let mut wide = dev.upload(&[0u64; ITEMS])?;
    let mut narrow = dev.upload(&[0u32; ITEMS])?;
    let mut signed = dev.upload(&[0i64; ITEMS])?;
    let args = (&x, n, k, &mut wide, &mut narrow, &mut signed);
    if three {
        block_on(three_warps::launch(dev, Grid::blocks(1), args))?;
    } else {
        block_on(two_warps::launch(dev, Grid::blocks(1), args))?;
    }
    Ok(Outputs {
        wide: wide.download()?,
        narrow: narrow.download()?,
        signed: signed.download()?,
    })
}

/// Runtime values that make the wrapping and the products visible: a large `n`, a `k` whose
/// products with the index wrap in 32 bits.
const PARAMS: [(usize, u32); 3] = [(8192, 3), (1 << 40, 0x8765_4321), (1, u32::MAX)];

#[on_each_device]
fn items_of_steps_on_two_warps_are_the_plain_arithmetic(dev: Device) -> gpu_async::Result<()> {
    for (n, k) in PARAMS {
        let want = two_warps_want(&inputs(), n, k);
        assert_eq!(run(&dev, false, n, k)?, want, "on {dev}: n = {n}, k = {k}");
    }
    Ok(())
}

#[on_each_device]
fn items_of_steps_on_three_warps_are_the_plain_arithmetic(dev: Device) -> gpu_async::Result<()> {
    for (n, k) in PARAMS {
        let want = three_warps_want(&inputs(), n, k);
        assert_eq!(run(&dev, true, n, k)?, want, "on {dev}: n = {n}, k = {k}");
    }
    Ok(())
}
