//! The epilogue through shared memory on both backends: an accumulator written into tile slots
//! (`acc.store_tile`) and the tiles into `&mut Matrix<T>`s by TMA stores (`tile.store`), against
//! the product in plain Rust, element by element (the products are of small integers, so the
//! mma is exact on both backends and in `bf16`), with the matrices' edges clipping the tiles and
//! the elements outside the tiles left as they were.

#[allow(dead_code, clippy::all)]
#[path = "common/tile_stores.rs"]
mod tile_stores;

use gpu_async::device::bf16;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use tile_stores::tiled::{tiled, K, N, ROWS};

/// `rows` x `cols` integers in -2..=2.
fn integers(rows: usize, cols: usize, seed: usize) -> Vec<bf16> {
    (0..rows * cols)
        .map(|i| bf16::from_f32(((i * 7 + i / cols * 3 + seed * 13) % 5) as f32 - 2.0))
        .collect()
}

/// `old` (a matrix of `cols` columns) with the product `a · bᵀ` written at `at`, clipped, in
/// the product's first `limit` rows.
fn expected(
    (a, b): (&[bf16], &[bf16]),
    at: [usize; 2],
    (cols, limit): (usize, usize),
    old: &[f32],
) -> Vec<f32> {
    let rows = old.len() / cols;
    let mut out = old.to_vec();
    for i in 0..ROWS.min(limit) {
        for j in 0..N {
            let (r, c) = (at[0] + i, at[1] + j);
            if r < rows && c < cols {
                out[r * cols + c] = (0..K)
                    .map(|k| a[i * K + k].to_f32() * b[j * K + k].to_f32())
                    .sum();
            }
        }
    }
    out
}

#[on_each_device]
fn tiles_of_an_accumulator_are_stored_by_the_tma_clipped_at_the_edges(
    dev: Device,
) -> gpu_async::Result<()> {
    let (a, b) = (integers(ROWS, K, 1), integers(N, K, 2));
    // (corner, rows, columns): inside, and past the bottom and right edges.
    let cases = [([0, 0], ROWS, N), ([8, 16], 200, 160), ([40, 8], 150, 104)];
    for (at, rows, cols) in cases {
        stored_rows(&dev, (&a, &b), (at, rows, cols), ROWS)?;
    }
    Ok(())
}

/// `store_rows` with fewer rows than the tile's writes those rows and nothing below them, on
/// both sides of the matrix's edges, for each tile shape (two swizzles, two column blocks); with
/// as many or more, it is `store`.
#[on_each_device]
fn tiles_stored_up_to_a_row_stop_there(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (integers(ROWS, K, 3), integers(N, K, 4));
    for limit in [0, 1, 37, 100, ROWS - 1, ROWS, ROWS + 5] {
        stored_rows(&dev, (&a, &b), ([0, 0], ROWS + 9, N), limit)?;
        stored_rows(&dev, (&a, &b), ([40, 8], 150, 104), limit)?;
    }
    Ok(())
}

/// Launches `tiled` with the product of `a` and `b` stored at `at` of `rows` x `cols` matrices
/// (`w` and `h` only in its first `limit` rows) and checks each matrix element by element.
fn stored_rows(
    dev: &Device,
    (a, b): (&[bf16], &[bf16]),
    (at, rows, cols): ([usize; 2], usize, usize),
    limit: usize,
) -> gpu_async::Result<()> {
    let (da, db) = (dev.upload(a)?, dev.upload(b)?);
    {
        let old: Vec<f32> = (0..rows * cols).map(|i| (i % 23) as f32 - 7.5).collect();
        let old_h: Vec<bf16> = old.iter().map(|&v| bf16::from_f32(v)).collect();
        let mut c = dev.upload(&old)?;
        let mut w = dev.upload(&old)?;
        let mut h = dev.upload(&old_h)?;
        block_on(tiled::launch(
            dev,
            Grid::blocks(1),
            (
                da.as_matrix(ROWS, K)?,
                db.as_matrix(N, K)?,
                at[0],
                at[1],
                limit,
                c.as_matrix_mut(rows, cols)?,
                w.as_matrix_mut(rows, cols)?,
                h.as_matrix_mut(rows, cols)?,
            ),
        ))?;
        let want = expected((a, b), at, (cols, ROWS), &old);
        let want_w = expected((a, b), at, (cols, limit), &old);
        let old_wide: Vec<f32> = old_h.iter().map(|v| v.to_f32()).collect();
        let want_h = expected((a, b), at, (cols, limit), &old_wide);
        let case = format!("on {dev}: at {at:?} of {rows} x {cols}, {limit} rows");
        assert_eq!(c.download()?, want, "{case}: f32 tiles of 32 columns");
        assert_eq!(w.download()?, want_w, "{case}: f32 tiles of 64 columns");
        let got_h: Vec<f32> = h.download()?.iter().map(|v| v.to_f32()).collect();
        assert_eq!(got_h, want_h, "{case}: bf16 tiles of 32 columns");
    }
    Ok(())
}

#[on_each_device]
fn a_written_matrix_of_rows_off_16_bytes_is_a_tensor_map_error(
    dev: Device,
) -> gpu_async::Result<()> {
    let (a, b) = (integers(ROWS, K, 1), integers(N, K, 2));
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let (rows, cols) = (ROWS, 102);
    let old = vec![1.5f32; rows * cols];
    let mut c = dev.upload(&old)?;
    let mut w = dev.upload(&vec![0.0f32; ROWS * N])?;
    let mut h = dev.upload(&vec![bf16::ZERO; ROWS * N])?;
    let result = block_on(tiled::launch(
        &dev,
        Grid::blocks(1),
        (
            da.as_matrix(ROWS, K)?,
            db.as_matrix(N, K)?,
            0,
            0,
            ROWS,
            c.as_matrix_mut(rows, cols)?,
            w.as_matrix_mut(ROWS, N)?,
            h.as_matrix_mut(ROWS, N)?,
        ),
    ));
    match result {
        Err(err @ gpu_async::Error::TensorMap { .. }) => assert!(
            err.to_string()
                .contains("matrix `c`: its row stride, 408 bytes, is not a multiple of 16 bytes"),
            "on {dev}: {err}"
        ),
        other => panic!("on {dev}: expected Error::TensorMap, got {other:?}"),
    }
    // Nothing was written.
    assert_eq!(c.download()?, old, "on {dev}");
    Ok(())
}
