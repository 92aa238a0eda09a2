//! Arithmetic: constants, moves, unary and binary operations, `fma`, selects, bitcasts and
//! Rust's `as` casts, with narrow integers kept normalized in 32-bit registers and halves
//! computed in `f32`.

use super::error::{WriteError, WriteResult};
use super::types::{bits_ty, cmp_name, exact_int_ty, half_name, ptx_ty, Class};
use super::Writer;
use crate::ir::{BinOp, Imm, UnOp, Value};
use crate::types::Scalar;

impl Writer<'_> {
    /// `dst = imm`.
    pub(super) fn constant(&mut self, dst: Value, imm: &Imm) -> WriteResult {
        let d = self.reg(dst);
        match (imm, self.k.ty(dst)) {
            (Imm::Bool(b), _) => {
                let t = self.tmp(Class::B32);
                self.line(format!("mov.u32 {t}, {};", u32::from(*b)))?;
                self.line(format!("setp.ne.u32 {d}, {t}, 0;"))
            }
            (Imm::F32(f), _) => self.line(format!("mov.f32 {d}, 0f{:08X};", f.to_bits())),
            (Imm::F64(f), _) => self.line(format!("mov.f64 {d}, 0d{:016X};", f.to_bits())),
            (Imm::Int(v), s) if s.is_wide_int() => self.line(format!("mov.b64 {d}, {v};")),
            (Imm::Int(v), s) if s.is_half() => self.line(format!("mov.b16 {d}, {};", *v as u16)),
            (Imm::Int(v), _) => self.line(format!("mov.b32 {d}, {};", *v as u32)),
        }
    }

    /// `dst = src`.
    pub(super) fn copy(&mut self, dst: Value, src: Value) -> WriteResult {
        let (d, s) = (self.reg(dst), self.reg(src));
        self.line(format!("mov.{} {d}, {s};", bits_ty(self.k.ty(dst))))
    }

    /// `dst = op src`.
    pub(super) fn unary(&mut self, dst: Value, op: UnOp, src: Value) -> WriteResult {
        let (d, s) = (self.reg(dst), self.reg(src));
        let ty = self.k.ty(dst);
        let t = ptx_ty(ty);
        match op {
            // Negating a half flips its sign bit, as the `half` crate does.
            UnOp::Neg if ty.is_half() => self.line(format!("xor.b16 {d}, {s}, 0x8000;")),
            UnOp::Neg if ty.is_float() => self.line(format!("neg.{t} {d}, {s};")),
            UnOp::Neg => {
                let signed = if ty.is_wide_int() { "s64" } else { "s32" };
                self.line(format!("neg.{signed} {d}, {s};"))?;
                self.normalize(&d, ty)
            }
            UnOp::Not => {
                self.line(format!("not.{} {d}, {s};", bits_ty(ty)))?;
                self.normalize(&d, ty)
            }
            UnOp::Abs => {
                self.line(format!("abs.{t} {d}, {s};"))?;
                self.normalize(&d, ty)
            }
            UnOp::Sqrt => self.line(format!("sqrt.rn.{t} {d}, {s};")),
            UnOp::Floor => self.line(format!("cvt.rmi.{t}.{t} {d}, {s};")),
            UnOp::Ceil => self.line(format!("cvt.rpi.{t}.{t} {d}, {s};")),
            UnOp::Trunc => self.line(format!("cvt.rzi.{t}.{t} {d}, {s};")),
            UnOp::Ex2Approx => self.line(format!("ex2.approx.ftz.f32 {d}, {s};")),
            UnOp::Lg2Approx => self.line(format!("lg2.approx.f32 {d}, {s};")),
        }
    }

    pub(super) fn binary(&mut self, dst: Value, op: BinOp, lhs: Value, rhs: Value) -> WriteResult {
        let (d, a, b) = (self.reg(dst), self.reg(lhs), self.reg(rhs));
        let ty = self.k.ty(lhs);
        if ty == Scalar::Bool {
            return match op {
                BinOp::And => self.line(format!("and.pred {d}, {a}, {b};")),
                BinOp::Or => self.line(format!("or.pred {d}, {a}, {b};")),
                BinOp::Xor | BinOp::Ne => self.line(format!("xor.pred {d}, {a}, {b};")),
                BinOp::Eq => {
                    self.line(format!("xor.pred {d}, {a}, {b};"))?;
                    self.line(format!("not.pred {d}, {d};"))
                }
                _ => {
                    // Ordered comparisons of bools: compare them as 0/1.
                    let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                    self.line(format!("selp.u32 {x}, 1, 0, {a};"))?;
                    self.line(format!("selp.u32 {y}, 1, 0, {b};"))?;
                    self.line(format!(
                        "setp.{}.u32 {d}, {x}, {y};",
                        cmp_name(op, Scalar::U32)
                    ))
                }
            };
        }
        if ty.is_half() {
            // In `f32`, rounded back once: the `half` crate's arithmetic, and the correctly
            // rounded half result (f32 holds twice a half's precision and more).
            let h = half_name(ty);
            let (fa, fb) = (self.tmp(Class::F32), self.tmp(Class::F32));
            self.line(format!("cvt.f32.{h} {fa}, {a};"))?;
            self.line(format!("cvt.f32.{h} {fb}, {b};"))?;
            if op.is_comparison() {
                return self.line(format!(
                    "setp.{}.f32 {d}, {fa}, {fb};",
                    cmp_name(op, Scalar::F32)
                ));
            }
            let name = match op {
                BinOp::Add => "add",
                BinOp::Sub => "sub",
                BinOp::Mul => "mul",
                BinOp::Div => "div",
                _ => return Err(no_operation(op, ty)),
            };
            let r = self.tmp(Class::F32);
            self.line(format!("{name}.rn.f32 {r}, {fa}, {fb};"))?;
            return self.line(format!("cvt.rn.{h}.f32 {d}, {r};"));
        }
        if op.is_comparison() {
            return self.line(format!(
                "setp.{}.{} {d}, {a}, {b};",
                cmp_name(op, ty),
                ptx_ty(ty)
            ));
        }
        let t = ptx_ty(ty);
        if ty.is_float() {
            return match op {
                BinOp::Add => self.line(format!("add.rn.{t} {d}, {a}, {b};")),
                BinOp::Sub => self.line(format!("sub.rn.{t} {d}, {a}, {b};")),
                BinOp::Mul => self.line(format!("mul.rn.{t} {d}, {a}, {b};")),
                BinOp::Div => self.line(format!("div.rn.{t} {d}, {a}, {b};")),
                // PTX's copysign takes the sign from its first operand.
                BinOp::CopySign => self.line(format!("copysign.{t} {d}, {b}, {a};")),
                BinOp::Min => self.line(format!("min.{t} {d}, {a}, {b};")),
                BinOp::Max => self.line(format!("max.{t} {d}, {a}, {b};")),
                _ => Err(no_operation(op, ty)),
            };
        }
        match op {
            BinOp::Min => return self.line(format!("min.{t} {d}, {a}, {b};")),
            BinOp::Max => return self.line(format!("max.{t} {d}, {a}, {b};")),
            BinOp::Add => self.line(format!("add.{t} {d}, {a}, {b};"))?,
            BinOp::Sub => self.line(format!("sub.{t} {d}, {a}, {b};"))?,
            BinOp::Mul => self.line(format!("mul.lo.{t} {d}, {a}, {b};"))?,
            // Operands are normalized, so the 32-bit quotient of narrow integers is exact (the one
            // overflowing case, MIN / -1, panics before this).
            // An unsigned division by a constant power of two is a shift, its remainder a
            // mask: ptxas calls its 64-bit division routine even for a constant divisor.
            BinOp::Div | BinOp::Rem if !ty.is_signed() && self.power_of_two(rhs).is_some() => {
                let shift = self.power_of_two(rhs).unwrap_or(0);
                return if op == BinOp::Div {
                    self.line(format!("shr.{t} {d}, {a}, {shift};"))
                } else {
                    let mask = (1u64 << shift) - 1;
                    self.line(format!("and.{} {d}, {a}, {mask};", bits_ty(ty)))
                };
            }
            BinOp::Div | BinOp::Rem if ty.is_wide_int() => {
                return self.wide_division(op == BinOp::Div, ty, &d, &a, &b)
            }
            BinOp::Div => return self.line(format!("div.{t} {d}, {a}, {b};")),
            BinOp::Rem => return self.line(format!("rem.{t} {d}, {a}, {b};")),
            BinOp::And => return self.line(format!("and.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Or => return self.line(format!("or.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Xor => return self.line(format!("xor.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Shl | BinOp::Shr => {
                // Rust's wrapping shift: the amount is taken modulo the width.
                let width = ty.bits() - 1;
                let amount = self.tmp(Class::B32);
                if self.k.ty(rhs).is_wide_int() {
                    self.line(format!("cvt.u32.u64 {amount}, {b};"))?;
                    self.line(format!("and.b32 {amount}, {amount}, {width};"))?;
                } else {
                    self.line(format!("and.b32 {amount}, {b}, {width};"))?;
                }
                if op == BinOp::Shl {
                    self.line(format!("shl.{} {d}, {a}, {amount};", bits_ty(ty)))?;
                } else {
                    // Normalized narrow operands shift right correctly as 32-bit ones.
                    return self.line(format!("shr.{t} {d}, {a}, {amount};"));
                }
            }
            _ => return Err(no_operation(op, ty)),
        }
        self.normalize(&d, ty)
    }

    /// A 64-bit division or remainder, `d = a / b` or `a % b`, through a 32-bit `div` when both
    /// operands fit in 32 bits unsigned (as nvcc's front end does): ptxas makes a 64-bit `div` a
    /// call of a routine of some 70 instructions, a 32-bit one about 20. Negative operands (their
    /// high bits set) take the 64-bit path, so the 32-bit one is exact for signed types too.
    fn wide_division(&mut self, div: bool, ty: Scalar, d: &str, a: &str, b: &str) -> WriteResult {
        let op = if div { "div" } else { "rem" };
        let t = ptx_ty(ty);
        let (high, narrow) = (self.tmp(Class::B64), self.tmp(Class::Pred));
        let (a32, b32, r32) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let (wide, done) = (self.label("div_wide"), self.label("div_done"));
        self.line(format!("or.b64 {high}, {a}, {b};"))?;
        self.line(format!("shr.u64 {high}, {high}, 32;"))?;
        self.line(format!("setp.eq.u64 {narrow}, {high}, 0;"))?;
        self.line(format!("@!{narrow} bra {wide};"))?;
        self.line(format!("cvt.u32.u64 {a32}, {a};"))?;
        self.line(format!("cvt.u32.u64 {b32}, {b};"))?;
        self.line(format!("{op}.u32 {r32}, {a32}, {b32};"))?;
        self.line(format!("cvt.u64.u32 {d}, {r32};"))?;
        self.line(format!("bra.uni {done};"))?;
        self.place_label(&wide)?;
        self.line(format!("{op}.{t} {d}, {a}, {b};"))?;
        self.place_label(&done)
    }

    /// Brings an integer narrower than 32 bits back to its normalized form in its register
    /// (wrapping, as Rust's wrapping arithmetic does).
    fn normalize(&mut self, reg: &str, ty: Scalar) -> WriteResult {
        match ty {
            Scalar::I8 => self.line(format!("cvt.s32.s8 {reg}, {reg};")),
            Scalar::I16 => self.line(format!("cvt.s32.s16 {reg}, {reg};")),
            Scalar::U8 => self.line(format!("and.b32 {reg}, {reg}, 255;")),
            Scalar::U16 => self.line(format!("and.b32 {reg}, {reg}, 65535;")),
            _ => Ok(()),
        }
    }

    /// Rust's `as` between scalars: integers wrap (truncate, or sign- or zero-extend by the
    /// source's signedness), floats to integers saturate (NaN to 0, which PTX's `cvt` does for
    /// integer destinations), integers to floats round to nearest.
    pub(super) fn cast(&mut self, dst: Value, src: Value) -> WriteResult {
        let (d, s) = (self.reg(dst), self.reg(src));
        let (to, from) = (self.k.ty(dst), self.k.ty(src));
        use Scalar::*;
        if from == to {
            return self.line(format!("mov.{} {d}, {s};", bits_ty(to)));
        }
        match (from, to) {
            (F16 | Bf16, F32) => self.line(format!("cvt.f32.{} {d}, {s};", half_name(from))),
            (F16 | Bf16, F64) => {
                let t = self.tmp(Class::F32);
                self.line(format!("cvt.f32.{} {t}, {s};", half_name(from)))?;
                self.line(format!("cvt.f64.f32 {d}, {t};"))
            }
            (F32 | F64, F16 | Bf16) => self.line(format!(
                "cvt.rn.{}.{} {d}, {s};",
                half_name(to),
                ptx_ty(from)
            )),
            (F16 | Bf16, _) | (_, F16 | Bf16) => Err(WriteError::inconsistent(
                "a cast of a half from or to a float",
                format!("{from} as {to}"),
            )),
            (Bool, F32) => self.line(format!("selp.f32 {d}, 0f3F800000, 0f00000000, {s};")),
            (Bool, F64) => self.line(format!(
                "selp.f64 {d}, 0d3FF0000000000000, 0d0000000000000000, {s};"
            )),
            (Bool, _) => self.line(format!("selp.{} {d}, 1, 0, {s};", ptx_ty(to))),
            (_, Bool) => self.line(format!("setp.ne.{} {d}, {s}, 0;", ptx_ty(from))),
            (F32, F64) => self.line(format!("cvt.f64.f32 {d}, {s};")),
            (F64, F32) => self.line(format!("cvt.rn.f32.f64 {d}, {s};")),
            (F32 | F64, _) => {
                self.line(format!(
                    "cvt.rzi.{}.{} {d}, {s};",
                    exact_int_ty(to),
                    ptx_ty(from)
                ))?;
                // `cvt` gives 0 for NaN only for some widths (the H200 gave `MIN` for `f32` to
                // 64-bit and for every `f64` conversion); Rust's `as` always gives 0.
                let nan = self.tmp(Class::Pred);
                self.line(format!("setp.nan.{} {nan}, {s}, {s};", ptx_ty(from)))?;
                self.line(format!("selp.{} {d}, 0, {d}, {nan};", bits_ty(to)))
            }
            (_, F32 | F64) => {
                self.line(format!("cvt.rn.{}.{} {d}, {s};", ptx_ty(to), ptx_ty(from)))
            }
            _ if to.is_wide_int() => {
                if from.is_wide_int() {
                    self.line(format!("mov.b64 {d}, {s};"))
                } else if from.is_signed() {
                    self.line(format!("cvt.s64.s32 {d}, {s};"))
                } else {
                    self.line(format!("cvt.u64.u32 {d}, {s};"))
                }
            }
            _ => {
                if from.is_wide_int() {
                    self.line(format!("cvt.u32.u64 {d}, {s};"))?;
                } else {
                    self.line(format!("mov.b32 {d}, {s};"))?;
                }
                self.normalize(&d, to)
            }
        }
    }

    /// `dst = if cond { if_true } else { if_false }`.
    pub(super) fn select(
        &mut self,
        dst: Value,
        cond: Value,
        if_true: Value,
        if_false: Value,
    ) -> WriteResult {
        let (d, c, a, b) = (
            self.reg(dst),
            self.reg(cond),
            self.reg(if_true),
            self.reg(if_false),
        );
        let ty = self.k.ty(dst);
        if ty == Scalar::Bool {
            // d = (c & a) | (!c & b)
            let (x, y) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
            self.line(format!("and.pred {x}, {c}, {a};"))?;
            self.line(format!("not.pred {y}, {c};"))?;
            self.line(format!("and.pred {y}, {y}, {b};"))?;
            self.line(format!("or.pred {d}, {x}, {y};"))
        } else {
            self.line(format!("selp.{} {d}, {a}, {b}, {c};", bits_ty(ty)))
        }
    }

    /// The bits of `src` as `dst`'s type, of the same size.
    pub(super) fn bitcast(&mut self, dst: Value, src: Value) -> WriteResult {
        let (d, s) = (self.reg(dst), self.reg(src));
        let (to, from) = (Class::of(self.k.ty(dst)), Class::of(self.k.ty(src)));
        match (from, to) {
            // A `u16` lives in a 32-bit register, a half in a 16-bit one.
            (Class::B16, Class::B32) => self.line(format!("cvt.u32.u16 {d}, {s};")),
            (Class::B32, Class::B16) => self.line(format!("cvt.u16.u32 {d}, {s};")),
            _ => self.line(format!("mov.b{} {d}, {s};", self.k.ty(dst).size() * 8)),
        }
    }

    /// `dst = a * b + c`, rounded once.
    pub(super) fn fma(&mut self, dst: Value, a: Value, b: Value, c: Value) -> WriteResult {
        let (d, a, b, c) = (self.reg(dst), self.reg(a), self.reg(b), self.reg(c));
        let t = ptx_ty(self.k.ty(dst));
        self.line(format!("fma.rn.{t} {d}, {a}, {b}, {c};"))
    }
}

/// Binary operation `op` on operands of type `ty`, which the checker does not let through.
fn no_operation(op: BinOp, ty: Scalar) -> WriteError {
    WriteError::inconsistent(
        format!("a binary operation PTX has for {ty}"),
        format!("{op:?}"),
    )
}

impl Writer<'_> {
    /// `log2(v)` when `v` is a constant power of two.
    fn power_of_two(&self, v: Value) -> Option<u32> {
        self.constants
            .get(&v)
            .filter(|c| c.is_power_of_two())
            .map(|c| c.trailing_zeros())
    }
}
