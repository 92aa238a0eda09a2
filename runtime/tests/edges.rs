//! Scans and reductions over every length around their groups of four items per thread, their
//! rounds of `4 T` items and their reductions' steps of `16 T`, from aligned and unaligned
//! elements, against the orders the language defines (computed here with `scan_order` and
//! `reduction_order`), bit for bit, on both backends; the elements around each destination range
//! are left as they were.

#[allow(dead_code, clippy::all)]
#[path = "common/edges.rs"]
mod edges;

use edges::edges as k;
use gpu_async::bench::random_f32;
use gpu_async::device::{reduction_order, scan_order};
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

/// The lengths around the edges of a role of `threads` threads' groups, rounds and steps.
fn lengths(threads: usize) -> Vec<usize> {
    let t = threads;
    vec![
        0,
        1,
        3,
        4,
        5,
        4 * t - 1,
        4 * t,
        4 * t + 1,
        8 * t + 3,
        16 * t - 1,
        16 * t,
        16 * t + 1,
        20 * t + 3,
        32 * t + 5,
    ]
}

/// The first elements of the `x` range, the `f` range and the destination ranges: all aligned
/// to 16 bytes, none, then one of the three not.
const STARTS: [(usize, usize, usize); 5] = [(0, 0, 0), (1, 1, 1), (2, 0, 0), (0, 3, 0), (0, 0, 2)];

/// What fills the destinations before a launch, to see that the elements around their ranges
/// are not written.
const UNTOUCHED: u32 = 0xDEAD_BEEF;

/// The outputs of one launch: `y`, `z` (as bits), `sums` and `fsums` (as bits).
type Outputs = (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>);

/// The launcher of a kernel of `edges`.
type Launcher = for<'a> fn(
    &'a Device,
    Grid,
    (
        &'a gpu_async::DeviceBuffer<u32>,
        &'a gpu_async::DeviceBuffer<f32>,
        &'a mut gpu_async::DeviceBuffer<u32>,
        &'a mut gpu_async::DeviceBuffer<f32>,
        &'a mut gpu_async::DeviceBuffer<u32>,
        &'a mut gpu_async::DeviceBuffer<f32>,
        usize,
        usize,
        usize,
        usize,
    ),
) -> gpu_async::Launch<'a>;

fn inputs(n: usize) -> (Vec<u32>, Vec<f32>) {
    let xs = (0..n as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ (i >> 3))
        .collect();
    let fs = random_f32(n, 5).iter().map(|v| (v - 0.5) * 1e3).collect();
    (xs, fs)
}

/// The outputs the language defines for `threads` threads over `xs[a..a + n]`, `fs[b..b + n]`
/// into destinations of `size` elements at `c`.
fn reference(
    (xs, fs): (&[u32], &[f32]),
    (a, b, c, n): (usize, usize, usize, usize),
    size: usize,
    threads: usize,
) -> Outputs {
    let (xs, fs) = (&xs[a..a + n], &fs[b..b + n]);
    let mut y = vec![UNTOUCHED; size];
    let mut acc = 7u32;
    for (o, v) in y[c..c + n].iter_mut().zip(xs) {
        *o = acc;
        acc = acc.wrapping_add(*v);
    }
    let mut z = vec![UNTOUCHED; size];
    let doubled = fs.iter().map(|v| v * 2.0);
    let (scanned, ftotal) = scan_order(doubled, 0.25, 0.0, threads, true, |p, q| p + q);
    for (o, v) in z[c..c + n].iter_mut().zip(&scanned) {
        *o = v.to_bits();
    }
    let s = xs.iter().fold(0u32, |p, v| p.wrapping_add(*v));
    let w = xs.iter().enumerate().fold(0u32, |p, (i, v)| {
        p.wrapping_add(v.wrapping_mul(2 * i as u32 + 1))
    });
    let add = |p: f32, q: f32| p + q;
    let fsum = reduction_order(fs.iter().copied(), 0.0, threads, add);
    let mixed = xs.iter().zip(fs).map(|(u, v)| (u % 1000) as f32 * v);
    let mixed = reduction_order(mixed, 0.0, threads, add);
    (
        y,
        z,
        vec![s, w, acc],
        vec![fsum.to_bits(), mixed.to_bits(), ftotal.to_bits()],
    )
}

/// Every length and start for the kernel `launch` of `threads` threads, on `dev`.
fn check(dev: &Device, launch: Launcher, threads: usize) -> gpu_async::Result<()> {
    let ns = lengths(threads);
    let size = ns.iter().max().copied().unwrap_or(0) + 4;
    let (xs, fs) = inputs(size);
    let (x, f) = (dev.upload(&xs)?, dev.upload(&fs)?);
    for &n in &ns {
        for (a, b, c) in STARTS {
            let mut y = dev.upload(&vec![UNTOUCHED; size])?;
            let mut z = dev.upload(&vec![f32::from_bits(UNTOUCHED); size])?;
            let (mut sums, mut fsums) = (dev.alloc::<u32>(3)?, dev.alloc::<f32>(3)?);
            block_on(launch(
                dev,
                Grid::blocks(1),
                (&x, &f, &mut y, &mut z, &mut sums, &mut fsums, a, b, c, n),
            ))?;
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            let got = (
                y.download()?,
                bits(z.download()?),
                sums.download()?,
                bits(fsums.download()?),
            );
            let want = reference((&xs, &fs), (a, b, c, n), size, threads);
            let what = format!("{threads} threads, n = {n}, starts {a}, {b}, {c}, on {dev}");
            assert_eq!(got.0, want.0, "y: {what}");
            assert_eq!(got.1, want.1, "z: {what}");
            assert_eq!(got.2, want.2, "sums: {what}");
            assert_eq!(got.3, want.3, "float sums: {what}");
        }
    }
    Ok(())
}

#[on_each_device]
fn eight_warps_scan_and_reduce_every_edge_length_from_every_start(
    dev: Device,
) -> gpu_async::Result<()> {
    check(&dev, k::eight_warps::launch, 256)
}

#[on_each_device]
fn one_warp_scans_and_reduces_every_edge_length_from_every_start(
    dev: Device,
) -> gpu_async::Result<()> {
    check(&dev, k::one_warp::launch, 32)
}
