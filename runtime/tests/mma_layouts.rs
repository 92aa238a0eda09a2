//! Tiles stored as column blocks, on both backends: `mma_kn` and `mma_stages_kn` (B given as K
//! x N, four column blocks read transposed), mmas whose tiles hold a K of 128 (two blocks), and
//! element reads of a tile of three blocks. The mma inputs are small integers, so every product
//! and sum is exact and the GPU's tensor cores agree with the exact result bit for bit.

#[allow(dead_code, clippy::all)]
#[path = "common/mma_layouts.rs"]
mod mma_layouts;

use gpu_async::device::bf16;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use mma_layouts::mma_layouts::{
    kn_once, kn_stages, read_blocks, wide_k, COLS, K, M, N, ROWS, WIDE_K, WIDE_N,
};

/// A `rows` x `cols` row-major matrix of integers in -2..=2.
fn integers(rows: usize, cols: usize, seed: usize) -> Vec<bf16> {
    (0..rows * cols)
        .map(|i| bf16::from_f32(((i * 7 + i / cols * 3 + seed * 13) % 5) as f32 - 2.0))
        .collect()
}

/// `a · b` over the first `k` columns of `a` (`m` x `a_cols`) and rows of `b` (.. x `n`).
fn product_kn(a: &[bf16], b: &[bf16], (m, n, a_cols): (usize, usize, usize), k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|kk| a[i * a_cols + kk].to_f32() * b[kk * n + j].to_f32())
                .sum();
        }
    }
    c
}

#[on_each_device]
fn mma_stages_kn_adds_a_times_b_as_given(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (integers(M, 3 * K, 1), integers(3 * K, N, 2));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    for stages in [1, 3] {
        let mut c = dev.upload(&vec![f32::NAN; M * N])?;
        block_on(kn_stages::launch(
            &dev,
            Grid::blocks(1),
            (
                da.as_matrix(M, 3 * K)?,
                db.as_matrix(3 * K, N)?,
                stages,
                &mut c,
            ),
        ))?;
        let want = product_kn(&a, &b, (M, N, 3 * K), stages * K);
        assert_eq!(c.download()?, want, "on {dev}: {stages} stages");
    }
    Ok(())
}

#[on_each_device]
fn one_mma_kn_adds_a_times_b_as_given(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (integers(M, K, 3), integers(K, N, 4));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let mut c = dev.upload(&vec![f32::NAN; M * N])?;
    block_on(kn_once::launch(
        &dev,
        Grid::blocks(1),
        (da.as_matrix(M, K)?, db.as_matrix(K, N)?, &mut c),
    ))?;
    assert_eq!(c.download()?, product_kn(&a, &b, (M, N, K), K), "on {dev}");
    Ok(())
}

#[on_each_device]
fn mmas_of_tiles_of_two_k_blocks_add_every_column(dev: Device) -> gpu_async::Result<()> {
    let cols = 2 * WIDE_K;
    let (a, b) = (integers(M, cols, 5), integers(WIDE_N, cols, 6));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let mut c = dev.upload(&vec![f32::NAN; M * WIDE_N])?;
    block_on(wide_k::launch(
        &dev,
        Grid::blocks(1),
        (
            da.as_matrix(M, cols)?,
            db.as_matrix(WIDE_N, cols)?,
            2,
            &mut c,
        ),
    ))?;
    let mut want = vec![0.0f32; M * WIDE_N];
    for i in 0..M {
        for j in 0..WIDE_N {
            want[i * WIDE_N + j] = (0..cols)
                .map(|k| a[i * cols + k].to_f32() * b[j * cols + k].to_f32())
                .sum();
        }
    }
    assert_eq!(c.download()?, want, "on {dev}");
    Ok(())
}

