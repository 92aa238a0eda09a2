//! # gpu-async-wire
//!
//! What the compiler emits and the runtime decodes, defined once. The compiler
//! (`gpu-async-compiler`) writes kernels that take these parameters, write this failure record
//! and describe themselves with these kinds; the runtime (`gpu-async`) launches them and reads
//! what they wrote. Both depend on this crate, so a change here changes both, and a mismatch
//! between them cannot compile. It has no dependencies.
//!
//! - [`ScalarType`]: the scalar types that cross the host/device boundary, with their sizes and
//!   names; the compiler's scalar type is this one.
//! - [`ParamKind`]: how one kernel parameter is passed, and [`TileBox`], the box of a matrix
//!   parameter's tensor map, with the limits of a tile load's corner ([`MAX_TILE_COORD`],
//!   [`TILE_COLUMN_ALIGN`]) and the panics that enforce them on both backends.
//! - [`SiteKind`]: what a reportable place in the user's source is.
//! - [`HiddenParam`]: the parameters every generated kernel takes after the user's, for the
//!   abort protocol.
//! - [`record`]: the failure record a failing kernel writes, and [`FailureKind`], its kind word.
//! - [`trace`]: what a traced kernel takes and writes: its parameters after the hidden ones, the
//!   layout of its trace buffer, and the codes of its events.

#![no_std]
#![deny(missing_docs)]

use core::fmt;

/// A scalar type: a kernel parameter, a buffer element, a value in registers.
///
/// On the device, integers narrower than 32 bits live in 32-bit registers, kept normalized
/// (sign-extended for the signed types, zero-extended for the unsigned ones) after every
/// operation, and are passed as 32-bit kernel parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `bool`, passed to PTX as a `.u32` holding 0 or 1; one byte in memory.
    Bool,
    /// `i8`, passed to PTX as a sign-extended `.s32`.
    I8,
    /// `i16`, passed to PTX as a sign-extended `.s32`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `isize`: 64 bits on the device, as on the 64-bit hosts CUDA supports.
    Isize,
    /// `u8`, passed to PTX as a `.u32`.
    U8,
    /// `u16`, passed to PTX as a `.u32`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `usize`: 64 bits on the device, as on the 64-bit hosts CUDA supports.
    Usize,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `half::f16` (arithmetic in `f32`, rounded back, as the `half` crate does).
    F16,
    /// `half::bf16` (arithmetic in `f32`, rounded back, as the `half` crate does).
    Bf16,
}

impl ScalarType {
    /// Every scalar type, in declaration order.
    pub const ALL: [ScalarType; 15] = [
        ScalarType::Bool,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::Isize,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::Usize,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16,
        ScalarType::Bf16,
    ];

