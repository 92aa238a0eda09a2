//! Loops: `for`, `while`, `while let`, `loop`, `break` and `continue`, and the methods of the
//! iterators a `for` loop runs over (`rev`, `step_by`, `block_tiles(..).next()`).
//!
//! Loops are statements in the typed IR, except `loop`, which can give a value.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{err, mk, span_of, Checker};
use crate::tir::{BinOp, Block, Expr, ExprKind, LetPattern, Lit, Stmt};
use crate::types::{Scalar, Ty};

/// What a `break` or `continue` inside a loop needs to know about it.
pub(super) struct LoopCtx {
    label: Option<String>,
    /// `loop` (which `break value` may give a value to), not `for`/`while`.
    is_loop_expr: bool,
    /// The type of the values given by `break value` so far.
    break_ty: Option<Ty>,
}

/// Puts `::gpu_async::device::__loop_tick();` first in the body of a checked loop, spanned at
/// its keyword: the shadow code's progress point, where the simulator stops a loop that does not
/// await (a cancelled launch, the watchdog), naming the loop's line. Added after the body is
/// checked, so the typed IR, and the kernel's IR and PTX, never see it.
fn tick_each_iteration(body: &mut syn::Block, keyword: Span) {
    // Made directly rather than parsed: a body of thousands of loops makes thousands.
    let mut segments = syn::punctuated::Punctuated::new();
    for (i, name) in ["gpu_async", "device", "__loop_tick"]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            segments.push_punct(syn::Token![::](keyword));
        }
        segments.push_value(syn::PathSegment::from(syn::Ident::new(name, keyword)));
    }
    let path = syn::Path {
        leading_colon: Some(syn::Token![::](keyword)),
        segments,
    };
    let call = syn::Expr::Call(syn::ExprCall {
        attrs: Vec::new(),
        func: Box::new(syn::Expr::Path(syn::ExprPath {
            attrs: Vec::new(),
            qself: None,
            path,
        })),
        paren_token: syn::token::Paren(keyword),
        args: syn::punctuated::Punctuated::new(),
    });
    body.stmts
        .insert(0, syn::Stmt::Expr(call, Some(syn::Token![;](keyword))));
}

/// The name of a loop's label, without its `'`.
fn label_name(l: &Option<syn::Label>) -> Option<String> {
    l.as_ref().map(|l| l.name.ident.to_string())
}

