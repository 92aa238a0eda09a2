//! The scalar language, run on the simulator (checked against plain Rust) and, where there is a
//! GPU, on the GPU (compared bit for bit with the simulator) on random inputs.

#[allow(dead_code)]
#[path = "common/language.rs"]
mod language;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::bench::random_f32;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::{needs_gpu, on_each_device};

type Outputs = (Vec<f32>, Vec<i32>, Vec<u32>);

fn run(dev: &Device, grid: Grid, n: usize, seed: u64, flag: bool) -> gpu_async::Result<Outputs> {
    let xs: Vec<f32> = random_f32(n, seed).iter().map(|v| v * 1000.0).collect();
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&random_f32(n, seed + 1))?;
    let mut z = dev.alloc::<i32>(n)?;
    let mut w = dev.alloc::<u32>(n)?;
    let launch =
        language::language::mix::launch(dev, grid, (3.5, -17, flag, &x, &mut y, &mut z, &mut w));
    block_on(launch)?;
    Ok((y.download()?, z.download()?, w.download()?))
}

/// The kernel's meaning, written as a plain loop.
fn reference(n: usize, seed: u64, flag: bool, grid: u32) -> Outputs {
    let (scale, bias) = (3.5f32, -17i32);
    let xs: Vec<f32> = random_f32(n, seed).iter().map(|v| v * 1000.0).collect();
    let mut acc: u32 = 0;
    for i in 0..10u32 {
        acc = acc * 3 + (i ^ 5) % 7;
    }
    let offset = if flag { bias * 2 - 4 } else { bias >> 1 };
    let (mut y, mut z, mut w) = (vec![0.0; n], vec![0; n], vec![0; n]);
    let _ = grid; // every block handles whole tiles: the result does not depend on the grid
    for start in (0..n).step_by(256) {
        for i in 0..(n - start).min(256) {
            let v = xs[start + i];
            let s = if v < 0.0 { -v * scale } else { v / scale };
            let k = (i as u32) << 3;
            let base = s + (k % 13) as f32 - offset as f32;
            y[start + i] = base
                .abs()
                .sqrt()
                .mul_add(0.5, s.floor())
                .max(-100.0)
                .copysign(base)
                + s.ceil()
                - s.trunc();
            let t = s as i32;
            let u = if t > 0 && flag {
                t * 3 + offset
            } else {
                -t / 2 - (acc as i32)
            };
            z[start + i] = u.wrapping_mul(7919).clamp(-(1 << 20), 1 << 20).abs();
            w[start + i] = (i as u32 + acc) ^ ((start + i) as u32 >> 2);
        }
    }
    (y, z, w)
}

fn bits(o: &Outputs) -> (Vec<u32>, &[i32], &[u32]) {
    (o.0.iter().map(|v| v.to_bits()).collect(), &o.1, &o.2)
}

const CASES: &[(usize, u32)] = &[
    (0, 1),
    (1, 1),
    (255, 2),
    (256, 1),
    (257, 3),
    (5000, 4),
    (70_001, 7),
];

#[test]
fn the_simulator_computes_what_rust_computes() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &(n, blocks)) in CASES.iter().enumerate() {
        for flag in [false, true] {
            let got = run(&dev, Grid::blocks(blocks), n, i as u64, flag)?;
            let want = reference(n, i as u64, flag, blocks);
            let first = (0..n).find(|&j| {
                (got.0[j].to_bits(), got.1[j], got.2[j])
                    != (want.0[j].to_bits(), want.1[j], want.2[j])
            });
            assert!(
                first.is_none(),
                "n = {n}, {blocks} blocks, flag = {flag}: first difference at {first:?}: got {:?}, want {:?}",
                first.map(|j| (got.0[j], got.1[j], got.2[j])),
                first.map(|j| (want.0[j], want.1[j], want.2[j]))
            );
        }
    }
    Ok(())
}

