//! `Option`s of receives, reserves and `tiles.next()` taken apart: `let Some(x) = .. else`,
//! `if let Some(x) = ..` and `match` with `Some`/`None` arms (the checker's
//! [`ExprKind::IfLetSome`](crate::tir::ExprKind::IfLetSome)).
//!
//! The reserve of a channel that no receiver closes always gives a slot: its `None` branch is not
//! lowered at all, so that such a producer's code is what it would be without the `Option`.

use super::values::{Scope, Val};
use super::Lowerer;
use crate::ir::{Block, Inst};
use crate::tir::{self, Expr, LocalId};
use crate::types::Ty;

impl Lowerer<'_> {
    /// `let Some(var) = init else { else_ };`: the `else` block where `init` is `None` (it does
    /// not end), then `var` bound in the current scope.
    pub(super) fn let_else(&mut self, var: LocalId, init: &Expr, else_: &tir::Block) {
        // In the `else` of a receive, the role has seen the channel's end: dropping the receiver
        // there closes nothing.
        let ends = self.recv_chan(init).filter(|k| !self.ended.contains(k));
        let Some((some, item)) = self.option_parts(init) else {
            return;
        };
        if let Some(some) = some {
            let none = self.not(some);
            self.cond_depth += 1;
            let taken = self.sub_block(|l| {
                l.ended.extend(ends);
                l.scoped_block(else_, None);
                if let Some(k) = ends {
                    l.ended.remove(&k);
                }
            });
            self.cond_depth -= 1;
            self.emit(Inst::If {
                cond: none,
                then: taken,
                else_: Block::default(),
            });
        }
        self.bind(var, item, init.span);
    }

    /// `if let Some(binding) = scrutinee { then } else { else_ }`, of type `ty`: the item bound
    /// in `then`'s scope (a slot is released, or must be sent, there).
    pub(super) fn if_let_some(
        &mut self,
        scrutinee: &Expr,
        binding: Option<LocalId>,
        then: &tir::Block,
        else_: Option<&Expr>,
        ty: &Ty,
    ) -> Val {
        let Some((some, item)) = self.option_parts(scrutinee) else {
            return Val::Unit;
        };
        let result = self.result_value(ty);
        let span = scrutinee.span;
        let then_block = |l: &mut Self| {
            l.frame().scopes.push(Scope {
                owned: Vec::new(),
                lp: None,
            });
            if let Some(b) = binding {
                l.bind(b, item.clone(), span);
            }
            let v = l.block_body(then);
            l.copy_result(result, v);
            let last = l.frame().scopes.len() - 1;
            l.exit_scope_drops(last);
            l.frame().scopes.pop();
        };
        let Some(some) = some else {
            // Always `Some`: only `then` runs.
            then_block(self);
            return result.map_or(Val::Unit, Val::Scalar);
        };
        self.cond_depth += 1;
        let taken = self.sub_block(then_block);
        let other = self.sub_block(|l| {
            if let Some(e) = else_ {
                let v = l.expr(e);
                l.copy_result(result, v);
            }
        });
        self.cond_depth -= 1;
        self.emit(Inst::If {
            cond: some,
            then: taken,
            else_: other,
        });
        result.map_or(Val::Unit, Val::Scalar)
    }
}
