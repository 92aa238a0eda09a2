//! Helper fns, inlined at each call: a frame of their own, the arguments copied in (arrays in
//! the layout the callee's parameter wants), and for a function with `return` a loop around its
//! body that `return` leaves, with one register per scalar of the result.
//!
//! A call is where a frame begins and ends; every other module reads the frame it leaves.

use proc_macro2::Span;

use super::values::{Frame, Val};
use super::Lowerer;
use crate::ir::{Inst, Value};
use crate::tir::{self, Expr, ExprKind, FnId, Stmt};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// A call of helper `fid`: inlined; a call of an async fn that is not awaited does nothing.
    pub(super) fn call_expr(&mut self, fid: FnId, args: &[Expr], span: Span) -> Val {
        let f = self.prog.function(fid);
        if f.is_async {
            // A future that is not awaited does nothing.
            return Val::Unit;
        }
        let vals = self.call_args(args);
        self.inline_call(fid, vals, span)
    }

    /// The values of a call's arguments; a channel end passed by its local moves it.
    pub(super) fn call_args(&mut self, args: &[Expr]) -> Vec<Val> {
        let mut vals = Vec::new();
        for a in args {
            let v = self.expr(a);
            if let (Val::Sender(_) | Val::Receiver(..), ExprKind::Local(id)) = (&v, &a.kind) {
                self.mark_moved(*id, a.span);
            }
            vals.push(v);
        }
        vals
    }

    /// Inlines a call of `fid` with argument values `args`; returns its result.
    pub(super) fn inline_call(&mut self, fid: FnId, args: Vec<Val>, span: Span) -> Val {
        if self.frames.len() > 64 {
            self.diags
                .error(span, "helper calls nest too deep (over 64 levels)");
            return Val::Unit;
        }
        let f = self.prog.function(fid);
        let mut frame = Frame::new(fid);
        let args: Vec<Val> = {
            // Array arguments are copies, laid out as the callee's parameter wants them.
            let saved = std::mem::replace(&mut self.frames, vec![Frame::new(fid)]);
            let out = f
                .params
                .iter()
                .zip(args)
                .map(|(&p, v)| self.materialize(p, v))
                .collect();
            self.frames = saved;
            out
        };
        for (&p, v) in f.params.iter().zip(args) {
            let v = match v {
                Val::Scalar(s) => {
                    let ty = self.values[s.0 as usize].ty;
                    let copy = self.new_value(ty, Some(&f.local(p).name));
                    self.emit(Inst::Copy { dst: copy, src: s });
                    Val::Scalar(copy)
                }
                other => other,
            };
            if let Val::Sender(_) | Val::Receiver(..) = v {
                frame.scopes[0].owned.push((p, f.local(p).span));
            }
            frame.decl_depth.insert(p, self.cond_depth);
            frame.locals.insert(p, v);
        }
        self.frames.push(frame);
        let saved_depth = self.cond_depth;
        let dead = self.dead;
        let result = if f.has_return && self.lowers_a_return(&f.body) {
            // The body runs in a loop that `return` leaves; the normal end drops and leaves too.
            let id = self.new_loop();
            // One result register per scalar of the return type.
            let ret: Vec<Value> = match &f.ret {
                Ty::Scalar(sc) => vec![self.new_value(*sc, None)],
                Ty::Enum(..) => vec![self.new_value(Scalar::U32, None)],
                Ty::Tuple(ts) => ts
                    .iter()
                    .map(|t| self.new_value(Self::scalar_ty(t), None))
                    .collect(),
                Ty::Struct(sid, _) => self.prog.structs[*sid as usize]
                    .fields
                    .clone()
                    .iter()
                    .map(|(_, s)| self.new_value(*s, None))
                    .collect(),
                _ => Vec::new(),
            };
            self.frame().ret = Some((id, ret.clone()));
            let results = ret.clone();
            let body = self.sub_block(|l| {
                let v = l.block_body(&f.body);
                for (r, v) in results.iter().zip(v.scalars()) {
                    l.emit(Inst::Copy { dst: *r, src: v });
                }
                l.exit_scope_drops(0);
                l.emit(Inst::Break(id));
            });
            self.emit(Inst::Loop { id, body });
            match &f.ret {
                Ty::Scalar(_) | Ty::Enum(..) => ret.first().map_or(Val::Unit, |r| Val::Scalar(*r)),
                Ty::Tuple(_) | Ty::Struct(..) => Val::Tuple(ret),
                _ => Val::Unit,
            }
        } else {
            let v = self.block_body(&f.body);
            self.exit_scope_drops(0);
            v
        };
        self.cond_depth = saved_depth;
        self.dead = dead;
        self.frames.pop();
        result
    }

    /// `return value`: the value into the function's result registers, the drops of every
    /// scope, and a jump out of the loop its body runs in.
    pub(super) fn return_expr(&mut self, value: Option<&Expr>) -> Val {
        let v = value.map(|v| self.expr(v));
        let Some((id, result)) = self.frame().ret.clone() else {
            return Val::Unit;
        };
        if let Some(v) = v {
            for (r, v) in result.iter().zip(v.scalars()) {
                self.emit(Inst::Copy { dst: *r, src: v });
            }
        }
        let top = self.frame().scopes.len();
        for i in (0..top).rev() {
            self.exit_scope_drops(i);
        }
        self.emit(Inst::Break(id));
        Val::Unit
    }
}

