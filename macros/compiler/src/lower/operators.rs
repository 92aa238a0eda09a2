//! Scalar expressions: literals, unary and binary operators (with Rust's panics on a zero or
//! overflowing divisor), casts, the scalar methods (lowered by `math`), device panics, and the
//! `Option`s of the `checked_*` methods, of `tiles.next()` and of `rx.recv().await`.
//!
//! The long instruction sequences of the scalar methods are in `math`; this module holds the
//! expressions around them.

use proc_macro2::Span;

use super::values::Val;
use super::{Lowerer, UNWRAP_NONE};
use crate::ir::{BinOp, Block, Imm, Inst, UnOp, Value};
use crate::tir::{self, Expr, ExprKind, Lit, MathFn};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// A literal of type `ty` as a constant value.
    pub(super) fn lit_value(&mut self, lit: Lit, ty: Scalar) -> Value {
        let imm = match (lit, ty) {
            (Lit::Bool(b), _) => Imm::Bool(b),
            (Lit::Float(f), Scalar::F64) => Imm::F64(f),
            (Lit::Float(f), _) => Imm::F32(f as f32),
            (Lit::Int(v), Scalar::F64) => Imm::F64(v as i128 as f64),
            (Lit::Int(v), Scalar::F32) => Imm::F32(v as i128 as f32),
            (Lit::Int(v), _) => Imm::Int(ty.int_bits(v as i128)),
        };
        self.konst(ty, imm)
    }

    /// `-a` or `!a`.
    pub(super) fn unary_expr(&mut self, op: tir::UnOp, a: &Expr) -> Val {
        let src = self.scalar(a);
        let ty = self.values[src.0 as usize].ty;
        let dst = self.new_value(ty, None);
        let op = match op {
            tir::UnOp::Neg => UnOp::Neg,
            tir::UnOp::Not => UnOp::Not,
        };
        self.emit(Inst::Unary { dst, op, src });
        Val::Scalar(dst)
    }

    /// `a op b`: `&&` and `||` short-circuit; the rest is `arithmetic`.
    pub(super) fn binary_expr(&mut self, op: tir::BinOp, a: &Expr, b: &Expr, span: Span) -> Value {
        match op {
            tir::BinOp::LogicAnd | tir::BinOp::LogicOr => {
                // Short-circuit: the right side runs only when it decides the result.
                let lhs = self.scalar(a);
                let result = self.new_value(Scalar::Bool, None);
                self.emit(Inst::Copy {
                    dst: result,
                    src: lhs,
                });
                let rhs_block = self.sub_block(|l| {
                    let rhs = l.scalar(b);
                    l.emit(Inst::Copy {
                        dst: result,
                        src: rhs,
                    });
                });
                let cond = if op == tir::BinOp::LogicAnd {
                    lhs
                } else {
                    self.not(lhs)
                };
                self.emit(Inst::If {
                    cond,
                    then: rhs_block,
                    else_: Block::default(),
                });
                result
            }
            _ => {
                let lhs = self.scalar(a);
                let rhs = self.scalar(b);
                self.arithmetic(bin_op(op), lhs, rhs, span)
            }
        }
    }

    /// `lhs op rhs` of an operator or a compound assignment: integer `/` and `%` check their
    /// divisor (zero, and `MIN / -1`) and panic as Rust does; float `%` is the exact `fmod`.
    pub(super) fn arithmetic(&mut self, op: BinOp, lhs: Value, rhs: Value, span: Span) -> Value {
        if matches!(op, BinOp::Div | BinOp::Rem) && self.values[lhs.0 as usize].ty.is_int() {
            let ty = self.values[rhs.0 as usize].ty;
            let zero = self.konst(ty, Imm::Int(0));
            let is_zero = self.binary(BinOp::Eq, rhs, zero);
            let div = op == BinOp::Div;
            self.panic_if(
                is_zero,
                if div {
                    "attempt to divide by zero"
                } else {
                    "attempt to calculate the remainder with a divisor of zero"
                },
                span,
            );
            // `MIN / -1` overflows, and Rust panics on it in every build.
            if let Some((min, _)) = ty.int_range().filter(|_| ty.is_signed()) {
                let minus_one = self.konst(ty, Imm::Int(ty.int_bits(-1)));
                let min = self.konst(ty, Imm::Int(ty.int_bits(min)));
                let by_minus_one = self.binary(BinOp::Eq, rhs, minus_one);
                let is_min = self.binary(BinOp::Eq, lhs, min);
                let overflow = self.binary(BinOp::And, by_minus_one, is_min);
                self.panic_if(
                    overflow,
                    if div {
                        "attempt to divide with overflow"
                    } else {
                        "attempt to calculate the remainder with overflow"
                    },
                    span,
                );
            }
        }
        if op == BinOp::Rem {
            return self.rem_op(lhs, rhs);
        }
        self.binary(op, lhs, rhs)
    }

    /// `a as ty`.
    pub(super) fn cast_expr(&mut self, a: &Expr, ty: Scalar) -> Val {
        let src = self.scalar(a);
        let dst = self.new_value(ty, None);
        self.emit(Inst::Cast { dst, src });
        Val::Scalar(dst)
    }

    /// The same 16 bits as type `ty`.
    pub(super) fn half_bits(&mut self, a: &Expr, ty: Scalar) -> Val {
        let src = self.scalar(a);
        let dst = self.new_value(ty, None);
        self.emit(Inst::Bitcast { dst, src });
        Val::Scalar(dst)
    }

    /// A scalar method; a `checked_*` one (of type `ty`, an `Option`) is a tuple of whether it
    /// holds a value and the value.
    pub(super) fn math_expr(&mut self, f: MathFn, args: &[Expr], ty: &Ty, span: Span) -> Val {
        if matches!(ty, Ty::Opt(_)) {
            let vals: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
            let (some, value) = self.checked(f, vals[0], vals[1]);
            Val::Tuple(vec![some, value])
        } else {
            let vals: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
            Val::Scalar(self.math(f, &vals, span))
        }
    }

    /// `opt.is_some()` (`want_some`) or `opt.is_none()` of a `checked_*` result.
    pub(super) fn opt_is_some(&mut self, opt: &Expr, want_some: bool) -> Val {
        match self.expr(opt) {
            Val::Tuple(v) if v.len() == 2 && want_some => Val::Scalar(v[0]),
            Val::Tuple(v) if v.len() == 2 => Val::Scalar(self.not(v[0])),
            v @ Val::OptRecvSlot { some, .. } => {
                if !matches!(opt.kind, ExprKind::Local(_)) {
                    // `rx.recv().await.is_some()`: the slot received, if any, is released here.
                    self.drop_value(&v, opt.span);
                }
                Val::Scalar(if want_some { some } else { self.not(some) })
            }
            _ => Val::Unit,
        }
    }

    /// `opt.unwrap()` (no `default`: a device panic on `None`) or `opt.unwrap_or(default)` of a
    /// `checked_*` result.
    pub(super) fn opt_unwrap(&mut self, opt: &Expr, default: Option<&Expr>, span: Span) -> Val {
        match self.expr(opt) {
            Val::Tuple(v) if v.len() == 2 => match default {
                Some(d) => {
                    let d = self.scalar(d);
                    let out = self.new_value(self.values[v[1].0 as usize].ty, None);
                    self.emit(Inst::Select {
                        dst: out,
                        cond: v[0],
                        if_true: v[1],
                        if_false: d,
                    });
                    Val::Scalar(out)
                }
                None => {
                    let none = self.not(v[0]);
                    self.panic_if(none, UNWRAP_NONE, span);
                    Val::Scalar(v[1])
                }
            },
            _ => Val::Unit,
        }
    }

    /// `opt.unwrap()` of `tiles.next()`, of a receive or of a reserve (awaited where it is
    /// unwrapped, or held in a local).
    pub(super) fn unwrap_expr(&mut self, opt: &Expr, span: Span) -> Val {
        if let ExprKind::Await(inner) = &opt.kind {
            if let ExprKind::Recv(rx) = &inner.kind {
                // `rx.recv().await.unwrap()`: a receive whose end fails the launch.
                return self.recv(rx, opt.span, Some(span));
            }
        }
        match self.option_parts(opt) {
            Some((some, item)) => {
                if let Some(some) = some {
                    let none = self.not(some);
                    self.panic_if(none, UNWRAP_NONE, span);
                }
                item
            }
            None => Val::Unit,
        }
    }

    /// `panic!(message)`, or `assert!(cond, message)`: a device panic when `cond` is false.
    pub(super) fn panic_expr(&mut self, cond: Option<&Expr>, message: &str, span: Span) -> Val {
        let fails = match cond {
            Some(c) => {
                let c = self.scalar(c);
                self.not(c)
            }
            None => self.konst(Scalar::Bool, Imm::Bool(true)),
        };
        self.panic_if(fails, message, span);
        Val::Unit
    }
}

pub(super) fn bin_op(op: tir::BinOp) -> BinOp {
    match op {
        tir::BinOp::Add => BinOp::Add,
        tir::BinOp::Sub => BinOp::Sub,
        tir::BinOp::Mul => BinOp::Mul,
        tir::BinOp::Div => BinOp::Div,
        tir::BinOp::Rem => BinOp::Rem,
        tir::BinOp::And | tir::BinOp::LogicAnd => BinOp::And,
        tir::BinOp::Or | tir::BinOp::LogicOr => BinOp::Or,
        tir::BinOp::Xor => BinOp::Xor,
        tir::BinOp::Shl => BinOp::Shl,
        tir::BinOp::Shr => BinOp::Shr,
        tir::BinOp::Eq => BinOp::Eq,
        tir::BinOp::Ne => BinOp::Ne,
        tir::BinOp::Lt => BinOp::Lt,
        tir::BinOp::Le => BinOp::Le,
        tir::BinOp::Gt => BinOp::Gt,
        tir::BinOp::Ge => BinOp::Ge,
    }
}
