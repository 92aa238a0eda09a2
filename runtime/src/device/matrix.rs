//! Matrices in global memory and the tiles that TMA loads copy out of them into channel slots
//! and TMA stores copy back.
//!
//! A kernel takes a row-major matrix as a parameter `a: &Matrix<T>` (the host passes a
//! [`MatrixView`](crate::MatrixView)), and a producer role loads it a [`Tile`] at a time into the
//! slots of a channel whose payload is that tile; a matrix it writes, `c: &mut Matrix<T>` (the
//! host passes a [`MatrixViewMut`](crate::MatrixViewMut)), takes received tiles back with
//! [`RecvSlot::store`]:
//!
//! ```ignore
//! let (tx, rx) = channel::<Tile<bf16, 64, 64>, 4>();
//! // producer
//! let Some(mut slot) = tx.reserve().await else { return };
//! slot.load(a, [row, k]).await;
//! slot.send();
//! // consumer
//! let Some(tile) = rx.recv().await else { return };
//! let x = tile[r][c];
//! tile.store(c, [row, k]).await;
//! ```

use std::fmt;
use std::ops::{Deref, DerefMut};

use gpu_async_wire::{
    TileBox, TileColumnMisaligned, MAX_TILE_COORD, TILE_COLUMN_ALIGN, TILE_CORNER_PAST,
    TILE_STORE_CORNER_PAST,
};

use super::channel::{CopyFrom, CopyTo, Payload, RecvSlot, SendSlot};
use crate::matrix::{tile_map_spec, TileScalar};
use crate::sim::{SimSlice, SimSliceMut};
use crate::tensor_map::{load_box, store_box, TileMapSpec};

/// A row-major matrix in global memory, a kernel parameter `&Matrix<T>` or `&mut Matrix<T>`
/// (`T` is `bf16`, `f16` or `f32`): element (r, c) at `r * cols() + c`. The host passes a
/// [`MatrixView`](crate::MatrixView) or a [`MatrixViewMut`](crate::MatrixViewMut). Kernel code
/// reads it with TMA tile loads, [`SendSlot::load`], into channel slots of [`Tile`]s, and
/// writes a `&mut Matrix<T>` with TMA tile stores, [`RecvSlot::store`].
///
/// On the GPU it is the matrix's address, rows and columns, and one tensor map per box the
/// kernel loads or stores; in the simulator it holds the elements the launch read or writes.
pub struct Matrix<T: TileScalar> {
    /// The parameter's name, for messages.
    name: &'static str,
    /// The buffer's elements (at least `rows * cols`).
    data: MatrixData<T>,
    rows: usize,
    cols: usize,
}

/// The elements of a [`Matrix`] as the launch took them: read, or lent for writing.
enum MatrixData<T: TileScalar> {
    Read(SimSlice<T>),
    Write(SimSliceMut<T>),
}

impl<T: TileScalar> std::ops::Deref for MatrixData<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            MatrixData::Read(d) => d,
            MatrixData::Write(d) => d,
        }
    }
}

impl<T: TileScalar> Matrix<T> {
    /// The matrix passed as `name`: the first `rows * cols` elements of `data`, which holds at
    /// least that many ([`DeviceBuffer::as_matrix`](crate::DeviceBuffer::as_matrix) checked).
    pub(crate) fn new(name: &'static str, data: SimSlice<T>, rows: usize, cols: usize) -> Self {
        Matrix {
            name,
            data: MatrixData::Read(data),
            rows,
            cols,
        }
    }

    /// The matrix passed as `name` to a `&mut Matrix<T>` parameter, as [`Matrix::new`], its
    /// elements lent for writing.
    pub(crate) fn new_mut(
        name: &'static str,
        data: SimSliceMut<T>,
        rows: usize,
        cols: usize,
    ) -> Self {
        Matrix {
            name,
            data: MatrixData::Write(data),
            rows,
            cols,
        }
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns, the elements of one row.
    pub fn cols(&self) -> usize {
        self.cols
    }
}

impl<T: TileScalar> fmt::Debug for Matrix<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matrix")
            .field("name", &self.name)
            .field("elem", &T::ELEM)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish()
    }
}

