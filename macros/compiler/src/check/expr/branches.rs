//! Branches: `if`, `if let Some(v) = ..`, `match` over integers and enums, and `return`.

use std::collections::HashMap;

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::check::consts;
use crate::tir::{Block, Expr, ExprKind, LetPattern, Lit, MatchArm, MatchPat, Stmt};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `if cond { .. } else { .. }` (without `else`, of type `()`), and `if let Some(v) = opt`,
    /// which becomes `let tmp = opt;` and an `if` on `tmp.is_some()` that binds `v`.
    pub(super) fn if_expr(
        &mut self,
        i: &mut syn::ExprIf,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let bool_ty = Ty::Scalar(Scalar::Bool);
        // `if let Some(v) = opt { .. }`: `let tmp = opt; if tmp.is_some() { let v = ..; .. }`.
        let mut if_let = None;
        let (cond, mut then) = if let syn::Expr::Let(l) = &mut *i.cond {
            let scrutinee = self.expr(&mut l.expr, None);
            let s = match scrutinee.ty {
                Ty::Opt(s) => s,
                Ty::Error => return err(span),
                Ty::OptRecvSlot(_) | Ty::OptSendSlot(_) | Ty::OptRange | Ty::OptSlice { .. } => {
                    let pat = (*l.pat).clone();
                    let Some(binding) = self.some_binding(&pat) else {
                        return err(span);
                    };
                    let else_ = i.else_branch.as_mut().map(|(_, e)| &mut **e);
                    return self.if_let_some(scrutinee, binding, &mut i.then_branch, else_, span);
                }
                ref other => {
                    self.diags.error(
                        scrutinee.span,
                        format!("`if let` takes an `Option` here (a receive, a reserve, `tiles.next()`, a `checked_*` result), not a `{other}`"),
                    );
                    return err(span);
                }
            };
            let name = match &*l.pat {
                syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
                    match &ts.elems[0] {
                        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            Some((
                                pi.ident.to_string(),
                                pi.mutability.is_some(),
                                pi.ident.span(),
                            ))
                        }
                        syn::Pat::Wild(_) => None,
                        other => {
                            self.diags
                                .error_at(other, "bind the value to a name, as in `Some(v)`");
                            return err(span);
                        }
                    }
                }
                other => {
                    self.diags.error_at(
                        other,
                        "write `if let Some(v) = ..` (use `.is_none()` for the other case)",
                    );
                    return err(span);
                }
            };
            let tmp = self.declare("__gpu_async_option", Ty::Opt(s), false, span);
            let tmp_expr = mk(ExprKind::Local(tmp), Ty::Opt(s), span);
            let cond = mk(
                ExprKind::OptIsSome(Box::new(tmp_expr.clone()), true),
                bool_ty.clone(),
                span,
            );
            self.names.push(HashMap::new());
            let mut bound = Vec::new();
            if let Some((name, mutable, at)) = name {
                let v = self.declare(&name, Ty::Scalar(s), mutable, at);
                // The value where it is `Some` (the `unwrap_or` default is never taken there).
                let zero = mk(ExprKind::Lit(Lit::Int(0)), Ty::Scalar(s), span);
                let zero = if s.is_float() {
                    mk(ExprKind::Lit(Lit::Float(0.0)), Ty::Scalar(s), span)
                } else {
                    zero
                };
                let value = mk(
                    ExprKind::OptUnwrap(Box::new(tmp_expr), Some(Box::new(zero))),
                    Ty::Scalar(s),
                    span,
                );
                bound.push(Stmt::Let(LetPattern::Local(v), value));
            }
            let mut then = self.block(&mut i.then_branch);
            self.names.pop();
            bound.append(&mut then.stmts);
            then.stmts = bound;
            if_let = Some((tmp, scrutinee));
            (cond, then)
        } else {
            let mut cond = self.expr(&mut i.cond, Some(&bool_ty));
            self.expect(&mut cond, &bool_ty);
            let then = self.block(&mut i.then_branch);
            (cond, then)
        };
        let else_ = i
            .else_branch
            .as_mut()
            .map(|(_, e)| Box::new(self.expr(e, expected)));
        let then_ty = then.tail.as_ref().map_or(Ty::Unit, |t| t.ty.clone());
        let ty = match &else_ {
            None => {
                if !matches!(then_ty, Ty::Unit | Ty::Error) {
                    self.diags.error(
                        span,
                        "an `if` without `else` has no value: add an `else` branch",
                    );
                }
                Ty::Unit
            }
            Some(e) => {
                let mut e = e.clone();
                match (&then_ty, &e.ty) {
                    (a, b) if a == b => a.clone(),
                    // A branch that never ends (`return`, `break`, a `loop` without one) takes
                    // the other's type.
                    (Ty::Never, b) => b.clone(),
                    (a, Ty::Never) => a.clone(),
                    (Ty::Scalar(s), Ty::IntLit | Ty::FloatLit) => {
                        self.expect(&mut e, &Ty::Scalar(*s));
                        then_ty.clone()
                    }
                    (Ty::IntLit | Ty::FloatLit, Ty::Scalar(s)) => {
                        let s = *s;
                        if let Some(t) = then.tail.as_mut() {
                            self.expect(t, &Ty::Scalar(s));
                        }
                        Ty::Scalar(s)
                    }
                    (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
                    (a, b) => {
                        self.diags.error(
                            span,
                            format!(
                                "the branches of this `if` have different types, `{a}` and `{b}`"
                            ),
                        );
                        Ty::Error
                    }
                }
            }
        };
        let else_ = else_.map(|mut e| {
            if let Ty::Scalar(s) = ty {
                self.fix_literals(&mut e, s);
            }
            e
        });
        if let Ty::Array(..) | Ty::Tuple(_) | Ty::Struct(..) = ty {
            self.diags.error(span, format!("an `if` cannot produce a `{ty}` yet: declare it before the `if` and assign its parts in each branch"));
            return err(span);
        }
        if !branch_value(&ty) {
            self.diags.error(span, format!("an `if` can give a scalar or an enum value only, not a `{ty}`: choose what it is made from in the branches (an index, a range's ends) and make it after the `if`"));
            return err(span);
        }
        let if_expr = mk(ExprKind::If(Box::new(cond), then, else_), ty.clone(), span);
        match if_let {
            Some((tmp, scrutinee)) => mk(
                ExprKind::Block(Block {
                    stmts: vec![Stmt::Let(LetPattern::Local(tmp), scrutinee)],
                    tail: Some(Box::new(if_expr)),
                }),
                ty,
                span,
            ),
            None => if_expr,
        }
    }

    /// `match` over an integer: literal, `a | b` and `lo..=hi` patterns, `_`, guards.
    pub(super) fn match_expr(&mut self, m: &mut syn::ExprMatch, expected: Option<&Ty>) -> Expr {
        let span = m.match_token.span;
        let scrutinee = self.expr(&mut m.expr, None);
        let mut scrutinee = self.auto_deref(scrutinee);
        if scrutinee.ty == Ty::IntLit {
            self.fix_literals(&mut scrutinee, Scalar::I32);
        }
        let int = match scrutinee.ty {
            Ty::Scalar(s) if s.is_int() => s,
            // An enum without payloads is matched on its discriminant.
            Ty::Enum(..) => Scalar::U32,
            Ty::Error => return err(span),
            Ty::Opt(_)
            | Ty::OptRecvSlot(_)
            | Ty::OptSendSlot(_)
            | Ty::OptRange
            | Ty::OptSlice { .. } => {
                return self.match_option(scrutinee, m, expected, span);
            }
            ref other => {
                self.diags.error(scrutinee.span, format!("`match` works over integers in kernels; this is a `{other}` (use `if`/`else`)"));
                return err(span);
            }
        };
        if m.arms.is_empty() {
            self.diags.error(
                m.brace_token.span.join(),
                format!("this `match` has no arms, but a `{}` has values: Rust requires arms that cover them all; add one, as in `_ => ..`", scrutinee.ty),
            );
            return err(span);
        }
        let mut arms = Vec::new();
        let mut ty: Option<Ty> = expected.cloned().filter(|t| matches!(t, Ty::Scalar(_)));
        for arm in m.arms.iter_mut() {
            let mut patterns = Vec::new();
            self.names.push(HashMap::new());
            let binding = match &arm.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    patterns.push(MatchPat::Wild);
                    Some(self.declare(
                        &pi.ident.to_string(),
                        Ty::Scalar(int),
                        false,
                        pi.ident.span(),
                    ))
                }
                pat => {
                    self.match_patterns(pat, int, &mut patterns);
                    None
                }
            };
            let guard = arm.guard.as_mut().map(|(_, g)| {
                let mut g = self.expr(g, Some(&Ty::Scalar(Scalar::Bool)));
                self.expect(&mut g, &Ty::Scalar(Scalar::Bool));
                g
            });
            let mut body = self.arm_body(&mut arm.body, ty.as_ref());
            match (&ty, &body.ty) {
                (_, Ty::Never | Ty::Error) => {}
                (Some(t), _) => {
                    let t = t.clone();
                    self.expect(&mut body, &t);
                }
                (None, Ty::IntLit | Ty::FloatLit) => {}
                (None, other) => ty = Some(other.clone()),
            }
            self.names.pop();
            arms.push(MatchArm {
                patterns,
                binding,
                guard,
                body,
            });
        }
        let ty = match ty {
            // Every arm diverges: so does the `match`, whatever its context expects (as in Rust,
            // `!` coerces to it), and it leaves no value to read.
            Some(_) if arms.iter().all(|a| a.body.ty == Ty::Never) => Ty::Never,
            Some(t) => t,
            None => {
                // Every arm is a literal (or diverges): Rust's defaults.
                let lit = arms
                    .iter()
                    .map(|a| a.body.ty.clone())
                    .find(|t| matches!(t, Ty::IntLit | Ty::FloatLit));
                // Left open, like a literal: the context (a `let` type, a return type) fixes it.
                match lit {
                    Some(t) => t,
                    None => {
                        if arms.iter().all(|a| a.body.ty == Ty::Never) {
                            Ty::Never
                        } else {
                            Ty::Unit
                        }
                    }
                }
            }
        };
        if let Ty::Scalar(s) = ty {
            for a in arms.iter_mut() {
                self.fix_literals(&mut a.body, s);
            }
        }
        if let Ty::Array(..) | Ty::Tuple(_) | Ty::Struct(..) = ty {
            self.diags.error(span, format!("a `match` cannot produce a `{ty}` yet: declare it before the `match` and assign its parts in each arm"));
            return err(span);
        }
        if !branch_value(&ty) {
            self.diags.error(span, format!("a `match` can give a scalar or an enum value only, not a `{ty}`: choose what it is made from in the arms (an index, a range's ends) and make it after the `match`"));
            return err(span);
        }
        mk(ExprKind::Match(Box::new(scrutinee), arms), ty, span)
    }

    /// `Some(x)` (`mut` allowed) or `Some(_)`: the binding's name, mutability and span (`None` for
    /// `_`); `None` after reporting any other pattern.
    #[allow(clippy::type_complexity)]
    fn some_binding(&mut self, pat: &syn::Pat) -> Option<Option<(String, bool, Span)>> {
        match pat {
            syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
                match &ts.elems[0] {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        Some(Some((
                            pi.ident.to_string(),
                            pi.mutability.is_some(),
                            pi.ident.span(),
                        )))
                    }
                    syn::Pat::Wild(_) => Some(None),
                    other => {
                        self.diags
                            .error_at(other, "bind the value to a name, as in `Some(slot)`");
                        None
                    }
                }
            }
            other => {
                self.diags.error_at(
                    other,
                    "write `Some(x)` here (the other case is the `else` branch)",
                );
                None
            }
        }
    }

    /// `if let Some(x) = option { then } else { else_ }` over the `Option` of a receive, a
    /// reserve or `tiles.next()`: an [`ExprKind::IfLetSome`].
    fn if_let_some(
        &mut self,
        scrutinee: Expr,
        binding: Option<(String, bool, Span)>,
        then: &mut syn::Block,
        else_: Option<&mut syn::Expr>,
        span: Span,
    ) -> Expr {
        let item = scrutinee.ty.option_item().unwrap_or(Ty::Error);
        self.names.push(HashMap::new());
        let local = binding.map(|(name, mutable, at)| self.declare(&name, item, mutable, at));
        let then = self.block(then);
        self.names.pop();
        let else_ = else_.map(|e| self.expr(e, None));
        self.if_let_node(scrutinee, local, then, else_, span)
    }

    /// The [`ExprKind::IfLetSome`] of a scrutinee, its binding and its two branches, typed as an
    /// `if` is.
    fn if_let_node(
        &mut self,
        scrutinee: Expr,
        binding: Option<crate::tir::LocalId>,
        mut then: Block,
        else_: Option<Expr>,
        span: Span,
    ) -> Expr {
        let then_ty = then.tail.as_ref().map_or(Ty::Unit, |t| t.ty.clone());
        let ty = match &else_ {
            None if !matches!(then_ty, Ty::Unit | Ty::Error | Ty::Never) => {
                self.diags.error(
                    span,
                    "an `if let` without `else` has no value: add an `else` branch",
                );
                Ty::Error
            }
            None => Ty::Unit,
            Some(e) => {
                match (&then_ty, &e.ty) {
                    (a, b) if a == b => a.clone(),
                    (Ty::Never, b) => b.clone(),
                    (a, Ty::Never) => a.clone(),
                    (Ty::Scalar(s), Ty::IntLit | Ty::FloatLit) => Ty::Scalar(*s),
                    (Ty::IntLit | Ty::FloatLit, Ty::Scalar(s)) => Ty::Scalar(*s),
                    (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
                    (a, b) => {
                        self.diags.error(
                        span,
                        format!("the branches of this `if let` have different types, `{a}` and `{b}`"),
                    );
                        Ty::Error
                    }
                }
            }
        };
        let mut else_ = else_;
        if let Ty::Scalar(s) = ty {
            if let Some(t) = then.tail.as_mut() {
                self.fix_literals(t, s);
            }
            if let Some(e) = else_.as_mut() {
                self.fix_literals(e, s);
            }
        }
        // What an `if` or a `match` can give, but for a parallel iterator, which an `if let`
        // reports here rather than where it runs.
        if !branch_value(&ty) || matches!(ty, Ty::ParIter(_)) {
            self.diags.error(span, format!("this `if let` cannot produce a `{ty}`: declare it before and assign it in each branch"));
            return err(span);
        }
        mk(
            ExprKind::IfLetSome {
                scrutinee: Box::new(scrutinee),
                binding,
                then,
                else_: else_.map(Box::new),
            },
            ty,
            span,
        )
    }

    /// `match option { Some(x) => a, None => b }` (in either order; `_` for the other arm):
    /// an `if let`.
    fn match_option(
        &mut self,
        scrutinee: Expr,
        m: &mut syn::ExprMatch,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let item = scrutinee.ty.option_item().unwrap_or(Ty::Error);
        let shape = "a `match` on an `Option` has a `Some(x)` arm and a `None` (or `_`) arm";
        if m.arms.len() != 2 || m.arms.iter().any(|a| a.guard.is_some()) {
            self.diags.error(span, format!("{shape}, without guards"));
            return err(span);
        }
        let is_none = |p: &syn::Pat| match p {
            syn::Pat::Ident(pi) => pi.ident == "None",
            syn::Pat::Path(pp) => pp.path.is_ident("None"),
            syn::Pat::Wild(_) => true,
            _ => false,
        };
        let (some_at, none_at) = if is_none(&m.arms[1].pat) {
            (0, 1)
        } else if is_none(&m.arms[0].pat) {
            (1, 0)
        } else {
            self.diags.error_at(&m.arms[1].pat, shape);
            return err(span);
        };
        let pat = m.arms[some_at].pat.clone();
        let Some(binding) = self.some_binding(&pat) else {
            return err(span);
        };
        self.names.push(HashMap::new());
        let local = binding.map(|(name, mutable, at)| self.declare(&name, item, mutable, at));
        let some_body = self.arm_body(&mut m.arms[some_at].body, expected);
        self.names.pop();
        let none_body = self.arm_body(&mut m.arms[none_at].body, expected);
        let then = Block {
            stmts: Vec::new(),
            tail: Some(Box::new(some_body)),
        };
        self.if_let_node(scrutinee, local, then, Some(none_body), span)
    }

    /// Pushes the values `pat` matches to `out`: literals, constants, enum variants, `lo..=hi`
    /// ranges and `a | b`.
    fn match_patterns(&mut self, pat: &syn::Pat, int: Scalar, out: &mut Vec<MatchPat>) {
        let value = |this: &mut Self, e: &syn::Expr| -> Option<u64> {
            if let syn::Expr::Path(p) = e {
                if let Some(v) = this.enum_value(&p.path) {
                    return match v.kind {
                        ExprKind::Lit(Lit::Int(d)) => Some(int.int_bits(d as i128)),
                        _ => None,
                    };
                }
            }
            match consts::eval_const(e, int, &this.scope.consts, this.diags) {
                // The bits the lowering gives a constant of this type (all 64 of them for the
                // 64-bit types).
                Some(Lit::Int(v)) => Some(int.int_bits(v as i128)),
                _ => None,
            }
        };
        match pat {
            syn::Pat::Wild(_) => out.push(MatchPat::Wild),
            syn::Pat::Or(o) => {
                for p in &o.cases {
                    self.match_patterns(p, int, out);
                }
            }
            syn::Pat::Lit(l) => {
                let e = syn::Expr::Lit(l.clone());
                if let Some(v) = value(self, &e) {
                    out.push(MatchPat::Value(v));
                }
            }
            syn::Pat::Path(p) => {
                let e = syn::Expr::Path(p.clone());
                if let Some(v) = value(self, &e) {
                    out.push(MatchPat::Value(v));
                }
            }
            syn::Pat::Range(r) if matches!(r.limits, syn::RangeLimits::Closed(_)) => {
                match (r.start.as_deref(), r.end.as_deref()) {
                    (Some(a), Some(b)) => {
                        if let (Some(a), Some(b)) = (value(self, a), value(self, b)) {
                            out.push(MatchPat::Range(a, b));
                        }
                    }
                    _ => self.diags.error_at(r, "write a range pattern with both ends, `lo..=hi`"),
                }
            }
            other => self.diags.error_at(other, "`match` arms in kernels are integer literals, constants, `lo..=hi` ranges, `a | b`, or `_`"),
        }
    }

    /// `return` and `return value` (not out of an async block or a parallel loop's closure).
    pub(super) fn return_expr(&mut self, r: &mut syn::ExprReturn, span: Span) -> Expr {
        if self.in_async_block {
            self.diags.error_at(&r.return_token, "`return` in an async block leaves the block, not the function, in Rust: give the block a value instead");
            return err(span);
        }
        if self.par_locals_start.is_some() {
            self.diags.error_at(
                &r.return_token,
                "`return` inside a `par_iter` closure: the closure's value is its last expression",
            );
            return err(span);
        }
        self.has_return = true;
        let ret = self.sig.ret.clone();
        let value = r.expr.as_mut().map(|v| {
            let mut v = self.expr(v, Some(&ret));
            self.expect(&mut v, &ret);
            Box::new(v)
        });
        if value.is_none() && ret != Ty::Unit && ret != Ty::Error {
            self.diags.error_at(
                &r.return_token,
                format!("this function returns a `{ret}`: write `return value;`"),
            );
        }
        mk(ExprKind::Return(value), Ty::Never, span)
    }
}

/// Whether an `if` or a `match` can give a value of type `ty`: the lowering merges its branches'
/// values in one register, so a scalar or an enum (or no value). A parallel iterator is
/// reported where it runs (`par_iter_in_place`).
fn branch_value(ty: &Ty) -> bool {
    matches!(
        ty,
        Ty::Scalar(_)
            | Ty::Enum(..)
            | Ty::IntLit
            | Ty::FloatLit
            | Ty::Unit
            | Ty::Never
            | Ty::Error
            | Ty::ParIter(_)
    )
}
