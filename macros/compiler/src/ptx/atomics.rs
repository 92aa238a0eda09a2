//! Atomic operations on global memory, at GPU scope, with the ordering's PTX semantics.

use super::error::{WriteError, WriteResult};
use super::types::{bits_ty, ptx_ty, Class};
use super::Writer;
use crate::ir::Value;
use crate::tir::{AtomicOp, MemOrder};

impl Writer<'_> {
    /// An atomic operation at GPU scope, with the ordering's PTX semantics (`SeqCst` is a
    /// `fence.sc` followed by the acquire/release form).
    pub(super) fn atomic(
        &mut self,
        dst: Option<Value>,
        op: AtomicOp,
        addr: Value,
        operands: &[Value],
        order: MemOrder,
    ) -> WriteResult {
        let a = self.reg(addr);
        let ty = match (dst, operands.first()) {
            (Some(d), _) => self.k.ty(d),
            (None, Some(v)) => self.k.ty(*v),
            (None, None) => {
                return Err(WriteError::inconsistent(
                    "an atomic operation with a result or an operand",
                    format!("{op:?} with neither"),
                ))
            }
        };
        let vals: Vec<String> = operands.iter().map(|v| self.reg(*v)).collect();
        if order == MemOrder::SeqCst {
            self.line("fence.sc.gpu;")?;
        }
        let t = ptx_ty(ty);
        let b = bits_ty(ty);
        match op {
            AtomicOp::Load => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let d = self.reg(dst.ok_or_else(|| no_result(op))?);
                self.line(format!("ld.{sem}.gpu.global.{t} {d}, [{a}];"))
            }
            AtomicOp::Store => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "release"
                };
                self.line(format!("st.{sem}.gpu.global.{t} [{a}], {};", vals[0]))
            }
            _ => {
                let sem = match order {
                    MemOrder::Relaxed => "relaxed",
                    MemOrder::Acquire => "acquire",
                    MemOrder::Release => "release",
                    MemOrder::AcqRel | MemOrder::SeqCst => "acq_rel",
                };
                let d = self.reg(dst.ok_or_else(|| no_result(op))?);
                // Addition wraps the same for signed and unsigned: PTX has it as unsigned.
                let add_ty = if ty.is_wide_int() { "u64" } else { "u32" };
                match op {
                    AtomicOp::Add => self.line(format!(
                        "atom.{sem}.gpu.global.add.{add_ty} {d}, [{a}], {};",
                        vals[0]
                    )),
                    AtomicOp::Sub => {
                        let n = self.tmp(Class::of(ty));
                        let neg = if ty.is_wide_int() { "s64" } else { "s32" };
                        self.line(format!("neg.{neg} {n}, {};", vals[0]))?;
                        self.line(format!(
                            "atom.{sem}.gpu.global.add.{add_ty} {d}, [{a}], {n};"
                        ))
                    }
                    AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Swap => {
                        let name = match op {
                            AtomicOp::And => "and",
                            AtomicOp::Or => "or",
                            AtomicOp::Xor => "xor",
                            _ => "exch",
                        };
                        self.line(format!(
                            "atom.{sem}.gpu.global.{name}.{b} {d}, [{a}], {};",
                            vals[0]
                        ))
                    }
                    AtomicOp::Max | AtomicOp::Min => {
                        let name = if op == AtomicOp::Max { "max" } else { "min" };
                        self.line(format!(
                            "atom.{sem}.gpu.global.{name}.{t} {d}, [{a}], {};",
                            vals[0]
                        ))
                    }
                    AtomicOp::CompareExchange => self.line(format!(
                        "atom.{sem}.gpu.global.cas.{b} {d}, [{a}], {}, {};",
                        vals[0], vals[1]
                    )),
                    AtomicOp::Load | AtomicOp::Store => Err(WriteError::inconsistent(
                        "a read-modify-write operation",
                        format!("{op:?}"),
                    )),
                }
            }
        }
    }
}

/// Atomic operation `op`, which has a result, without one.
fn no_result(op: AtomicOp) -> WriteError {
    WriteError::inconsistent(format!("a result for the atomic {op:?}"), "none")
}