/// `R` rows × `C` columns of `T` in shared memory: the payload of a channel whose slots a
/// producer fills with TMA tile loads ([`SendSlot::load`]). Kernel code reads and writes it as
/// an array of rows, `tile[r][c]`; its [`Payload`] elements are the `R * C` elements row after
/// row.
///
/// On the GPU the tile is stored as the load's tensor map lays it out: swizzled when a row is
/// exactly 128, 64 or 32 bytes (see [`TileBox::swizzle_bytes`]), the layout the tensor-core
/// instructions read; the compiler addresses `tile[r][c]` accordingly.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct Tile<T: TileScalar, const R: usize, const C: usize>([[T; C]; R]);

impl<T: TileScalar, const R: usize, const C: usize> Payload for Tile<T, R, C> {
    type Elem = T;
    fn zeroed() -> Self {
        Tile([[T::default(); C]; R])
    }
    fn elems(&self) -> &[T] {
        self.0.as_flattened()
    }
    fn elems_mut(&mut self) -> &mut [T] {
        self.0.as_flattened_mut()
    }
}

impl<T: TileScalar, const R: usize, const C: usize> Deref for Tile<T, R, C> {
    type Target = [[T; C]; R];
    fn deref(&self) -> &[[T; C]; R] {
        &self.0
    }
}

impl<T: TileScalar, const R: usize, const C: usize> DerefMut for Tile<T, R, C> {
    fn deref_mut(&mut self) -> &mut [[T; C]; R] {
        &mut self.0
    }
}

/// The largest coordinate of a TMA load, as a `usize`.
const MAX_COORD: usize = MAX_TILE_COORD as usize;

impl<T: TileScalar, const R: usize, const C: usize, const D: usize> SendSlot<'_, Tile<T, R, C>, D> {
    /// Fills the slot with the `R` × `C` box of `m` whose top-left element is (`at[0]`,
    /// `at[1]`): rows `at[0]..at[0] + R`, columns `at[1]..at[1] + C`. Elements past the
    /// matrix's edges read as zero, so a ragged last tile needs no special case.
    ///
    /// On the GPU this is one TMA copy (`cp.async.bulk.tensor.2d` with the tensor map of this
    /// box, which the launch passed), issued by one thread of the role and completing on the
    /// slot's `full` barrier with the tile's byte count expected; the receiver's `recv` waits for
    /// the bytes to land: awaiting the load only issues it. After `load`, the slot can only be
    /// sent.
    ///
    /// # Panics
    /// If a coordinate is `2^31` or more (TMA coordinates are 32-bit signed), if the column is
    /// not a multiple of 16 bytes of `T` (8 `bf16`s, 4 `f32`s: a TMA copy starts each row on a
    /// 16-byte boundary), or if the matrix
    /// and the box break a rule of tensor maps ([`TileMapSpec::check`]; a launch checks the
    /// boxes the kernel declares first and fails with [`Error::TensorMap`] instead): device
    /// panics on the GPU.
    ///
    /// [`TileMapSpec::check`]: crate::tensor_map::TileMapSpec::check
    /// [`Error::TensorMap`]: crate::Error::TensorMap
    #[track_caller]
    pub fn load(&mut self, m: &Matrix<T>, at: [usize; 2]) -> CopyFrom {
        let elems = box_of(m, at, R, C);
        self.copy_from(&elems)
    }
}

impl<T: TileScalar, const R: usize, const C: usize> Tile<T, R, C> {
    /// Fills this tile, one of a pair in a reserved slot (`stage.0.load(a, [row, col]).await`),
    /// as [`SendSlot::load`] fills a slot of one tile: the `R` × `C` box of `m` at `at`, zeros
    /// past the matrix's edges, one TMA copy on the GPU completing on the slot's `full`
    /// barrier. The simulator's trace has no copy event for it (a tile does not know its
    /// channel).
    ///
    /// # Panics
    /// As [`SendSlot::load`].
    #[track_caller]
    pub fn load(&mut self, m: &Matrix<T>, at: [usize; 2]) -> CopyFrom {
        let elems = box_of(m, at, R, C);
        self.0.as_flattened_mut().copy_from_slice(&elems);
        CopyFrom::issued()
    }
}

