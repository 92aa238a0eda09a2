//! Concurrency inside a role: `join!` of futures, whose branches run each in its own block of a
//! `Join`, and `select!` between channel receives, a loop that waits for the first channel with
//! an item.
//!
//! Both build control flow of their own around the operations of `channels`, and both are
//! restricted in a role of several warps (`roles`).

use proc_macro2::Span;

use super::values::{Scope, SlotRef, Val};
use super::Lowerer;
use crate::ir::{BinOp, Block, Imm, Inst, SiteKind, UnOp};
use crate::tir::{self, Expr, ExprKind};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// `join!(a, b, ..).await` in role code: each branch's code in its own block of a `Join`;
    /// the branches' values are copied to registers the join's value is made of.
    pub(super) fn join_futures(&mut self, branches: &[Expr], span: Span) -> Val {
        let mut blocks = Vec::new();
        let mut values = Vec::new();
        let mut any_value = false;
        for b in branches {
            let mut out = Vec::new();
            let block = self.sub_block(|l| {
                let v = match &b.kind {
                    ExprKind::Block(body) => l.scoped_block(body, None),
                    ExprKind::Await(inner) => l.await_expr(inner, b.span),
                    _ => l.expr(b),
                };
                for x in v.scalars() {
                    let ty = l.values[x.0 as usize].ty;
                    let c = l.new_value(ty, None);
                    l.emit(Inst::Copy { dst: c, src: x });
                    out.push(c);
                }
            });
            any_value |= !out.is_empty();
            values.extend(out);
            blocks.push(block);
        }
        self.joins.push(span);
        self.emit(Inst::Join { branches: blocks });
        if any_value {
            Val::Tuple(values)
        } else {
            Val::Unit
        }
    }

    /// `select! { Some(x) = rx.recv() => .., .. else => .. }`: a loop that waits for the first
    /// enabled channel with a full slot (`SelectRecv`) and disables a channel that has closed,
    /// until an item comes or every channel is disabled; then the chosen arm, with the slot
    /// bound and released at the arm's end, or the `else` arm (a device panic without one).
    pub(super) fn select_expr(
        &mut self,
        arms: &[tir::SelectArm],
        else_: Option<&Expr>,
        ty: &Ty,
        span: Span,
    ) -> Val {
        let mut chans = Vec::new();
        for a in arms {
            match self.recv_chan(&a.recv) {
                Some((c, 0)) => chans.push(c),
                Some(_) => {
                    self.diags.error(a.recv.span, "`select!` over a role's second receiver of one channel is not supported: select over the first, and receive from the second with `recv().await`");
                    return Val::Unit;
                }
                None => return Val::Unit,
            }
        }
        let n = chans.len() as u32;
        if n == 0 || n > 32 {
            return Val::Unit;
        }
        let names: Vec<String> = chans
            .iter()
            .map(|c| format!("`{}`", self.channels[c.0 as usize].name))
            .collect();
        let site = self.site(
            SiteKind::Wait,
            format!("`select!` over channels {}", names.join(", ")),
            span,
        );
        self.selects.push(span);
        let all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let enabled = self.new_value(Scalar::U32, None);
        self.emit(Inst::Const {
            dst: enabled,
            imm: Imm::Int(u64::from(all)),
        });
        let chosen = self.new_value(Scalar::U32, None);
        let some = self.new_value(Scalar::Bool, None);
        let id = self.new_loop();
        self.cond_depth += 1;
        let body = self.sub_block(|l| {
            let zero = l.konst(Scalar::U32, Imm::Int(0));
            let none_left = l.binary(BinOp::Eq, enabled, zero);
            let out = l.sub_block(|l| {
                l.emit(Inst::Const {
                    dst: chosen,
                    imm: Imm::Int(u64::from(n)),
                });
                l.emit(Inst::Break(id));
            });
            l.emit(Inst::If {
                cond: none_left,
                then: out,
                else_: Block::default(),
            });
            l.emit(Inst::SelectRecv {
                chans: chans.clone(),
                enabled,
                chosen,
                some,
                site,
            });
            // A closed channel disables its arm.
            let closed = l.not(some);
            let disable = l.sub_block(|l| {
                let one = l.konst(Scalar::U32, Imm::Int(1));
                let bit = l.binary(BinOp::Shl, one, chosen);
                let keep = l.new_value(Scalar::U32, None);
                l.emit(Inst::Unary {
                    dst: keep,
                    op: UnOp::Not,
                    src: bit,
                });
                let left = l.binary(BinOp::And, enabled, keep);
                l.emit(Inst::Copy {
                    dst: enabled,
                    src: left,
                });
                l.emit(Inst::Continue(id));
            });
            l.emit(Inst::If {
                cond: closed,
                then: disable,
                else_: Block::default(),
            });
            l.emit(Inst::Break(id));
        });
        self.emit(Inst::Loop { id, body });
        let result = self.result_value(ty);
        for (k, arm) in arms.iter().enumerate() {
            let key = self.konst(Scalar::U32, Imm::Int(k as u64));
            let this = self.binary(BinOp::Eq, chosen, key);
            let take = self.sub_block(|l| {
                l.frame().scopes.push(Scope {
                    owned: Vec::new(),
                    lp: None,
                });
                l.bind(
                    arm.binding,
                    Val::RecvSlot(SlotRef {
                        chan: chans[k],
                        rx: 0,
                        at: None,
                    }),
                    arm.recv.span,
                );
                let v = l.expr(&arm.body);
                l.copy_result(result, v);
                let last = l.frame().scopes.len() - 1;
                l.exit_scope_drops(last);
                l.frame().scopes.pop();
            });
            self.emit(Inst::If {
                cond: this,
                then: take,
                else_: Block::default(),
            });
        }
        let key = self.konst(Scalar::U32, Imm::Int(u64::from(n)));
        let disabled = self.binary(BinOp::Eq, chosen, key);
        match else_ {
            Some(e) => {
                let take = self.sub_block(|l| {
                    let v = l.expr(e);
                    l.copy_result(result, v);
                });
                self.emit(Inst::If {
                    cond: disabled,
                    then: take,
                    else_: Block::default(),
                });
            }
            None => self.panic_if(disabled, tir::SELECT_DISABLED, span),
        }
        self.cond_depth -= 1;
        result.map_or(Val::Unit, Val::Scalar)
    }
}