#[needs_gpu]
fn the_gpu_computes_what_the_simulator_computes() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for (i, &(n, blocks)) in CASES.iter().chain(&[(1 << 22, 264)]).enumerate() {
        for flag in [false, true] {
            let on_gpu = run(&gpu, Grid::blocks(blocks), n, i as u64, flag)?;
            let on_sim = run(&sim, Grid::blocks(blocks.min(8)), n, i as u64, flag)?;
            assert!(
                bits(&on_gpu) == bits(&on_sim),
                "n = {n}, {blocks} blocks, flag = {flag}"
            );
        }
    }
    Ok(())
}

fn classify(v: u32) -> u32 {
    if v == 7 {
        return 700;
    }
    match v % 10 {
        0 => 1,
        1 | 2 => 2,
        3..=5 => 3,
        x if x > 8 => 9,
        _ => 4,
    }
}

/// `control`'s meaning, as a plain loop.
fn control_reference(seed: u32, n: usize) -> Vec<u32> {
    let mut acc = seed;
    'outer: for i in (0..40usize).step_by(3) {
        for j in (0..6usize).rev() {
            if (i + j) % 7 == 0 {
                continue 'outer;
            }
            if i * j > 90 {
                break 'outer;
            }
            acc = acc.wrapping_mul(31) ^ classify(acc ^ (i + j) as u32);
        }
    }
    let mut k = 0u32;
    let first = loop {
        k += 1;
        if (acc >> (k % 32)) & 1 == 1 || k > 40 {
            break k * 3;
        }
    };
    (0..n).map(|i| acc ^ first ^ classify(i as u32)).collect()
}

fn run_control(dev: &Device, seed: u32, n: usize) -> gpu_async::Result<Vec<u32>> {
    let mut out = dev.alloc::<u32>(n)?;
    block_on(language::language::control::launch(
        dev,
        Grid::blocks(2),
        (seed, &mut out),
    ))?;
    out.download()
}

#[on_each_device]
fn control_flow(dev: &Device) -> gpu_async::Result<()> {
    for seed in [0u32, 1, 7, 12345, 0xDEAD_BEEF] {
        for n in [0usize, 1, 33, 1000] {
            assert_eq!(
                run_control(dev, seed, n)?,
                control_reference(seed, n),
                "{dev}: seed {seed}, n {n}"
            );
        }
    }
    Ok(())
}

/// `hash`'s meaning, with Rust's wrapping arithmetic spelled out.
fn hash_reference(seed: u32, n: usize) -> (Vec<u32>, Vec<i32>) {
    let mut h = seed;
    for i in 0..20u32 {
        h = h.wrapping_mul(2654435761).wrapping_add(i << 7);
        h ^= h >> 13;
    }
    let out = (0..n)
        .map(|i| {
            let x = h
                .wrapping_add((i as u32).wrapping_mul(2654435769))
                .wrapping_mul(2246822507);
            x ^ ((x >> 16) << 3)
        })
        .collect();
    let signed = (0..n)
        .map(|i| {
            let v = (h as i32)
                .wrapping_mul(31)
                .wrapping_sub((i as i32).wrapping_mul(1000000007));
            v.wrapping_sub(2147483647).wrapping_neg()
        })
        .collect();
    (out, signed)
}

#[on_each_device]
fn integer_overflow_wraps(dev: &Device) -> gpu_async::Result<()> {
    for seed in [0u32, 1, 0xFFFF_FFFF, 0x8000_0000] {
        let n = 1000;
        let mut out = dev.alloc::<u32>(n)?;
        let mut signed = dev.alloc::<i32>(n)?;
        block_on(language::language::hash::launch(
            dev,
            Grid::blocks(1),
            (seed, &mut out, &mut signed),
        ))?;
        let (want_out, want_signed) = hash_reference(seed, n);
        assert_eq!(out.download()?, want_out, "{dev}: seed {seed}");
        assert_eq!(signed.download()?, want_signed, "{dev}: seed {seed}");
    }
    Ok(())
}
