//! `store_scaled`, the epilogue of `C = alpha · A · Bᵀ + beta · C`, on both backends: the
//! simulator against the defined arithmetic in plain Rust, the GPU against the simulator bit
//! for bit (the products are of small integers, so the mma is exact on both), into `f32` and
//! `bf16` matrices, inside and clipped at their edges, and with `beta` 0 over NaNs; and
//! elementwise operations on the accumulator (`apply`, `apply_at`) and its rows' maxima and sums
//! (`row_max`, `row_sum`) the same way.

#[allow(dead_code, clippy::all)]
#[path = "common/mma_epilogue.rs"]
mod mma_epilogue;

use gpu_async::device::{bf16, f16};
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use mma_epilogue::epilogue::{elementwise, ordered_sums, row_stats, running_rows, scaled, ROWS, T};

/// A T x T matrix of integers in -2..=2.
fn integers(seed: usize) -> Vec<bf16> {
    (0..T * T)
        .map(|i| bf16::from_f32(((i * 7 + i / T * 3 + seed * 13) % 5) as f32 - 2.0))
        .collect()
}

/// The destination's starting values: varied, with fractions, so that rounding shows.
fn start(len: usize, nan: bool) -> Vec<f32> {
    (0..len)
        .map(|i| {
            if nan {
                f32::NAN
            } else {
                (i % 37) as f32 * 0.3 - 5.0
            }
        })
        .collect()
}

/// What `store_scaled` writes: `alpha * x`, then `beta.mul_add(old, ..)` unless `beta` is 0.
fn expected(
    (a, b): (&[bf16], &[bf16]),
    (at, cols): ([usize; 2], usize),
    (alpha, beta): (f32, f32),
    old: &[f32],
    round: impl Fn(f32) -> f32,
) -> Vec<f32> {
    let rows = old.len() / cols;
    let mut out = old.to_vec();
    for i in 0..T {
        for j in 0..T {
            let (r, c) = (at[0] + i, at[1] + j);
            if r >= rows || c >= cols {
                continue;
            }
            let x: f32 = (0..T)
                .map(|k| a[i * T + k].to_f32() * b[j * T + k].to_f32())
                .sum();
            let t = alpha * x;
            let v = if beta != 0.0 {
                beta.mul_add(old[r * cols + c], t)
            } else {
                t
            };
            out[r * cols + c] = round(v);
        }
    }
    out
}

#[on_each_device]
fn store_scaled_writes_alpha_times_the_product_plus_beta_times_c(
    dev: Device,
) -> gpu_async::Result<()> {
    let (a, b) = (integers(1), integers(2));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    // (corner, columns, rows, alpha, beta, NaNs in the destination)
    let cases = [
        ([0, 0], 64, 64, 0.75f32, -1.5f32, false),
        ([8, 16], 72, 80, -2.0, 0.3, false),
        ([0, 40], 96, 50, 1.0, 0.0, true),
        ([30, 0], 64, 64, 0.1, 1.0, false),
    ];
    for (at, cols, rows, alpha, beta, nan) in cases {
        let old = start(rows * cols, nan);
        let old_h: Vec<bf16> = old.iter().map(|&v| bf16::from_f32(v)).collect();
        let mut c = dev.upload(&old)?;
        let mut h = dev.upload(&old_h)?;
        block_on(scaled::launch(
            &dev,
            Grid::blocks(1),
            (
                da.as_matrix(T, T)?,
                db.as_matrix(T, T)?,
                at[0],
                at[1],
                cols,
                alpha,
                beta,
                &mut c,
                &mut h,
            ),
        ))?;
        let want = expected((&a, &b), (at, cols), (alpha, beta), &old, |v| v);
        let old_wide: Vec<f32> = old_h.iter().map(|v| v.to_f32()).collect();
        let want_h = expected((&a, &b), (at, cols), (alpha, beta), &old_wide, |v| {
            bf16::from_f32(v).to_f32()
        });
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let got_h: Vec<f32> = h.download()?.iter().map(|v| v.to_f32()).collect();
        let case = format!("on {dev}: at {at:?}, {rows} x {cols}, alpha {alpha}, beta {beta}");
        assert_eq!(bits(&c.download()?), bits(&want), "{case}: f32");
        assert_eq!(bits(&got_h), bits(&want_h), "{case}: bf16");
    }
    Ok(())
}

