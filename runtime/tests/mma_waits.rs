//! Where the mma waits are, checked by results on both backends: `mma_stages` with every stage
//! there, with the channel ending first (also before the first stage), and with none asked for;
//! two mmas in flight, the first awaited and stored while the second may still run. The inputs
//! are small integers, so every product and sum is exact and the GPU's tensor cores agree with
//! the exact result bit for bit.

#[allow(dead_code, clippy::all)]
#[path = "common/mma_waits.rs"]
mod mma_waits;

use gpu_async::device::bf16;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use mma_waits::mma_waits::{K, M, N};

/// Stages of K columns in the test matrices.
const STAGES: usize = 4;

/// A `rows` x `STAGES * K` matrix of integers in -2..=2.
fn integers(rows: usize, seed: usize) -> Vec<bf16> {
    (0..rows * STAGES * K)
        .map(|i| bf16::from_f32(((i * 7 + seed * 13) % 5) as f32 - 2.0))
        .collect()
}

/// `a · bᵀ` over the first `stages` stages of columns: `a` is `m` x `STAGES * K`, `b` is `n` x
/// `STAGES * K`.
fn product(a: &[bf16], b: &[bf16], (m, n): (usize, usize), stages: usize) -> Vec<f32> {
    let cols = STAGES * K;
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..stages * K)
                .map(|k| a[i * cols + k].to_f32() * b[j * cols + k].to_f32())
                .sum();
        }
    }
    c
}

#[on_each_device]
fn mma_stages_accumulates_what_came_and_says_whether_all_did(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (integers(M, 1), integers(N, 2));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    // (stages sent, stages asked for): all, fewer asked than sent, the channel ending after
    // some, the channel ending before the first, none asked for.
    for (sent, count) in [(4usize, 4usize), (4, 2), (4, 6), (0, 3), (4, 0)] {
        let mut all = dev.upload(&vec![f32::NAN; M * N])?;
        let mut some = dev.upload(&vec![f32::NAN; M * N])?;
        block_on(mma_waits::mma_waits::stages::launch(
            &dev,
            Grid::blocks(1),
            (
                da.as_matrix(M, STAGES * K)?,
                db.as_matrix(N, STAGES * K)?,
                sent,
                count,
                &mut all,
                &mut some,
            ),
        ))?;
        let want = product(&a, &b, (M, N), sent.min(count));
        let (written, untouched) = if count <= sent {
            (all.download()?, some.download()?)
        } else {
            (some.download()?, all.download()?)
        };
        assert_eq!(written, want, "on {dev}: {sent} sent, {count} asked for");
        assert!(
            untouched.iter().all(|v| v.is_nan()),
            "on {dev}: {sent} sent, {count} asked for: the other output was written"
        );
    }
    Ok(())
}

#[on_each_device]
fn the_first_of_two_mmas_in_flight_is_complete_at_its_await(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (integers(M, 3), integers(N, 4));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let mut x = dev.upload(&vec![f32::NAN; M * N])?;
    let mut y = dev.upload(&vec![f32::NAN; N * M])?;
    block_on(mma_waits::mma_waits::two_in_flight::launch(
        &dev,
        Grid::blocks(1),
        (
            da.as_matrix(M, STAGES * K)?,
            db.as_matrix(N, STAGES * K)?,
            &mut x,
            &mut y,
        ),
    ))?;
    assert_eq!(x.download()?, product(&a, &b, (M, N), 1), "on {dev}: x");
    assert_eq!(y.download()?, product(&b, &a, (N, M), 1), "on {dev}: y");
    Ok(())
}
