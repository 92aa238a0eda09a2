//! The PTX side of the IR's scalar types: the register class a value lives in, and the type
//! names of its arithmetic, moves, memory accesses and comparisons. Pure functions of a
//! [`Scalar`], shared by every module that writes instructions.

use crate::ir::{BinOp, Space};
use crate::types::Scalar;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Class {
    Pred,
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl Class {
    /// The number of classes.
    pub(super) const COUNT: usize = 6;

    /// The class's position in declaration order, below [`Class::COUNT`].
    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn of(s: Scalar) -> Class {
        match s {
            Scalar::Bool => Class::Pred,
            Scalar::F32 => Class::F32,
            Scalar::F64 => Class::F64,
            Scalar::F16 | Scalar::Bf16 => Class::B16,
            s if s.is_wide_int() => Class::B64,
            _ => Class::B32,
        }
    }

    pub(super) fn prefix(self) -> &'static str {
        match self {
            Class::Pred => "%p",
            Class::B16 => "%h",
            Class::B32 => "%r",
            Class::B64 => "%rd",
            Class::F32 => "%f",
            Class::F64 => "%fd",
        }
    }

    pub(super) fn decl(self) -> &'static str {
        match self {
            Class::Pred => ".pred",
            Class::B16 => ".b16",
            Class::B32 => ".b32",
            Class::B64 => ".b64",
            Class::F32 => ".f32",
            Class::F64 => ".f64",
        }
    }
}

/// The type of a register holding `s` in arithmetic: narrow integers compute as 32-bit ones.
pub(super) fn ptx_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "pred",
        Scalar::I8 | Scalar::I16 | Scalar::I32 => "s32",
        Scalar::U8 | Scalar::U16 | Scalar::U32 => "u32",
        Scalar::I64 | Scalar::Isize => "s64",
        Scalar::U64 | Scalar::Usize => "u64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        // Halves are stored and moved as 16 bits; their arithmetic is in `f32`.
        Scalar::F16 | Scalar::Bf16 => "b16",
    }
}

/// The PTX name of a half type, in conversions.
pub(super) fn half_name(s: Scalar) -> &'static str {
    if s == Scalar::Bf16 {
        "bf16"
    } else {
        "f16"
    }
}

/// The untyped form of [`ptx_ty`], for moves and bitwise operations.
pub(super) fn bits_ty(s: Scalar) -> &'static str {
    match Class::of(s) {
        Class::Pred => "pred",
        Class::B16 => "b16",
        Class::B32 => "b32",
        Class::B64 => "b64",
        Class::F32 => "f32",
        Class::F64 => "f64",
    }
}

/// The type of `s` in memory (loads sign- or zero-extend narrow integers into 32 bits).
pub(super) fn mem_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool | Scalar::U8 => "u8",
        Scalar::I8 => "s8",
        Scalar::I16 => "s16",
        Scalar::U16 => "u16",
        s => ptx_ty(s),
    }
}

/// The exact integer type, for the saturating float-to-integer conversion.
pub(super) fn exact_int_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::I8 => "s8",
        Scalar::I16 => "s16",
        Scalar::U8 => "u8",
        Scalar::U16 => "u16",
        s => ptx_ty(s),
    }
}

pub(super) fn space_name(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Const => "const",
    }
}

pub(super) fn cmp_name(op: BinOp, ty: Scalar) -> &'static str {
    let float = ty.is_float();
    let unsigned = ty.is_int() && !ty.is_signed();
    match op {
        BinOp::Eq => "eq",
        // Rust's `!=` is true when either side is NaN: the unordered form.
        BinOp::Ne => {
            if float {
                "neu"
            } else {
                "ne"
            }
        }
        BinOp::Lt => {
            if unsigned {
                "lo"
            } else {
                "lt"
            }
        }
        BinOp::Le => {
            if unsigned {
                "ls"
            } else {
                "le"
            }
        }
        BinOp::Gt => {
            if unsigned {
                "hi"
            } else {
                "gt"
            }
        }
        BinOp::Ge => {
            if unsigned {
                "hs"
            } else {
                "ge"
            }
        }
        _ => "eq",
    }
}
