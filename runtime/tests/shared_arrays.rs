//! Block-shared arrays, shared and float atomics and scans: on the simulator against plain Rust,
//! on the GPU against the simulator.

#[allow(dead_code, clippy::all)]
#[path = "common/shared_arrays.rs"]
mod shared_arrays;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::bench::random_f32;
use gpu_async::device::scan_order;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::needs_gpu;
use shared_arrays::blocks;

fn bytes(n: usize, seed: u64) -> Vec<u8> {
    random_f32(n, seed)
        .iter()
        .map(|v| (v.to_bits() >> 7) as u8 & if seed % 2 == 0 { 255 } else { 15 })
        .collect()
}

fn run_bins(dev: &Device, grid: Grid, xs: &[u8]) -> gpu_async::Result<Vec<u32>> {
    let x = dev.upload(xs)?;
    let mut out = dev.upload(&[0u32; 256])?;
    block_on(blocks::bins::launch(dev, grid, (&x, &mut out)))?;
    out.download()
}

#[test]
fn per_block_bins_count_every_byte_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for (seed, n) in [(0, 0), (1, 1), (2, 5000), (3, 70_000)] {
        let xs = bytes(n, seed);
        let mut want = vec![0u32; 256];
        for &b in &xs {
            want[usize::from(b)] += 1;
        }
        assert_eq!(run_bins(&sim, Grid::blocks(3), &xs)?, want, "n = {n}");
    }
    Ok(())
}

fn run_transpose(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<Vec<f32>> {
    let x = dev.upload(&random_f32(n * n, seed))?;
    let mut y = dev.alloc::<f32>(n * n)?;
    block_on(blocks::transpose::launch(dev, grid, (&x, &mut y, n)))?;
    y.download()
}

#[test]
fn a_tile_transposes_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for n in [32, 96] {
        let xs = random_f32(n * n, 5);
        let got = run_transpose(&sim, Grid::blocks(4), n, 5)?;
        for r in 0..n {
            for c in 0..n {
                assert_eq!(
                    got[c * n + r].to_bits(),
                    xs[r * n + c].to_bits(),
                    "({r}, {c})"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn a_transpose_of_rows_that_are_not_tiles_panics_on_the_simulator() {
    let sim = Device::simulator();
    let err = run_transpose(&sim, Grid::blocks(1), 40, 1).unwrap_err();
    assert!(
        err.to_string().contains("n is a multiple of the tile"),
        "{err}"
    );
}

fn run_table(dev: &Device, xs: &[u32]) -> gpu_async::Result<Vec<u32>> {
    let x = dev.upload(xs)?;
    let mut y = dev.alloc::<u32>(xs.len())?;
    block_on(blocks::table::launch(dev, Grid::blocks(2), (&x, &mut y)))?;
    y.download()
}

#[test]
fn a_table_written_in_one_loop_is_read_in_the_next_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let xs: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let want: Vec<u32> = xs
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.wrapping_mul(*v)
                .wrapping_add(((i % 64) * (i % 64)) as u32 + 7)
        })
        .collect();
    assert_eq!(run_table(&sim, &xs)?, want);
    Ok(())
}

fn run_scans(
    dev: &Device,
    grid: Grid,
    xs: &[u32],
    init: u32,
) -> gpu_async::Result<(Vec<u32>, Vec<u32>, Vec<u32>)> {
    let x = dev.upload(xs)?;
    let (mut y, mut z) = (dev.alloc::<u32>(xs.len())?, dev.alloc::<u32>(xs.len())?);
    let mut totals = dev.alloc::<u32>(grid.block_count() as usize)?;
    block_on(blocks::scans::launch(
        dev,
        grid,
        (&x, &mut y, &mut z, &mut totals, init),
    ))?;
    Ok((y.download()?, z.download()?, totals.download()?))
}

#[test]
fn integer_scans_are_prefix_sums_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let grid = Grid::blocks(2);
    for n in [0, 1, 31, 3000, 7001] {
        let xs: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(0x9E37_79B9) >> 3)
            .collect();
        let (y, z, totals) = run_scans(&sim, grid, &xs, 11)?;
        let mut last = vec![0u32; 2];
        for (t, tile) in xs.chunks(3000).enumerate() {
            let mut acc = 11u32;
            for (k, &v) in tile.iter().enumerate() {
                let i = t * 3000 + k;
                assert_eq!(y[i], acc, "exclusive, n = {n}, i = {i}");
                acc = acc.wrapping_add(v);
                assert_eq!(z[i], acc, "inclusive, n = {n}, i = {i}");
            }
            last[t % 2] = acc;
        }
        assert_eq!(totals, last, "n = {n}");
    }
    Ok(())
}

