//! Warp operations (`for_each_lane` with `lane.shuffle`, `ballot`, `sum`, ...): the simulator
//! against a plain-Rust model of each operation, and the GPU against the simulator, bit for
//! bit; the lane loop's panics on both backends.

#[allow(dead_code, clippy::all)]
#[path = "common/warps.rs"]
mod warps;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::{block_on, Device, Error, Grid};
use gpu_async_testing::{needs_gpu, on_each_device};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use warps::warps::{lane_out_of_bounds, partial_warp, warp_ops, warp_ops_one_warp};

type Outputs = (
    Vec<i32>,
    Vec<i32>,
    Vec<u32>,
    Vec<u64>,
    Vec<u32>,
    Vec<u32>,
    Vec<i64>,
    Vec<i32>,
    Vec<u32>,
);

struct Inputs {
    x: Vec<i32>,
    f: Vec<f32>,
    d: Vec<f64>,
}

fn inputs(n: usize, seed: u64) -> Inputs {
    let mut r = StdRng::seed_from_u64(seed);
    let x: Vec<i32> = (0..n)
        .map(|i| match i % 7 {
            0 => r.random_range(-40..40),
            1 => 7,
            _ => r.random_range(-2000..2000),
        })
        .collect();
    let mut f: Vec<f32> = (0..n).map(|_| r.random_range(-1e3f32..1e3)).collect();
    let mut d: Vec<f64> = (0..n).map(|_| r.random_range(-1e9f64..1e9)).collect();
    f[3] = f32::NAN;
    d[40] = f64::NAN;
    d[41] = -0.0;
    Inputs { x, f, d }
}

fn run(dev: &Device, warps: u32, n: usize, seed: u64) -> gpu_async::Result<Outputs> {
    let i = inputs(n, seed);
    let (x, f, d) = (dev.upload(&i.x)?, dev.upload(&i.f)?, dev.upload(&i.d)?);
    let (mut shuffled, mut xored, mut up, mut down) = (
        dev.alloc::<i32>(n)?,
        dev.alloc::<i32>(n)?,
        dev.alloc::<f32>(n)?,
        dev.alloc::<f64>(n)?,
    );
    let (mut votes, mut sums, mut extremes) = (
        dev.alloc::<u32>(n)?,
        dev.alloc::<f32>(n)?,
        dev.alloc::<i64>(n)?,
    );
    let (mut scans, mut positions) = (dev.alloc::<i32>(n)?, dev.alloc::<u32>(n)?);
    let args = (
        &x,
        &f,
        &d,
        &mut shuffled,
        &mut xored,
        &mut up,
        &mut down,
        &mut votes,
        &mut sums,
        &mut extremes,
        &mut scans,
        &mut positions,
    );
    if warps == 1 {
        block_on(warp_ops_one_warp::launch(dev, Grid::blocks(1), args))?;
    } else {
        block_on(warp_ops::launch(dev, Grid::blocks(1), args))?;
    }
    Ok((
        shuffled.download()?,
        xored.download()?,
        up.download()?.into_iter().map(f32::to_bits).collect(),
        down.download()?.into_iter().map(f64::to_bits).collect(),
        votes.download()?,
        sums.download()?.into_iter().map(f32::to_bits).collect(),
        extremes.download()?,
        scans.download()?,
        positions.download()?,
    ))
}

/// The warp butterfly of the language's reductions over 32 lane values.
fn butterfly<T: Copy>(mut lanes: [T; 32], op: impl Fn(T, T) -> T) -> T {
    for k in [16, 8, 4, 2, 1] {
        let old = lanes;
        for (l, lane) in lanes.iter_mut().enumerate() {
            let p = l ^ k;
            *lane = if l & k == 0 {
                op(old[l], old[p])
            } else {
                op(old[p], old[l])
            };
        }
    }
    lanes[0]
}

/// The same operations, warp by warp, in plain Rust: the items `32w .. 32w + 32` are the lanes
/// of one warp step, on a role of `warps` warps (which decides `lane.warp()`).
fn reference(warps: u32, n: usize, seed: u64) -> Outputs {
    let i = inputs(n, seed);
    let mut out: Outputs = Default::default();
    for base in (0..n).step_by(32) {
        let x = |l: usize| i.x[base + l];
        let f = |l: usize| i.f[base + l];
        let d = |l: usize| i.d[base + l];
        let warp = ((base % (32 * warps as usize)) / 32) as u32;
        let ballot = (0..32).fold(0u32, |m, l| m | (u32::from(x(l) > 0) << l));
        let all = (0..32).all(|l| x(l) > -1000);
        let any = (0..32).any(|l| x(l) == 7);
        let fsum = butterfly(std::array::from_fn(f), |a, b| a + b);
        let lo = butterfly(std::array::from_fn(|l| x(l) as i64), i64::min);
        let hi = butterfly(std::array::from_fn(d), f64::max);
        let total = butterfly(std::array::from_fn(|l| x(l) as u8), u8::wrapping_add);
        let mut acc: [i32; 32] = std::array::from_fn(|l| x(l) % 100);
        for step in 0..5 {
            let dist = 1usize << step;
            let old = acc;
            for l in dist..32 {
                acc[l] = acc[l].wrapping_add(old[l - dist]);
            }
        }
        let mut rounds = 0u32;
        while (0..32).any(|l| x(l) % 16 > rounds as i32) {
            rounds += 1;
        }
        for (l, &scanned) in acc.iter().enumerate() {
            out.0.push(x((x(l) as u32 % 32) as usize));
            out.1.push(x(l ^ 5));
            out.2.push(f(l.checked_sub(3).unwrap_or(l)).to_bits());
            out.3.push(d(if l + 7 < 32 { l + 7 } else { l }).to_bits());
            out.4
                .push(ballot ^ ((all as u32) << 5) ^ ((any as u32) << 9));
            out.5.push(fsum.to_bits());
            out.6
                .push(lo ^ (hi.to_bits() as i64) ^ ((total as i64) << 40));
            out.7.push(scanned);
            out.8.push(l as u32 | (warp << 8) | (rounds << 16));
        }
    }
    out
}