impl<T: TileScalar, const R: usize, const C: usize, const D: usize> RecvSlot<'_, Tile<T, R, C>, D> {
    /// Writes the received tile into `m` as the `R` × `C` box whose top-left element is
    /// (`at[0]`, `at[1]`): rows `at[0]..at[0] + R`, columns `at[1]..at[1] + C`. Elements past
    /// the matrix's edges are not written, so a ragged last tile needs no special case.
    ///
    /// On the GPU this is one TMA store (`cp.async.bulk.tensor.2d.global.shared::cta` with the
    /// tensor map of this box, which the launch passed) per 128-byte column block of the tile,
    /// issued by one thread of the role as a bulk group. Awaiting it only issues it; releasing
    /// the slot waits until the store has read the slot (`cp.async.bulk.wait_group.read`), and
    /// the writes are visible to the host when the kernel has finished. The sender's writes to
    /// the slot reach the store through the proxy fence its `send` places.
    ///
    /// # Panics
    /// As [`SendSlot::load`], with `store:` messages: a coordinate of `2^31` or more, a column
    /// that is not a multiple of 16 bytes of `T`, or a matrix and box that break a rule of
    /// tensor maps.
    #[track_caller]
    pub fn store(&self, m: &mut Matrix<T>, at: [usize; 2]) -> CopyTo {
        self.store_rows(m, at, R)
    }

    /// As [`store`](Self::store), writing only the tile's first `rows` rows (all of them when
    /// `rows` is `R` or more): the last tile of a group of rows that ends inside a tile, such as
    /// a head of an attention's `[B · H · S, d]` output whose `S` is not a multiple of the tile,
    /// stops at the group's end where the TMA would stop only at the matrix's.
    ///
    /// On the GPU, with `rows >= R` this is the TMA store of [`store`](Self::store); with fewer,
    /// the role's threads copy the rows' 16-byte chunks out of the slot with ordinary loads and
    /// stores (no bulk copy, so the slot's release has nothing to wait for).
    ///
    /// # Panics
    /// As [`store`](Self::store).
    #[track_caller]
    pub fn store_rows(&self, m: &mut Matrix<T>, at: [usize; 2], rows: usize) -> CopyTo {
        let [row, col] = at;
        let (spec, block_cols) = copy_blocks(m, at, (R, C), "store");
        let name = m.name;
        let MatrixData::Write(data) = &mut m.data else {
            // Only a `&mut Matrix<T>` parameter's launch makes a matrix `&mut`.
            panic!("store: matrix `{name}` was passed as `&Matrix<T>`; a tile store writes a `&mut Matrix<T>`");
        };
        let elems = self.elems();
        for b in 0..C / block_cols.max(1) {
            let part: Vec<T> = (0..R.min(rows))
                .flat_map(|r| {
                    let at = r * C + b * block_cols;
                    elems[at..at + block_cols].iter().copied()
                })
                .collect();
            let from = (row as u64, (col + b * block_cols) as u64);
            if let Err(err) = store_box(name, data, &spec, from, &part) {
                panic!("store: {err}");
            }
        }
        self.copy_to_event();
        CopyTo::issued()
    }
}

/// The tensor map of one copy (`op`, `"load"` or `"store"`) of a `rows` x `cols` tile of `m` at
/// `at`, whose box is the tile or one of its column blocks (as the GPU copies it), and the
/// columns of that box; first the device panics of the copy's corner.
#[track_caller]
fn copy_blocks<T: TileScalar>(
    m: &Matrix<T>,
    [row, col]: [usize; 2],
    (rows, cols): (usize, usize),
    op: &'static str,
) -> (TileMapSpec, usize) {
    // The GPU's messages, word for word (its panics carry no formatted values).
    let past = if op == "store" {
        TILE_STORE_CORNER_PAST
    } else {
        TILE_CORNER_PAST
    };
    assert!(row <= MAX_COORD && col <= MAX_COORD, "{past}");
    let per = TILE_COLUMN_ALIGN / T::ELEM.size_bytes() as u32;
    assert!(
        col % per as usize == 0,
        "{}",
        TileColumnMisaligned { op, per }
    );
    let tile = TileBox {
        rows: u32::try_from(rows).unwrap_or(u32::MAX),
        cols: u32::try_from(cols).unwrap_or(u32::MAX),
    };
    let block = tile.load_box(T::ELEM.size_bytes() as u32);
    let spec = tile_map_spec(T::ELEM, m.rows, m.cols, block, 0);
    (spec, block.cols as usize)
}