fn run_float_scans(dev: &Device, xs: &[f32]) -> gpu_async::Result<(Vec<u32>, Vec<u32>)> {
    let x = dev.upload(xs)?;
    let (mut y, mut m) = (dev.alloc::<f32>(xs.len())?, dev.alloc::<f32>(xs.len())?);
    block_on(blocks::float_scans::launch(
        dev,
        Grid::blocks(2),
        (&x, &mut y, &mut m),
    ))?;
    let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect();
    Ok((bits(y.download()?), bits(m.download()?)))
}

#[test]
fn float_scans_follow_the_defined_order_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let xs: Vec<f32> = random_f32(2500, 3)
        .iter()
        .map(|v| v * 1000.0 - 300.0)
        .collect();
    let (y, m) = run_float_scans(&sim, &xs)?;
    for (t, tile) in xs.chunks(1000).enumerate() {
        let (sums, _) = scan_order(tile.iter().copied(), 0.5, 0.0, 64, false, |a, b| a + b);
        let (maxes, _) = scan_order(
            tile.iter().map(|v| v * 2.0),
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            64,
            true,
            f32::max,
        );
        for (k, (s, mx)) in sums.iter().zip(&maxes).enumerate() {
            let i = t * 1000 + k;
            assert_eq!(y[i], s.to_bits(), "sum at {i}");
            assert_eq!(m[i], mx.to_bits(), "max at {i}");
        }
    }
    Ok(())
}

type FloatAtomics = (Vec<u32>, u32, u64, Vec<u64>);

fn run_float_atomics(dev: &Device, xs: &[f32], blocks: u32) -> gpu_async::Result<FloatAtomics> {
    let x = dev.upload(xs)?;
    let mut sums = dev.upload(&[0.0f32; 4])?;
    let mut top = dev.upload(&[f32::NEG_INFINITY])?;
    let mut low = dev.upload(&[f64::INFINITY])?;
    let mut per_block = dev.upload(&vec![0.0f64; blocks as usize])?;
    block_on(blocks::float_atomics::launch(
        dev,
        Grid::blocks(blocks),
        (&x, &mut sums, &mut top, &mut low, &mut per_block),
    ))?;
    Ok((
        sums.download()?.iter().map(|v| v.to_bits()).collect(),
        top.download()?[0].to_bits(),
        low.download()?[0].to_bits(),
        per_block.download()?.iter().map(|v| v.to_bits()).collect(),
    ))
}

#[test]
fn float_atomics_add_and_order_by_total_cmp_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    // Integers in floats: every order of the additions gives the same sums.
    let mut xs: Vec<f32> = (0..999).map(|i| ((i * 37) % 201) as f32 - 100.0).collect();
    xs.push(-0.0);
    let (sums, top, low, per_block) = run_float_atomics(&sim, &xs, 3)?;
    let mut want = [0.0f32; 4];
    for (i, v) in xs.iter().enumerate() {
        want[i % 4] += v;
    }
    assert_eq!(sums, want.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    assert_eq!(top, 100.0f32.to_bits());
    assert_eq!(low, (-100.0f64).to_bits());
    for (b, got) in per_block.iter().enumerate() {
        let want: f64 = xs.iter().skip(b).step_by(3).map(|&v| f64::from(v)).sum();
        assert_eq!(*got, want.to_bits(), "block {b}");
    }
    Ok(())
}

type OneWarp = (Vec<u32>, Vec<u32>);

fn run_one_warp(dev: &Device, xs: &[f32]) -> gpu_async::Result<OneWarp> {
    let x = dev.upload(xs)?;
    let mut y = dev.upload(&vec![0.0f32; 100])?;
    let mut extremes = dev.alloc::<f32>(2)?;
    block_on(blocks::one_warp::launch(
        dev,
        Grid::blocks(1),
        (&x, &mut y, &mut extremes),
    ))?;
    // The scan's sums compare NaNs as one value: the GPU's arithmetic returns the canonical NaN
    // where the host keeps an input's payload (docs/language.md, "NaN payloads are not kept").
    // The extremes are moved, not computed, so their bits are compared as they are.
    let sums = y
        .download()?
        .iter()
        .map(|f| if f.is_nan() { f32::NAN } else { *f }.to_bits())
        .collect();
    let extremes = extremes.download()?.iter().map(|f| f.to_bits()).collect();
    Ok((sums, extremes))
}