    /// The Rust name of the type (`f16` and `bf16` are the `half` crate's).
    pub const fn rust_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::Isize => "isize",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Usize => "usize",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F16 => "f16",
            ScalarType::Bf16 => "bf16",
        }
    }

    /// The name of the variant (`"F32"`), as generated code spells `ScalarType::F32`.
    pub const fn variant_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "Bool",
            ScalarType::I8 => "I8",
            ScalarType::I16 => "I16",
            ScalarType::I32 => "I32",
            ScalarType::I64 => "I64",
            ScalarType::Isize => "Isize",
            ScalarType::U8 => "U8",
            ScalarType::U16 => "U16",
            ScalarType::U32 => "U32",
            ScalarType::U64 => "U64",
            ScalarType::Usize => "Usize",
            ScalarType::F32 => "F32",
            ScalarType::F64 => "F64",
            ScalarType::F16 => "F16",
            ScalarType::Bf16 => "Bf16",
        }
    }

    /// The type with Rust name `name`.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|s| s.rust_name() == name)
    }

    /// Bytes of one element in memory (`bool` is one byte in slices and slots).
    pub const fn size(self) -> u32 {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::Bf16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64
            | ScalarType::Isize
            | ScalarType::U64
            | ScalarType::Usize
            | ScalarType::F64 => 8,
        }
    }

    /// Bits of the value (1 for `bool`).
    pub const fn bits(self) -> u32 {
        match self {
            ScalarType::Bool => 1,
            s => s.size() * 8,
        }
    }

    /// An integer type.
    pub const fn is_int(self) -> bool {
        !matches!(
            self,
            ScalarType::Bool
                | ScalarType::F32
                | ScalarType::F64
                | ScalarType::F16
                | ScalarType::Bf16
        )
    }

    /// `f16` or `bf16`: stored in 16 bits, computed in `f32`.
    pub const fn is_half(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::Bf16)
    }

    /// `f32` or `f64`.
    pub const fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// A signed integer type.
    pub const fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarType::I8
                | ScalarType::I16
                | ScalarType::I32
                | ScalarType::I64
                | ScalarType::Isize
        )
    }

    /// An integer held in a 64-bit register.
    pub const fn is_wide_int(self) -> bool {
        self.is_int() && self.size() == 8
    }

    /// The smallest and largest value of an integer type.
    pub const fn int_range(self) -> Option<(i128, i128)> {
        if !self.is_int() {
            return None;
        }
        let bits = self.bits();
        Some(if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        })
    }

    /// The register bits of the integer `v` (taken modulo 2^bits, as Rust's `as` does) in this
    /// type: narrow integers are sign- or zero-extended to 32 bits, as registers hold them.
    pub const fn int_bits(self, v: i128) -> u64 {
        match self {
            ScalarType::I8 => v as i8 as i32 as u32 as u64,
            ScalarType::I16 => v as i16 as i32 as u32 as u64,
            ScalarType::I32 => v as i32 as u32 as u64,
            ScalarType::U8 => v as u8 as u64,
            ScalarType::U16 => v as u16 as u64,
            ScalarType::U32 => v as u32 as u64,
            ScalarType::Bool => (v != 0) as u64,
            _ => v as u64,
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// How one kernel parameter is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A scalar by value: one PTX parameter.
    Scalar(ScalarType),
    /// A slice in global memory: two PTX parameters, the address (`.u64`) and the length in
    /// elements (`.u64`).
    Slice {
        /// The element type.
        elem: ScalarType,
        /// `&mut [T]` rather than `&[T]`.
        mutable: bool,
    },
    /// A row-major matrix in global memory (`&Matrix<T>`, read by TMA tile loads, or
    /// `&mut Matrix<T>`, also written by TMA tile stores): three PTX parameters, the address
    /// (`.u64`), the rows (`.u64`) and the columns (`.u64`), then one tensor map (`.param .align
    /// 128 .b8 NAME[128]`, a `CUtensorMap`) per box of `boxes`, in order.
    Matrix {
        /// The element type: `bf16`, `f16` or `f32`.
        elem: ScalarType,
        /// `&mut Matrix<T>` rather than `&Matrix<T>`.
        mutable: bool,
        /// The boxes the kernel's tile loads and stores of this matrix copy, one tensor map
        /// each.
        boxes: &'static [TileBox],
    },
}

/// The largest coordinate of a tile load's corner: a tensor map's coordinates are signed 32-bit
/// integers.
pub const MAX_TILE_COORD: u64 = (1 << 31) - 1;

/// The panic of a tile load whose corner is past [`MAX_TILE_COORD`], on both backends.
pub const TILE_CORNER_PAST: &str =
    "load: a coordinate of the tile's corner is past 2^31 - 1, the largest a tensor map takes";

/// The panic of a tile store whose corner is past [`MAX_TILE_COORD`], on both backends.
pub const TILE_STORE_CORNER_PAST: &str =
    "store: a coordinate of the tile's corner is past 2^31 - 1, the largest a tensor map takes";

/// The panic of `acc.store_tile(&mut slot, col)` whose `col` is not a multiple of the tile's
/// columns inside the accumulator, on both backends.
pub const ACC_TILE_COLUMN: &str = "store_tile: the column is not a multiple of the tile's columns less than the accumulator's columns";

/// The bytes a tile load's corner column is a multiple of: a TMA copy starts each row on a
/// 16-byte boundary (on the H200 a copy that does not stops the kernel with an illegal
/// instruction, which ends the context).
pub const TILE_COLUMN_ALIGN: u32 = 16;

/// The panic of a tile load whose corner's column is not a multiple of `per` elements
/// ([`TILE_COLUMN_ALIGN`] bytes), on both backends (its `Display` is the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileColumnMisaligned {
    /// The copy: `"load"` or `"store"`.
    pub op: &'static str,
    /// The elements in [`TILE_COLUMN_ALIGN`] bytes.
    pub per: u32,
}

