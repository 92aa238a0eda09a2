//! Local arrays on the simulator (against plain Rust) and on the GPU (against the simulator).

#[allow(dead_code, clippy::all)]
#[path = "common/arrays.rs"]
mod arrays;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::bench::random_f32;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::{needs_gpu, on_each_device};

fn run(dev: &Device, n: usize, seed: u64) -> gpu_async::Result<(Vec<u32>, Vec<u32>)> {
    let xs = random_f32(n, seed);
    let ks: Vec<u32> = random_f32(n, seed + 1)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let (x, k) = (dev.upload(&xs)?, dev.upload(&ks)?);
    let (mut y, mut z) = (dev.alloc::<f32>(n)?, dev.alloc::<u32>(n)?);
    block_on(arrays::arrays::stencil::launch(
        dev,
        Grid::blocks(3),
        (&x, &k, &mut y, &mut z),
    ))?;
    Ok((
        y.download()?.iter().map(|v| v.to_bits()).collect(),
        z.download()?,
    ))
}

fn reference(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let xs = random_f32(n, seed);
    let ks: Vec<u32> = random_f32(n, seed + 1)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let w = [0.1f32, 0.2, 0.4, 0.2, 0.1];
    let y = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let mut window = [v; 5];
            window[0] = v * 0.5;
            window[4] = v + (i % 7) as f32;
            let mut acc = 0.0f32;
            for t in 0..5 {
                acc += w[t] * window[t];
            }
            (acc + 100.0 * (n as f32) * 0.0).to_bits()
        })
        .collect();
    let table: Vec<u32> = (0..16u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let z = ks
        .iter()
        .map(|&v| {
            let mut hist = [0u32; 8];
            let mut bits = v;
            for _ in 0..8 {
                hist[(bits & 7) as usize] += 1;
                bits >>= 3;
            }
            let best = (0..8u32)
                .map(|j| hist[j as usize] * 16 + j)
                .max()
                .unwrap_or(0);
            let gain = [0.5f32, 1.0, 1.5, 2.0, -0.5, -1.0, 0.25, 4.0];
            let g = gain[(v % 8) as usize] * gain[3];
            (best ^ table[(v % 16) as usize]).wrapping_add(g as u32)
        })
        .collect();
    (y, z)
}

#[test]
fn local_arrays_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for (seed, n) in [0, 1, 63, 4097].into_iter().enumerate() {
        assert!(
            run(&sim, n, seed as u64)? == reference(n, seed as u64),
            "n = {n}"
        );
    }
    Ok(())
}

#[needs_gpu]
fn local_arrays_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for (seed, n) in [1, 63, 4097, 1 << 20].into_iter().enumerate() {
        assert!(
            run(&gpu, n, seed as u64)? == run(&sim, n, seed as u64)?,
            "n = {n}"
        );
    }
    Ok(())
}

fn run_tuples(dev: &Device, n: usize, seed: u64) -> gpu_async::Result<(Vec<u32>, Vec<u32>)> {
    let xs = random_f32(n, seed);
    let x = dev.upload(&xs)?;
    let (mut y, mut z) = (dev.alloc::<f32>(n)?, dev.alloc::<u32>(n)?);
    block_on(arrays::tuples::pairs::launch(
        dev,
        Grid::blocks(2),
        (&x, &mut y, &mut z),
    ))?;
    Ok((
        y.download()?.iter().map(|v| v.to_bits()).collect(),
        z.download()?,
    ))
}

#[test]
fn tuples_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for n in [0, 1, 1000] {
        let xs = random_f32(n, 7);
        let want_y: Vec<u32> = xs
            .iter()
            .map(|&v| {
                let (lo, hi) = if v < 0.5 { (v, 0.5) } else { (0.5, v) };
                (lo * 2.0 + hi * 3.0).to_bits()
            })
            .collect();
        let want_z: Vec<u32> = xs
            .iter()
            .map(|v| {
                let b = v.to_bits();
                (b & 255).wrapping_mul(3).wrapping_add(b >> 16)
            })
            .collect();
        assert!(run_tuples(&sim, n, 7)? == (want_y, want_z), "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn tuples_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [1, 1000, 1 << 20] {
        assert!(
            run_tuples(&gpu, n, 8)? == run_tuples(&sim, n, 8)?,
            "n = {n}"
        );
    }
    Ok(())
}