impl Lowerer<'_> {
    /// Whether `e` is the reserve of a channel that no receiver closes, on a sender of the
    /// frame being lowered: an `Option` that is never `None`, whose `None` branches are not
    /// lowered.
    pub(super) fn never_none(&self, e: &Expr) -> bool {
        let ExprKind::Await(inner) = &e.kind else {
            return false;
        };
        let ExprKind::Reserve(tx) = &inner.kind else {
            return false;
        };
        let ExprKind::Local(id) = tx.kind else {
            return false;
        };
        matches!(
            self.frames.last().and_then(|f| f.locals.get(&id)),
            Some(Val::Sender(c)) if !self.closable.contains(c)
        )
    }

    /// Whether lowering `body` (of the function whose frame is on top) meets a `return`: one
    /// that is not in the `None` branch of the reserve of a channel no receiver closes, which is
    /// never lowered (`options`). Without one, the body needs no loop for `return` to leave.
    fn lowers_a_return(&self, body: &tir::Block) -> bool {
        let never_none = |e: &Expr| self.never_none(e);
        fn block(b: &tir::Block, never_none: &dyn Fn(&Expr) -> bool) -> bool {
            b.stmts.iter().any(|s| match s {
                Stmt::LetElse(_, e, else_) => {
                    expr(e, never_none) || (!never_none(e) && block(else_, never_none))
                }
                Stmt::Let(_, e) | Stmt::Expr(e) => expr(e, never_none),
                Stmt::Break(_, v, _) => v.as_ref().is_some_and(|v| expr(v, never_none)),
                Stmt::Continue(..) => false,
                Stmt::For(_, _, e, b) | Stmt::WhileLet(_, _, e, b) | Stmt::While(_, e, b) => {
                    expr(e, never_none) || block(b, never_none)
                }
            }) || b.tail.as_deref().is_some_and(|t| expr(t, never_none))
        }
        fn expr(e: &Expr, never_none: &dyn Fn(&Expr) -> bool) -> bool {
            let own = match &e.kind {
                ExprKind::Return(_) => return true,
                ExprKind::IfLetSome {
                    scrutinee,
                    then,
                    else_,
                    ..
                } => {
                    block(then, never_none)
                        || (!never_none(scrutinee)
                            && else_.as_deref().is_some_and(|x| expr(x, never_none)))
                }
                ExprKind::Block(b) | ExprKind::Loop(_, b) => block(b, never_none),
                ExprKind::If(_, t, _) => block(t, never_none),
                ExprKind::Match(_, arms) => arms.iter().any(|a| expr(&a.body, never_none)),
                ExprKind::Select(arms, _) => arms.iter().any(|a| expr(&a.body, never_none)),
                ExprKind::JoinFutures(_) => true,
                _ => false,
            };
            own || match &e.kind {
                // Their `else` was looked at above.
                ExprKind::IfLetSome { scrutinee, .. } => expr(scrutinee, never_none),
                _ => crate::check::children(e)
                    .into_iter()
                    .any(|c| expr(c, never_none)),
            }
        }
        block(body, &never_none)
    }
}