impl Checker<'_> {
    /// Loops, which the typed IR keeps as statements (`loop`, which can have a value, is an
    /// expression).
    pub(super) fn control_stmt(&mut self, e: &mut syn::Expr) -> Option<Stmt> {
        match e {
            syn::Expr::ForLoop(_) | syn::Expr::While(_) => {
                // A loop is one level of nesting, as the expressions are.
                let span = span_of(e);
                if !self.enter(span) {
                    return Some(Stmt::Expr(err(span)));
                }
                let s = match e {
                    syn::Expr::ForLoop(f) => self.for_loop(f),
                    syn::Expr::While(w) => self.while_loop(w),
                    _ => None,
                };
                self.depth -= 1;
                s
            }
            syn::Expr::Break(b) => {
                let target = self.target_loop(&b.label, &*b, "break");
                let value = b.expr.as_mut().map(|v| self.break_value(target, v));
                let label = b.label.as_ref().map(|l| l.ident.to_string());
                Some(Stmt::Break(label, value, b.span()))
            }
            syn::Expr::Continue(c) => {
                self.target_loop(&c.label, &*c, "continue");
                let label = c.label.as_ref().map(|l| l.ident.to_string());
                Some(Stmt::Continue(label, c.span()))
            }
            _ => None,
        }
    }

    /// `for x in iter { .. }` over a range (maybe reversed or stepped) or `block_tiles(..)`, and
    /// over `slice.iter()` (or a slot's), any of them `.enumerate()`d.
    fn for_loop(&mut self, f: &mut syn::ExprForLoop) -> Option<Stmt> {
        let label = label_name(&f.label);
        let stmt = self.for_parts(label, &mut f.expr, &f.pat, &mut f.body);
        tick_each_iteration(&mut f.body, f.for_token.span);
        stmt
    }

    /// A `for` loop from its parts (the user's tokens, which the checker edits in place for the
    /// shadow code).
    fn for_parts(
        &mut self,
        label: Option<String>,
        head: &mut syn::Expr,
        pat: &syn::Pat,
        body: &mut syn::Block,
    ) -> Option<Stmt> {
        let mut head = head;
        while let syn::Expr::Paren(p) = head {
            head = &mut *p.expr;
        }
        if is_method(head, "enumerate") {
            return self.for_enumerated(label, head, pat, body);
        }
        if is_method(head, "iter") {
            return self.for_elements(label, head, pat, body, None);
        }
        let iter = match head {
            syn::Expr::Range(r) => self.loop_range(r),
            other => self.expr(other, None),
        };
        let var_ty = match (&iter.kind, &iter.ty) {
            (ExprKind::Range(a, _) | ExprKind::InclusiveRange(a, _), _) => a.ty.clone(),
            (ExprKind::StepBy(..) | ExprKind::Rev(..), _) => Ty::Scalar(Scalar::Usize),
            (_, Ty::Tiles) => Ty::Range,
            (_, Ty::Error) => Ty::Error,
            (_, other) => {
                self.diags.error(iter.span, format!("a kernel `for` loop runs over a range `a..b` (maybe with `.rev()` or `.step_by(k)`), `block_tiles(..)` or `s.iter()` of a slice or slot (any of them `.enumerate()`d), not over `{other}`"));
                Ty::Error
            }
        };
        self.names.push(HashMap::new());
        let var = match pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() => self.declare(
                &pi.ident.to_string(),
                var_ty,
                pi.mutability.is_some(),
                pi.ident.span(),
            ),
            syn::Pat::Wild(w) => self.declare("_", var_ty, false, w.span()),
            other => {
                self.diags
                    .error_at(other, "bind the loop variable to a name");
                self.declare("_", var_ty, false, other.span())
            }
        };
        let (body, _) = self.in_loop(label.clone(), false, |c| c.block(body));
        self.names.pop();
        Some(Stmt::For(label, var, iter, body))
    }

    /// `while cond { .. }`, and `while let Some(x) = ..` over receives and tiles.
    fn while_loop(&mut self, w: &mut syn::ExprWhile) -> Option<Stmt> {
        let label = label_name(&w.label);
        if let syn::Expr::Let(l) = &mut *w.cond {
            let scrutinee = self.expr(&mut l.expr, None);
            let item_ty = match &scrutinee.ty {
                Ty::OptRecvSlot(c) => Ty::RecvSlot(c.clone()),
                Ty::OptSendSlot(c) => Ty::SendSlot(c.clone()),
                Ty::OptRange => Ty::Range,
                Ty::Error => Ty::Error,
                other => {
                    self.diags.error(scrutinee.span, format!("`while let Some(x) = ..` works over `rx.recv().await`, `tx.reserve().await` and `tiles.next()`, not over `{other}`"));
                    Ty::Error
                }
            };
            if matches!(scrutinee.ty, Ty::OptRecvSlot(_) | Ty::OptSendSlot(_))
                && !matches!(scrutinee.kind, ExprKind::Await(_))
            {
                self.diags.error(scrutinee.span, "`while let` takes the slot of `rx.recv().await` or `tx.reserve().await` where it is made");
            }
            self.names.push(HashMap::new());
            let var = match &*l.pat {
                syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
                    match &ts.elems[0] {
                        syn::Pat::Ident(pi) if pi.by_ref.is_none() => self.declare(
                            &pi.ident.to_string(),
                            item_ty,
                            pi.mutability.is_some(),
                            pi.ident.span(),
                        ),
                        syn::Pat::Wild(wd) => self.declare("_", item_ty, false, wd.span()),
                        other => {
                            self.diags
                                .error_at(other, "bind the item to a name: `Some(slot)`");
                            self.declare("_", item_ty, false, other.span())
                        }
                    }
                }
                other => {
                    self.diags
                        .error_at(other, "write `while let Some(name) = ...`");
                    self.declare("_", item_ty, false, other.span())
                }
            };
            let (body, _) = self.in_loop(label.clone(), false, |c| c.block(&mut w.body));
            tick_each_iteration(&mut w.body, w.while_token.span);
            self.names.pop();
            return Some(Stmt::WhileLet(label, var, scrutinee, body));
        }
        let mut cond = self.expr(&mut w.cond, Some(&Ty::Scalar(Scalar::Bool)));
        self.expect(&mut cond, &Ty::Scalar(Scalar::Bool));
        let (body, _) = self.in_loop(label.clone(), false, |c| c.block(&mut w.body));
        tick_each_iteration(&mut w.body, w.while_token.span);
        Some(Stmt::While(label, cond, body))
    }

    /// `loop { .. }`: its value is given by `break value`, and it is `!` without a `break`.
    pub(super) fn loop_expr(&mut self, l: &mut syn::ExprLoop, span: Span) -> Expr {
        let label = label_name(&l.label);
        let (body, break_ty) = self.in_loop(label.clone(), true, |c| c.block(&mut l.body));
        tick_each_iteration(&mut l.body, l.loop_token.span);
        // Without a `break`, a `loop` never ends: its type is `!`.
        let ty = match break_ty {
            Some(t) => t,
            None if Self::has_break(&body) => Ty::Unit,
            None => Ty::Never,
        };
        mk(ExprKind::Loop(label, body), ty, span)
    }

    /// `for (i, x) in iter.enumerate() { body }`: the loop over `iter` with a counter,
    /// `{ let mut n = 0; for x in iter { let i = n; n += 1; body } }` (`s.iter()` of a slice or
    /// slot takes the element's index for `i`).
    fn for_enumerated(
        &mut self,
        label: Option<String>,
        head: &mut syn::Expr,
        pat: &syn::Pat,
        body: &mut syn::Block,
    ) -> Option<Stmt> {
        let span = head.span();
        let (index_pat, item_pat) = match pat {
            syn::Pat::Tuple(t) if t.elems.len() == 2 => (&t.elems[0], &t.elems[1]),
            other => {
                self.diags.error_at(
                    other,
                    "the items of `enumerate()` are pairs: write `for (i, x) in ..`",
                );
                return None;
            }
        };
        let syn::Expr::MethodCall(m) = head else {
            return None;
        };
        let inner = &mut *m.receiver;
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let index_name = match index_pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                Some((pi.ident.to_string(), pi.ident.span()))
            }
            syn::Pat::Wild(_) => None,
            other => {
                self.diags.error_at(other, "bind the index to a name");
                None
            }
        };
        if is_method(inner, "iter") {
            return self.for_elements(label, inner, item_pat, body, index_name);
        }
        self.names.push(HashMap::new());
        let counter = self.declare("__gpu_async_count", usize_ty.clone(), true, span);
        let count = mk(ExprKind::Local(counter), usize_ty.clone(), span);
        let zero = mk(ExprKind::Lit(Lit::Int(0)), usize_ty.clone(), span);
        let one = mk(ExprKind::Lit(Lit::Int(1)), usize_ty.clone(), span);
        let mut prelude = Vec::new();
        // The index is declared in a scope around the loop's own, so that the body sees it.
        self.names.push(HashMap::new());
        if let Some((name, at)) = index_name {
            let id = self.declare(&name, usize_ty.clone(), false, at);
            prelude.push(Stmt::Let(LetPattern::Local(id), count.clone()));
        }
        prelude.push(Stmt::Expr(mk(
            ExprKind::Assign(
                Box::new(count.clone()),
                Box::new(mk(
                    ExprKind::Binary(BinOp::Add, Box::new(count.clone()), Box::new(one)),
                    usize_ty.clone(),
                    span,
                )),
            ),
            Ty::Unit,
            span,
        )));
        let stmt = self.for_parts(label, inner, item_pat, body);
        self.names.pop();
        self.names.pop();
        let Some(Stmt::For(label, var, iter, mut body)) = stmt else {
            return stmt;
        };
        prelude.append(&mut body.stmts);
        body.stmts = prelude;
        Some(Stmt::Expr(mk(
            ExprKind::Block(Block {
                stmts: vec![
                    Stmt::Let(LetPattern::Local(counter), zero),
                    Stmt::For(label, var, iter, body),
                ],
                tail: None,
            }),
            Ty::Unit,
            span,
        )))
    }

    /// `for x in s.iter() { body }` of a slice, an array or a slot (with `index`, the name the
    /// caller's `enumerate` pattern gives the element's index): a counted loop whose item is
    /// `&s[k]` (`x`, or `&x` for the value). Role code runs it on every thread, each reading
    /// every element.
    fn for_elements(
        &mut self,
        label: Option<String>,
        head: &mut syn::Expr,
        pat: &syn::Pat,
        body: &mut syn::Block,
        index: Option<(String, Span)>,
    ) -> Option<Stmt> {
        let span = head.span();
        let syn::Expr::MethodCall(m) = head else {
            return None;
        };
        let base = self.expr(&mut m.receiver, None);
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let (elem, len) = match &base.ty {
            Ty::Slice { elem, .. } | Ty::Array(elem, _) => {
                let elem = *elem;
                let len = match base.ty {
                    Ty::Array(_, n) => mk(
                        ExprKind::Lit(Lit::Int(u128::from(n))),
                        usize_ty.clone(),
                        span,
                    ),
                    _ => mk(
                        ExprKind::Len(Box::new(base.clone())),
                        usize_ty.clone(),
                        span,
                    ),
                };
                (elem, len)
            }
            Ty::RecvSlot(c) | Ty::SendSlot(c) if c.elem.scalar().is_some() => (
                c.elem.scalar().unwrap_or(Scalar::F32),
                mk(
                    ExprKind::Lit(Lit::Int(u128::from(c.len))),
                    usize_ty.clone(),
                    span,
                ),
            ),
            Ty::Error => return None,
            other => {
                self.diags.error(base.span, format!("`iter()` in a `for` loop goes over a slice, an array or a slot of scalars, not a `{other}`"));
                return None;
            }
        };
        self.names.push(HashMap::new());
        let k = self.declare("__gpu_async_index", usize_ty.clone(), false, span);
        let index_expr = mk(ExprKind::Local(k), usize_ty.clone(), span);
        let mut prelude = Vec::new();
        if let Some((name, at)) = index {
            let id = self.declare(&name, usize_ty.clone(), false, at);
            prelude.push(Stmt::Let(LetPattern::Local(id), index_expr.clone()));
        }
        // The item: `x` is a `&T` (read where Rust dereferences it), `&x` the value.
        let item = match pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                Some((pi.ident.to_string(), pi.ident.span(), false))
            }
            syn::Pat::Reference(r) => match &*r.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    Some((pi.ident.to_string(), pi.ident.span(), true))
                }
                _ => None,
            },
            syn::Pat::Wild(w) => Some(("_".to_string(), w.span(), true)),
            _ => None,
        };
        let Some((name, at, by_value)) = item else {
            self.diags.error_at(
                pat,
                "bind the element to a name: `x`, or `&x` for its value",
            );
            self.names.pop();
            return None;
        };
        let item_ty = if by_value {
            Ty::Scalar(elem)
        } else {
            Ty::ElemRef {
                elem,
                mutable: false,
            }
        };
        let item = self.declare(&name, item_ty.clone(), false, at);
        prelude.push(Stmt::Let(
            LetPattern::Local(item),
            mk(
                ExprKind::Index(Box::new(base), Box::new(index_expr)),
                item_ty,
                span,
            ),
        ));
        let (mut body, _) = self.in_loop(label.clone(), false, |c| c.block(body));
        self.names.pop();
        prelude.append(&mut body.stmts);
        body.stmts = prelude;
        let zero = mk(ExprKind::Lit(Lit::Int(0)), usize_ty.clone(), span);
        let range = mk(
            ExprKind::Range(Box::new(zero), Box::new(len)),
            Ty::Range,
            span,
        );
        Some(Stmt::For(label, k, range, body))
    }

    /// Runs `f` inside a loop context; returns its result and the type `break value` gave.
    fn in_loop<R>(
        &mut self,
        label: Option<String>,
        is_loop_expr: bool,
        f: impl FnOnce(&mut Self) -> R,
    ) -> (R, Option<Ty>) {
        self.loops.push(LoopCtx {
            label,
            is_loop_expr,
            break_ty: None,
        });
        let r = f(self);
        let ctx = self.loops.pop();
        (r, ctx.and_then(|c| c.break_ty))
    }

    /// The loop a `break`/`continue` with `label` targets, or an error.
    fn target_loop(
        &mut self,
        label: &Option<syn::Lifetime>,
        node: &dyn quote::ToTokens,
        what: &str,
    ) -> Option<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => {
                let name = l.ident.to_string();
                self.loops
                    .iter()
                    .rposition(|c| c.label.as_deref() == Some(name.as_str()))
            }
        };
        if found.is_none() && self.in_closure {
            self.diags.error_at(
                node,
                format!("`{what}` inside a closure or an async block cannot leave a loop around it (Rust rejects it too): end the closure's or the block's work early with `if`, or move the loop inside it"),
            );
        } else if found.is_none() {
            match label {
                None => self
                    .diags
                    .error_at(node, format!("`{what}` outside of a loop")),
                Some(l) => self
                    .diags
                    .error_at(l, format!("no enclosing loop is labeled `{l}`")),
            }
        }
        found
    }

    /// The value of `break value`: all the breaks of one `loop` give values of one type.
    fn break_value(&mut self, target: Option<usize>, v: &mut syn::Expr) -> Expr {
        let expected = target.and_then(|t| self.loops[t].break_ty.clone());
        let mut value = self.expr(v, expected.as_ref());
        let Some(t) = target else {
            return value;
        };
        if !self.loops[t].is_loop_expr {
            self.diags
                .error(value.span, "`break` with a value works in `loop` only");
            return value;
        }
        match expected {
            Some(ty) => self.expect(&mut value, &ty),
            None => {
                if value.ty == Ty::IntLit {
                    self.fix_literals(&mut value, Scalar::I32);
                } else if value.ty == Ty::FloatLit {
                    self.fix_literals(&mut value, Scalar::F32);
                }
                if !matches!(value.ty, Ty::Scalar(_) | Ty::Error) {
                    self.diags
                        .error(value.span, "a `loop` can give a scalar value only");
                }
                self.loops[t].break_ty = Some(value.ty.clone());
            }
        }
        value
    }

    /// Whether `block` has a `break` at any depth.
    fn has_break(block: &Block) -> bool {
        // A `loop` whose body has a `break` (at any depth of statements) ends; nested loops'
        // own breaks are counted too, which only makes the type `()` instead of `!`.
        fn stmts(b: &Block) -> bool {
            b.stmts.iter().any(|s| match s {
                Stmt::Break(..) => true,
                Stmt::For(_, _, _, body)
                | Stmt::While(_, _, body)
                | Stmt::WhileLet(_, _, _, body)
                | Stmt::LetElse(_, _, body) => stmts(body),
                Stmt::Expr(e) | Stmt::Let(_, e) => expr(e),
                _ => false,
            }) || b.tail.as_deref().is_some_and(expr)
        }
        fn expr(e: &Expr) -> bool {
            match &e.kind {
                ExprKind::Block(b) | ExprKind::Loop(_, b) => stmts(b),
                ExprKind::If(_, t, e)
                | ExprKind::IfLetSome {
                    then: t, else_: e, ..
                } => stmts(t) || e.as_deref().is_some_and(expr),
                ExprKind::Match(_, arms) => arms.iter().any(|a| expr(&a.body)),
                ExprKind::Select(arms, else_) => {
                    arms.iter().any(|a| expr(&a.body)) || else_.as_deref().is_some_and(expr)
                }
                _ => false,
            }
        }
        stmts(block)
    }

    /// The range of a `for` loop's head: `a..b` or `a..=b` over any integer type (the ends'
    /// type; `usize` when both are untyped literals).
    fn loop_range(&mut self, r: &mut syn::ExprRange) -> Expr {
        let span = match (r.attrs.first(), &r.start) {
            (Some(a), _) => a.pound_token.span,
            (None, Some(start)) => span_of(start),
            (None, None) => match &r.limits {
                syn::RangeLimits::HalfOpen(t) => t.spans[0],
                syn::RangeLimits::Closed(t) => t.spans[0],
            },
        };
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let (Some(start), Some(end)) = (r.start.as_mut(), r.end.as_mut()) else {
            self.diags.error(
                span,
                "a `for` loop runs over a range with both ends, `a..b`",
            );
            return err(span);
        };
        let s = self.expr(start, None);
        let mut s = self.auto_deref(s);
        let t = self.expr(end, None);
        let mut t = self.auto_deref(t);
        let ty = match (&s.ty, &t.ty) {
            (Ty::Scalar(a), _) if a.is_int() => *a,
            (_, Ty::Scalar(b)) if b.is_int() => *b,
            (Ty::IntLit, Ty::IntLit) => Scalar::Usize,
            (Ty::Error, _) | (_, Ty::Error) => return err(span),
            (a, b) => {
                let other = if matches!(a, Ty::IntLit) { b } else { a };
                self.diags.error(
                    span,
                    format!("a `for` loop counts over integers, not `{other}`"),
                );
                return err(span);
            }
        };
        let want = Ty::Scalar(ty);
        self.expect(&mut s, &want);
        self.expect(&mut t, &want);
        let kind = if inclusive {
            ExprKind::InclusiveRange(Box::new(s), Box::new(t))
        } else {
            ExprKind::Range(Box::new(s), Box::new(t))
        };
        mk(kind, Ty::Range, span)
    }

    /// A method of a loop's iterator: `rev` and `step_by` of a range, `next` of `block_tiles`.
    pub(super) fn range_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("next", Ty::Tiles) if self.want_args(m, 0) => {
                if let Some(id) = self.local_of(&receiver, "next") {
                    if !self.locals[id.0 as usize].mutable {
                        self.diags.error(
                            receiver.span,
                            "`next` advances the iterator: declare it `let mut`",
                        );
                    }
                }
                mk(ExprKind::TilesNext(Box::new(receiver)), Ty::OptRange, span)
            }
            ("into_par_iter", Ty::Range) if self.want_args(m, 0) => {
                self.par_indices(receiver, span)
            }
            ("rev", Ty::Range)
                if self.want_args(m, 0) && matches!(receiver.kind, ExprKind::Range(..)) =>
            {
                mk(ExprKind::Rev(Box::new(receiver)), Ty::Range, span)
            }
            ("step_by", Ty::Range)
                if self.want_args(m, 1) && matches!(receiver.kind, ExprKind::Range(..)) =>
            {
                let usize_ty = Ty::Scalar(Scalar::Usize);
                let mut k = self.expr(&mut m.args[0], Some(&usize_ty));
                self.expect(&mut k, &usize_ty);
                mk(
                    ExprKind::StepBy(Box::new(receiver), Box::new(k)),
                    Ty::Range,
                    span,
                )
            }
            ("unwrap", Ty::OptRange) if self.want_args(m, 0) => {
                mk(ExprKind::Unwrap(Box::new(receiver)), Ty::Range, span)
            }
            // `r.len()` of a range: `r.end - r.start`, or 0 when it starts after it ends (the
            // range is read twice, so only of a local).
            ("len", Ty::Range) if self.want_args(m, 0) => {
                if !matches!(receiver.kind, ExprKind::Local(_)) {
                    self.diags.error(
                        m.method.span(),
                        "call `len()` on a range held in a local, as `tile.len()`",
                    );
                    return err(span);
                }
                let usize_ty = Ty::Scalar(Scalar::Usize);
                let bound = |end| {
                    mk(
                        ExprKind::RangeBound(Box::new(receiver.clone()), end),
                        usize_ty.clone(),
                        span,
                    )
                };
                mk(
                    ExprKind::Math(
                        crate::tir::MathFn::SaturatingSub,
                        vec![bound(true), bound(false)],
                    ),
                    usize_ty.clone(),
                    span,
                )
            }
            ("is_empty", Ty::Range) if self.want_args(m, 0) => {
                let usize_ty = Ty::Scalar(Scalar::Usize);
                if !matches!(receiver.kind, ExprKind::Local(_)) {
                    self.diags.error(
                        m.method.span(),
                        "call `is_empty()` on a range held in a local, as `tile.is_empty()`",
                    );
                    return err(span);
                }
                let bound = |end| {
                    mk(
                        ExprKind::RangeBound(Box::new(receiver.clone()), end),
                        usize_ty.clone(),
                        span,
                    )
                };
                mk(
                    ExprKind::Binary(
                        crate::tir::BinOp::Ge,
                        Box::new(bound(false)),
                        Box::new(bound(true)),
                    ),
                    Ty::Scalar(Scalar::Bool),
                    span,
                )
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }
}

/// Whether `e` is a call of method `name` without arguments.
fn is_method(e: &syn::Expr, name: &str) -> bool {
    let mut e = e;
    while let syn::Expr::Paren(p) = e {
        e = &p.expr;
    }
    matches!(e, syn::Expr::MethodCall(m) if m.method == name && m.args.is_empty())
}