fn run_structs(dev: &Device, n: usize) -> gpu_async::Result<Vec<u32>> {
    let xs = random_f32(n, 11);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(n)?;
    let t = arrays::structs::Affine {
        scale: 1.5,
        shift: -0.25,
        clamp_at: 2,
    };
    block_on(arrays::structs::apply::launch(
        dev,
        Grid::blocks(3),
        (t, &x, &mut y),
    ))?;
    Ok(y.download()?.iter().map(|v| v.to_bits()).collect())
}

#[test]
fn structs_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for n in [0, 5, 3000] {
        let xs = random_f32(n, 11);
        let want: Vec<u32> = xs
            .iter()
            .map(|v| {
                let (scale, shift) = (1.5f32 * 1.5, -0.25f32 * 1.5 + -0.25 + 1.0);
                (v * scale + shift).min(2.0).to_bits()
            })
            .collect();
        assert!(run_structs(&sim, n)? == want, "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn structs_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [5, 3000, 1 << 20] {
        assert!(run_structs(&gpu, n)? == run_structs(&sim, n)?, "n = {n}");
    }
    Ok(())
}

type GenericOut = (Vec<u8>, Vec<i64>, Vec<u32>);

fn run_generics(dev: &Device, n: usize) -> gpu_async::Result<GenericOut> {
    let a: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
    let b: Vec<i64> = (0..n)
        .map(|i| (i as i64) * 0x1234_5678_9ABC - (1 << 62))
        .collect();
    let c = random_f32(n, 3);
    let (da, db, dc) = (dev.upload(&a)?, dev.upload(&b)?, dev.upload(&c)?);
    let (mut ya, mut yb, mut yc) = (
        dev.alloc::<u8>(n)?,
        dev.alloc::<i64>(n)?,
        dev.alloc::<f32>(n)?,
    );
    block_on(arrays::generics::mixed::launch(
        dev,
        Grid::blocks(2),
        (&da, &db, &dc, &mut ya, &mut yb, &mut yc),
    ))?;
    Ok((
        ya.download()?,
        yb.download()?,
        yc.download()?.iter().map(|v| v.to_bits()).collect(),
    ))
}

#[test]
fn generic_helpers_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for n in [0, 3, 1000] {
        let got = run_generics(&sim, n)?;
        let a: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
        let b: Vec<i64> = (0..n)
            .map(|i| (i as i64) * 0x1234_5678_9ABC - (1 << 62))
            .collect();
        let c = random_f32(n, 3);
        let want: GenericOut = (
            a.iter()
                .map(|v| v.wrapping_mul(7).wrapping_add(*v))
                .collect(),
            b.iter()
                .map(|v| v.wrapping_mul(3).wrapping_sub(5))
                .collect(),
            c.iter().map(|v| (v * 0.5 + v).to_bits()).collect(),
        );
        assert!(got == want, "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn generic_helpers_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [3, 1000, 1 << 20] {
        assert!(run_generics(&gpu, n)? == run_generics(&sim, n)?, "n = {n}");
    }
    Ok(())
}

use gpu_async::half::{bf16, f16};

type HalfOut = (Vec<u16>, Vec<u16>, Vec<u32>);

fn half_inputs(n: usize) -> (Vec<f16>, Vec<bf16>) {
    let r = random_f32(2 * n, 21);
    let x = r[..n]
        .iter()
        .map(|v| f16::from_f32((v - 0.5) * 8.0))
        .collect();
    let b = r[n..]
        .iter()
        .map(|v| bf16::from_f32((v - 0.5) * 1e4))
        .collect();
    (x, b)
}

