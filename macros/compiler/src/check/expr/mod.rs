//! The function checker: statements and expressions.
//!
//! One [`Checker`] walks one function. This file holds its state, the entry
//! [`check_function`], the helpers every part uses (scopes, `expect`, `auto_deref`) and `expr`,
//! which hands each kind of expression to the module of its topic; each module adds the methods
//! of its topic to `Checker`.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;

use super::{assignable, ModuleScope};
use crate::diag::Diagnostics;
use crate::tir::{BinOp, Expr, ExprKind, FnId, Function, Lit, Local, LocalId, Signature};
use crate::types::{Scalar, Ty};
use loops::LoopCtx;
use operators::wrapping_form;

mod atomics;
mod branches;
mod calls;
mod channels;
mod concurrent;
mod kernel;
mod lanes;
mod literals;
mod loops;
mod macros;
mod math;
mod methods;
mod operators;
mod parallel;
mod places;
mod scans;
mod shared_arrays;
mod splits;
mod statements;

/// Checks one function; returns it and the helper calls it makes (for the recursion check).
pub(crate) fn check_function(
    item: &mut syn::ItemFn,
    id: FnId,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> (Function, Vec<(FnId, Span)>) {
    let sig = &scope.sigs[id.0 as usize];
    let mut checker = Checker {
        scope,
        sig,
        diags,
        locals: Vec::new(),
        names: vec![HashMap::new()],
        par_locals_start: None,
        loops: Vec::new(),
        has_return: false,
        in_unsafe: false,
        in_async_block: false,
        pending_rewrite: None,
        await_base: false,
        in_join: false,
        calls: Vec::new(),
        closed: Vec::new(),
        splits: Vec::new(),
        par_awaits: Vec::new(),
    };
    let mut params = Vec::new();
    for (name, ty, mutable, span) in &sig.params {
        params.push(checker.declare(name, ty.clone(), *mutable, *span));
    }
    if sig.kernel.is_some() {
        checker.plan_disjoint_ranges(&mut item.block);
    }
    let mut body = checker.block(&mut item.block);
    if let Some(tail) = body.tail.as_mut() {
        if sig.ret != Ty::Unit {
            checker.expect(tail, &sig.ret);
        } else if !matches!(tail.ty, Ty::Unit | Ty::Error | Ty::Never) {
            checker.diags.error(tail.span, format!("this function returns nothing, but its body ends in a value of type `{}`: add `;`", tail.ty));
        }
    } else if sig.ret != Ty::Unit && sig.ret != Ty::Error {
        checker.diags.error(
            item.sig.ident.span(),
            format!("this function must end in a value of type `{}`", sig.ret),
        );
    }
    if sig.kernel.is_some() {
        checker.check_kernel_shape(&body, item.sig.ident.span());
    }
    unmut_receivers(item, &params, &checker);
    if sig.kernel.is_none() {
        super::uniform::check_role_writes(&body, checker.diags);
        report_unused_receivers(item, &params, &mut checker);
    }
    let function = Function {
        name: sig.name.clone(),
        is_async: sig.is_async,
        kernel_warps: sig.kernel.map(|k| k.warps),
        idle_warps: sig.kernel.is_some_and(|k| k.idle_warps),
        params,
        ret: sig.ret.clone(),
        locals: checker.locals,
        body,
        has_return: checker.has_return,
        par_awaits: checker.par_awaits,
        span: item.sig.ident.span(),
    };
    (function, checker.calls)
}

/// The state of checking one function.
struct Checker<'a> {
    scope: &'a ModuleScope,
    sig: &'a Signature,
    diags: &'a mut Diagnostics,
    /// The function's locals, by `LocalId`.
    locals: Vec<Local>,
    /// The names in scope, one map per block, innermost last.
    names: Vec<HashMap<String, LocalId>>,
    /// Inside a `for_each` closure: the first local the closure declared. Locals before it are
    /// captured, and read-only.
    par_locals_start: Option<u32>,
    /// The enclosing loops, innermost last.
    loops: Vec<LoopCtx>,
    /// A `return` was seen.
    has_return: bool,
    /// Inside an `unsafe` block (where `get_unchecked` is allowed).
    in_unsafe: bool,
    /// Inside an `async { .. }` block awaited in place (where `return` would leave the block).
    in_async_block: bool,
    /// The shadow code's replacement for the expression just checked (a wrapping negation).
    pending_rewrite: Option<syn::Expr>,
    /// The method call being checked is the operand of `.await` (warp operations must be).
    await_base: bool,
    /// Inside a branch of a `join!` of futures (where another `join!` is not supported).
    in_join: bool,
    /// The helpers called, and where (for the recursion check).
    calls: Vec<(FnId, Span)>,
    /// The receivers `close()` is called on (which need `&mut`).
    closed: Vec<LocalId>,
    /// The parts of slices the kernel body takes with disjoint ranges.
    splits: Vec<splits::SplitPlan>,
    /// The async helpers awaited in parallel loops' closures (each must never suspend).
    par_awaits: Vec<(FnId, Span)>,
}

