//! Checks the cuBLAS peer of the bf16 GEMM benchmark (`peers/cublas_gemm.rs`): C = A · Bᵀ, with
//! A (M x K) and B (N x K) row-major bf16 and C (M x N) row-major f32, and C = A · B with the
//! same values given as the K x N matrix, for 256 x 256 x 256 and
//! for a shape whose three dimensions differ (so that a mix-up of M, N, K or of a leading
//! dimension cannot pass), element by element against a CPU reference, and prints the median
//! time of cuBLAS's runs.
//!
//! ```text
//! LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo run --release --example cublas_check
//! ```
//!
//! Needs a GPU: on the simulator it says so and exits successfully. A missing `libcublas` is an
//! error.

#[path = "peers/cublas_gemm.rs"]
mod cublas_gemm;

use cublas_gemm::{BLayout, CublasGemm};
use gpu_async::bench::random_f32;
use gpu_async::half::bf16;
use gpu_async::{BackendKind, Device};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Timed runs of each shape, after one untimed run.
const RUNS: usize = 10;

/// `a` (`m` x `k`) · `b`ᵀ (`b` is `n` x `k`), all row-major, accumulated in f64.
fn reference(m: usize, n: usize, k: usize, a: &[bf16], b: &[bf16]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (row, col) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
            c[i * n + j] = row
                .iter()
                .zip(col)
                .map(|(x, y)| f64::from(x.to_f32()) * f64::from(y.to_f32()))
                .sum();
        }
    }
    c
}

fn check(m: usize, n: usize, k: usize, seed: u64, layout: BLayout) -> AnyResult<()> {
    let to_bf16 = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect::<Vec<_>>();
    let a = to_bf16(random_f32(m * k, seed));
    let b = to_bf16(random_f32(n * k, seed + 1));
    // B as the peer takes it: N x K as it is, or its transpose, K x N.
    let given = match layout {
        BLayout::NK => b.clone(),
        BLayout::KN => (0..k * n).map(|i| b[(i % n) * k + i / n]).collect(),
    };
    let mut gemm = CublasGemm::new(0, (m, n, k), &a, (&given, layout))?;
    gemm.run_ms()?;
    let c = gemm.c()?;
    let expected = reference(m, n, k, &a, &b);
    // The products of bf16 values are exact in f32; what differs is the f32 accumulation of k
    // of them (each below 1 in magnitude), far below this. A wrong layout is off by about 1.
    let tolerance = 1e-5 * k as f64;
    let (worst, at) = c
        .iter()
        .zip(&expected)
        .map(|(&got, &want)| (f64::from(got) - want).abs())
        .enumerate()
        .fold((0.0f64, 0), |(worst, at), (i, err)| {
            if err > worst {
                (err, i)
            } else {
                (worst, at)
            }
        });
    if worst > tolerance {
        return Err(format!(
            "{m} x {n} x {k}, B given {layout:?}: C[{}][{}] = {}, the CPU says {} (error {worst:.3e} > {tolerance:.1e})",
            at / n,
            at % n,
            c[at],
            expected[at]
        )
        .into());
    }
    let mut times = (0..RUNS)
        .map(|_| gemm.run_ms())
        .collect::<Result<Vec<f64>, String>>()?;
    times.sort_by(f64::total_cmp);
    let ms = times[RUNS / 2];
    let tflops = 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
    println!(
        "{m} x {n} x {k}, B given {layout:?}: matches the CPU (largest error {worst:.2e}); \
         time: {ms:.4} ms (median of {RUNS}), {tflops:.2} TFLOP/s"
    );
    Ok(())
}

fn main() -> AnyResult<()> {
    let device = Device::default()?;
    if device.kind() != BackendKind::Cuda {
        println!("cublas_check runs cuBLAS and needs a GPU; this is {device}");
        return Ok(());
    }
    println!("backend: {device}");
    for layout in [BLayout::NK, BLayout::KN] {
        check(256, 256, 256, 1, layout)?;
        check(192, 320, 128, 3, layout)?;
    }
    Ok(())
}
