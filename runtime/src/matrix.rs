//! Matrix parameters: a [`DeviceBuffer`] seen as a row-major matrix ([`MatrixView`]), which a
//! kernel takes as `&Matrix<T>` and reads a tile at a time with TMA tile loads
//! ([`SendSlot::load`](crate::device::SendSlot::load)), or ([`MatrixViewMut`]) as
//! `&mut Matrix<T>`, which it also writes a tile at a time with TMA tile stores
//! ([`RecvSlot::store`](crate::device::RecvSlot::store)).
//!
//! On CUDA a matrix parameter is passed as its address, rows and columns, and one tensor map
//! (`CUtensorMap`) per box the kernel's loads copy; the launch checks each map against the rules
//! of [`TileMapSpec::check`] first, so that a matrix the driver would reject fails with
//! [`Error::TensorMap`], naming the parameter and the rule. The simulator checks the same rules.

use std::fmt;

use gpu_async_wire::TileBox;

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::spec::KernelScalar;
use crate::tensor_map::{Swizzle, TileElem, TileMapSpec};

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
}

/// The element type of a matrix parameter and of its tiles: `half::bf16`, `half::f16` or
/// `f32`, the types a TMA tensor map copies for the tensor cores. Sealed: implemented for those
/// three only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of a matrix or a tile",
    label = "not `bf16`, `f16` or `f32`",
    note = "a `Matrix<T>` parameter, its `MatrixView<T>` and a `Tile<T, R, C>` hold `half::bf16`, `half::f16` or `f32`"
)]
pub trait TileScalar: sealed::Sealed + KernelScalar {
    /// The element type as a tensor map names it.
    const ELEM: TileElem;
}

impl TileScalar for half::bf16 {
    const ELEM: TileElem = TileElem::Bf16;
}

impl TileScalar for half::f16 {
    const ELEM: TileElem = TileElem::F16;
}

impl TileScalar for f32 {
    const ELEM: TileElem = TileElem::F32;
}

/// A [`DeviceBuffer`] seen as a `rows` × `cols` row-major matrix, the host argument of a kernel
/// parameter `&Matrix<T>`: element (r, c) is element `r * cols + c` of the buffer, which holds
/// at least `rows * cols` elements (the matrix may be a prefix of it). Made by
/// [`DeviceBuffer::as_matrix`]; it borrows the buffer as a `&[T]` parameter does.
///
/// A launch that passes it checks what the TMA hardware needs of the matrix and of each box
/// the kernel loads from it (see [`TileMapSpec::check`]): among others, rows of a multiple of
/// 16 bytes (`cols` a multiple of 8 for `bf16` and `f16`, of 4 for `f32`) and at most `2^32`
/// rows and columns. A matrix that breaks a rule fails the launch with [`Error::TensorMap`].
pub struct MatrixView<'a, T: TileScalar> {
    buffer: &'a DeviceBuffer<T>,
    rows: usize,
    cols: usize,
}

impl<T: TileScalar> Clone for MatrixView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: TileScalar> Copy for MatrixView<'_, T> {}

impl<T: TileScalar> fmt::Debug for MatrixView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatrixView")
            .field("elem", &T::ELEM)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("buffer", self.buffer)
            .finish()
    }
}

impl<'a, T: TileScalar> MatrixView<'a, T> {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns, the elements of one row.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The buffer that holds the elements.
    pub fn buffer(&self) -> &'a DeviceBuffer<T> {
        self.buffer
    }
}

/// A [`DeviceBuffer`] seen as a `rows` × `cols` row-major matrix that the kernel writes, the host
/// argument of a kernel parameter `&mut Matrix<T>`: as [`MatrixView`], borrowing the buffer
/// mutably as a `&mut [T]` parameter does. Made by [`DeviceBuffer::as_matrix_mut`].
///
/// The launch checks it as it checks a [`MatrixView`], against every box the kernel loads from
/// or stores into it.
pub struct MatrixViewMut<'a, T: TileScalar> {
    buffer: &'a mut DeviceBuffer<T>,
    rows: usize,
    cols: usize,
}