/// The `rows` x `cols` box of `m` at `at`, zeros past its edges; the device panics of a load.
#[track_caller]
fn box_of<T: TileScalar>(m: &Matrix<T>, at: [usize; 2], rows: usize, cols: usize) -> Vec<T> {
    let [row, col] = at;
    let (spec, block_cols) = copy_blocks(m, at, (rows, cols), "load");
    let mut elems = vec![T::default(); rows * cols];
    for b in 0..cols / block_cols.max(1) {
        let from = (col + b * block_cols) as u64;
        match load_box(m.name, &m.data, &spec, row as u64, from) {
            Ok(part) => {
                for (r, part_row) in part.chunks_exact(block_cols).enumerate() {
                    let at = r * cols + b * block_cols;
                    elems[at..at + block_cols].copy_from_slice(part_row);
                }
            }
            Err(err) => panic!("load: {err}"),
        }
    }
    elems
}

/// A pair of tiles, as a channel payload: `channel::<(Tile<bf16, 128, 64>, Tile<bf16, 256,
/// 64>), 4>()` carries the two operands of a stage, each loaded (`stage.0.load(..)`) and read
/// (`stage.1[r][c]`) on its own. On the GPU the two lie one after the other in the slot, each
/// aligned to its swizzle's repeat, and the slot's `full` barrier expects both loads' bytes.
impl<A, B, const RA: usize, const CA: usize, const RB: usize, const CB: usize> Payload
    for (Tile<A, RA, CA>, Tile<B, RB, CB>)
