//!
//! A TMA tensor map (`CUtensorMap`, built by `cuTensorMapEncodeTiled`) describes a matrix in
//! global memory and the box (tile) that one bulk copy moves into shared memory. The driver
//! rejects a map that breaks one of its rules with a bare `CUDA_ERROR_INVALID_VALUE`, so
//! [`TileMapSpec::check`](crate::tensor_map::TileMapSpec::check) enforces those rules first and
//! names the parameter, the rule and the fix. The module also holds what the simulator needs to
//! copy a box as the hardware does: [`load_box`](crate::tensor_map::load_box) (parts of the box
//! past the matrix edge read as zero) and
//! [`swizzled_offset`](crate::tensor_map::swizzled_offset) (where a swizzled copy puts each
//! byte in shared memory). The links name the module in full because these lines join the
//! module's doc line in `lib.rs`, where only the crate's root is in scope.
//!
//! Only what a kernel parameter needs is covered: rank 2, row-major, no interleave, element
//! strides of 1.

use std::fmt;

/// The largest matrix dimension a tensor map can describe, `2^32` elements.
pub const MAX_DIM: u64 = 1 << 32;
/// The bound a row stride must stay below, `2^40` bytes.
pub const STRIDE_LIMIT: u64 = 1 << 40;
/// The largest box dimension, 256 elements.
pub const MAX_BOX_DIM: u32 = 256;
/// The alignment, in bytes, of the matrix's address, of its row stride and of a box row.
pub const ALIGN: u64 = 16;

/// The element type of a matrix a tensor map describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileElem {
    /// `half::bf16` (`CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`).
    Bf16,
    /// `half::f16` (`CU_TENSOR_MAP_DATA_TYPE_FLOAT16`).
    F16,
    /// `f32` (`CU_TENSOR_MAP_DATA_TYPE_FLOAT32`).
    F32,
}

impl TileElem {
    /// The size of one element in bytes.
    pub fn size_bytes(self) -> u64 {
        match self {
            TileElem::Bf16 | TileElem::F16 => 2,
            TileElem::F32 => 4,
        }
    }

    /// How many elements make up the 16 bytes that strides and box rows are multiples of.
    fn per_align(self) -> u64 {
        ALIGN / self.size_bytes()
    }
}

/// Displayed as the Rust type name: `bf16`, `f16` or `f32`.
impl fmt::Display for TileElem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TileElem::Bf16 => "bf16",
            TileElem::F16 => "f16",
            TileElem::F32 => "f32",
        })
    }
}

/// How a copy lays a box out in shared memory (`CUtensorMapSwizzle`). A swizzle permutes the
/// 16-byte chunks of each box row so that the rows of a tile fall into different shared-memory
/// banks; the tensor-core instructions read the same permutation. See [`swizzled_offset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Swizzle {
    /// Row-major, no permutation.
    None,
    /// 16-byte chunks permuted within a 32-byte span.
    B32,
    /// 16-byte chunks permuted within a 64-byte span.
    B64,
    /// 16-byte chunks permuted within a 128-byte span.
    B128,
}

impl Swizzle {
    /// The span in bytes whose 16-byte chunks the swizzle permutes: 32, 64 or 128, and `None`
    /// for [`Swizzle::None`]. A box row may be at most this wide.
    pub fn span_bytes(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

/// A 2D row-major matrix in global memory and the box one tensor-map copy moves. `cols` is the
/// contiguous (inner) dimension; row `r` starts `r * row_stride_bytes` bytes after `address`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileMapSpec {
    /// The element type.
    pub elem: TileElem,
    /// The number of rows.
    pub rows: u64,
    /// The number of columns, the elements of one row, which are contiguous.
    pub cols: u64,
    /// The distance in bytes from the start of one row to the start of the next.
    pub row_stride_bytes: u64,
    /// The rows of the box.
    pub box_rows: u32,
    /// The columns of the box.
    pub box_cols: u32,
    /// The shared-memory layout of a copied box.
    pub swizzle: Swizzle,
    /// The device address of element (0, 0).
    pub address: u64,
}

/// One of a matrix's two dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The outer dimension, across rows.
    Rows,
    /// The inner, contiguous dimension, along a row.
    Cols,
}

impl Axis {
    fn noun(self) -> &'static str {
        match self {
            Axis::Rows => "rows",
            Axis::Cols => "columns",
        }
    }
}

