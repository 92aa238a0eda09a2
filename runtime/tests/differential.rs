//! The differential suite of the scalar language: every kernel of `common/scalars.rs` runs on
//! the simulator over random inputs and edge values (0, -0.0, NaN, infinities, MIN, MAX,
//! subnormals), where the operations the shadow code rewrites (wrapping arithmetic, negation,
//! `abs`) are also checked against plain Rust; the GPU tests run them there too and compare with
//! the simulator: bit for bit for integers, exactly rounded float operations and
//! float `%` (of `f32`, `f64`, `f16` and `bf16`), within the documented ulp for the `f32` and
//! `f64` functions computed through series. Every kernel is assembled with ptxas. (The IR of
//! the float functions and of `%` is also run on the host by the compiler's `tests/math_ir.rs`,
//! which needs no GPU.)

#[allow(dead_code, clippy::all)]
#[path = "common/scalars.rs"]
mod scalars;

#[path = "common/devices.rs"]
mod devices;

use gpu_async::{block_on, Device, DeviceBuffer, Grid, KernelScalar};
use gpu_async_testing::{needs_gpu, needs_ptxas};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Elements per input: the edge-value pairs, then random values.
const N: usize = 5000;

/// A scalar's bits as a `u64`, for comparisons that treat every NaN alike.
trait Bits: KernelScalar + std::fmt::Debug {
    fn bits(self) -> u64;
    fn edges() -> Vec<Self>;
    fn random(r: &mut StdRng) -> Self;
}

macro_rules! int_bits {
    ($($t:ident),*) => {$(
        impl Bits for $t {
            fn bits(self) -> u64 {
                self as u64
            }
            fn edges() -> Vec<$t> {
                vec![
                    0, 1, 2, 3, 7, 8, 31, 32, 63, 64, $t::MAX, $t::MIN, $t::MAX - 1,
                    $t::MIN.wrapping_add(1), (0 as $t).wrapping_sub(1), (0 as $t).wrapping_sub(7),
                ]
            }
            fn random(r: &mut StdRng) -> $t {
                match r.random_range(0..3) {
                    0 => r.random::<u64>() as $t,
                    1 => (r.random::<u64>() % 200) as $t,
                    _ => ((r.random::<u64>() % 200) as $t).wrapping_sub(100 as $t),
                }
            }
        }
    )*};
}
int_bits!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl Bits for f32 {
    fn bits(self) -> u64 {
        if self.is_nan() {
            u64::MAX
        } else {
            u64::from(self.to_bits())
        }
    }
    fn edges() -> Vec<f32> {
        vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -2.5,
            3.5,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-40,
            -1e-45,
            16_777_217.0,
        ]
    }
    fn random(r: &mut StdRng) -> f32 {
        match r.random_range(0..5) {
            0 => f32::from_bits(r.random()),
            1 => r.random_range(-10.0..10.0),
            2 => r.random_range(-100.0..100.0),
            3 => r.random_range(-1e4..1e4),
            _ => r.random_range(0.0..2.0),
        }
    }
}

impl Bits for f64 {
    fn bits(self) -> u64 {
        if self.is_nan() {
            u64::MAX
        } else {
            self.to_bits()
        }
    }
    fn edges() -> Vec<f64> {
        vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -2.5,
            3.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            1e-310,
            -5e-324,
            9_007_199_254_740_993.0,
        ]
    }
    fn random(r: &mut StdRng) -> f64 {
        match r.random_range(0..4) {
            0 => f64::from_bits(r.random()),
            1 => r.random_range(-10.0..10.0),
            2 => r.random_range(-1e4..1e4),
            _ => r.random_range(0.0..2.0),
        }
    }
}

/// Two inputs: every pair of edge values, then random values.
fn inputs<T: Bits>(seed: u64) -> (Vec<T>, Vec<T>) {
    let mut r = StdRng::seed_from_u64(seed);
    let edges = T::edges();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &edges {
        for &y in &edges {
            a.push(x);
            b.push(y);
        }
    }
    while a.len() < N {
        a.push(T::random(&mut r));
        b.push(T::random(&mut r));
    }
    (a, b)
}

fn bits_of<T: Bits>(v: Vec<T>) -> Vec<u64> {
    v.into_iter().map(Bits::bits).collect()
}