impl fmt::Display for TileColumnMisaligned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: the column of the tile's corner is not a multiple of {} (16 bytes): a TMA copy starts each row on a 16-byte boundary",
            self.op, self.per
        )
    }
}

/// The box (tile) a tensor map of a matrix parameter copies: `rows` × `cols` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileBox {
    /// The rows of the box.
    pub rows: u32,
    /// The columns of the box, the elements of one box row, which are contiguous.
    pub cols: u32,
}

impl TileBox {
    /// The swizzle span in bytes (128, 64 or 32) of a box whose row is exactly that many bytes
    /// for elements of `elem_bytes`; `None` (no swizzle) otherwise.
    ///
    /// A box row of exactly 128, 64 or 32 bytes is swizzled over that span, so that the rows of
    /// a tile in shared memory fall into different banks (the layout the tensor-core
    /// instructions read); a box of any other width is copied row-major.
    pub const fn swizzle_bytes(self, elem_bytes: u32) -> Option<u32> {
        match self.cols.checked_mul(elem_bytes) {
            Some(bytes @ (128 | 64 | 32)) => Some(bytes),
            _ => None,
        }
    }

    /// The column blocks a tile of this shape is stored as in shared memory, for elements of
    /// `elem_bytes`: a row longer than 128 bytes that is a whole number of 128-byte lines is
    /// split into lines, and the tile is that many blocks of `rows` × 128 bytes one after
    /// another (block `b` holds columns `b * 128 / elem_bytes ..`), each with the 128-byte
    /// swizzle: the layout the tensor cores read for a K of more than 64 16-bit elements, and
    /// for an operand whose rows run along N. Any other tile is one block.
    pub const fn column_blocks(self, elem_bytes: u32) -> u32 {
        match self.cols.checked_mul(elem_bytes) {
            Some(bytes) if bytes > 128 && bytes % 128 == 0 => bytes / 128,
            _ => 1,
        }
    }

    /// The box one copy of a tile of this shape moves: the tile itself, or one of its
    /// [`column_blocks`](Self::column_blocks); a tile load copies each block with the same
    /// tensor map.
    pub const fn load_box(self, elem_bytes: u32) -> TileBox {
        TileBox {
            rows: self.rows,
            cols: self.cols / self.column_blocks(elem_bytes),
        }
    }
}

/// What happens at a reportable place of the user's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    /// A check that stops the kernel when it fails (a bound, an `unwrap`, a division by zero).
    Panic,
    /// A wait on a barrier (an `.await` on a channel, a role barrier), which the watchdog bounds.
    Wait,
}

/// A parameter every generated kernel takes after the user's, for the abort protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenParam {
    /// The device address of the launch stream's abort word, a `u32` in device memory.
    AbortWord,
    /// This launch's id, never 0.
    LaunchId,
    /// The device address of this launch's [`record`], in host memory mapped into the device.
    Record,
    /// The bound on each single wait, in nanoseconds; 0 turns the watchdog off.
    WatchdogNs,
}

impl HiddenParam {
    /// The hidden parameters, in the order they follow the user's.
    pub const ALL: [HiddenParam; 4] = [
        HiddenParam::AbortWord,
        HiddenParam::LaunchId,
        HiddenParam::Record,
        HiddenParam::WatchdogNs,
    ];

    /// The PTX type of the parameter.
    pub const fn ptx_type(self) -> &'static str {
        match self {
            HiddenParam::LaunchId => "u32",
            HiddenParam::AbortWord | HiddenParam::Record | HiddenParam::WatchdogNs => "u64",
        }
    }

    /// Its position among the hidden parameters.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The number of hidden parameters.
pub const HIDDEN_PARAMS: usize = HiddenParam::ALL.len();

/// What failed: word [`record::KIND`] of the failure record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A device panic: a failed check, `panic!`, `unwrap()` of `None`.
    Panic = 1,
    /// A wait that outlived the watchdog's bound.
    Watchdog = 2,
}