/// The rule of a tensor map that a [`TileMapSpec`] (or the data given with it) breaks, with the
/// offending values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TensorMapRule {
    /// The matrix's address is not a multiple of 16 bytes.
    AddressAlignment {
        /// The address.
        address: u64,
    },
    /// A matrix dimension is 0 or more than `2^32`.
    Dimension {
        /// Which dimension.
        axis: Axis,
        /// Its value.
        value: u64,
    },
    /// The row stride is not a multiple of 16 bytes.
    StrideAlignment {
        /// The element type.
        elem: TileElem,
        /// The row stride in bytes.
        stride_bytes: u64,
    },
    /// The row stride is shorter than a row (`cols * elem size`).
    StrideTooShort {
        /// The element type.
        elem: TileElem,
        /// The row stride in bytes.
        stride_bytes: u64,
        /// The number of columns.
        cols: u64,
    },
    /// The row stride is `2^40` bytes or more.
    StrideTooLarge {
        /// The row stride in bytes.
        stride_bytes: u64,
    },
    /// A box dimension is 0 or more than 256.
    BoxDimension {
        /// Which dimension.
        axis: Axis,
        /// Its value.
        value: u32,
    },
    /// A box row (`box_cols * elem size`) is not a multiple of 16 bytes.
    InnerBoxAlignment {
        /// The element type.
        elem: TileElem,
        /// The columns of the box.
        box_cols: u32,
    },
    /// A box row is wider than the span of the swizzle.
    InnerBoxExceedsSwizzle {
        /// The element type.
        elem: TileElem,
        /// The columns of the box.
        box_cols: u32,
        /// The swizzle.
        swizzle: Swizzle,
    },
    /// The data given for the matrix holds fewer elements than `(rows - 1) * stride + cols`,
    /// the stride counted in elements.
    MatrixTooShort {
        /// The number of elements given.
        len: u64,
        /// The number of elements the spec spans.
        needed: u64,
    },
}

/// A tensor map that cannot be encoded (or simulated): the kernel parameter it is for and the
/// rule it breaks. Displayed as one sentence that names both, the offending value and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapError {
    /// The kernel parameter the matrix is passed as.
    pub param: String,
    /// The rule broken.
    pub rule: TensorMapRule,
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "matrix `{}`: ", self.param)?;
        match self.rule {
            TensorMapRule::AddressAlignment { address } => write!(
                f,
                "its address, {address:#x}, is not a multiple of 16 bytes: start the matrix at \
                 a 16-byte aligned address (round it up to {:#x})",
                round_up(address, ALIGN)
            ),
            TensorMapRule::Dimension { axis, value } => write!(
                f,
                "its number of {}, {value}, is not between 1 and 2^32: {}",
                axis.noun(),
                match value {
                    0 => "leave an empty matrix out of the launch (no copy can read it)",
                    _ => "split the matrix into matrices of at most 4294967296 rows and columns",
                }
            ),
            TensorMapRule::StrideAlignment { elem, stride_bytes } => write!(
                f,
                "its row stride, {stride_bytes} bytes, is not a multiple of 16 bytes: pad each \
                 row to a multiple of {} {elem} elements (a stride of {} bytes)",
                elem.per_align(),
                round_up(stride_bytes, ALIGN)
            ),
            TensorMapRule::StrideTooShort {
                elem,
                stride_bytes,
                cols,
            } => write!(
                f,
                "its row stride, {stride_bytes} bytes, is shorter than a row of {cols} {elem} \
                 elements ({} bytes): give a stride of at least {} bytes",
                cols.saturating_mul(elem.size_bytes()),
                round_up(cols.saturating_mul(elem.size_bytes()), ALIGN)
            ),
            TensorMapRule::StrideTooLarge { stride_bytes } => write!(
                f,
                "its row stride, {stride_bytes} bytes, is not below 2^40 bytes: give a stride \
                 below 1099511627776 bytes, splitting the matrix if its rows lie further apart"
            ),
            TensorMapRule::BoxDimension { axis, value } => write!(
                f,
                "its box has {value} {}, not between 1 and 256: {}",
                axis.noun(),
                match value {
                    0 => "give the box at least one",
                    _ => "give the box at most 256, moving a larger tile as several boxes",
                }
            ),
            TensorMapRule::InnerBoxAlignment { elem, box_cols } => write!(
                f,
                "its box rows, {box_cols} {elem} elements ({} bytes), are not a multiple of 16 \
                 bytes: make the box's columns a multiple of {}",
                u64::from(box_cols) * elem.size_bytes(),
                elem.per_align()
            ),
            TensorMapRule::InnerBoxExceedsSwizzle {
                elem,
                box_cols,
                swizzle,
            } => {
                let span = swizzle.span_bytes().unwrap_or(0);
                write!(
                    f,
                    "its box rows, {box_cols} {elem} elements ({} bytes), are wider than the \
                     {span}-byte span of its swizzle: give the box at most {} columns with this \
                     swizzle, moving a wider tile as several boxes",
                    u64::from(box_cols) * elem.size_bytes(),
                    span / elem.size_bytes()
                )
            }
            TensorMapRule::MatrixTooShort { len, needed } => write!(
                f,
                "its data holds {len} elements, fewer than the {needed} its rows, columns and \
                 row stride span: pass the whole matrix, or describe only the rows the data holds"
            ),
        }
    }
}