fn grid(dev: &Device) -> Grid {
    Grid::blocks(if dev.kind() == gpu_async::BackendKind::Cuda {
        8
    } else {
        2
    })
}

fn out<T: KernelScalar>(dev: &Device) -> DeviceBuffer<T> {
    dev.alloc::<T>(N).expect("allocation")
}

/// One family's outputs on one device: named output vectors, as bits.
type Outputs = Vec<(&'static str, Vec<u64>)>;

macro_rules! int_case {
    ($name:ident, $m:ident, $neg:ident, $casts:ident, $t:ident, $avoid:expr) => {
        mod $name {
            use super::*;

            pub fn run(dev: &Device, seed: u64) -> gpu_async::Result<Outputs> {
                let (a, b) = inputs::<$t>(seed);
                let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
                let (mut arith, mut bits, mut shifts, mut div, mut sat) =
                    (out::<$t>(dev), out(dev), out(dev), out(dev), out(dev));
                let (mut counts, mut cmp) = (out::<u32>(dev), out::<u32>(dev));
                let mut checked = out::<$t>(dev);
                block_on(scalars::$m::ops::launch(
                    dev,
                    grid(dev),
                    (
                        $avoid,
                        &da,
                        &db,
                        &mut arith,
                        &mut bits,
                        &mut shifts,
                        &mut div,
                        &mut sat,
                        &mut counts,
                        &mut cmp,
                        &mut checked,
                    ),
                ))?;
                let mut outs: Outputs = vec![
                    ("arith", bits_of(arith.download()?)),
                    ("bits", bits_of(bits.download()?)),
                    ("shifts", bits_of(shifts.download()?)),
                    ("div", bits_of(div.download()?)),
                    ("saturating", bits_of(sat.download()?)),
                    ("counts", bits_of(counts.download()?)),
                    ("cmp", bits_of(cmp.download()?)),
                    ("checked", bits_of(checked.download()?)),
                ];
                outs.extend(casts(dev, &a)?);
                outs.extend(neg(dev, &a)?);
                Ok(outs)
            }

            fn casts(dev: &Device, a: &[$t]) -> gpu_async::Result<Outputs> {
                cast_outputs!(dev, a, $casts)
            }

            #[allow(unused_variables)]
            fn neg(dev: &Device, a: &[$t]) -> gpu_async::Result<Outputs> {
                neg_outputs!(dev, a, $neg)
            }

            /// What plain Rust computes for the outputs the shadow code rewrites.
            pub fn reference(seed: u64) -> Outputs {
                let (a, b) = inputs::<$t>(seed);
                let arith = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let mut v = x.wrapping_add(y);
                        v = v.wrapping_mul(x).wrapping_sub(y);
                        v = v.wrapping_add(x);
                        v = v.wrapping_mul(y);
                        v = v.wrapping_sub(3);
                        v.wrapping_mul(y).wrapping_sub(x).wrapping_add(1)
                    })
                    .collect();
                let shifts = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let k = y as u32;
                        let mut v = x.wrapping_shl(k) ^ x.wrapping_shr(k.wrapping_add(3));
                        v = v.wrapping_shl(1);
                        v.wrapping_shr(k)
                    })
                    .collect();
                let checked = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let s = x.checked_add(y);
                        let m = x.checked_mul(y);
                        let mut v = s.unwrap_or(1) ^ x.checked_sub(y).unwrap_or(2) ^ m.unwrap_or(3);
                        v ^= x.checked_div(y).unwrap_or(4) ^ x.checked_rem(y).unwrap_or(5);
                        if s.is_none() {
                            v ^= 64;
                        }
                        if m.is_some() {
                            v ^= 32;
                        }
                        v
                    })
                    .collect();
                vec![
                    ("arith", bits_of(arith)),
                    ("shifts", bits_of(shifts)),
                    ("checked", bits_of(checked)),
                ]
            }
        }
    };
}

