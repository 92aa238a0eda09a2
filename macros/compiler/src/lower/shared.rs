//! The block's shared values (`shared::<T>()`), the barriers between roles (`barrier()`) and
//! the one-shot values (`oneshot::<T>()`): cells in shared memory that roles set and read, and
//! mbarriers they wait on.
//!
//! They live in shared memory beside the channels' rings but are not channels: no slots, no
//! ownership, one value or one wait each.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{Inst, SiteKind};
use crate::tir::Expr;
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `shared::<s>()`: a new cell.
    pub(super) fn shared_new(&mut self, s: Scalar) -> Val {
        self.shared_cells.push(s);
        Val::SharedCell(self.shared_cells.len() as u32 - 1)
    }

    /// `cell.get()`
    pub(super) fn shared_get(&mut self, cell: &Expr) -> Val {
        match self.expr(cell) {
            Val::SharedCell(k) => {
                let dst = self.new_value(self.shared_cells[k as usize], None);
                self.emit(Inst::LoadCell { dst, cell: k });
                Val::Scalar(dst)
            }
            _ => Val::Unit,
        }
    }

    /// `cell.set(value)`, in role code; the role's threads meet after it.
    pub(super) fn shared_set(&mut self, cell: &Expr, value: &Expr, span: Span) -> Val {
        let v = self.scalar(value);
        if let Val::SharedCell(k) = self.expr(cell) {
            if self.role.is_none() {
                self.diags.error(
                    span,
                    "`set` on a shared value is role code: call it inside a role",
                );
            }
            self.emit(Inst::StoreCell { cell: k, value: v });
            // The role reads its own write: its threads meet after it.
            let site = self.site(
                SiteKind::Wait,
                "the role barrier after `set` on a shared value".to_string(),
                span,
            );
            self.emit(Inst::RoleBarrier { site });
        }
        Val::Unit
    }

    /// `barrier()` other than in a `let` of the kernel body (which names the barrier after its
    /// local): a barrier named `barrier`.
    pub(super) fn barrier_new(&mut self) -> Val {
        self.barriers.push((Vec::new(), "barrier".to_string()));
        Val::Barrier(self.barriers.len() as u32 - 1)
    }

    /// `b.wait().await`, in role code.
    pub(super) fn barrier_wait(&mut self, b: &Expr, span: Span) -> Val {
        if let Val::Barrier(k) = self.expr(b) {
            let name = self.barriers[k as usize].1.clone();
            let site = self.site(
                SiteKind::Wait,
                format!("`wait()` on barrier `{name}`"),
                span,
            );
            if self.role.is_none() {
                self.diags.error(
                    span,
                    "`wait()` on a barrier is role code: await it in a role",
                );
            }
            self.emit(Inst::BarrierWait { barrier: k, site });
        }
        Val::Unit
    }

    /// `tx.send(value)` of a one-shot sender: the value into its cell, then the signal.
    pub(super) fn oneshot_send(&mut self, tx: &Expr, value: &Expr) -> Val {
        let v = self.scalar(value);
        if let Val::OneshotTx(k) = self.expr(tx) {
            let cell = self.oneshots[k as usize].cell;
            self.emit(Inst::StoreCell { cell, value: v });
            self.emit(Inst::OneshotSignal { oneshot: k });
        }
        Val::Unit
    }

    /// `rx.recv().await` of a one-shot receiver: the wait for the signal, then the value.
    pub(super) fn oneshot_recv(&mut self, rx: &Expr, span: Span) -> Val {
        let Val::OneshotRx(k) = self.expr(rx) else {
            return Val::Unit;
        };
        let (cell, name) = {
            let o = &self.oneshots[k as usize];
            (o.cell, o.name.clone())
        };
        let site = self.site(
            SiteKind::Wait,
            format!("`recv()` on one-shot value `{name}`"),
            span,
        );
        self.emit(Inst::OneshotWait { oneshot: k, site });
        let dst = self.new_value(self.shared_cells[cell as usize], None);
        self.emit(Inst::LoadCell { dst, cell });
        Val::Scalar(dst)
    }
}