impl std::error::Error for TensorMapError {}

/// `value` rounded up to a multiple of `to` (a power of two), saturating.
fn round_up(value: u64, to: u64) -> u64 {
    value.saturating_add(to - 1) & !(to - 1)
}

impl TileMapSpec {
    /// Checks the rules `cuTensorMapEncodeTiled` sets for a rank-2 map without interleave, in
    /// this order, and returns the first one broken, naming `param`:
    ///
    /// 1. the address is a multiple of 16 bytes;
    /// 2. `rows` and `cols` are between 1 and `2^32`;
    /// 3. the row stride is a multiple of 16 bytes,
    /// 4. at least a row (`cols * elem size`),
    /// 5. and below `2^40` bytes;
    /// 6. `box_rows` and `box_cols` are between 1 and 256;
    /// 7. a box row (`box_cols * elem size`) is a multiple of 16 bytes;
    /// 8. with a swizzle, a box row is at most the swizzle's span (32, 64 or 128 bytes).
    pub fn check(&self, param: &str) -> Result<(), TensorMapError> {
        let fail = |rule| {
            Err(TensorMapError {
                param: param.to_owned(),
                rule,
            })
        };
        let elem = self.elem;
        if self.address % ALIGN != 0 {
            return fail(TensorMapRule::AddressAlignment {
                address: self.address,
            });
        }
        for (axis, value) in [(Axis::Rows, self.rows), (Axis::Cols, self.cols)] {
            if value == 0 || value > MAX_DIM {
                return fail(TensorMapRule::Dimension { axis, value });
            }
        }
        let stride_bytes = self.row_stride_bytes;
        if stride_bytes % ALIGN != 0 {
            return fail(TensorMapRule::StrideAlignment { elem, stride_bytes });
        }
        if stride_bytes < self.cols * elem.size_bytes() {
            return fail(TensorMapRule::StrideTooShort {
                elem,
                stride_bytes,
                cols: self.cols,
            });
        }
        if stride_bytes >= STRIDE_LIMIT {
            return fail(TensorMapRule::StrideTooLarge { stride_bytes });
        }
        for (axis, value) in [(Axis::Rows, self.box_rows), (Axis::Cols, self.box_cols)] {
            if value == 0 || value > MAX_BOX_DIM {
                return fail(TensorMapRule::BoxDimension { axis, value });
            }
        }
        let box_cols = self.box_cols;
        let inner_box_bytes = u64::from(box_cols) * elem.size_bytes();
        if inner_box_bytes % ALIGN != 0 {
            return fail(TensorMapRule::InnerBoxAlignment { elem, box_cols });
        }
        if let Some(span) = self.swizzle.span_bytes() {
            if inner_box_bytes > span {
                return fail(TensorMapRule::InnerBoxExceedsSwizzle {
                    elem,
                    box_cols,
                    swizzle: self.swizzle,
                });
            }
        }
        Ok(())
    }

    /// The array arguments of `cuTensorMapEncodeTiled`, in the driver's order, innermost
    /// dimension first: `globalDim` (`[cols, rows]`, elements), `globalStrides` (`[row stride]`,
    /// bytes; the innermost stride is implicitly the element size and not passed), `boxDim`
    /// (`[box_cols, box_rows]`, elements) and `elementStrides` (`[1, 1]`: every element of the
    /// box is copied). Meaningful for a spec that [`check`](TileMapSpec::check) accepts.
    pub fn encode_args(&self) -> ([u64; 2], [u64; 1], [u32; 2], [u32; 2]) {
        (
            [self.cols, self.rows],
            [self.row_stride_bytes],
            [self.box_cols, self.box_rows],
            [1, 1],
        )
    }
}