macro_rules! cast_outputs {
    ($dev:expr, $a:expr, $casts:ident) => {{
        let dev = $dev;
        let x = dev.upload($a)?;
        let (mut i8s, mut i16s, mut i32s, mut i64s, mut isizes) = (
            out::<i8>(dev),
            out::<i16>(dev),
            out::<i32>(dev),
            out::<i64>(dev),
            out::<isize>(dev),
        );
        let (mut u8s, mut u16s, mut u32s, mut u64s, mut usizes) = (
            out::<u8>(dev),
            out::<u16>(dev),
            out::<u32>(dev),
            out::<u64>(dev),
            out::<usize>(dev),
        );
        let (mut f32s, mut f64s) = (out::<f32>(dev), out::<f64>(dev));
        block_on(scalars::$casts::casts::launch(
            dev,
            grid(dev),
            (
                &x,
                &mut i8s,
                &mut i16s,
                &mut i32s,
                &mut i64s,
                &mut isizes,
                &mut u8s,
                &mut u16s,
                &mut u32s,
                &mut u64s,
                &mut usizes,
                &mut f32s,
                &mut f64s,
            ),
        ))?;
        Ok(vec![
            ("as i8", bits_of(i8s.download()?)),
            ("as i16", bits_of(i16s.download()?)),
            ("as i32", bits_of(i32s.download()?)),
            ("as i64", bits_of(i64s.download()?)),
            ("as isize", bits_of(isizes.download()?)),
            ("as u8", bits_of(u8s.download()?)),
            ("as u16", bits_of(u16s.download()?)),
            ("as u32", bits_of(u32s.download()?)),
            ("as u64", bits_of(u64s.download()?)),
            ("as usize", bits_of(usizes.download()?)),
            ("as f32", bits_of(f32s.download()?)),
            ("as f64", bits_of(f64s.download()?)),
        ])
    }};
}

macro_rules! neg_outputs {
    ($dev:expr, $a:expr, none) => {
        Ok(Vec::new())
    };
    ($dev:expr, $a:expr, $neg:ident) => {{
        let dev = $dev;
        let x = dev.upload($a)?;
        let mut o = out(dev);
        block_on(scalars::$neg::neg::launch(dev, grid(dev), (&x, &mut o)))?;
        Ok(vec![("neg ^ abs", bits_of(o.download()?))])
    }};
}

int_case!(case_i8, ops_i8, neg_i8, casts_i8, i8, -1);
int_case!(case_i16, ops_i16, neg_i16, casts_i16, i16, -1);
int_case!(case_i32, ops_i32, neg_i32, casts_i32, i32, -1);
int_case!(case_i64, ops_i64, neg_i64, casts_i64, i64, -1);
int_case!(case_isize, ops_isize, neg_isize, casts_isize, isize, -1);
int_case!(case_u8, ops_u8, none, casts_u8, u8, 0);
int_case!(case_u16, ops_u16, none, casts_u16, u16, 0);
int_case!(case_u32, ops_u32, none, casts_u32, u32, 0);
int_case!(case_u64, ops_u64, none, casts_u64, u64, 0);
int_case!(case_usize, ops_usize, none, casts_usize, usize, 0);