fn run_halves(dev: &Device, n: usize) -> gpu_async::Result<HalfOut> {
    let (xs, bs) = half_inputs(n);
    let (x, b) = (dev.upload(&xs)?, dev.upload(&bs)?);
    let (mut y, mut z, mut w) = (
        dev.alloc::<f16>(n)?,
        dev.alloc::<bf16>(n)?,
        dev.alloc::<u32>(n)?,
    );
    block_on(arrays::halves::mix::launch(
        dev,
        Grid::blocks(3),
        (f16::from_f32(1.5), &x, &b, &mut y, &mut z, &mut w),
    ))?;
    Ok((
        y.download()?.iter().map(|v| v.to_bits()).collect(),
        z.download()?.iter().map(|v| v.to_bits()).collect(),
        w.download()?,
    ))
}

#[test]
fn halves_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for n in [0, 1, 257, 3000] {
        let (xs, bs) = half_inputs(n);
        let k = f16::from_f32(1.5);
        let want: HalfOut = (
            xs.iter()
                .map(|&v| {
                    let t = v * k + v;
                    (if t > k { -t } else { t / k }).to_bits()
                })
                .collect(),
            bs.iter()
                .map(|&v| (bf16::from_f32(v.to_f32() * 3.0) - v).to_bits())
                .collect(),
            bs.iter()
                .map(|v| v.to_bits() as u32 + f16::from_f32(v.to_f32()).to_bits() as u32 * 65536)
                .collect(),
        );
        assert!(run_halves(&sim, n)? == want, "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn halves_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [1, 257, 3000, 1 << 20] {
        assert!(run_halves(&gpu, n)? == run_halves(&sim, n)?, "n = {n}");
    }
    Ok(())
}

fn run_shared(dev: &Device, n: usize, blocks: u32) -> gpu_async::Result<(Vec<u32>, Vec<u32>)> {
    let xs = random_f32(n, 5);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(n)?;
    let mut counts = dev.alloc::<u32>(blocks as usize)?;
    block_on(arrays::shared_values::count::launch(
        dev,
        Grid::blocks(blocks),
        (&x, &mut y, &mut counts),
    ))?;
    Ok((
        y.download()?.iter().map(|v| v.to_bits()).collect(),
        counts.download()?,
    ))
}

#[test]
fn shared_values_between_roles() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for (n, blocks) in [(0, 1), (1, 2), (1000, 3), (128 * 50 + 1, 4)] {
        let (y, counts) = run_shared(&sim, n, blocks)?;
        let xs = random_f32(n, 5);
        assert!(y == xs.iter().map(|v| (v * 2.0).to_bits()).collect::<Vec<_>>());
        let tiles = n.div_ceil(128) as u32;
        for (b, c) in counts.iter().enumerate() {
            let mine = (b as u32..tiles).step_by(blocks as usize).count() as u32;
            assert_eq!(*c, mine * 1000 + mine, "n = {n}, block {b}");
        }
    }
    Ok(())
}

#[needs_gpu]
fn shared_values_between_roles_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for (n, blocks) in [(1000, 3), (1 << 20, 132)] {
        assert!(
            run_shared(&gpu, n, blocks)? == run_shared(&sim, n, blocks)?,
            "n = {n}"
        );
    }
    Ok(())
}

#[on_each_device]
fn async_blocks_run_in_place(dev: Device) -> gpu_async::Result<()> {
    for n in [0, 1, 63, 64, 65, 5000] {
        let xs = random_f32(n, 13);
        let x = dev.upload(&xs)?;
        let mut y = dev.alloc::<f32>(n)?;
        block_on(arrays::async_blocks::relay::launch(
            &dev,
            Grid::blocks(3),
            (&x, &mut y),
        ))?;
        let want: Vec<u32> = xs.iter().map(|v| (v * 2.0).to_bits()).collect();
        let got: Vec<u32> = y.download()?.iter().map(|v| v.to_bits()).collect();
        assert!(got == want, "{dev}: n = {n}");
    }
    Ok(())
}