impl FailureKind {
    /// The value of the record's kind word.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The kind whose code is `code`.
    pub const fn from_code(code: u32) -> Option<FailureKind> {
        match code {
            1 => Some(FailureKind::Panic),
            2 => Some(FailureKind::Watchdog),
            _ => None,
        }
    }
}

/// The failure record: 8 `u32` words that the first failing thread of a launch writes into the
/// launch's slot of its stream's record ring, in host memory mapped into the device. It writes
/// every other word first, then fences (`fence.sc.sys`), then [`LAUNCH_ID`] last, so that a
/// record whose first word holds the launch's id is complete.
pub mod record {
    /// Words of the record.
    pub const WORDS: usize = 8;
    /// Bytes of the record.
    pub const BYTES: usize = WORDS * 4;
    /// The failing launch's id, written last.
    pub const LAUNCH_ID: usize = 0;
    /// The [`FailureKind`](crate::FailureKind) code.
    pub const KIND: usize = 1;
    /// The index of the failing site in the kernel's sites.
    pub const SITE: usize = 2;
    /// The block (`%ctaid.x`).
    pub const BLOCK: usize = 3;
    /// The thread (`%tid.x`).
    pub const THREAD: usize = 4;
    /// The index of the failing role in the kernel's roles.
    pub const ROLE: usize = 5;

    /// The byte offset of word `word`, as the kernel addresses it.
    pub const fn offset(word: usize) -> usize {
        word * 4
    }

    const _: () = assert!(ROLE < WORDS);
}

pub mod trace;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes_agree_with_rust() {
        for s in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(s.rust_name()), Some(s));
            assert_eq!(s.bits() == 1, s == ScalarType::Bool);
        }
        assert_eq!(ScalarType::F32.size() as usize, core::mem::size_of::<f32>());
        assert_eq!(ScalarType::Usize.size(), 8);
        assert_eq!(ScalarType::I8.int_range(), Some((-128, 127)));
        assert_eq!(ScalarType::I8.int_bits(-1), 0xFFFF_FFFF);
        assert_eq!(ScalarType::U8.int_bits(-1), 0xFF);
    }

    #[test]
    fn a_box_row_of_a_swizzle_span_is_swizzled() {
        let tile = |rows, cols| TileBox { rows, cols };
        assert_eq!(tile(64, 64).swizzle_bytes(2), Some(128));
        assert_eq!(tile(64, 32).swizzle_bytes(4), Some(128));
        assert_eq!(tile(8, 32).swizzle_bytes(2), Some(64));
        assert_eq!(tile(8, 8).swizzle_bytes(4), Some(32));
        assert_eq!(tile(64, 128).swizzle_bytes(2), None);
        assert_eq!(tile(64, 8).swizzle_bytes(2), None);
        assert_eq!(tile(1, u32::MAX).swizzle_bytes(4), None);
    }

    #[test]
    fn rows_of_whole_128_byte_lines_are_stored_as_column_blocks() {
        let tile = |rows, cols| TileBox { rows, cols };
        assert_eq!(tile(64, 256).column_blocks(2), 4);
        assert_eq!(tile(64, 256).load_box(2), tile(64, 64));
        assert_eq!(tile(128, 128).load_box(2), tile(128, 64));
        assert_eq!(tile(8, 64).load_box(4), tile(8, 32));
        assert_eq!(tile(64, 64).load_box(2), tile(64, 64));
        assert_eq!(tile(4, 96).column_blocks(2), 1);
        assert_eq!(tile(4, 12).load_box(4), tile(4, 12));
        assert_eq!(tile(1, u32::MAX).column_blocks(4), 1);
        assert_eq!(tile(64, 256).load_box(2).swizzle_bytes(2), Some(128));
    }

    #[test]
    fn hidden_parameters_and_record_words_are_in_order() {
        for (i, p) in HiddenParam::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i);
        }
        assert_eq!(record::offset(record::ROLE), 20);
        for kind in [FailureKind::Panic, FailureKind::Watchdog] {
            assert_eq!(FailureKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(FailureKind::from_code(0), None);
    }
}