/// The box of `spec` whose top-left element is at (`row0`, `col0`), read from `matrix` as a
/// tensor-map copy reads it: `box_rows * box_cols` elements, row-major, with every element
/// outside the matrix's `rows x cols` zero (`T::default()`), as the hardware fills them.
///
/// `matrix` holds the matrix's elements (`T` is the element type `spec.elem` names), row `r`
/// starting at element `r * row_stride_bytes / elem size`. Fails, naming `param`, if `spec`
/// breaks a rule of [`TileMapSpec::check`] or if `matrix` is shorter than the
/// `(rows - 1) * stride + cols` elements the spec spans
/// ([`TensorMapRule::MatrixTooShort`]).
pub fn load_box<T: Copy + Default>(
    param: &str,
    matrix: &[T],
    spec: &TileMapSpec,
    row0: u64,
    col0: u64,
) -> Result<Vec<T>, TensorMapError> {
    let stride = checked_stride(param, matrix.len(), spec)?;
    let element = |row: Option<u64>, col: Option<u64>| -> T {
        let (Some(row), Some(col)) = (row, col) else {
            return T::default();
        };
        if row >= spec.rows || col >= spec.cols {
            return T::default();
        }
        // In bounds of the spec, so below `needed <= matrix.len()`.
        usize::try_from(row * stride + col)
            .ok()
            .and_then(|i| matrix.get(i))
            .copied()
            .unwrap_or_default()
    };
    let mut out = Vec::with_capacity(spec.box_rows as usize * spec.box_cols as usize);
    for i in 0..u64::from(spec.box_rows) {
        for j in 0..u64::from(spec.box_cols) {
            out.push(element(row0.checked_add(i), col0.checked_add(j)));
        }
    }
    Ok(out)
}

/// The row stride in elements of the matrix of `spec`, which `len` elements hold: `spec`
/// checked ([`TileMapSpec::check`]), and the `(rows - 1) * stride + cols` elements it spans
/// within `len` ([`TensorMapRule::MatrixTooShort`]).
fn checked_stride(param: &str, len: usize, spec: &TileMapSpec) -> Result<u64, TensorMapError> {
    spec.check(param)?;
    let stride = spec.row_stride_bytes / spec.elem.size_bytes();
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    let needed = (spec.rows - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(spec.cols))
        .unwrap_or(u64::MAX);
    if len < needed {
        return Err(TensorMapError {
            param: param.to_owned(),
            rule: TensorMapRule::MatrixTooShort { len, needed },
        });
    }
    Ok(stride)
}

/// Writes `elems`, the box of `spec` (`box_rows * box_cols` elements, row-major) whose top-left
/// element is at (`row0`, `col0`), into `matrix` as a tensor-map store writes it: the elements
/// inside the matrix's `rows x cols`, nothing past its edges. Fails as [`load_box`] does.
pub fn store_box<T: Copy>(
    param: &str,
    matrix: &mut [T],
    spec: &TileMapSpec,
    (row0, col0): (u64, u64),
    elems: &[T],
) -> Result<(), TensorMapError> {
    let stride = checked_stride(param, matrix.len(), spec)?;
    let box_cols = spec.box_cols as usize;
    for (i, box_row) in elems.chunks(box_cols.max(1)).enumerate() {
        let Some(row) = row0.checked_add(i as u64).filter(|&r| r < spec.rows) else {
            continue;
        };
        for (j, &x) in box_row.iter().enumerate() {
            let Some(col) = col0.checked_add(j as u64).filter(|&c| c < spec.cols) else {
                continue;
            };
            // In bounds of the spec, so below `needed <= matrix.len()`.
            if let Some(dst) = usize::try_from(row * stride + col)
                .ok()
                .and_then(|k| matrix.get_mut(k))
            {
                *dst = x;
            }
        }
    }
    Ok(())
}