#[on_each_device]
fn enums_without_payloads(dev: Device) -> gpu_async::Result<()> {
    use arrays::enums::Op;
    let xs: Vec<i32> = (0..3000).map(|i| i * 7 - 9000).collect();
    let combine = |op: Op, a: i32, b: i32| match op {
        Op::Add => a.wrapping_add(b),
        Op::Mul => a.wrapping_mul(b),
        Op::Max => a.max(b),
    };
    for op in [Op::Add, Op::Mul, Op::Max] {
        let x = dev.upload(&xs)?;
        let mut y = dev.alloc::<i32>(xs.len())?;
        block_on(arrays::enums::apply::launch(
            &dev,
            Grid::blocks(2),
            (op, &x, &mut y),
        ))?;
        let other = if op == Op::Max { Op::Add } else { Op::Max };
        let want: Vec<i32> = xs
            .iter()
            .map(|&v| {
                combine(op, v, 3)
                    .wrapping_add(combine(other, v, 2))
                    .wrapping_add(op as i32)
            })
            .collect();
        assert!(y.download()? == want, "{dev}: {op:?}");
    }
    Ok(())
}

fn run_struct_payloads(
    dev: &Device,
    n: usize,
) -> gpu_async::Result<(Vec<u32>, Vec<u32>, Vec<u64>)> {
    use arrays::struct_payloads::{step, TILE};
    let xs: Vec<f32> = random_f32(n, 21).iter().map(|v| v - 0.5).collect();
    let vs: Vec<f64> = random_f32(n, 22)
        .iter()
        .map(|&v| f64::from(v) * 3.0)
        .collect();
    let (x, v) = (dev.upload(&xs)?, dev.upload(&vs)?);
    let tiles = n.div_ceil(TILE);
    let (mut y, mut ids, mut sums) = (
        dev.alloc::<f32>(n)?,
        dev.alloc::<u32>(n)?,
        dev.alloc::<f64>(tiles)?,
    );
    block_on(step::launch(
        dev,
        Grid::blocks(2),
        (&x, &v, &mut y, &mut ids, &mut sums),
    ))?;
    Ok((
        y.download()?.iter().map(|v| v.to_bits()).collect(),
        ids.download()?,
        sums.download()?.iter().map(|v| v.to_bits()).collect(),
    ))
}