/// Receives take `&self`, so a receiver parameter declared `mut` (as `recv` once needed) is
/// written without it in the shadow code, unless the function closes it (`close` takes
/// `&mut self`): rustc would warn that it need not be mutable.
fn unmut_receivers(item: &mut syn::ItemFn, params: &[LocalId], checker: &Checker<'_>) {
    for (input, id) in item.sig.inputs.iter_mut().zip(params) {
        let local = &checker.locals[id.0 as usize];
        if !matches!(local.ty, Ty::Receiver(_)) || checker.closed.contains(id) {
            continue;
        }
        if let syn::FnArg::Typed(t) = input {
            if let syn::Pat::Ident(pi) = &mut *t.pat {
                pi.mutability = None;
            }
        }
    }
}

/// A receiver parameter the function never names: it stays open until the function ends, so
/// once the ring is full the sender waits for slots it never releases. An error at the
/// parameter (a `_` pattern drops the receiver at once, which closes it: no error).
fn report_unused_receivers(item: &syn::ItemFn, params: &[LocalId], checker: &mut Checker<'_>) {
    fn names(tokens: TokenStream, name: &str) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == name,
            proc_macro2::TokenTree::Group(g) => names(g.stream(), name),
            _ => false,
        })
    }
    for id in params {
        let local = &checker.locals[id.0 as usize];
        if !matches!(local.ty, Ty::Receiver(_)) || local.name == "_" {
            continue;
        }
        if !names(item.block.to_token_stream(), &local.name) {
            let (name, span) = (local.name.clone(), local.span);
            checker.diags.error(span, format!("the receiver `{name}` is never used in `{}`: it stays open until the function ends, so once the ring is full the sender waits for slots it never gets back; receive from it, or close it first (`drop({name});`) if the role does not need it", item.sig.ident));
        }
    }
}

/// The expression given where checking failed: of type `Ty::Error`, which its uses do not
/// report again.
fn err(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Lit(Lit::Bool(false)),
        ty: Ty::Error,
        span,
    }
}

/// An expression of `kind` and type `ty` at `span`.
fn mk(kind: ExprKind, ty: Ty, span: Span) -> Expr {
    Expr { kind, ty, span }
}

