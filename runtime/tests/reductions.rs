//! Parallel reductions: the simulator against the order the language defines (computed here in
//! plain Rust), and the GPU against the simulator, bit for bit.

#[allow(dead_code, clippy::all)]
#[path = "common/reductions.rs"]
mod reductions;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::bench::random_f32;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::needs_gpu;
use reductions::reductions::{reduce, TILE};

/// The language's reduction order over `threads` threads (see `ParIter::reduce`).
fn in_order<T: Copy>(items: &[T], identity: T, threads: usize, op: impl Fn(T, T) -> T) -> T {
    let mut partial = vec![identity; threads];
    for (i, &v) in items.iter().enumerate() {
        let t = (i / 4) % threads;
        partial[t] = op(partial[t], v);
    }
    let mut totals = Vec::new();
    for lanes in partial.chunks_mut(32) {
        for k in [16, 8, 4, 2, 1] {
            let old = lanes.to_vec();
            for l in 0..32 {
                let p = l ^ k;
                lanes[l] = if l & k == 0 {
                    op(old[l], old[p])
                } else {
                    op(old[p], old[l])
                };
            }
        }
        totals.push(lanes[0]);
    }
    totals[1..].iter().fold(totals[0], |a, &b| op(a, b))
}

type Outputs = (
    Vec<u32>,
    Vec<u32>,
    Vec<u32>,
    Vec<u32>,
    Vec<i64>,
    Vec<i32>,
    Vec<i32>,
    Vec<u32>,
);

fn inputs(n: usize, seed: u64) -> (Vec<f32>, Vec<i32>) {
    let mut xs: Vec<f32> = random_f32(n, seed)
        .iter()
        .map(|v| (v - 0.5) * 1e3)
        .collect();
    if n > 10 {
        xs[7] = f32::NAN;
    }
    let ks: Vec<i32> = random_f32(n, seed + 1)
        .iter()
        .map(|v| (v.to_bits() as i32).wrapping_mul(2_654_435_761u32 as i32))
        .collect();
    (xs, ks)
}

fn bits(v: Vec<f32>) -> Vec<u32> {
    v.into_iter().map(f32::to_bits).collect()
}

fn run(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<Outputs> {
    let (xs, ks) = inputs(n, seed);
    let tiles = n.div_ceil(TILE);
    let (x, k) = (dev.upload(&xs)?, dev.upload(&ks)?);
    let (mut sums, mut mins, mut maxs, mut squares, mut sums3) = (
        dev.alloc::<f32>(tiles)?,
        dev.alloc::<f32>(tiles)?,
        dev.alloc::<f32>(tiles)?,
        dev.alloc::<f32>(tiles)?,
        dev.alloc::<f32>(tiles)?,
    );
    let mut wide = dev.alloc::<i64>(tiles)?;
    let (mut xors, mut big) = (dev.alloc::<i32>(tiles)?, dev.alloc::<i32>(tiles)?);
    block_on(reduce::launch(
        dev,
        grid,
        (
            &x,
            &k,
            &mut sums,
            &mut mins,
            &mut maxs,
            &mut squares,
            &mut wide,
            &mut xors,
            &mut big,
            &mut sums3,
        ),
    ))?;
    Ok((
        bits(sums.download()?),
        bits(mins.download()?),
        bits(maxs.download()?),
        bits(squares.download()?),
        wide.download()?,
        xors.download()?,
        big.download()?,
        bits(sums3.download()?),
    ))
}

fn reference(n: usize, seed: u64) -> Outputs {
    let (xs, ks) = inputs(n, seed);
    let mut out: Outputs = Default::default();
    for (xt, kt) in xs.chunks(TILE).zip(ks.chunks(TILE)) {
        out.0.push(in_order(xt, 0.0f32, 32, |a, b| a + b).to_bits());
        out.1.push(in_order(xt, f32::NAN, 32, f32::min).to_bits());
        out.2.push(in_order(xt, f32::NAN, 32, f32::max).to_bits());
        let sq: Vec<f32> = xt.iter().map(|v| v * v).collect();
        out.3
            .push(in_order(&sq, 0.0f32, 32, |a, b| a + b).to_bits());
        let w: Vec<i64> = kt
            .iter()
            .zip(xt)
            .map(|(a, b)| (*a as i64).wrapping_mul(3) + (*b > 0.0) as i64)
            .collect();
        out.4.push(in_order(&w, 0i64, 96, i64::wrapping_add));
        out.5.push(in_order(kt, 0i32, 96, |a, b| a ^ b));
        out.6.push(in_order(kt, i32::MIN, 96, i32::max));
        out.7.push(in_order(xt, 0.0f32, 96, |a, b| a + b).to_bits());
    }
    out
}

const FIELDS: [&str; 8] = [
    "sums",
    "mins",
    "maxs",
    "squares",
    "wide_sums",
    "xors",
    "big",
    "sums3",
];

/// Every output as bits, for reporting the first difference. Every NaN counts as one value: the
/// GPU's arithmetic returns the canonical NaN (`0x7fffffff`) where the host keeps an input's
/// payload (`docs/language.md`).
fn fields(o: &Outputs) -> [Vec<u64>; 8] {
    let f = |v: &[u32]| {
        v.iter()
            .map(|&x| {
                if f32::from_bits(x).is_nan() {
                    u64::MAX
                } else {
                    u64::from(x)
                }
            })
            .collect::<Vec<_>>()
    };
    [
        f(&o.0),
        f(&o.1),
        f(&o.2),
        f(&o.3),
        o.4.iter().map(|&x| x as u64).collect(),
        o.5.iter().map(|&x| x as u32 as u64).collect(),
        o.6.iter().map(|&x| x as u32 as u64).collect(),
        f(&o.7),
    ]
}

const CASES: [(usize, u32); 4] = [(1, 1), (999, 2), (4 * TILE, 3), (7 * TILE + 333, 5)];

#[test]
fn the_simulator_reduces_in_the_defined_order() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for (i, &(n, blocks)) in CASES.iter().enumerate() {
        let got = run(&sim, Grid::blocks(blocks), n, i as u64)?;
        assert!(fields(&got) == fields(&reference(n, i as u64)), "n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn the_gpu_reduces_as_the_simulator_does() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    for (i, &(n, blocks)) in CASES.iter().chain(&[(1 << 20, 264)]).enumerate() {
        let on_gpu = run(&gpu, Grid::blocks(blocks), n, i as u64)?;
        let on_sim = run(&sim, Grid::blocks(blocks.min(8)), n, i as u64)?;
        let (g, s) = (fields(&on_gpu), fields(&on_sim));
        for (k, (a, b)) in g.iter().zip(&s).enumerate() {
            if let Some(t) = a.iter().zip(b).position(|(x, y)| x != y) {
                panic!(
                    "n = {n}, {blocks} blocks: output {} differs first at tile {t}: gpu {:#x}, simulator {:#x}",
                    FIELDS[k], a[t], b[t]
                );
            }
        }
    }
    Ok(())
}