#[on_each_device]
fn a_tile_of_three_column_blocks_reads_element_by_element(dev: Device) -> gpu_async::Result<()> {
    let (rows, cols) = (20, 100);
    let value = |r: usize, c: usize| (1000 * r + c + 1) as f32;
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| value(i / cols, i % cols))
        .collect();
    let a = dev.upload(&data)?;
    for (row, col) in [(0, 0), (14, 40), (3, 96)] {
        let mut y = dev.upload(&vec![f32::NAN; ROWS * COLS])?;
        block_on(read_blocks::launch(
            &dev,
            Grid::blocks(1),
            (a.as_matrix(rows, cols)?, row, col, &mut y),
        ))?;
        let want: Vec<f32> = (0..ROWS * COLS)
            .map(|i| {
                let (r, c) = (row + i / COLS, col + i % COLS);
                if r < rows && c < cols {
                    value(r, c)
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(y.download()?, want, "on {dev}: the tile at ({row}, {col})");
    }
    Ok(())
}

#[on_each_device]
fn a_tile_load_at_a_column_off_16_bytes_panics(dev: Device) -> gpu_async::Result<()> {
    let a = dev.upload(&vec![1.0f32; 20 * 100])?;
    let mut y = dev.upload(&vec![f32::NAN; ROWS * COLS])?;
    // Column 97 of f32 is 388 bytes into the row: a TMA copy cannot start there (on the H200
    // the copy is an illegal instruction, which would end the context).
    let got = block_on(read_blocks::launch(
        &dev,
        Grid::blocks(1),
        (a.as_matrix(20, 100)?, 3, 97, &mut y),
    ));
    match got {
        Err(gpu_async::Error::KernelPanic { message, .. }) => assert!(
            message.contains(
                "load: the column of the tile's corner is not a multiple of 4 (16 bytes)"
            ),
            "on {dev}: {message}"
        ),
        other => panic!("on {dev}: expected the load's panic, got {other:?}"),
    }
    // The device still works.
    block_on(read_blocks::launch(
        &dev,
        Grid::blocks(1),
        (a.as_matrix(20, 100)?, 3, 96, &mut y),
    ))?;
    assert!(y.download()?.iter().all(|v| !v.is_nan()), "on {dev}");
    Ok(())
}

#[on_each_device]
fn an_accumulator_rounded_to_bf16_is_the_a_operand_of_the_next_mma(
    dev: Device,
) -> gpu_async::Result<()> {
    use mma_layouts::chained::{chain, T};
    // Entries in -1..=1, so every element of s = a · bᵀ is an integer of at most 64 in
    // magnitude, exact in bf16, and every product after it is exact in f32.
    let small = |seed: usize| -> Vec<bf16> {
        (0..T * T)
            .map(|i| bf16::from_f32(((i * 7 + i / T * 5 + seed * 3) % 3) as f32 - 1.0))
            .collect()
    };
    let (a, b, v) = (small(1), small(2), integers(T, T, 3));
    let f = |x: &[bf16], i: usize| x[i].to_f32();
    let mut s = vec![0.0f32; T * T];
    for i in 0..T {
        for j in 0..T {
            s[i * T + j] = (0..T).map(|k| f(&a, i * T + k) * f(&b, j * T + k)).sum();
        }
    }
    let (mut o_want, mut w_want) = (vec![0.0f32; T * T], vec![0.0f32; T * T]);
    for i in 0..T {
        for j in 0..T {
            o_want[i * T + j] = (0..T).map(|k| s[i * T + k] * f(&v, k * T + j)).sum();
            w_want[i * T + j] = (0..T).map(|k| s[i * T + k] * f(&v, j * T + k)).sum();
        }
    }
    let (da, db, dv) = (dev.upload(&a)?, dev.upload(&b)?, dev.upload(&v)?);
    let mut o = dev.upload(&vec![f32::NAN; T * T])?;
    let mut w = dev.upload(&vec![f32::NAN; T * T])?;
    block_on(chain::launch(
        &dev,
        Grid::blocks(1),
        (
            da.as_matrix(T, T)?,
            db.as_matrix(T, T)?,
            dv.as_matrix(T, T)?,
            &mut o,
            &mut w,
        ),
    ))?;
    assert_eq!(o.download()?, o_want, "on {dev}: p · v");
    assert_eq!(w.download()?, w_want, "on {dev}: p · vᵀ");
    Ok(())
}