impl Checker<'_> {
    /// Declares a local in the innermost scope; returns its id.
    fn declare(&mut self, name: &str, ty: Ty, mutable: bool, span: Span) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.to_string(),
            ty,
            mutable,
            span,
            dynamic_index: false,
        });
        if let Some(scope) = self.names.last_mut() {
            scope.insert(name.to_string(), id);
        }
        id
    }

    /// The local a name refers to, innermost scope first.
    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.names.iter().rev().find_map(|s| s.get(name).copied())
    }

    /// The function being checked is a kernel.
    fn is_kernel(&self) -> bool {
        self.sig.kernel.is_some()
    }

    /// Fixes the type of literals in `e` to `ty`, or reports a mismatch.
    fn expect(&mut self, e: &mut Expr, ty: &Ty) {
        if !assignable(&e.ty, ty) {
            self.diags
                .error(e.span, format!("expected `{ty}`, found `{}`", e.ty));
            return;
        }
        if let Ty::Scalar(s) = ty {
            fix_literals(e, *s);
        }
        if let (Ty::Tuple(want), ExprKind::TupleLit(elems)) = (ty, &mut e.kind) {
            for (x, t) in elems.iter_mut().zip(want) {
                if let Ty::Scalar(s) = t {
                    fix_literals(x, *s);
                }
            }
            e.ty = ty.clone();
        }
    }

    /// Checks an expression. `expected` is the type its context wants, where known: it gives
    /// untyped literals their type.
    fn expr(&mut self, e: &mut syn::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span();
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit, expected),
            syn::Expr::Path(p) => self.path_expr(p),
            syn::Expr::Paren(p) => {
                let mut inner = self.expr(&mut p.expr, expected);
                inner.span = span;
                inner
            }
            syn::Expr::Group(g) => self.expr(&mut g.expr, expected),
            syn::Expr::Binary(b) => {
                let out = self.binary(b, expected);
                if let Some(wrapping) = wrapping_form(b, &out) {
                    *e = wrapping;
                }
                out
            }
            syn::Expr::Unary(u) => {
                let out = self.unary(u, expected);
                if let Some(rewritten) = self.pending_rewrite.take() {
                    *e = rewritten;
                }
                out
            }
            syn::Expr::Cast(c) => self.cast(c, span),
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::Await(a) => self.await_expr(a, span),
            syn::Expr::Index(ix) => self.index(ix),
            syn::Expr::Range(r) => self.range_expr(r, span),
            syn::Expr::Reference(r) => self.reference(r, span),
            syn::Expr::Block(b) => self.block_expr(b, span),
            syn::Expr::If(i) => self.if_expr(i, expected),
            syn::Expr::Assign(a) => self.assign(a, span),
            syn::Expr::Macro(m) => self.macro_call(&m.mac.clone(), Some(e)),
            syn::Expr::Loop(l) => self.loop_expr(l, span),
            syn::Expr::Match(m) => self.match_expr(m, expected),
            syn::Expr::Return(r) => self.return_expr(r, span),
            syn::Expr::ForLoop(_)
            | syn::Expr::While(_)
            | syn::Expr::Break(_)
            | syn::Expr::Continue(_) => {
                self.diags.error(
                    span,
                    "a loop, `break` or `continue` is a statement here: use it on its own line",
                );
                err(span)
            }
            syn::Expr::Try(t) => {
                self.diags.error_at(&t.question_token, "the `?` operator is not supported in kernels: there is no `Result` on the device; check with `if` instead");
                err(span)
            }
            syn::Expr::Closure(c) => {
                self.diags.error_at(&c.or1_token, "closures are supported only as the arguments of `for_each`, `map` and `reduce` on a parallel iterator: write a helper fn instead");
                err(span)
            }
            syn::Expr::Async(a) => {
                self.diags.error_at(
                    &a.async_token,
                    "an async block runs where it is awaited (`async { .. }.await`) or as a branch of `join!(async { .. }, ..).await` in role code",
                );
                err(span)
            }
            syn::Expr::Unsafe(u) => self.unsafe_block(u, span),
            syn::Expr::Let(l) => {
                self.diags.error_at(
                    &l.let_token,
                    "`let` expressions are supported in `while let Some(x) = ..` only",
                );
                err(span)
            }
            syn::Expr::Field(f) => self.field(f, span),
            syn::Expr::Repeat(r) => self.array_repeat(r, expected, span),
            syn::Expr::Array(a) => self.array_list(a, expected, span),
            syn::Expr::Tuple(t) if !t.elems.is_empty() => self.tuple_lit(t, expected, span),
            syn::Expr::Struct(st) => self.struct_lit(st, span),
            syn::Expr::Tuple(_) => {
                self.diags
                    .error(span, "write `()` as a statement's value only");
                err(span)
            }
            _ => {
                self.diags
                    .error(span, "this expression is not in the kernel language");
                err(span)
            }
        }
    }

    /// The value an element reference refers to (as Rust derefs `v` in `v + 1`); any other
    /// expression as it is.
    fn auto_deref(&mut self, e: Expr) -> Expr {
        match e.ty {
            Ty::ElemRef { elem, .. } => {
                let span = e.span;
                mk(ExprKind::Deref(Box::new(e)), Ty::Scalar(elem), span)
            }
            _ => e,
        }
    }

    /// The local `e` is; reports that `what` is called on a local variable if `e` is not one.
    fn local_of(&mut self, e: &Expr, what: &str) -> Option<LocalId> {
        match e.kind {
            ExprKind::Local(id) => Some(id),
            _ => {
                if e.ty != Ty::Error {
                    self.diags
                        .error(e.span, format!("call `{what}` on a local variable"));
                }
                None
            }
        }
    }
}

/// Sets the type of every untyped literal in `e` (and of the operators over them) to `s`.
pub(crate) fn fix_literals(e: &mut Expr, s: Scalar) {
    if !matches!(e.ty, Ty::IntLit | Ty::FloatLit) {
        return;
    }
    e.ty = Ty::Scalar(s);
    match &mut e.kind {
        ExprKind::Lit(l) => {
            if let (true, Lit::Int(v)) = (s.is_float(), *l) {
                *l = Lit::Float(v as f64);
            }
        }
        ExprKind::Unary(_, a) => fix_literals(a, s),
        ExprKind::Binary(op, a, b) => {
            fix_literals(a, s);
            if !matches!(op, BinOp::Shl | BinOp::Shr) {
                fix_literals(b, s);
            }
        }
        ExprKind::Block(b) => {
            if let Some(t) = b.tail.as_mut() {
                fix_literals(t, s);
            }
        }
        ExprKind::Match(_, arms) => {
            for a in arms.iter_mut() {
                fix_literals(&mut a.body, s);
            }
        }
        ExprKind::If(_, then, else_) | ExprKind::IfLetSome { then, else_, .. } => {
            if let Some(t) = then.tail.as_mut() {
                fix_literals(t, s);
            }
            if let Some(e) = else_ {
                fix_literals(e, s);
            }
        }
        _ => {}
    }
}
