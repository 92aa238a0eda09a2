//! Atomic slices: the address of an element (after its bounds check), the atomic operations
//! on it, and the result of `compare_exchange`.
//!
//! An atomic operation runs once per iteration of a parallel loop, or once for the role in role
//! code, on a global address or a shared array's element, so it is apart from the plain element
//! reads of `places`.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{ArrayAccess, BinOp, Inst, SiteKind, Space, Value};
use crate::tir::{self, Expr, ExprKind, MemOrder};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// Lowers `e`, whose value is unused: an atomic read-modify-write then needs no result
    /// (PTX's `red`).
    pub(super) fn discarded(&mut self, e: &Expr) {
        self.result_unused = matches!(e.kind, ExprKind::Atomic(..));
        let v = self.expr(e);
        self.result_unused = false;
        // A temporary that holds something (an issued mma) is dropped at the statement's end.
        if matches!(v, Val::PendingMma(_)) {
            self.drop_value(&v, e.span);
        }
    }

    /// `atomics[index]`: the element's global address, or a shared array's atomic element.
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
            other => self
                .shared_array_index(&other, index, i, span)
                .unwrap_or(Val::Unit),
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
        let unused = std::mem::take(&mut self.result_unused);
        if self.apply_depth > 0 && op != tir::AtomicOp::Load {
            self.diags.error(span, super::stores::APPLY_WRITES);
            return Val::Unit;
        }
        let (space, addr, array) = match self.expr(target) {
            Val::AtomicRef(addr) => (Space::Global, addr, None),
            Val::SharedAtomicRef { addr, array } => (Space::Shared, addr, Some(array)),
            _ => return Val::Unit,
        };
        let values: Vec<Value> = operands.iter().map(|o| self.scalar(o)).collect();
        // A load gives each thread the value; any other operation in role code runs once for
        // the role, as the code reads, and hands its result to every thread.
        let once = (self.par.is_none() && op != tir::AtomicOp::Load).then(|| {
            self.site(
                SiteKind::Wait,
                "the role barrier that hands out this atomic's result".to_string(),
                span,
            )
        });
        if let Some(array) = array {
            self.array_access(array, array_access(op), span);
        }
        let elem = match &target.ty {
            Ty::AtomicRef(s) => *s,
            _ => Scalar::U32,
        };
        let needs_result = match op {
            tir::AtomicOp::Store => false,
            tir::AtomicOp::Load => true,
            _ => !unused,
        };
        let dst = needs_result.then(|| self.new_value(elem, None));
        self.emit(Inst::Atomic {
            dst,
            op,
            space,
            addr,
            operands: values.clone(),
            order,
            once,
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

/// How atomic operation `op` touches a shared array: loads read, stores, swaps and
/// compare-and-swaps write, the other read-modify-writes update (each kind commutes with itself).
fn array_access(op: tir::AtomicOp) -> ArrayAccess {
    use tir::AtomicOp as A;
    match op {
        A::Load => ArrayAccess::Read,
        A::Store | A::Swap | A::CompareExchange => ArrayAccess::Write,
        A::Add | A::Sub => ArrayAccess::Update(0),
        A::Max => ArrayAccess::Update(1),
        A::Min => ArrayAccess::Update(2),
        A::And => ArrayAccess::Update(3),
        A::Or => ArrayAccess::Update(4),
        A::Xor => ArrayAccess::Update(5),
    }
}