#[on_each_device]
fn apply_and_apply_at_change_each_element_where_it_lies(dev: Device) -> gpu_async::Result<()> {
    let a: Vec<bf16> = integers(3).into_iter().chain(integers(4)).collect();
    let b = integers(5);
    let bias: Vec<f32> = (0..T).map(|j| j as f32 * 0.375 - 7.0).collect();
    let mut c = dev.upload(&vec![f32::NAN; ROWS * T])?;
    let mut h = dev.upload(&vec![bf16::NAN; ROWS * T])?;
    // Fewer rows than the accumulator from row 1 on: the last ones are clipped.
    let g_rows = ROWS - 8;
    let mut g = dev.upload(&vec![f16::NAN; g_rows * (T + 3)])?;
    block_on(elementwise::launch(
        &dev,
        Grid::blocks(1),
        (
            dev.upload(&a)?.as_matrix(ROWS, T)?,
            dev.upload(&b)?.as_matrix(T, T)?,
            &dev.upload(&bias)?,
            &mut c,
            &mut h,
            &mut g,
        ),
    ))?;
    let want: Vec<u32> = (0..ROWS * T)
        .map(|at| {
            let (i, j) = (at / T, at % T);
            let x: f32 = (0..T)
                .map(|k| a[i * T + k].to_f32() * b[j * T + k].to_f32())
                .sum();
            let halved = x.max(-3.0) * 0.5;
            let capped = (halved * 2.0).min(4.0);
            (capped + bias[j] - i as f32 * 0.25).to_bits()
        })
        .collect();
    let got: Vec<u32> = c.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want, "on {dev}");
    let want_h: Vec<u16> = want
        .iter()
        .map(|&x| bf16::from_f32(f32::from_bits(x)).to_bits())
        .collect();
    let got_h: Vec<u16> = h.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got_h, want_h, "on {dev}: bf16");
    let mut want_g = vec![f16::NAN.to_bits(); g_rows * (T + 3)];
    for i in 0..g_rows - 1 {
        for j in 0..T {
            let x = f32::from_bits(want[i * T + j]);
            want_g[(i + 1) * (T + 3) + j + 1] = f16::from_f32(x).to_bits();
        }
    }
    let got_g: Vec<u16> = g.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got_g, want_g, "on {dev}: f16 at (1, 1)");
    Ok(())
}

#[on_each_device]
fn row_maxima_and_sums_reach_each_element_of_their_row(dev: Device) -> gpu_async::Result<()> {
    let a: Vec<bf16> = integers(6).into_iter().chain(integers(7)).collect();
    let b = integers(8);
    let mut c = dev.upload(&vec![f32::NAN; ROWS * T])?;
    block_on(row_stats::launch(
        &dev,
        Grid::blocks(1),
        (
            dev.upload(&a)?.as_matrix(ROWS, T)?,
            dev.upload(&b)?.as_matrix(T, T)?,
            &mut c,
        ),
    ))?;
    let mut want = Vec::with_capacity(ROWS * T);
    for i in 0..ROWS {
        let x: Vec<f32> = (0..T)
            .map(|j| {
                (0..T)
                    .map(|k| a[i * T + k].to_f32() * b[j * T + k].to_f32())
                    .sum()
            })
            .collect();
        let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let shifted: Vec<f32> = x.iter().map(|v| (v - m) * 0.1).collect();
        let l = row_sum_in_order(&shifted);
        want.extend(shifted.iter().map(|v| (v / (l - 1.0) + m).to_bits()));
    }
    let got: Vec<u32> = c.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want, "on {dev}");
    Ok(())
}

/// The sum of a row of `T` in the order `row_sum` defines: per row, lane `q` of 0..4 adds the
/// columns `8 j + 2 q`, `8 j + 2 q + 1` for `j` up from 0, left to right from the first, then
/// `(t0 + t1) + (t2 + t3)`.
fn row_sum_in_order(row: &[f32]) -> f32 {
    let lane = |q: usize| {
        (0..T / 8)
            .flat_map(|j| [row[8 * j + 2 * q], row[8 * j + 2 * q + 1]])
            .reduce(|t, x| t + x)
            .unwrap_or(0.0)
    };
    (lane(0) + lane(1)) + (lane(2) + lane(3))
}