#[test]
fn one_warp_scans_and_orders_floats_by_total_cmp_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let mut xs: Vec<f32> = random_f32(300, 8).iter().map(|v| v * 50.0).collect();
    xs[7] = f32::NAN;
    xs[9] = -0.0;
    let (y, extremes) = run_one_warp(&sim, &xs)?;
    let (sums, _) = scan_order(xs[..100].iter().copied(), 1.0, 0.0, 32, true, |a, b| a + b);
    assert_eq!(y, sums.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let max = xs.iter().copied().fold(f32::NEG_INFINITY, |a, b| {
        if b.total_cmp(&a).is_gt() {
            b
        } else {
            a
        }
    });
    let min = xs.iter().copied().fold(
        f32::INFINITY,
        |a, b| if b.total_cmp(&a).is_lt() { b } else { a },
    );
    assert_eq!(extremes, vec![max.to_bits(), min.to_bits()]);
    // A NaN with the sign bit clear is above every number by total_cmp.
    assert!(f32::from_bits(extremes[0]).is_nan());
    Ok(())
}

#[test]
fn f32_atomic_adds_flush_subnormals_on_the_simulator() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    let tiny = f32::from_bits(3); // a subnormal
    let xs = [tiny, 1.0, -tiny, f32::MIN_POSITIVE];
    let x = sim.upload(&xs)?;
    let mut sums = sim.upload(&[0.0f32, tiny, 0.0, -f32::MIN_POSITIVE / 2.0])?;
    block_on(blocks::f32_adds::launch(
        &sim,
        Grid::blocks(1),
        (&x, &mut sums),
    ))?;
    let got: Vec<u32> = sums.download()?.iter().map(|v| v.to_bits()).collect();
    // 0 + tiny flushes to 0; tiny (flushed) + 1 = 1; 0 + -tiny is -0 flushed from the input:
    // +0 + -0 = +0; -MIN_POSITIVE/2 (a subnormal, flushed to -0) + MIN_POSITIVE = MIN_POSITIVE.
    let want: Vec<u32> = [0.0f32, 1.0, 0.0, f32::MIN_POSITIVE]
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, want);
    Ok(())
}

#[needs_gpu]
fn one_warp_role_and_f32_atomic_adds_on_the_gpu_match_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    let mut xs: Vec<f32> = random_f32(300, 8).iter().map(|v| v * 50.0).collect();
    xs[7] = f32::NAN;
    xs[9] = -0.0;
    assert_eq!(
        run_one_warp(&gpu, &xs)?,
        run_one_warp(&sim, &xs)?,
        "one warp"
    );
    let tiny = f32::from_bits(3);
    let xs = [tiny, 1.0, -tiny, f32::MIN_POSITIVE];
    let start = [0.0f32, tiny, 0.0, -f32::MIN_POSITIVE / 2.0];
    let mut results = Vec::new();
    for dev in [&gpu, &sim] {
        let x = dev.upload(&xs)?;
        let mut sums = dev.upload(&start)?;
        block_on(blocks::f32_adds::launch(
            dev,
            Grid::blocks(1),
            (&x, &mut sums),
        ))?;
        results.push(
            sums.download()?
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<u32>>(),
        );
    }
    assert_eq!(
        results[0], results[1],
        "atom.add.f32 with subnormals (GPU, simulator)"
    );
    Ok(())
}

#[needs_gpu]
fn shared_arrays_on_the_gpu_match_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for (seed, n) in [(2, 5000), (3, 70_000), (4, 1 << 22)] {
        let xs = bytes(n, seed);
        assert_eq!(
            run_bins(&gpu, Grid::blocks(264), &xs)?,
            run_bins(&sim, Grid::blocks(3), &xs)?,
            "bins, n = {n}"
        );
    }
    for n in [32, 96, 1024] {
        assert_eq!(
            run_transpose(&gpu, Grid::blocks(132), n, 9)?,
            run_transpose(&sim, Grid::blocks(4), n, 9)?,
            "transpose, n = {n}"
        );
    }
    let xs: Vec<u32> = (0..100_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    assert_eq!(run_table(&gpu, &xs)?, run_table(&sim, &xs)?, "table");
    for n in [0, 1, 31, 3000, 7001, 100_003] {
        let xs: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(0x9E37_79B9) >> 3)
            .collect();
        assert_eq!(
            run_scans(&gpu, Grid::blocks(2), &xs, 11)?,
            run_scans(&sim, Grid::blocks(2), &xs, 11)?,
            "scans, n = {n}"
        );
    }
    let xs: Vec<f32> = random_f32(2500, 3)
        .iter()
        .map(|v| v * 1000.0 - 300.0)
        .collect();
    assert_eq!(
        run_float_scans(&gpu, &xs)?,
        run_float_scans(&sim, &xs)?,
        "float scans"
    );
    Ok(())
}

#[needs_gpu]
fn float_atomics_on_the_gpu_match_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    let mut xs: Vec<f32> = (0..99_999)
        .map(|i| ((i * 37) % 201) as f32 - 100.0)
        .collect();
    xs.push(-0.0);
    assert_eq!(
        run_float_atomics(&gpu, &xs, 5)?,
        run_float_atomics(&sim, &xs, 5)?
    );
    Ok(())
}