/// NaNs compare as one value: the GPU's float arithmetic returns the canonical NaN where the
/// host keeps Rust's (a warp sum over a NaN lane, say).
fn canonical(mut o: Outputs) -> Outputs {
    for v in o.3.iter_mut() {
        if f64::from_bits(*v).is_nan() {
            *v = u64::MAX;
        }
    }
    for v in o.5.iter_mut() {
        if f32::from_bits(*v).is_nan() {
            *v = u32::MAX;
        }
    }
    o
}

#[test]
fn warp_operations_on_the_simulator_match_the_model() -> gpu_async::Result<()> {
    for warps in [1, 2] {
        let n = 64 * 9;
        let sim = run(&Device::simulator(), warps, n, 1)?;
        assert_eq!(
            canonical(sim),
            canonical(reference(warps, n, 1)),
            "{warps} warps"
        );
    }
    Ok(())
}

#[needs_gpu]
fn warp_operations_on_the_gpu_match_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    for warps in [1, 2] {
        for (n, seed) in [(64, 2), (64 * 33, 3), (64 * 1000, 4)] {
            let sim = run(&Device::simulator(), warps, n, seed)?;
            let on_gpu = run(&gpu, warps, n, seed)?;
            assert_eq!(canonical(on_gpu), canonical(sim), "n = {n}, {warps} warps");
        }
    }
    Ok(())
}

#[on_each_device]
fn a_lane_loop_over_a_partial_warp_panics(dev: Device) -> gpu_async::Result<()> {
    let x = dev.upload(&[1i32; 40])?;
    let mut out = dev.alloc::<i32>(40)?;
    let result = block_on(partial_warp::launch(&dev, Grid::blocks(2), (&x, &mut out)));
    match result {
        Err(Error::KernelPanic {
            message, location, ..
        }) => {
            assert!(message.contains("multiple of 32"), "{dev}: {message}");
            assert!(location.contains("warps.rs"), "{dev}: {location}");
        }
        other => panic!("{dev}: expected a panic, got {other:?}"),
    }
    // The device stays usable: a full warp runs.
    let x = dev.upload(&[2i32; 64])?;
    let mut out = dev.alloc::<i32>(64)?;
    block_on(partial_warp::launch(&dev, Grid::blocks(1), (&x, &mut out)))?;
    assert!(out.download()?.iter().all(|&v| v == 64), "{dev}");
    Ok(())
}

#[on_each_device]
fn an_index_out_of_bounds_in_a_lane_loop_stops_the_kernel(dev: Device) -> gpu_async::Result<()> {
    let mut xs = vec![0i32; 256];
    xs[77] = 1000;
    let x = dev.upload(&xs)?;
    let table = dev.upload(&[5i32; 16])?;
    let mut out = dev.alloc::<i32>(256)?;
    let result = block_on(lane_out_of_bounds::launch(
        &dev,
        Grid::blocks(3),
        (&x, &table, &mut out),
    ));
    match result {
        Err(Error::KernelPanic { message, .. }) => {
            assert!(message.contains("out of bounds"), "{dev}: {message}")
        }
        other => panic!("{dev}: expected a panic, got {other:?}"),
    }
    xs[77] = 3;
    let x = dev.upload(&xs)?;
    block_on(lane_out_of_bounds::launch(
        &dev,
        Grid::blocks(3),
        (&x, &table, &mut out),
    ))?;
    assert!(out.download()?.iter().all(|&v| v == 5 * 32), "{dev}");
    Ok(())
}

#[on_each_device]
fn warp_operations_around_loops_that_lanes_leave_early(dev: Device) -> gpu_async::Result<()> {
    use warps::nested_loops::digits;
    let xs: Vec<u32> = (0..96u32).map(|i| i * i * 997).collect();
    let digits_of = |mut n: u32| {
        let mut d = 0;
        loop {
            d += 1;
            n /= 10;
            if n == 0 {
                return d;
            }
        }
    };
    let want: Vec<u32> = xs
        .chunks(32)
        .flat_map(|w| {
            let total: u32 = (0..3)
                .map(|r| w.iter().map(|v| digits_of(v + r)).sum::<u32>())
                .sum();
            vec![total; 32]
        })
        .collect();
    let x = dev.upload(&xs)?;
    let mut out = dev.alloc::<u32>(xs.len())?;
    block_on(digits::launch(&dev, Grid::blocks(1), (&x, &mut out)))?;
    assert_eq!(out.download()?, want, "{dev}");
    Ok(())
}