impl<T: TileScalar> fmt::Debug for MatrixViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatrixViewMut")
            .field("elem", &T::ELEM)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("buffer", &*self.buffer)
            .finish()
    }
}

impl<'a, T: TileScalar> MatrixViewMut<'a, T> {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns, the elements of one row.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The buffer that holds the elements.
    pub fn buffer(&mut self) -> &mut DeviceBuffer<T> {
        self.buffer
    }

    /// The buffer, for the launch that writes it.
    pub(crate) fn into_buffer(self) -> &'a mut DeviceBuffer<T> {
        self.buffer
    }
}

/// The elements a `rows` × `cols` matrix takes, if `len` holds them; the error of `op`
/// otherwise.
fn matrix_elems(op: &str, rows: usize, cols: usize, len: usize) -> Result<()> {
    match rows.checked_mul(cols) {
        Some(n) if n <= len => Ok(()),
        Some(n) => Err(Error::Buffer(format!(
            "{op}: a {rows} x {cols} matrix takes {n} elements, more than the buffer's {len}"
        ))),
        None => Err(Error::Buffer(format!(
            "{op}: a {rows} x {cols} matrix has more elements than a usize counts"
        ))),
    }
}

impl<T: TileScalar> DeviceBuffer<T> {
    /// The buffer as a `rows` × `cols` row-major matrix, for a kernel parameter `&Matrix<T>`:
    /// its first `rows * cols` elements, row after row.
    ///
    /// Fails with [`Error::Buffer`] when `rows * cols` overflows or is more than the buffer's
    /// length. What the TMA hardware needs of the matrix (16-byte rows, at most `2^32` rows and
    /// columns, none empty) is checked by the launch, against the boxes the kernel loads.
    pub fn as_matrix(&self, rows: usize, cols: usize) -> Result<MatrixView<'_, T>> {
        matrix_elems("as_matrix", rows, cols, self.len())?;
        Ok(MatrixView {
            buffer: self,
            rows,
            cols,
        })
    }

    /// The buffer as a `rows` × `cols` row-major matrix that the kernel writes, for a kernel
    /// parameter `&mut Matrix<T>`: its first `rows * cols` elements, row after row. Fails as
    /// [`DeviceBuffer::as_matrix`] does.
    pub fn as_matrix_mut(&mut self, rows: usize, cols: usize) -> Result<MatrixViewMut<'_, T>> {
        matrix_elems("as_matrix_mut", rows, cols, self.len())?;
        Ok(MatrixViewMut {
            buffer: self,
            rows,
            cols,
        })
    }
}

/// The swizzle of a copy of `tile` with elements of `elem` (see [`TileBox::swizzle_bytes`]).
pub(crate) fn tile_swizzle(tile: TileBox, elem: TileElem) -> Swizzle {
    // An element is 2 or 4 bytes.
    match tile.swizzle_bytes(elem.size_bytes() as u32) {
        Some(128) => Swizzle::B128,
        Some(64) => Swizzle::B64,
        Some(32) => Swizzle::B32,
        _ => Swizzle::None,
    }
}

/// The tensor map of box `tile` over a dense row-major `rows` × `cols` matrix of `elem` at
/// `address` (0 in the simulator, where there is none).
pub(crate) fn tile_map_spec(
    elem: TileElem,
    rows: usize,
    cols: usize,
    tile: TileBox,
    address: u64,
) -> TileMapSpec {
    let (rows, cols) = (rows as u64, cols as u64);
    TileMapSpec {
        elem,
        rows,
        cols,
        row_stride_bytes: cols.saturating_mul(elem.size_bytes()),
        box_rows: tile.rows,
        box_cols: tile.cols,
        swizzle: tile_swizzle(tile, elem),
        address,
    }
}