#[test]
fn structs_travel_through_channels_on_the_simulator() -> gpu_async::Result<()> {
    use arrays::struct_payloads::TILE;
    let sim = Device::simulator();
    for n in [5, 256, 1000] {
        let xs: Vec<f32> = random_f32(n, 21).iter().map(|v| v - 0.5).collect();
        let vs: Vec<f64> = random_f32(n, 22)
            .iter()
            .map(|&v| f64::from(v) * 3.0)
            .collect();
        let want_y: Vec<u32> = xs
            .iter()
            .zip(&vs)
            .map(|(&a, &b)| if a > 0.0 { a + b as f32 } else { -1.0 }.to_bits())
            .collect();
        let want_ids: Vec<u32> = (0..n).map(|i| i as u16 as u32).collect();
        let want_sums: Vec<u64> = vs
            .chunks(TILE)
            .map(|c| {
                let mut padded = c.to_vec();
                padded.resize(TILE, 0.0);
                gpu_async::device::reduction_order(padded, 0.0f64, 64, |a, b| a + b).to_bits()
            })
            .collect();
        let (y, ids, sums) = run_struct_payloads(&sim, n)?;
        assert_eq!(y, want_y, "n = {n}");
        assert_eq!(ids, want_ids, "n = {n}");
        assert_eq!(sums, want_sums, "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn structs_travel_through_channels_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [5, 1000, 1 << 20] {
        assert!(
            run_struct_payloads(&gpu, n)? == run_struct_payloads(&sim, n)?,
            "n = {n}"
        );
    }
    Ok(())
}

fn run_struct_arrays(dev: &Device, n: usize) -> gpu_async::Result<Vec<u32>> {
    use arrays::struct_arrays::{eval, Poly};
    let xs: Vec<f32> = random_f32(n, 31).iter().map(|v| v * 4.0 - 2.0).collect();
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(n)?;
    let p = Poly {
        coeffs: [0.5, -1.25, 2.0, 0.75],
        scale: 1.5,
    };
    block_on(eval::launch(dev, Grid::blocks(2), (p, &x, &mut y)))?;
    Ok(y.download()?.iter().map(|v| v.to_bits()).collect())
}

#[test]
fn structs_with_array_fields_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let c = [0.5f32, -1.25, 2.0, 0.75];
    for n in [5, 128, 1000] {
        let xs: Vec<f32> = random_f32(n, 31).iter().map(|v| v * 4.0 - 2.0).collect();
        let want: Vec<u32> = xs
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut acc = 0.0f32;
                for k in 0..4 {
                    acc = acc * v + c[3 - k];
                }
                let taps = [v, acc * 1.5, v * 2.0];
                let center = (i % 128) % 3;
                let mut local = taps;
                local[center] += c[0];
                (local[0] + local[1] * 0.5 + taps[center]).to_bits()
            })
            .collect();
        assert_eq!(run_struct_arrays(&sim, n)?, want, "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn structs_with_array_fields_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for n in [5, 1000, 1 << 20] {
        assert!(
            run_struct_arrays(&gpu, n)? == run_struct_arrays(&sim, n)?,
            "n = {n}"
        );
    }
    Ok(())
}

fn run_conditional_writes(dev: &Device, n: usize) -> gpu_async::Result<Vec<u32>> {
    let xs = random_f32(n, 41);
    let before: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&before)?;
    block_on(arrays::conditional_writes::keep_large::launch(
        dev,
        Grid::blocks(1),
        (&x, &mut y),
    ))?;
    Ok(y.download()?.iter().map(|v| v.to_bits()).collect())
}

#[on_each_device]
fn conditional_writes_keep_the_other_elements(dev: Device) -> gpu_async::Result<()> {
    let n = 3001;
    let xs = random_f32(n, 41);
    let want: Vec<u32> = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| if v > 0.5 { v } else { -(i as f32) }.to_bits())
        .collect();
    assert_eq!(run_conditional_writes(&dev, n)?, want);
    Ok(())
}

#[on_each_device]
fn idle_warps_when_asked_for(dev: Device) -> gpu_async::Result<()> {
    let n = 5000;
    let mut y = dev.alloc::<u32>(n)?;
    block_on(arrays::idle_warps::fill::launch(
        &dev,
        Grid::blocks(3),
        (&mut y,),
    ))?;
    let want: Vec<u32> = (0..n as u32).map(|i| i * 3).collect();
    assert_eq!(y.download()?, want, "{dev}");
    Ok(())
}

type Shapes = (Vec<i32>, Vec<i32>, Vec<i32>);

fn run_body_control_flow(dev: &Device, n: usize) -> gpu_async::Result<Shapes> {
    let xs: Vec<i32> = random_f32(n, 51)
        .iter()
        .map(|v| (v * 2000.0) as i32 - 1000)
        .collect();
    let init = |k: i32| (0..n as i32).map(|i| i * k).collect::<Vec<_>>();
    let x = dev.upload(&xs)?;
    let (mut a, mut b, mut c) = (
        dev.upload(&init(7))?,
        dev.upload(&init(-5))?,
        dev.upload(&init(3))?,
    );
    // One block: the body runs over every element (no tiles), once.
    block_on(arrays::body_control_flow::shapes::launch(
        dev,
        Grid::blocks(1),
        (&x, &mut a, &mut b, &mut c),
    ))?;
    Ok((a.download()?, b.download()?, c.download()?))
}

