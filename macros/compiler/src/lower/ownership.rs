//! Ownership, followed statically: which locals own something whose drop has an effect (a
//! sender closes its channel, a received slot is released, a reserved slot must be sent), when
//! they are moved, and the drops at the end of each scope.
//!
//! A move must happen at the level its local was made at, so that every path drops the same
//! things; the lowering reports a move inside a branch or loop instead of following it per path.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{Inst, SiteKind};
use crate::tir::{Expr, ExprKind, LocalId};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// A local's value.
    pub(super) fn local_value(&mut self, id: LocalId) -> Val {
        if self.frame().moved.contains(&id) {
            // rustc reports the use after move; keep lowering.
        }
        self.frame().locals.get(&id).cloned().unwrap_or(Val::Unit)
    }

    /// Binds `local` to `v`: scalars, tuples and `block_tiles` iterators get registers of their
    /// own, arrays the layout their local wants; a sender or slot is owned by the current scope.
    pub(super) fn bind(&mut self, local: LocalId, v: Val, span: Span) {
        let v = self.materialize(local, v);
        let v = match v {
            Val::Tuple(values) => Val::Tuple(
                values
                    .iter()
                    .map(|x| {
                        let c = self.new_value(self.values[x.0 as usize].ty, None);
                        self.emit(Inst::Copy { dst: c, src: *x });
                        c
                    })
                    .collect(),
            ),
            Val::Scalar(s) => {
                let ty = self.values[s.0 as usize].ty;
                let name = self.func().local(local).name.clone();
                let copy = self.new_value(ty, Some(&name));
                self.emit(Inst::Copy { dst: copy, src: s });
                Val::Scalar(copy)
            }
            Val::Tiles {
                next,
                step,
                len,
                tile,
            } => {
                // A BlockTiles local is mutable state: give it its own registers.
                let fresh = [next, step, len, tile].map(|v| {
                    let c = self.new_value(Scalar::Usize, None);
                    self.emit(Inst::Copy { dst: c, src: v });
                    c
                });
                Val::Tiles {
                    next: fresh[0],
                    step: fresh[1],
                    len: fresh[2],
                    tile: fresh[3],
                }
            }
            other => other,
        };
        let owned = matches!(v, Val::Sender(_) | Val::RecvSlot(_) | Val::SendSlot(_));
        self.frame().locals.insert(local, v);
        if owned {
            self.own(local, span);
        }
    }

    /// The current scope owns `local`, made at the current `cond_depth`, and drops it at its end.
    fn own(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let frame = self.frame();
        frame.decl_depth.insert(local, depth);
        if let Some(s) = frame.scopes.last_mut() {
            s.owned.push((local, span));
        }
    }

    /// `local` is moved: its scope does not drop it. A move at another `cond_depth` than the
    /// local's own is an error.
    pub(super) fn mark_moved(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let decl = self.frame().decl_depth.get(&local).copied().unwrap_or(0);
        if decl != depth {
            let name = self.func().local(local).name.clone();
            self.diags.error(span, format!("`{name}` is moved (sent, dropped or passed on) inside a branch or loop it was not created in; this is not supported yet: move it on every path at the same level"));
        }
        self.frame().moved.insert(local);
    }

    /// `drop(x)` of a local: its drop, here instead of at the end of its scope.
    pub(super) fn drop_expr(&mut self, v: &Expr, span: Span) -> Val {
        if let ExprKind::Local(id) = v.kind {
            self.drop_local(id, v.span);
            self.mark_moved(id, span);
        }
        Val::Unit
    }

    /// Emits the drops of scope `index` (not popping it).
    pub(super) fn exit_scope_drops(&mut self, index: usize) {
        let owned: Vec<(LocalId, Span)> = self
            .frame()
            .scopes
            .get(index)
            .map(|s| s.owned.clone())
            .unwrap_or_default();
        for (local, span) in owned.into_iter().rev() {
            self.drop_local(local, span);
        }
    }

    /// The drop of `local`, unless it was moved: a sender closes its channel, a received slot is
    /// released, and a reserved slot dropped without `send` is an error.
    fn drop_local(&mut self, local: LocalId, span: Span) {
        if self.frame().moved.contains(&local) {
            return;
        }
        match self.frame().locals.get(&local).cloned() {
            Some(Val::Sender(c)) => {
                let name = self.channels[c.0 as usize].name.clone();
                let site = self.site(
                    SiteKind::Wait,
                    format!("closing channel `{name}` (dropping its sender waits for a free slot)"),
                    span,
                );
                self.emit(Inst::Close { chan: c, site });
            }
            Some(Val::RecvSlot(c)) => self.emit(Inst::Release { chan: c }),
            Some(Val::SendSlot(_)) => {
                let name = self.func().local(local).name.clone();
                self.diags.error(span, format!("the reserved slot `{name}` is dropped without being sent: call `{name}.send()` on every path"));
            }
            _ => {}
        }
    }

    /// A slot read here must not be used after a move, nor filled by a `copy_from` still in
    /// flight.
    pub(super) fn check_not_copied(&mut self, slot: &Expr, span: Span) {
        if let ExprKind::Local(id) = slot.kind {
            if self.frame().moved.contains(&id) {
                // Used after `send` or `drop`: rustc reports the use after move.
                self.ownership_conflict = true;
            } else if self.frame().copied.contains(&id) {
                let name = self.func().local(id).name.clone();
                self.diags.error(span, format!("`{name}` was filled by `copy_from`, whose bytes are still in flight: send it, and read the data on the receiving side"));
            }
        }
    }
}