/// Row sums of values whose magnitudes span ten decades round differently in each order of
/// addition: the bits are those of the order `row_sum` defines (and of no pairwise tree per lane,
/// which the data tells apart), on the simulator and the GPU; row maxima as `f32::max`.
#[on_each_device]
fn row_sums_add_in_their_defined_order(dev: Device) -> gpu_async::Result<()> {
    let a: Vec<bf16> = integers(3).into_iter().chain(integers(4)).collect();
    let b = integers(5);
    let w: Vec<f32> = (0..ROWS * T)
        .map(|k| {
            let h = (k as u32).wrapping_mul(2_654_435_761) >> 7;
            let mantissa = (h % 2001) as f32 / 1000.0 - 1.0;
            mantissa * 10f32.powi((h / 2001 % 11) as i32 - 3)
        })
        .collect();
    let mut out = dev.upload(&vec![f32::NAN; 2 * ROWS])?;
    block_on(ordered_sums::launch(
        &dev,
        Grid::blocks(1),
        (
            dev.upload(&a)?.as_matrix(ROWS, T)?,
            dev.upload(&b)?.as_matrix(T, T)?,
            &dev.upload(&w)?,
            &mut out,
        ),
    ))?;
    let rows: Vec<Vec<f32>> = (0..ROWS)
        .map(|i| {
            (0..T)
                .map(|j| {
                    let dot: f32 = (0..T)
                        .map(|k| a[i * T + k].to_f32() * b[j * T + k].to_f32())
                        .sum();
                    dot + w[i * T + j]
                })
                .collect()
        })
        .collect();
    // The same lanes' values added as a pairwise tree instead (neighbours first).
    let tree_per_lane = |row: &[f32]| {
        let lane = |q: usize| {
            let mut level: Vec<f32> = (0..T / 8)
                .flat_map(|j| [row[8 * j + 2 * q], row[8 * j + 2 * q + 1]])
                .collect();
            while level.len() > 1 {
                level = level
                    .chunks(2)
                    .map(|pair| pair.iter().copied().reduce(|a, b| a + b).unwrap_or(0.0))
                    .collect();
            }
            level[0]
        };
        (lane(0) + lane(1)) + (lane(2) + lane(3))
    };
    let differing = rows
        .iter()
        .filter(|r| row_sum_in_order(r).to_bits() != tree_per_lane(r).to_bits())
        .count();
    assert!(
        differing > ROWS / 4,
        "the data tells the orders apart in only {differing} rows"
    );
    let mut want: Vec<u32> = rows.iter().map(|r| row_sum_in_order(r).to_bits()).collect();
    want.extend(rows.iter().map(|r| {
        r.iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max)
            .to_bits()
    }));
    let got: Vec<u32> = out.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want, "on {dev}");
    Ok(())
}

#[on_each_device]
fn rows_fold_running_statistics_over_stages(dev: Device) -> gpu_async::Result<()> {
    let a: Vec<bf16> = integers(9).into_iter().chain(integers(10)).collect();
    let b: Vec<bf16> = integers(11).into_iter().chain(integers(12)).collect();
    let mut c = dev.upload(&vec![f32::NAN; ROWS * 2 * T])?;
    // Statistics from element 5 of a buffer whose last 3 rows of `l` fall off its end.
    let at = 5;
    let len = at + 2 * ROWS - 3;
    let mut stats = dev.upload(&vec![f32::NAN; len])?;
    block_on(running_rows::launch(
        &dev,
        Grid::blocks(1),
        (
            dev.upload(&a)?.as_matrix(ROWS, T)?,
            dev.upload(&b)?.as_matrix(2 * T, T)?,
            &mut c,
            &mut stats,
            at,
        ),
    ))?;
    let mut want_c = vec![0u32; ROWS * 2 * T];
    let mut want_stats: Vec<u32> = vec![f32::NAN.to_bits(); len];
    for i in 0..ROWS {
        let (mut m, mut l) = (-1000.0f32, 0.0f32);
        for k in 0..2 {
            let s: Vec<f32> = (0..T)
                .map(|j| {
                    (0..T)
                        .map(|x| a[i * T + x].to_f32() * b[(k * T + j) * T + x].to_f32())
                        .sum()
                })
                .collect();
            let tile_max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let m_new = m.max(tile_max);
            let shifted: Vec<f32> = s.iter().map(|v| (v - m_new) * 0.5).collect();
            l = l * 0.25 + row_sum_in_order(&shifted) + (m - m_new);
            m = m_new;
            for (j, v) in shifted.iter().enumerate() {
                want_c[i * 2 * T + k * T + j] = v.to_bits();
            }
        }
        want_stats[at + i] = m.to_bits();
        if at + ROWS + i < len {
            want_stats[at + ROWS + i] = l.to_bits();
        }
    }
    let got_c: Vec<u32> = c.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got_c, want_c, "on {dev}: scores");
    let got_stats: Vec<u32> = stats.download()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got_stats, want_stats, "on {dev}: m and l");
    Ok(())
}
