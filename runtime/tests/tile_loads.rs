//! Tile loads on both backends: every tile of a matrix, square or ragged, read back element by
//! element (through the swizzled layout on the GPU) and compared bit for bit with the matrix,
//! zeros past its edges.

#[allow(dead_code, clippy::all)]
#[path = "common/tiles.rs"]
mod tiles;

use gpu_async::device::bf16;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use tiles::tiles::{BC, BR, FC, FR};

/// What the kernels write for `a` (`rows` x `cols`, row-major) cut in `r` x `c` tiles: each
/// tile's elements in row-major order, tile after tile, zeros past the matrix's edges.
fn expected(a: &[f32], rows: usize, cols: usize, r: usize, c: usize) -> Vec<f32> {
    let per_row = cols.div_ceil(c);
    let count = rows.div_ceil(r) * per_row;
    let mut out = Vec::with_capacity(count * r * c);
    for t in 0..count {
        let (r0, c0) = (t / per_row * r, t % per_row * c);
        for i in 0..r * c {
            let (row, col) = (r0 + i / c, c0 + i % c);
            out.push(if row < rows && col < cols {
                a[row * cols + col]
            } else {
                0.0
            });
        }
    }
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[on_each_device]
fn bf16_tiles_of_square_and_ragged_matrices(dev: Device) -> gpu_async::Result<()> {
    // Whole tiles, a ragged last row and column of tiles, and a matrix smaller than one tile.
    for (rows, cols, blocks) in [(128usize, 192usize, 4u32), (100, 72, 3), (5, 8, 1)] {
        let host: Vec<bf16> = (0..rows * cols)
            .map(|i| bf16::from_f32(((i * 37 % 1001) as f32 - 500.0) / 8.0))
            .collect();
        let wide: Vec<f32> = host.iter().map(|v| v.to_f32()).collect();
        let want = expected(&wide, rows, cols, BR, BC);
        let buf = dev.upload(&host)?;
        let a = buf.as_matrix(rows, cols)?;
        let mut y = dev.upload(&vec![f32::NAN; want.len()])?;
        block_on(tiles::tiles::bf16_tiles::launch(
            &dev,
            Grid::blocks(blocks),
            (a, &mut y),
        ))?;
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "on {dev}: {rows} x {cols}"
        );
    }
    Ok(())
}

#[on_each_device]
fn f32_tiles_through_a_ring_of_three(dev: Device) -> gpu_async::Result<()> {
    for (rows, cols, blocks) in [(64usize, 64usize, 2u32), (29, 36, 5)] {
        let host: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.5 - 7.0).collect();
        let want = expected(&host, rows, cols, FR, FC);
        let buf = dev.upload(&host)?;
        let mut y = dev.upload(&vec![f32::NAN; want.len()])?;
        block_on(tiles::tiles::f32_tiles::launch(
            &dev,
            Grid::blocks(blocks),
            (buf.as_matrix(rows, cols)?, &mut y),
        ))?;
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "on {dev}: {rows} x {cols}"
        );
    }
    Ok(())
}

#[on_each_device]
fn pairs_of_tiles_from_two_matrices(dev: Device) -> gpu_async::Result<()> {
    for (rows, cols, blocks) in [(128usize, 128usize, 2u32), (70, 104, 3)] {
        let a_host: Vec<bf16> = (0..rows * cols)
            .map(|i| bf16::from_f32((i % 509) as f32 - 254.0))
            .collect();
        let b_host: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.25).collect();
        let a_wide: Vec<f32> = a_host.iter().map(|v| v.to_f32()).collect();
        // Per tile of `a`: its elements, then those of `b`'s BR x FC tile at the same corner.
        let a_tiles = expected(&a_wide, rows, cols, BR, BC);
        let per_row = cols.div_ceil(BC);
        let count = rows.div_ceil(BR) * per_row;
        let mut want = Vec::new();
        for t in 0..count {
            want.extend_from_slice(&a_tiles[t * BR * BC..(t + 1) * BR * BC]);
            let (r0, c0) = (t / per_row * BR, t % per_row * BC);
            for i in 0..BR * FC {
                let (r, c) = (r0 + i / FC, c0 + i % FC);
                want.push(if r < rows && c < cols {
                    b_host[r * cols + c]
                } else {
                    0.0
                });
            }
        }
        let a = dev.upload(&a_host)?;
        let b = dev.upload(&b_host)?;
        let mut y = dev.upload(&vec![f32::NAN; want.len()])?;
        block_on(tiles::tiles::pairs::launch(
            &dev,
            Grid::blocks(blocks),
            (a.as_matrix(rows, cols)?, b.as_matrix(rows, cols)?, &mut y),
        ))?;
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "on {dev}: {rows} x {cols}"
        );
    }
    Ok(())
}