/// The tensor maps of `boxes` over a `rows` × `cols` matrix of `T` at `address` (0 in the simulator), each checked against
/// the encode rules first: a broken rule is [`Error::TensorMap`] of `kernel`, naming the
/// parameter `name`. Both backends' launches check a matrix parameter with it.
pub(crate) fn checked_tile_maps<T: TileScalar>(
    kernel: &'static str,
    name: &'static str,
    (rows, cols): (usize, usize),
    boxes: &[TileBox],
    address: u64,
) -> Result<Vec<TileMapSpec>> {
    boxes
        .iter()
        .map(|&tile| {
            let spec = tile_map_spec(T::ELEM, rows, cols, tile, address);
            spec.check(name)
                .map(|()| spec)
                .map_err(|error| Error::TensorMap { kernel, error })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Device;
    use crate::tensor_map::{Axis, TensorMapRule};
    use half::bf16;

    #[test]
    fn as_matrix_mut_takes_a_prefix_and_rejects_too_many_elements() -> Result<()> {
        let device = Device::simulator();
        let mut buf = device.alloc::<f32>(100)?;
        let mut m = buf.as_matrix_mut(6, 16)?;
        assert_eq!((m.rows(), m.cols(), m.buffer().len()), (6, 16, 100));
        assert!(format!("{m:?}").starts_with("MatrixViewMut { elem: F32, rows: 6, cols: 16"));
        match buf.as_matrix_mut(7, 16) {
            Err(Error::Buffer(message)) => assert_eq!(
                message,
                "as_matrix_mut: a 7 x 16 matrix takes 112 elements, more than the buffer's 100"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            buf.as_matrix_mut(usize::MAX, 2),
            Err(Error::Buffer(_))
        ));
        Ok(())
    }

    #[test]
    fn as_matrix_takes_a_prefix_and_rejects_too_many_elements() -> Result<()> {
        let device = Device::simulator();
        let buf = device.alloc::<bf16>(100)?;
        let m = buf.as_matrix(6, 16)?;
        assert_eq!((m.rows(), m.cols(), m.buffer().len()), (6, 16, 100));
        let copy = m;
        assert_eq!(
            format!("{copy:?}").split(',').next(),
            Some("MatrixView { elem: Bf16")
        );
        assert!(buf.as_matrix(10, 10).is_ok());
        match buf.as_matrix(7, 16) {
            Err(Error::Buffer(msg)) => assert_eq!(
                msg,
                "as_matrix: a 7 x 16 matrix takes 112 elements, more than the buffer's 100"
            ),
            other => panic!("expected Error::Buffer, got {other:?}"),
        }
        match buf.as_matrix(usize::MAX, 2) {
            Err(Error::Buffer(msg)) => assert!(msg.contains("more elements than a usize"), "{msg}"),
            other => panic!("expected Error::Buffer, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn a_box_s_map_swizzles_a_row_of_a_span_and_strides_by_the_row() {
        let tile = |rows, cols| TileBox { rows, cols };
        let spec = tile_map_spec(TileElem::Bf16, 4096, 4096, tile(64, 64), 0x1000);
        assert_eq!(
            (
                spec.swizzle,
                spec.row_stride_bytes,
                spec.box_rows,
                spec.box_cols
            ),
            (Swizzle::B128, 8192, 64, 64)
        );
        assert_eq!(spec.check("a"), Ok(()));
        assert_eq!(tile_swizzle(tile(8, 16), TileElem::F32), Swizzle::B64);
        assert_eq!(tile_swizzle(tile(8, 16), TileElem::F16), Swizzle::B32);
        assert_eq!(tile_swizzle(tile(8, 128), TileElem::F16), Swizzle::None);
        // 100 bf16 columns: 200-byte rows, not a multiple of 16 bytes.
        let err = tile_map_spec(TileElem::Bf16, 8, 100, tile(8, 64), 0)
            .check("a")
            .unwrap_err();
        assert!(matches!(err.rule, TensorMapRule::StrideAlignment { .. }));
        let err = tile_map_spec(TileElem::F32, 0, 8, tile(8, 8), 0)
            .check("b")
            .unwrap_err();
        let rule = TensorMapRule::Dimension {
            axis: Axis::Rows,
            value: 0,
        };
        assert_eq!((err.param.as_str(), err.rule), ("b", rule));
    }
}