where
    A: TileScalar,
    B: TileScalar,
{
    type Elem = A;
    fn zeroed() -> Self {
        (Tile::zeroed(), Tile::zeroed())
    }
    /// The first tile's elements: a pair is not copied as an array (`copy_from` and `par_iter`
    /// are compile errors for it), so this serves only the simulator's own bookkeeping.
    fn elems(&self) -> &[A] {
        self.0.elems()
    }
    fn elems_mut(&mut self) -> &mut [A] {
        self.0.elems_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::channel;
    use crate::executor::block_on;
    use crate::sim::SimMem;

    /// A `rows` × `cols` matrix named `a`, element (r, c) = `100 * r + c + 1`.
    fn matrix(rows: usize, cols: usize) -> Matrix<f32> {
        let data = (0..rows * cols)
            .map(|i| (100 * (i / cols) + i % cols + 1) as f32)
            .collect();
        Matrix::new("a", SimMem::new(data).register_read().slice(), rows, cols)
    }

    /// The tile at `at` of `m`, loaded through a channel slot and received.
    fn load_tile<const R: usize, const C: usize>(
        m: &Matrix<f32>,
        at: [usize; 2],
    ) -> Tile<f32, R, C> {
        block_on(async {
            let (mut tx, rx) = channel::<Tile<f32, R, C>, 2>();
            let mut slot = tx.reserve().await.expect("the receiver is open");
            slot.load(m, at).await;
            slot.send();
            let got = rx.recv().await.expect("a tile was sent");
            *got
        })
    }

    #[test]
    #[rustfmt::skip]
    fn a_tile_past_the_ragged_edge_reads_zeros() {
        // 6 x 12 f32: rows of 48 bytes, a multiple of 16.
        let m = matrix(6, 12);
        assert_eq!((m.rows(), m.cols()), (6, 12));
        let inside = load_tile::<2, 4>(&m, [1, 4]);
        assert_eq!(*inside, [[105.0, 106.0, 107.0, 108.0], [205.0, 206.0, 207.0, 208.0]]);
        let corner = load_tile::<4, 8>(&m, [4, 8]);
        assert_eq!(
            *corner,
            [
                [409.0, 410.0, 411.0, 412.0, 0.0, 0.0, 0.0, 0.0],
                [509.0, 510.0, 511.0, 512.0, 0.0, 0.0, 0.0, 0.0],
                [0.0; 8],
                [0.0; 8],
            ]
        );
        assert_eq!(corner.elems()[..5], [409.0, 410.0, 411.0, 412.0, 0.0]);
        assert_eq!(*load_tile::<2, 4>(&m, [6, 0]), [[0.0; 4]; 2]);
        assert_eq!(*load_tile::<2, 4>(&m, [MAX_COORD, MAX_COORD - 3]), [[0.0; 4]; 2]);
    }

    #[test]
    fn a_tile_of_column_blocks_reads_as_one_box() {
        // Rows of 64 f32 (256 bytes) are two column blocks of 32; the second runs past the
        // matrix's 80 columns.
        let m = matrix(4, 80);
        let tile = load_tile::<3, 64>(&m, [2, 28]);
        for (r, row) in tile.iter().enumerate() {
            for (c, &x) in row.iter().enumerate() {
                let (i, j) = (2 + r, 28 + c);
                let want = if i < 4 && j < 80 {
                    (100 * i + j + 1) as f32
                } else {
                    0.0
                };
                assert_eq!(x, want, "({r}, {c})");
            }
        }
    }

    /// `tile` sent through a channel and stored at `at` into a `rows` x `cols` matrix of
    /// -1.0s; the matrix's elements after.
    fn store_tile<const R: usize, const C: usize>(
        tile: Tile<f32, R, C>,
        (rows, cols): (usize, usize),
        at: [usize; 2],
    ) -> Vec<f32> {
        let mem = SimMem::new(vec![-1.0f32; rows * cols]);
        let mut m = Matrix::new_mut("c", mem.register_write().slice_mut(), rows, cols);
        block_on(async {
            let (mut tx, rx) = channel::<Tile<f32, R, C>, 2>();
            let mut slot = tx.reserve().await.expect("the receiver is open");
            *slot = tile;
            slot.send();
            let got = rx.recv().await.expect("a tile was sent");
            got.store(&mut m, at).await;
        });
        drop(m);
        mem.host_read(|d| d.to_vec())
    }

    #[test]
    #[rustfmt::skip]
    fn a_stored_tile_is_clipped_at_the_edges() {
        let tile = Tile([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]);
        // 3 x 8: the tile at (2, 4) keeps its first row; at (1, 8) nothing.
        assert_eq!(store_tile(tile, (3, 8), [2, 4]), [
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, 1.0, 2.0, 3.0, 4.0,
        ]);
        assert_eq!(store_tile(tile, (3, 8), [1, 8]), [-1.0; 24]);
        assert_eq!(store_tile(tile, (3, 4), [0, 0])[..8], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(store_tile(tile, (3, 4), [3, 0]), [-1.0; 12]);
    }

    #[test]
    fn a_stored_tile_of_column_blocks_writes_each_block() {
        // Rows of 64 f32 are two column blocks of 32; the second runs past 40 columns.
        let mut tile = <Tile<f32, 2, 64> as Payload>::zeroed();
        for (r, row) in tile.iter_mut().enumerate() {
            for (c, x) in row.iter_mut().enumerate() {
                *x = (100 * r + c) as f32;
            }
        }
        let got = store_tile(tile, (2, 40), [0, 4]);
        for (i, &x) in got.iter().enumerate() {
            let (r, c) = (i / 40, i % 40);
            let want = if c >= 4 {
                (100 * r + c - 4) as f32
            } else {
                -1.0
            };
            assert_eq!(x, want, "({r}, {c})");
        }
    }

    #[test]
    #[should_panic(
        expected = "store: the column of the tile's corner is not a multiple of 4 (16 \
                               bytes): a TMA copy starts each row on a 16-byte boundary"
    )]
    fn a_store_column_off_16_bytes_panics() {
        store_tile(Tile([[0.0f32; 4]; 2]), (4, 8), [0, 2]);
    }

    #[test]
    fn a_tile_reads_and_writes_as_rows() {
        let mut tile = <Tile<f32, 2, 4> as Payload>::zeroed();
        tile[1][2] = 7.0;
        assert_eq!(tile.elems(), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0]);
        tile.elems_mut()[3] = 1.0;
        assert_eq!(tile[0], [0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    #[should_panic(
        expected = "load: the column of the tile's corner is not a multiple of 4 (16 \
                               bytes): a TMA copy starts each row on a 16-byte boundary"
    )]
    fn a_column_off_16_bytes_panics() {
        load_tile::<2, 4>(&matrix(6, 12), [0, 2]);
    }

    #[test]
    #[should_panic(expected = "load: a coordinate of the tile's corner is past 2^31 - 1")]
    fn a_coordinate_of_2_to_the_31_panics() {
        load_tile::<2, 4>(&matrix(6, 12), [MAX_COORD + 1, 0]);
    }

    #[test]
    #[should_panic(
        expected = "load: matrix `a`: its box rows, 2 f32 elements (8 bytes), are not \
                               a multiple of 16 bytes"
    )]
    fn a_box_of_narrow_rows_panics_with_the_rule() {
        load_tile::<2, 2>(&matrix(6, 12), [0, 0]);
    }
}