/// The byte offset inside a box in shared memory at which a copy with `swizzle` places the byte
/// that a plain row-major box has at `byte_offset`. Each swizzle XORs the index of a 16-byte
/// chunk (bits 4 and up) with the bits from 7 up (the index of a 128-byte line), as CUTLASS's
/// `Swizzle<B, 4, 3>` does: [`Swizzle::B128`] XORs bits `[4, 7)` with bits `[7, 10)` (chunk `c`
/// of 128-byte line `r` goes to chunk `c ^ (r % 8)`), [`Swizzle::B64`] bits `[4, 6)` with
/// `[7, 9)`, [`Swizzle::B32`] bit 4 with bit 7; [`Swizzle::None`] is the identity. Bytes keep
/// their place within a 16-byte chunk, and the pattern repeats every 1024, 512 and 256 bytes.
///
/// The hardware applies the pattern to shared-memory address bits, so this is the placement
/// within a box whose shared-memory address is a multiple of that repeat.
pub fn swizzled_offset(swizzle: Swizzle, byte_offset: u32) -> u32 {
    let mask = match swizzle {
        Swizzle::None => 0,
        Swizzle::B32 => 0b001 << 4,
        Swizzle::B64 => 0b011 << 4,
        Swizzle::B128 => 0b111 << 4,
    };
    byte_offset ^ ((byte_offset >> 3) & mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bf16 4096 x 4096 matrix with 64 x 64 boxes, 128-byte swizzled: the A operand of a GEMM.
    fn gemm_a() -> TileMapSpec {
        TileMapSpec {
            elem: TileElem::Bf16,
            rows: 4096,
            cols: 4096,
            row_stride_bytes: 4096 * 2,
            box_rows: 64,
            box_cols: 64,
            swizzle: Swizzle::B128,
            address: 0x7f00_0000_0000,
        }
    }

    /// Asserts that [`gemm_a`] changed by `spoil` breaks exactly `rule`, that the error's
    /// message contains `fix_text`, and that changed further by `fix` it passes every rule.
    fn breaks(
        spoil: impl FnOnce(&mut TileMapSpec),
        rule: TensorMapRule,
        fix_text: &str,
        fix: impl FnOnce(&mut TileMapSpec),
    ) {
        let mut spec = gemm_a();
        spoil(&mut spec);
        let err = spec.check("a").unwrap_err();
        assert_eq!((err.param.as_str(), err.rule), ("a", rule));
        assert!(err.to_string().contains(fix_text), "{err}");
        fix(&mut spec);
        assert_eq!(spec.check("a"), Ok(()));
    }

    #[test]
    fn the_gemm_operand_passes_and_encodes_innermost_first() {
        let spec = gemm_a();
        assert_eq!(spec.check("a"), Ok(()));
        assert_eq!(spec.encode_args(), ([4096, 4096], [8192], [64, 64], [1, 1]));
        let (rows, box_rows) = (100, 32);
        let tall = TileMapSpec {
            rows,
            box_rows,
            ..spec
        };
        assert_eq!(tall.encode_args(), ([4096, 100], [8192], [64, 32], [1, 1]));
    }

    #[test]
    fn address_alignment() {
        let rule = TensorMapRule::AddressAlignment { address: 0x1008 };
        breaks(
            |s| s.address = 0x1008,
            rule,
            "up to 0x1010",
            |s| s.address = 0x1010,
        );
    }

    #[test]
    fn dimensions() {
        let (axis, value) = (Axis::Rows, 0);
        let rule = TensorMapRule::Dimension { axis, value };
        let text = "rows, 0, is not between 1 and 2^32: leave an empty matrix out";
        breaks(|s| s.rows = 0, rule, text, |s| s.rows = 1);
        let (axis, value) = (Axis::Cols, MAX_DIM + 1);
        let rule = TensorMapRule::Dimension { axis, value };
        let spoil = |s: &mut TileMapSpec| (s.cols, s.row_stride_bytes) = (value, 1 << 34);
        let text = "columns, 4294967297, is not between 1 and 2^32: split the matrix";
        breaks(spoil, rule, text, |s| s.cols = MAX_DIM);
    }

    #[test]
    fn stride_alignment() {
        let (elem, stride_bytes) = (TileElem::Bf16, 2050);
        let rule = TensorMapRule::StrideAlignment { elem, stride_bytes };
        let spoil = |s: &mut TileMapSpec| (s.cols, s.row_stride_bytes) = (1025, 2050);
        let text =
            "matrix `a`: its row stride, 2050 bytes, is not a multiple of 16 bytes: pad each \
                    row to a multiple of 8 bf16 elements (a stride of 2064 bytes)";
        breaks(spoil, rule, text, |s| s.row_stride_bytes = 2064);
    }

    #[test]
    fn stride_too_short() {
        let (elem, stride_bytes, cols) = (TileElem::Bf16, 4096, 4096);
        let rule = TensorMapRule::StrideTooShort {
            elem,
            stride_bytes,
            cols,
        };
        let text = "at least 8192 bytes";
        breaks(
            |s| s.row_stride_bytes = 4096,
            rule,
            text,
            |s| s.row_stride_bytes = 8192,
        );
    }

    #[test]
    fn stride_too_large() {
        let rule = TensorMapRule::StrideTooLarge {
            stride_bytes: STRIDE_LIMIT,
        };
        let text = "below 1099511627776 bytes";
        let fix = |s: &mut TileMapSpec| s.row_stride_bytes = STRIDE_LIMIT - 16;
        breaks(|s| s.row_stride_bytes = STRIDE_LIMIT, rule, text, fix);
    }

    #[test]
    fn box_dimensions() {
        let (axis, value) = (Axis::Cols, 0);
        let rule = TensorMapRule::BoxDimension { axis, value };
        let text = "has 0 columns, not between 1 and 256: give the box at least one";
        breaks(|s| s.box_cols = 0, rule, text, |s| s.box_cols = 8);
        let (axis, value) = (Axis::Rows, 257);
        let rule = TensorMapRule::BoxDimension { axis, value };
        let text = "has 257 rows, not between 1 and 256: give the box at most 256";
        breaks(|s| s.box_rows = 257, rule, text, |s| s.box_rows = 256);
    }

    #[test]
    fn inner_box_alignment() {
        let (elem, box_cols) = (TileElem::Bf16, 60);
        let rule = TensorMapRule::InnerBoxAlignment { elem, box_cols };
        let text = "(120 bytes), are not a multiple of 16 bytes: make the box's columns a \
                    multiple of 8";
        breaks(|s| s.box_cols = 60, rule, text, |s| s.box_cols = 56);
    }

    #[test]
    fn inner_box_within_the_swizzle_span() {
        let (elem, box_cols, swizzle) = (TileElem::F32, 64, Swizzle::B64);
        let rule = TensorMapRule::InnerBoxExceedsSwizzle {
            elem,
            box_cols,
            swizzle,
        };
        let spoil = |s: &mut TileMapSpec| {
            (s.elem, s.row_stride_bytes, s.swizzle) = (elem, 4096 * 4, swizzle);
        };
        let text = "(256 bytes), are wider than the 64-byte span of its swizzle: give the box at \
                    most 16 columns";
        breaks(spoil, rule, text, |s| s.box_cols = 16);
        breaks(spoil, rule, text, |s| s.swizzle = Swizzle::None);
    }

    /// A 5 x 7 f32 matrix, rows padded to 8 elements, element (r, c) = 10 * r + c + 1; the
    /// padding holds -1 so that reading it shows.
    fn ragged() -> (Vec<f32>, TileMapSpec) {
        let spec = TileMapSpec {
            elem: TileElem::F32,
            rows: 5,
            cols: 7,
            row_stride_bytes: 32,
            box_rows: 4,
            box_cols: 4,
            swizzle: Swizzle::None,
            address: 0,
        };
        let data = (0..5 * 8)
            .map(|i| match (i / 8, i % 8) {
                (_, 7) => -1.0,
                (r, c) => (10 * r + c + 1) as f32,
            })
            .collect();
        (data, spec)
    }

    #[test]
    #[rustfmt::skip]
    fn load_box_zero_fills_past_the_edges() {
        let (data, spec) = ragged();
        let inside = [
            13.0, 14.0, 15.0, 16.0,
            23.0, 24.0, 25.0, 26.0,
            33.0, 34.0, 35.0, 36.0,
            43.0, 44.0, 45.0, 46.0,
        ];
        assert_eq!(load_box("a", &data, &spec, 1, 2).unwrap(), inside);
        let right_edge = [
             5.0,  6.0,  7.0, 0.0,
            15.0, 16.0, 17.0, 0.0,
            25.0, 26.0, 27.0, 0.0,
            35.0, 36.0, 37.0, 0.0,
        ];
        assert_eq!(load_box("a", &data, &spec, 0, 4).unwrap(), right_edge);
        let corner = [
            45.0, 46.0, 47.0, 0.0,
             0.0,  0.0,  0.0, 0.0,
             0.0,  0.0,  0.0, 0.0,
             0.0,  0.0,  0.0, 0.0,
        ];
        assert_eq!(load_box("a", &data, &spec, 4, 4).unwrap(), corner);
        assert_eq!(load_box("a", &data, &spec, 8, 8).unwrap(), [0.0; 16]);
        assert_eq!(load_box("a", &data, &spec, u64::MAX, u64::MAX - 1).unwrap(), [0.0; 16]);
    }

    #[test]
    fn store_box_writes_inside_the_edges_only() {
        let (data, spec) = ragged();
        let mut out = data.clone();
        let ones: Vec<f32> = (0..16).map(|i| 100.0 + i as f32).collect();
        store_box("c", &mut out, &spec, (4, 6), &ones).unwrap();
        // Rows 4.. of a 5-row, 7-column matrix: only (4, 6); the row's padding stays.
        let mut want = data.clone();
        want[4 * 8 + 6] = 100.0;
        assert_eq!(out, want);
        let mut out = data.clone();
        store_box("c", &mut out, &spec, (u64::MAX, u64::MAX - 1), &ones).unwrap();
        assert_eq!(out, data);
        let err = store_box("c", &mut out[..38], &spec, (0, 0), &ones).unwrap_err();
        assert_eq!(err.param, "c");
    }

    #[test]
    fn load_box_rejects_a_short_matrix_and_a_bad_spec() {
        let (data, spec) = ragged();
        // The last row needs no padding: 4 * 8 + 7 elements.
        assert!(load_box("a", &data[..39], &spec, 0, 0).is_ok());
        let err = load_box("a", &data[..38], &spec, 0, 0).unwrap_err();
        let rule = TensorMapRule::MatrixTooShort {
            len: 38,
            needed: 39,
        };
        assert_eq!((err.param.as_str(), err.rule), ("a", rule));
        let narrow = TileMapSpec {
            box_cols: 2,
            ..spec
        };
        let err = load_box("b", &data, &narrow, 0, 0).unwrap_err();
        let rule = TensorMapRule::InnerBoxAlignment {
            elem: TileElem::F32,
            box_cols: 2,
        };
        assert_eq!((err.param.as_str(), err.rule), ("b", rule));
    }

    #[test]
    fn every_swizzle_permutes_whole_chunks() {
        for swizzle in [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128] {
            let mut seen = [false; 1024];
            for offset in 0..1024 {
                let to = swizzled_offset(swizzle, offset);
                assert!(
                    to < 1024 && !seen[to as usize],
                    "{swizzle:?}: {offset} -> {to}"
                );
                seen[to as usize] = true;
                // The byte keeps its place in a chunk that moves whole.
                let chunk_to = swizzled_offset(swizzle, offset & !15);
                assert_eq!((to % 16, to & !15), (offset % 16, chunk_to), "{swizzle:?}");
            }
        }
    }

    #[test]
    fn swizzles_follow_the_line_index() {
        for (row, chunk) in (0..8).flat_map(|r| (0..8).map(move |c| (r, c))) {
            let to = swizzled_offset(Swizzle::B128, row * 128 + chunk * 16);
            assert_eq!(to, row * 128 + (chunk ^ (row % 8)) * 16);
        }
        let cases = [
            // The pattern repeats every 1024 bytes: line 43 swizzles as line 3.
            (
                Swizzle::B128,
                5 * 1024 + 3 * 128 + 16 + 7,
                5 * 1024 + 3 * 128 + 2 * 16 + 7,
            ),
            // 64B: chunk bits 4 and 5 against bits 7 and 8.
            (Swizzle::B64, 3 * 128 + 16, 3 * 128 + 2 * 16),
            (Swizzle::B64, 4 * 128 + 16, 4 * 128 + 16),
            // 32B: chunk bit 4 against bit 7.
            (Swizzle::B32, 128 + 16 + 5, 128 + 5),
            (Swizzle::B32, 256 + 16, 256 + 16),
            (Swizzle::None, 1000, 1000),
        ];
        for (swizzle, from, to) in cases {
            assert_eq!(swizzled_offset(swizzle, from), to, "{swizzle:?} {from}");
        }
    }
}