macro_rules! float_case {
    ($name:ident, $m:ident, $casts:ident, $rem:ident, $t:ident, $bits:ident) => {
        mod $name {
            use super::*;

            pub fn run(dev: &Device, seed: u64) -> gpu_async::Result<Outputs> {
                let (a, b) = inputs::<$t>(seed);
                let mut r = StdRng::seed_from_u64(seed ^ 77);
                let n: Vec<i32> = (0..N).map(|_| r.random_range(-40..40)).collect();
                let (da, db, dn) = (dev.upload(&a)?, dev.upload(&b)?, dev.upload(&n)?);
                let (mut arith, mut rounding, mut methods, mut powi) =
                    (out::<$t>(dev), out(dev), out(dev), out(dev));
                let (mut bits, mut cmp) = (out::<$bits>(dev), out::<u32>(dev));
                block_on(scalars::$m::ops::launch(
                    dev,
                    grid(dev),
                    (
                        &da,
                        &db,
                        &dn,
                        &mut arith,
                        &mut rounding,
                        &mut methods,
                        &mut powi,
                        &mut bits,
                        &mut cmp,
                    ),
                ))?;
                let mut outs: Outputs = vec![
                    ("arith", bits_of(arith.download()?)),
                    ("rounding", bits_of(rounding.download()?)),
                    ("methods", bits_of(methods.download()?)),
                    ("powi", bits_of(powi.download()?)),
                    ("to_bits", bits_of(bits.download()?)),
                    ("cmp", bits_of(cmp.download()?)),
                ];
                outs.extend(cast_outputs(dev, &a)?);
                outs.extend(rem_outputs!(dev, &a, &db, $rem));
                Ok(outs)
            }

            fn cast_outputs(dev: &Device, a: &[$t]) -> gpu_async::Result<Outputs> {
                cast_outputs!(dev, a, $casts)
            }

            /// What plain Rust computes for `round`, `powi` and `%`, which the lowering builds
            /// from several instructions.
            pub fn reference(seed: u64) -> Outputs {
                let (a, b) = inputs::<$t>(seed);
                let rem: Vec<$t> = a.iter().zip(&b).map(|(x, y)| x % y).collect();
                let mut r = StdRng::seed_from_u64(seed ^ 77);
                let n: Vec<i32> = (0..N).map(|_| r.random_range(-40..40)).collect();
                let rounding = a
                    .iter()
                    .map(|x| x.floor() * 8.0 + x.ceil() * 4.0 - x.trunc() * 2.0 + x.round())
                    .collect();
                let powi = a.iter().zip(&n).map(|(x, k)| x.powi(*k)).collect();
                vec![
                    ("rounding", bits_of(rounding)),
                    ("powi", bits_of(powi)),
                    ("%", bits_of(rem.clone())),
                    ("%=", bits_of(rem)),
                ]
            }
        }
    };
}

/// `x % y` and `y %= ..` of one float type: the `rem_*` kernel of `common/scalars.rs`, whose
/// `%=` output starts as a copy of `x`.
macro_rules! rem_outputs {
    ($dev:expr, $a:expr, $db:expr, $rem:ident) => {{
        let dev = $dev;
        let da = dev.upload($a)?;
        let mut rem = out(dev);
        let mut assign = dev.upload($a)?;
        block_on(scalars::$rem::rem::launch(
            dev,
            grid(dev),
            (&da, $db, &mut rem, &mut assign),
        ))?;
        vec![
            ("%", bits_of(rem.download()?)),
            ("%=", bits_of(assign.download()?)),
        ]
    }};
}

float_case!(case_f32, ops_f32, casts_f32, rem_f32, f32, u32);
float_case!(case_f64, ops_f64, casts_f64, rem_f64, f64, u64);

/// `%` of a half type: computed in `f32` and rounded back, as the `half` crate's `Rem`.
macro_rules! half_case {
    ($name:ident, $rem:ident, $t:ident) => {
        mod $name {
            use super::*;
            use gpu_async::half::$t;

            impl Bits for $t {
                fn bits(self) -> u64 {
                    if self.is_nan() {
                        u64::MAX
                    } else {
                        u64::from(self.to_bits())
                    }
                }
                fn edges() -> Vec<$t> {
                    f32::edges().into_iter().map($t::from_f32).collect()
                }
                fn random(r: &mut StdRng) -> $t {
                    match r.random_range(0..3) {
                        0 => $t::from_bits(r.random()),
                        1 => $t::from_f32(r.random_range(-100.0..100.0)),
                        _ => $t::from_f32(r.random_range(0.0..2.0)),
                    }
                }
            }

            pub fn run(dev: &Device, seed: u64) -> gpu_async::Result<Outputs> {
                let (a, b) = inputs::<$t>(seed);
                let db = dev.upload(&b)?;
                Ok(rem_outputs!(dev, &a, &db, $rem))
            }

            pub fn reference(seed: u64) -> Outputs {
                let (a, b) = inputs::<$t>(seed);
                let rem: Vec<$t> = a.iter().zip(&b).map(|(x, y)| *x % *y).collect();
                vec![("%", bits_of(rem.clone())), ("%=", bits_of(rem))]
            }
        }
    };
}

half_case!(case_f16, rem_f16, f16);
half_case!(case_bf16, rem_bf16, bf16);

type Case = (
    &'static str,
    fn(&Device, u64) -> gpu_async::Result<Outputs>,
    fn(u64) -> Outputs,
);

