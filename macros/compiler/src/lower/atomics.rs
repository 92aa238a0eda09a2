//! Atomic slices: the address of an element (after its bounds check), the atomic operations
//! on it, and the result of `compare_exchange`.
//!
//! An atomic operation runs once per iteration of a parallel loop on a global address, so it is
//! apart from the plain element reads of `places`.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Inst, Value};
use crate::tir::{self, Expr, MemOrder};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// `atomics[index]`: the element's global address.
    pub(super) fn atomic_index(&mut self, base: &Expr, index: &Expr, span: Span) -> Val {
        let b = self.expr(base);
        let i = self.scalar(index);
        match b {
            Val::Slice {
                ptr,
                len,
                elem,
                mem,
                ..
            } => {
                self.access(mem);
                let oob = self.binary(BinOp::Ge, i, len);
                self.panic_if(oob, "index out of bounds", span);
                let size = self.usize_const(u64::from(elem.size()));
                let off = self.binary(BinOp::Mul, i, size);
                Val::AtomicRef(self.binary(BinOp::Add, ptr, off))
            }
            _ => Val::Unit,
        }
    }

    /// Operation `op` on the atomic element `target`, with its operands.
    pub(super) fn atomic(
        &mut self,
        target: &Expr,
        op: tir::AtomicOp,
        operands: &[Expr],
        order: MemOrder,
        span: Span,
    ) -> Val {
        let Val::AtomicRef(addr) = self.expr(target) else {
            return Val::Unit;
        };
        let values: Vec<Value> = operands.iter().map(|o| self.scalar(o)).collect();
        if self.par.is_none() {
            self.diags.error(span, "an atomic operation in role code would run once per thread of the role: call it inside a `par_iter` closure, where each iteration runs once");
        }
        let elem = match &target.ty {
            Ty::AtomicRef(s) => *s,
            _ => Scalar::U32,
        };
        let dst = (op != tir::AtomicOp::Store).then(|| self.new_value(elem, None));
        self.emit(Inst::Atomic {
            dst,
            op,
            addr,
            operands: values.clone(),
            order,
        });
        match (op, dst) {
            (tir::AtomicOp::CompareExchange, Some(old)) => {
                let ok = self.binary(BinOp::Eq, old, values[0]);
                Val::Cas { ok, old }
            }
            (_, Some(v)) => Val::Scalar(v),
            _ => Val::Unit,
        }
    }

    /// `r.is_ok()` (`want_ok`) or `r.is_err()` of a `compare_exchange` result.
    pub(super) fn cas_is_ok(&mut self, r: &Expr, want_ok: bool) -> Val {
        match self.expr(r) {
            Val::Cas { ok, .. } if want_ok => Val::Scalar(ok),
            Val::Cas { ok, .. } => Val::Scalar(self.not(ok)),
            _ => Val::Unit,
        }
    }

    /// The previous value of a `compare_exchange` result.
    pub(super) fn cas_value(&mut self, r: &Expr) -> Val {
        match self.expr(r) {
            Val::Cas { old, .. } => Val::Scalar(old),
            _ => Val::Unit,
        }
    }
}