#[test]
fn writes_under_control_flow_in_parallel_bodies() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let n = 1000;
    let xs: Vec<i32> = random_f32(n, 51)
        .iter()
        .map(|v| (v * 2000.0) as i32 - 1000)
        .collect();
    let (mut a, mut b, mut c): Shapes = (
        (0..n as i32).map(|i| i * 7).collect(),
        (0..n as i32).map(|i| i * -5).collect(),
        (0..n as i32).map(|i| i * 3).collect(),
    );
    for i in 0..n {
        let v = xs[i];
        if v % 3 == 0 {
            a[i] = v;
        } else if v % 3 == 1 {
            b[i] = -v;
        } else {
            a[i] += 1;
            b[i] -= 1;
        }
        match v & 7 {
            0 | 1 => a[i] *= 2,
            5 => {}
            _ => b[i] += 10,
        }
        for k in 0..(v & 3) {
            if k == 1 {
                a[i] ^= 0x100;
            }
        }
    }
    let m = n / 32 * 32;
    for w in 0..m / 32 {
        let total: i32 = xs[32 * w..32 * w + 32].iter().sum();
        for l in (1..32).step_by(2) {
            c[32 * w + l] = total;
        }
    }
    let got = run_body_control_flow(&sim, n)?;
    for (name, g, w) in [("a", &got.0, &a), ("b", &got.1, &b), ("c", &got.2, &c)] {
        if let Some(i) = (0..n).find(|&i| g[i] != w[i]) {
            panic!(
                "{name}[{i}]: simulator {}, expected {} (x = {})",
                g[i], w[i], xs[i]
            );
        }
    }
    Ok(())
}

#[needs_gpu]
fn writes_under_control_flow_in_parallel_bodies_on_the_gpu() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    let n = 1000;
    assert_eq!(
        run_body_control_flow(&gpu, n)?,
        run_body_control_flow(&sim, n)?
    );
    Ok(())
}

#[on_each_device]
fn loops_over_typed_and_inclusive_ranges(dev: Device) -> gpu_async::Result<()> {
    let (n, k) = (37i32, 200u8);
    let mut want = vec![
        (-n..n).map(|i| i as i64 * 3).sum::<i64>(),
        (k..=u8::MAX).filter(|v| v % 7 != 0).map(i64::from).sum(),
        (i8::MIN..=i8::MAX).map(|v| v as i64 * v as i64).sum(),
        0,
        (0..=10).sum(),
    ];
    want.extend((5..40u16).map(|i| (0..=i).map(i64::from).sum::<i64>()));
    let mut out = dev.alloc::<i64>(40)?;
    block_on(arrays::typed_ranges::sums::launch(
        &dev,
        Grid::blocks(1),
        (n, k, &mut out),
    ))?;
    assert_eq!(out.download()?, want, "{dev}");
    Ok(())
}

#[on_each_device]
fn if_let_over_checked_results(dev: Device) -> gpu_async::Result<()> {
    let n = 2000;
    let a: Vec<i32> = random_f32(n, 61)
        .iter()
        .map(|v| (v.to_bits() as i32).wrapping_mul(7))
        .collect();
    let b: Vec<i32> = random_f32(n, 62)
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i % 3 == 0 {
                (v * 100.0) as i32
            } else {
                v.to_bits() as i32
            }
        })
        .collect();
    let want_sums: Vec<i32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.checked_add(*y).unwrap_or(-1))
        .collect();
    let want_products: Vec<i32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| match x.checked_mul(*y) {
            Some(v) => v.wrapping_add(1),
            None if x.checked_sub(*y).is_none() => -2,
            None => -3,
        })
        .collect();
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let (mut s, mut p) = (dev.alloc::<i32>(n)?, dev.alloc::<i32>(n)?);
    block_on(arrays::option_if_let::checked::launch(
        &dev,
        Grid::blocks(1),
        (&da, &db, &mut s, &mut p),
    ))?;
    assert_eq!(s.download()?, want_sums, "{dev}");
    assert_eq!(p.download()?, want_products, "{dev}");
    Ok(())
}