const CASES: [Case; 14] = [
    ("i8", case_i8::run, case_i8::reference),
    ("i16", case_i16::run, case_i16::reference),
    ("i32", case_i32::run, case_i32::reference),
    ("i64", case_i64::run, case_i64::reference),
    ("isize", case_isize::run, case_isize::reference),
    ("u8", case_u8::run, case_u8::reference),
    ("u16", case_u16::run, case_u16::reference),
    ("u32", case_u32::run, case_u32::reference),
    ("u64", case_u64::run, case_u64::reference),
    ("usize", case_usize::run, case_usize::reference),
    ("f32", case_f32::run, case_f32::reference),
    ("f64", case_f64::run, case_f64::reference),
    ("f16", case_f16::run, case_f16::reference),
    ("bf16", case_bf16::run, case_bf16::reference),
];

fn first_difference(a: &[u64], b: &[u64]) -> Option<(usize, u64, u64)> {
    a.iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| (i, *x, *y))
}

#[test]
fn the_simulator_computes_what_rust_computes() -> gpu_async::Result<()> {
    let sim = Device::simulator();
    for (ty, run, reference) in CASES {
        let got = run(&sim, 1)?;
        for (name, want) in reference(1) {
            let (_, have) = got
                .iter()
                .find(|(n, _)| *n == name)
                .expect("output present");
            if let Some((i, h, w)) = first_difference(have, &want) {
                panic!("{ty} {name}: element {i} is {h:#x} on the simulator, {w:#x} in Rust");
            }
        }
    }
    Ok(())
}

