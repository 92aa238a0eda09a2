//! Loops: `for` over ranges (stepped, reversed, inclusive), ranges of tiles and `block_tiles`,
//! `while let` over received slots and tiles, `while`, `loop` with its value, and the `break`
//! and `continue` that leave them, dropping what they leave.
//!
//! Every loop body is one level deeper in `cond_depth`, so that a move inside it is seen as
//! conditional.

use super::values::{LoopScope, Scope, Val};
use super::Lowerer;
use crate::ir::{BinOp, Block, Imm, Inst};
use crate::tir::{self, Expr, ExprKind, LocalId, Stmt};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// `for var in iter { body }`.
    pub(super) fn for_loop(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        iter: &Expr,
        body: &tir::Block,
    ) {
        match iter.kind {
            ExprKind::StepBy(..) | ExprKind::Rev(_) => self.for_stepped(label, var, iter, body),
            ExprKind::InclusiveRange(..) => self.for_inclusive(label, var, iter, body),
            _ => self.for_items(label, var, iter, body),
        }
    }

    /// `for` over a range `a..b` (the counter), over a range of ranges, or over `block_tiles`.
    fn for_items(&mut self, label: &Option<String>, var: LocalId, iter: &Expr, body: &tir::Block) {
        let it = self.expr(iter);
        let id = self.new_loop();
        self.cond_depth += 1;
        match it {
            Val::Range { start, end, tiles } => {
                // The counter has the range's type (any integer in a loop head).
                let ty = self.values[start.0 as usize].ty;
                let i = self.new_value(ty, None);
                self.emit(Inst::Copy { dst: i, src: start });
                let loop_body = self.sub_block(|l| {
                    let done = l.binary(BinOp::Ge, i, end);
                    l.break_if(done, id);
                    let item = if matches!(iter.kind, ExprKind::Range(..)) {
                        Val::Scalar(i)
                    } else {
                        Val::Range {
                            start: i,
                            end,
                            tiles,
                        }
                    };
                    l.bind(var, item, iter.span);
                    let one = l.konst(ty, Imm::Int(1));
                    l.emit(Inst::Binary {
                        dst: i,
                        op: BinOp::Add,
                        lhs: i,
                        rhs: one,
                    });
                    l.scoped_block(body, LoopScope::new(id, label));
                });
                self.emit(Inst::Loop {
                    id,
                    body: loop_body,
                });
            }
            Val::Tiles {
                next,
                step,
                len,
                tile,
            } => {
                let state = Val::Tiles {
                    next,
                    step,
                    len,
                    tile,
                };
                let loop_body = self.sub_block(|l| {
                    let (some, start, end) = l.tiles_next(&state);
                    let none = l.not(some);
                    l.break_if(none, id);
                    l.bind(
                        var,
                        Val::Range {
                            start,
                            end,
                            tiles: true,
                        },
                        iter.span,
                    );
                    l.scoped_block(body, LoopScope::new(id, label));
                });
                self.emit(Inst::Loop {
                    id,
                    body: loop_body,
                });
            }
            _ => {}
        }
        self.cond_depth -= 1;
    }

    /// `for v in a..=b`: the counter stops at `b` without stepping past it (`b` may be the
    /// type's `MAX`), and `continue` finds it already advanced.
    fn for_inclusive(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        iter: &Expr,
        body: &tir::Block,
    ) {
        let ExprKind::InclusiveRange(a, b) = &iter.kind else {
            return;
        };
        let start = self.scalar(a);
        let end = self.scalar(b);
        let ty = self.values[start.0 as usize].ty;
        let i = self.new_value(ty, None);
        self.emit(Inst::Copy { dst: i, src: start });
        let exhausted = self.new_value(Scalar::Bool, None);
        let empty = self.binary(BinOp::Gt, start, end);
        self.emit(Inst::Copy {
            dst: exhausted,
            src: empty,
        });
        let id = self.new_loop();
        self.cond_depth += 1;
        let loop_body = self.sub_block(|l| {
            l.break_if(exhausted, id);
            l.bind(var, Val::Scalar(i), iter.span);
            let last = l.binary(BinOp::Eq, i, end);
            l.emit(Inst::Copy {
                dst: exhausted,
                src: last,
            });
            let one = l.konst(ty, Imm::Int(1));
            let next = l.binary(BinOp::Add, i, one);
            l.emit(Inst::Select {
                dst: i,
                cond: last,
                if_true: i,
                if_false: next,
            });
            l.scoped_block(body, LoopScope::new(id, label));
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
    }

    /// `for v in (a..b).step_by(k)` and `for v in (a..b).rev()`: a counted loop over
    /// `n` = the number of items (no overflow near the top of the range), with
    /// `v = a + i * k` or `v = b - 1 - i`.
    fn for_stepped(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        iter: &Expr,
        body: &tir::Block,
    ) {
        // `step` is `None` exactly for `.rev()`.
        let (range, step) = match &iter.kind {
            ExprKind::StepBy(r, k) => (r, Some(k)),
            ExprKind::Rev(r) => (r, None),
            _ => return,
        };
        let Val::Range { start, end, .. } = self.expr(range) else {
            return;
        };
        let zero = self.usize_const(0);
        let one = self.usize_const(1);
        let nonempty = self.binary(BinOp::Gt, end, start);
        let span = self.binary(BinOp::Sub, end, start);
        let span = {
            let z = self.new_value(Scalar::Usize, None);
            self.emit(Inst::Copy { dst: z, src: zero });
            let take = self.sub_block(|l| l.emit(Inst::Copy { dst: z, src: span }));
            self.emit(Inst::If {
                cond: nonempty,
                then: take,
                else_: Block::default(),
            });
            z
        };
        let (count, k) = match step {
            Some(k) => {
                let k = self.scalar(k);
                let bad = self.binary(BinOp::Eq, k, zero);
                self.panic_if(bad, "assertion failed: step != 0", iter.span);
                // ceil(span / k) without overflow: (span + k - 1) / k could wrap.
                let q = self.binary(BinOp::Div, span, k);
                let r = self.binary(BinOp::Rem, span, k);
                let extra = self.binary(BinOp::Ne, r, zero);
                let n = self.new_value(Scalar::Usize, None);
                self.emit(Inst::Copy { dst: n, src: q });
                let bump = self.sub_block(|l| {
                    l.emit(Inst::Binary {
                        dst: n,
                        op: BinOp::Add,
                        lhs: n,
                        rhs: one,
                    })
                });
                self.emit(Inst::If {
                    cond: extra,
                    then: bump,
                    else_: Block::default(),
                });
                (n, Some(k))
            }
            None => (span, None),
        };
        let id = self.new_loop();
        self.cond_depth += 1;
        let i = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Copy { dst: i, src: zero });
        let loop_body = self.sub_block(|l| {
            let done = l.binary(BinOp::Ge, i, count);
            l.break_if(done, id);
            let v = match k {
                Some(k) => {
                    let off = l.binary(BinOp::Mul, i, k);
                    l.binary(BinOp::Add, start, off)
                }
                None => {
                    let last = l.binary(BinOp::Sub, end, one);
                    l.binary(BinOp::Sub, last, i)
                }
            };
            l.bind(var, Val::Scalar(v), iter.span);
            l.emit(Inst::Binary {
                dst: i,
                op: BinOp::Add,
                lhs: i,
                rhs: one,
            });
            l.scoped_block(body, LoopScope::new(id, label));
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
    }

    /// `while let Some(var) = scrutinee { body }` over `rx.recv().await` or `tiles.next()`.
    pub(super) fn while_let(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        scrutinee: &Expr,
        body: &tir::Block,
    ) {
        let id = self.new_loop();
        self.cond_depth += 1;
        let loop_body = self.sub_block(|l| {
            let Some((some, item)) = l.option_parts(scrutinee) else {
                return;
            };
            // The reserve of a channel that no receiver closes always gives a slot.
            if let Some(some) = some {
                let none = l.not(some);
                l.break_if(none, id);
            }
            // The item lives in the loop body's scope: a received slot is released at
            // the end of each iteration (and by `break`/`continue`).
            l.frame().scopes.push(Scope {
                owned: Vec::new(),
                lp: LoopScope::new(id, label),
            });
            l.bind(var, item, scrutinee.span);
            l.block_body(body);
            let last = l.frame().scopes.len() - 1;
            l.exit_scope_drops(last);
            l.frame().scopes.pop();
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
        // A loop over a channel's receives left only at its end: the role has seen the end, and
        // dropping the receiver afterwards closes nothing.
        let never_none = |e: &Expr| self.never_none(e);
        if matches!(scrutinee.ty, Ty::OptRecvSlot(_)) && leaves_only_at_end(body, &never_none) {
            if let Some(key) = self.recv_chan(scrutinee) {
                self.ended.insert(key);
            }
        }
    }

    /// `while cond { body }`.
    pub(super) fn while_loop(&mut self, label: &Option<String>, cond: &Expr, body: &tir::Block) {
        let id = self.new_loop();
        self.cond_depth += 1;
        let loop_body = self.sub_block(|l| {
            if let Val::Scalar(c) = l.expr(cond) {
                let stop = l.not(c);
                l.break_if(stop, id);
            }
            l.scoped_block(body, LoopScope::new(id, label));
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
    }

    /// `break` (with its value) or `continue`, statement `s`: the drops of every scope it leaves,
    /// then the jump.
    pub(super) fn jump(&mut self, s: &Stmt, label: &Option<String>) {
        let value = match s {
            Stmt::Break(_, Some(v), _) => Some(self.scalar(v)),
            _ => None,
        };
        // Drop what the jump leaves: every scope down to the target loop's body scope.
        let scopes = &self.frame().scopes;
        let target = scopes.iter().rposition(|sc| {
            sc.lp
                .as_ref()
                .is_some_and(|lp| label.is_none() || lp.label == *label)
        });
        let Some(target) = target else {
            return;
        };
        let Some(lp) = scopes[target].lp.clone() else {
            return;
        };
        if let (Some(v), Some(r)) = (value, lp.result) {
            self.emit(Inst::Copy { dst: r, src: v });
        }
        let top = self.frame().scopes.len();
        for i in (target..top).rev() {
            self.exit_scope_drops(i);
        }
        self.emit(if matches!(s, Stmt::Break(..)) {
            Inst::Break(lp.id)
        } else {
            Inst::Continue(lp.id)
        });
    }

    /// `loop { body }`, whose value is what `break` gives it.
    pub(super) fn loop_expr(&mut self, label: &Option<String>, body: &tir::Block, ty: &Ty) -> Val {
        let id = self.new_loop();
        let result = match *ty {
            Ty::Scalar(sc) => Some(self.new_value(sc, None)),
            Ty::Enum(..) => Some(self.new_value(Scalar::U32, None)),
            _ => None,
        };
        self.cond_depth += 1;
        let lp = Some(LoopScope {
            id,
            label: label.clone(),
            result,
        });
        let loop_body = self.sub_block(|l| {
            l.scoped_block(body, lp);
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
        // `loop { select! { .., else => break } }` left only by its `else`: every channel of
        // the `select!` has ended.
        if let Some(arms) = select_loop(body) {
            let never_none = |e: &Expr| self.never_none(e);
            let clean = arms.iter().all(|a| {
                let arm = tir::Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(a.body.clone())),
                };
                leaves_only_at_end(&arm, &never_none)
            });
            if clean {
                for a in arms {
                    if let Some(key) = self.recv_chan(&a.recv) {
                        self.ended.insert(key);
                    }
                }
            }
        }
        result.map_or(Val::Unit, Val::Scalar)
    }
}

/// Whether the code after a loop whose body is `body` runs only once the loop's own condition
/// said so: no `break` of it (or of an outer loop), no `continue` of an outer loop, at any depth
/// (`break` and `continue` of a loop nested in it excepted), the `None` branches of `Option`s
/// that are never `None` (`never_none`, which are not lowered) excepted. A `return` leaves the
/// function, not to the code after the loop.
fn leaves_only_at_end(body: &tir::Block, never_none: &dyn Fn(&Expr) -> bool) -> bool {
    struct Walk<'a> {
        never_none: &'a dyn Fn(&Expr) -> bool,
    }
    impl Walk<'_> {
        fn block(&self, b: &tir::Block, nested: u32) -> bool {
            b.stmts.iter().all(|s| self.stmt(s, nested))
                && b.tail.as_deref().is_none_or(|t| self.expr(t, nested))
        }
        fn stmt(&self, s: &Stmt, nested: u32) -> bool {
            match s {
                Stmt::Break(label, value, _) => {
                    label.is_none()
                        && nested > 0
                        && value.as_ref().is_none_or(|v| self.expr(v, nested))
                }
                Stmt::Continue(label, _) => label.is_none(),
                Stmt::Let(_, e) | Stmt::Expr(e) => self.expr(e, nested),
                Stmt::LetElse(_, e, b) => {
                    self.expr(e, nested) && ((self.never_none)(e) || self.block(b, nested))
                }
                Stmt::For(_, _, e, b) | Stmt::WhileLet(_, _, e, b) | Stmt::While(_, e, b) => {
                    self.expr(e, nested) && self.block(b, nested + 1)
                }
            }
        }
        fn expr(&self, e: &Expr, nested: u32) -> bool {
            match &e.kind {
                ExprKind::Return(v) => v.as_deref().is_none_or(|v| self.expr(v, nested)),
                ExprKind::Block(b) => self.block(b, nested),
                ExprKind::Loop(_, b) => self.block(b, nested + 1),
                ExprKind::If(c, t, else_) => {
                    self.expr(c, nested)
                        && self.block(t, nested)
                        && else_.as_deref().is_none_or(|x| self.expr(x, nested))
                }
                ExprKind::IfLetSome {
                    scrutinee,
                    then,
                    else_,
                    ..
                } => {
                    self.expr(scrutinee, nested)
                        && self.block(then, nested)
                        && ((self.never_none)(scrutinee)
                            || else_.as_deref().is_none_or(|x| self.expr(x, nested)))
                }
                ExprKind::Match(s, arms) => {
                    self.expr(s, nested) && arms.iter().all(|a| self.expr(&a.body, nested))
                }
                _ => crate::check::children(e)
                    .into_iter()
                    .all(|c| self.expr(c, nested)),
            }
        }
    }
    Walk { never_none }.block(body, 0)
}

/// The arms of the `select!` of a `loop { select! { .., else => break } }`: a loop whose body
/// is one `select!` whose `else` arm is an unlabeled `break` and nothing else.
fn select_loop(body: &tir::Block) -> Option<&[tir::SelectArm]> {
    let select = match (body.stmts.as_slice(), body.tail.as_deref()) {
        ([Stmt::Expr(e)], None) | ([], Some(e)) => e,
        _ => return None,
    };
    let ExprKind::Select(arms, Some(else_)) = &select.kind else {
        return None;
    };
    let is_break = match &else_.kind {
        ExprKind::Block(b) => {
            b.tail.is_none() && matches!(b.stmts.as_slice(), [Stmt::Break(None, None, _)])
        }
        _ => false,
    };
    is_break.then_some(arms.as_slice())
}