#[needs_gpu]
fn the_gpu_computes_what_the_simulator_computes() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    let mut failures = Vec::new();
    for (ty, run, _) in CASES {
        for seed in [1, 2] {
            let (on_gpu, on_sim) = (run(&gpu, seed)?, run(&sim, seed)?);
            for ((name, g), (_, s)) in on_gpu.iter().zip(&on_sim) {
                let bad = g.iter().zip(s).filter(|(x, y)| x != y).count();
                println!("{ty} {name}: {bad} of {N} differ");
                if let Some((i, x, y)) = first_difference(g, s) {
                    failures.push(format!(
                        "{ty} {name} (seed {seed}): {bad} differ; first at {i}: gpu {x:#x}, simulator {y:#x}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// The distance in units in the last place between two `f32`s (NaNs equal each other).
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f32| {
        let b = x.to_bits() as i64;
        if b & 0x8000_0000 != 0 {
            -(b & 0x7FFF_FFFF)
        } else {
            b
        }
    };
    key(a).abs_diff(key(b))
}

/// Inputs of the `f32` functions: edge values, then values spread over the ranges that matter
/// (exp's overflow at 88.7, the logarithm's whole range, a few periods of sin and cos).
fn transcendental_inputs(seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut r = StdRng::seed_from_u64(seed);
    let (mut a, mut b) = inputs::<f32>(seed);
    for (x, y) in a.iter_mut().zip(b.iter_mut()).skip(256) {
        *x = match r.random_range(0..4) {
            0 => r.random_range(-1.0..1.0),
            1 => r.random_range(-110.0..110.0),
            2 => r.random_range(0.0..1e6),
            _ => f32::from_bits(r.random::<u32>() & 0x7FFF_FFFF),
        };
        *y = match r.random_range(0..3) {
            0 => r.random_range(-4.0..4.0),
            1 => r.random_range(-30.0..30.0) as i32 as f32,
            _ => r.random_range(-200.0..200.0),
        };
    }
    (a, b)
}

/// Documented accuracy of the `f32` functions, in ulps (sin and cos for `|x| < 2^40`): against
/// the correctly rounded result (the host's `f64` function rounded to `f32`), and against Rust's
/// own `f32` function on the host (glibc's `tanhf` is itself up to 2 ulps from correctly rounded).
const MAX_ULPS_ROUNDED: u64 = 1;
const MAX_ULPS_HOST: u64 = 2;

type HostFn = fn(f32, f32) -> f32;
type HostFn64 = fn(f64, f64) -> f64;

#[needs_gpu]
fn the_f32_functions_are_within_an_ulp_of_the_host() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let (a, b) = transcendental_inputs(9);
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut outs: Vec<DeviceBuffer<f32>> = (0..8).map(|_| out(&gpu)).collect();
    let [exp, exp2, ln, log2, sin, cos, tanh, powf] = &mut outs[..] else {
        unreachable!()
    };
    block_on(scalars::transcendental::funcs::launch(
        &gpu,
        Grid::blocks(8),
        (&da, &db, exp, exp2, ln, log2, sin, cos, tanh, powf),
    ))?;
    let host: [(&str, HostFn, HostFn64); 8] = [
        ("exp", |x, _| x.exp(), |x, _| x.exp()),
        ("exp2", |x, _| x.exp2(), |x, _| x.exp2()),
        ("ln", |x, _| x.ln(), |x, _| x.ln()),
        ("log2", |x, _| x.log2(), |x, _| x.log2()),
        ("sin", |x, _| x.sin(), |x, _| x.sin()),
        ("cos", |x, _| x.cos(), |x, _| x.cos()),
        ("tanh", |x, _| x.tanh(), |x, _| x.tanh()),
        ("powf", |x, y| x.powf(y), |x, y| x.powf(y)),
    ];
    let mut failures = Vec::new();
    for ((name, f, f64_fn), buf) in host.iter().zip(&outs) {
        let got = buf.download()?;
        let (mut worst_host, mut worst_rounded, mut differ) = ((0u64, 0usize), (0u64, 0usize), 0);
        for (i, g) in got.iter().enumerate() {
            if matches!(*name, "sin" | "cos") && a[i].abs() >= (1u64 << 40) as f32 {
                continue;
            }
            let d = ulps(*g, f(a[i], b[i]));
            let rounded = f64_fn(f64::from(a[i]), f64::from(b[i])) as f32;
            let r = ulps(*g, rounded);
            if d > 0 {
                differ += 1;
            }
            if d > worst_host.0 {
                worst_host = (d, i);
            }
            if r > worst_rounded.0 {
                worst_rounded = (r, i);
            }
        }
        let (i, j) = (worst_host.1, worst_rounded.1);
        println!(
            "{name}: {} ulp max from Rust's f32 {name} (x = {:e}: gpu {:e}, host {:e}), {differ} of {N} not bit-identical; {} ulp max from the correctly rounded result (x = {:e})",
            worst_host.0, a[i], got[i], f(a[i], b[i]), worst_rounded.0, a[j]
        );
        if worst_rounded.0 > MAX_ULPS_ROUNDED || worst_host.0 > MAX_ULPS_HOST {
            failures.push(format!(
                "{name}: {} ulp from the host at x = {:e}, y = {:e}; {} ulp from the rounded f64 result at x = {:e}",
                worst_host.0, a[i], b[i], worst_rounded.0, a[j]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// `exp2_approx`: the simulator's value (the correctly rounded `2^x`, a subnormal result
/// flushed to 0) and the GPU's `ex2.approx.ftz.f32` within 2 ulp of each other, both 0 where the
/// exact result is below the normal range, and equal on the edge values (-inf, inf, NaN, 0).
#[needs_gpu]
fn exp2_approx_is_within_2_ulp_of_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let mut r = StdRng::seed_from_u64(17);
    let mut a: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -126.0,
        -127.0,
        -149.0,
        -200.0,
        127.9,
        128.0,
        1e-40,
    ];
    while a.len() < N {
        a.push(match r.random_range(0..3) {
            0 => r.random_range(-1.0..1.0),
            1 => r.random_range(-30.0..0.0),
            _ => r.random_range(-130.0..130.0),
        });
    }
    let da = gpu.upload(&a)?;
    let mut dout = out(&gpu);
    block_on(scalars::approx::exp2::launch(
        &gpu,
        Grid::blocks(8),
        (&da, &mut dout),
    ))?;
    let got = dout.download()?;
    let (mut worst, mut at) = (0u64, 0usize);
    for (i, (&x, &g)) in a.iter().zip(&got).enumerate() {
        let want = gpu_async::device::F32Ext::exp2_approx(x);
        let d = ulps(g, want);
        if d > worst {
            (worst, at) = (d, i);
        }
    }
    println!(
        "exp2_approx: {worst} ulp max from the simulator (x = {:e}: gpu {:e}, simulator {:e})",
        a[at],
        got[at],
        gpu_async::device::F32Ext::exp2_approx(a[at])
    );
    assert!(worst <= 2, "exp2_approx: {worst} ulp at x = {:e}", a[at]);
    Ok(())
}

/// The distance in units in the last place between two `f64`s (NaNs equal each other).
fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| {
        let b = x.to_bits() as i128;
        if b & (1 << 63) != 0 {
            -(b & 0x7FFF_FFFF_FFFF_FFFF)
        } else {
            b
        }
    };
    key(a).abs_diff(key(b)) as u64
}

/// Inputs of the `f64` functions: edge values, then values over the ranges that matter (exp's
/// overflow at 709.8 and underflow to subnormals, exp2's at 1024 and -1074, the logarithm's
/// whole range, sin and cos below and above 2^20 pi/2, where the reduction changes method).
fn transcendental64_inputs(seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = StdRng::seed_from_u64(seed);
    let (mut a, mut b) = inputs::<f64>(seed);
    for (x, y) in a.iter_mut().zip(b.iter_mut()).skip(256) {
        *x = match r.random_range(0..6) {
            0 => r.random_range(-1.0..1.0),
            1 => r.random_range(-750.0..750.0),
            2 => r.random_range(0.0..2e6),
            3 => r.random_range(-1e20..1e20),
            4 => r.random_range(-1080.0..1030.0),
            _ => f64::from_bits(r.random::<u64>() & 0x7FFF_FFFF_FFFF_FFFF),
        };
        *y = match r.random_range(0..3) {
            0 => r.random_range(-4.0..4.0),
            1 => r.random_range(-30.0..30.0) as i32 as f64,
            _ => r.random_range(-200.0..200.0),
        };
    }
    (a, b)
}

/// Documented accuracy of the `f64` functions against the host's (the simulator's), in ulps.
/// The IR is within 0.75 ulp of the correctly rounded result (`docs/language.md`, measured by
/// the compiler's `tests/math_ir.rs`), and glibc's functions within about half an ulp, except
/// `tanh`, which is within 2.
const MAX_ULPS_F64: [(&str, u64); 8] = [
    ("exp", 1),
    ("exp2", 1),
    ("ln", 1),
    ("log2", 1),
    ("sin", 1),
    ("cos", 1),
    ("tanh", 2),
    ("powf", 1),
];

fn transcendental64(dev: &Device, a: &[f64], b: &[f64]) -> gpu_async::Result<Vec<Vec<f64>>> {
    let (da, db) = (dev.upload(a)?, dev.upload(b)?);
    let mut outs: Vec<DeviceBuffer<f64>> = (0..8).map(|_| out(dev)).collect();
    let [exp, exp2, ln, log2, sin, cos, tanh, powf] = &mut outs[..] else {
        unreachable!()
    };
    block_on(scalars::transcendental64::funcs::launch(
        dev,
        grid(dev),
        (&da, &db, exp, exp2, ln, log2, sin, cos, tanh, powf),
    ))?;
    outs.iter().map(|o| o.download()).collect()
}

#[test]
fn the_simulator_runs_the_hosts_f64_functions() -> gpu_async::Result<()> {
    let (a, b) = transcendental64_inputs(10);
    let got = transcendental64(&Device::simulator(), &a, &b)?;
    for ((name, f), values) in HOST64.iter().zip(&got) {
        for (i, v) in values.iter().enumerate() {
            let want = f(a[i], b[i]);
            assert!(
                ulps64(*v, want) == 0,
                "{name}({:e}, {:e}): simulator {v:e}, host {want:e}",
                a[i],
                b[i]
            );
        }
    }
    Ok(())
}

/// The host's functions, in the order of `transcendental64`'s outputs.
const HOST64: [(&str, HostFn64); 8] = [
    ("exp", |x, _| x.exp()),
    ("exp2", |x, _| x.exp2()),
    ("ln", |x, _| x.ln()),
    ("log2", |x, _| x.log2()),
    ("sin", |x, _| x.sin()),
    ("cos", |x, _| x.cos()),
    ("tanh", |x, _| x.tanh()),
    ("powf", |x, y| x.powf(y)),
];

#[needs_gpu]
fn the_f64_functions_are_within_their_bound_of_the_simulator() -> gpu_async::Result<()> {
    let gpu = devices::gpu();
    let sim = Device::simulator();
    let mut failures = Vec::new();
    for seed in [10, 11] {
        let (a, b) = transcendental64_inputs(seed);
        let (on_gpu, on_sim) = (
            transcendental64(&gpu, &a, &b)?,
            transcendental64(&sim, &a, &b)?,
        );
        for (((name, bound), g), s) in MAX_ULPS_F64.iter().zip(&on_gpu).zip(&on_sim) {
            let (mut worst, mut at, mut differ) = (0u64, 0usize, 0usize);
            for (i, (x, y)) in g.iter().zip(s).enumerate() {
                let d = ulps64(*x, *y);
                if d > 0 {
                    differ += 1;
                }
                if d > worst {
                    worst = d;
                    at = i;
                }
            }
            println!(
                "{name} (seed {seed}): {worst} ulp max from the simulator (x = {:e}, y = {:e}: gpu {:e}, simulator {:e}), {differ} of {N} not bit-identical",
                a[at], b[at], g[at], s[at]
            );
            if worst > *bound {
                failures.push(format!(
                    "{name} (seed {seed}): {worst} ulp at x = {:e} ({:#x}), y = {:e}: gpu {:e}, simulator {:e}",
                    a[at],
                    a[at].to_bits(),
                    b[at],
                    g[at],
                    s[at]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Every kernel of the suite, for ptxas.
fn kernels() -> Vec<(&'static str, &'static str)> {
    vec![
        ("ops_i8", scalars::ops_i8::ops::PTX),
        ("ops_i16", scalars::ops_i16::ops::PTX),
        ("ops_i32", scalars::ops_i32::ops::PTX),
        ("ops_i64", scalars::ops_i64::ops::PTX),
        ("ops_isize", scalars::ops_isize::ops::PTX),
        ("ops_u8", scalars::ops_u8::ops::PTX),
        ("ops_u16", scalars::ops_u16::ops::PTX),
        ("ops_u32", scalars::ops_u32::ops::PTX),
        ("ops_u64", scalars::ops_u64::ops::PTX),
        ("ops_usize", scalars::ops_usize::ops::PTX),
        ("neg_i8", scalars::neg_i8::neg::PTX),
        ("neg_i16", scalars::neg_i16::neg::PTX),
        ("neg_i32", scalars::neg_i32::neg::PTX),
        ("neg_i64", scalars::neg_i64::neg::PTX),
        ("neg_isize", scalars::neg_isize::neg::PTX),
        ("casts_i8", scalars::casts_i8::casts::PTX),
        ("casts_i16", scalars::casts_i16::casts::PTX),
        ("casts_i32", scalars::casts_i32::casts::PTX),
        ("casts_i64", scalars::casts_i64::casts::PTX),
        ("casts_isize", scalars::casts_isize::casts::PTX),
        ("casts_u8", scalars::casts_u8::casts::PTX),
        ("casts_u16", scalars::casts_u16::casts::PTX),
        ("casts_u32", scalars::casts_u32::casts::PTX),
        ("casts_u64", scalars::casts_u64::casts::PTX),
        ("casts_usize", scalars::casts_usize::casts::PTX),
        ("casts_f32", scalars::casts_f32::casts::PTX),
        ("casts_f64", scalars::casts_f64::casts::PTX),
        ("ops_f32", scalars::ops_f32::ops::PTX),
        ("ops_f64", scalars::ops_f64::ops::PTX),
        ("transcendental", scalars::transcendental::funcs::PTX),
        ("rem_f32", scalars::rem_f32::rem::PTX),
        ("rem_f64", scalars::rem_f64::rem::PTX),
        ("rem_f16", scalars::rem_f16::rem::PTX),
        ("rem_bf16", scalars::rem_bf16::rem::PTX),
        ("transcendental64", scalars::transcendental64::funcs::PTX),
    ]
}

#[needs_ptxas]
fn every_kernel_of_the_suite_assembles_with_ptxas() {
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    for (name, ptx) in kernels() {
        if let Err(log) = gpu_async_compiler::ptxas::assemble(&ptxas, name, ptx) {
            panic!("ptxas rejected `{name}`:\n{log}");
        }
    }
}
