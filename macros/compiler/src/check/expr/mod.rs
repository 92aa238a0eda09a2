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
use crate::tir::MAX_NESTING;
use crate::tir::{BinOp, Expr, ExprKind, FnId, Function, Lit, Local, LocalId, Signature, UnOp};
use crate::types::{Scalar, Ty};
use loops::LoopCtx;
use operators::wrapping_form;

mod acc_apply;
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
mod matrices;
mod methods;
mod mma;
mod operators;
mod parallel;
mod places;
mod rows;
mod scans;
mod shared_arrays;
mod splits;
mod statements;
mod tile_stores;

/// The helper calls a function makes, for the checks over the call graph.
#[derive(Default)]
pub(crate) struct Calls {
    /// Each callee, where, and whether the call is in a branch of a `join!`.
    pub calls: Vec<(FnId, Span, bool)>,
    /// The function runs a `join!` of futures in role code.
    pub joins: bool,
}

/// Checks one function; returns it and the helper calls it makes.
pub(crate) fn check_function(
    item: &mut syn::ItemFn,
    id: FnId,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> (Function, Calls) {
    let sig = &scope.sigs[id.0 as usize];
    let mut checker = Checker {
        scope,
        sig,
        diags,
        locals: Vec::new(),
        names: vec![HashMap::new()],
        par_locals_start: None,
        apply_row: None,
        loops: Vec::new(),
        has_return: false,
        in_unsafe: false,
        in_async_block: false,
        pending_rewrite: None,
        await_base: false,
        in_join: false,
        in_closure: false,
        channel_of: HashMap::new(),
        channels_made: 0,
        depth: 0,
        nesting_reported: false,
        calls: Vec::new(),
        joins: false,
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
        if sig.ret != Ty::Unit && tail.ty != Ty::Never {
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
    let calls = Calls {
        calls: checker.calls,
        joins: checker.joins,
    };
    (function, calls)
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
    /// Inside the closure of `acc.apply_at(|i, j, v| ..)`: its row parameter `i`, which
    /// indexes a `Rows` (`m[i]`).
    apply_row: Option<LocalId>,
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
    /// Inside a closure's body or an async block, where the loops around it are out of reach.
    in_closure: bool,
    /// The channel (numbered in the order of the `channel()` calls) of each channel end made in
    /// the kernel body: a role must not take both ends of one.
    channel_of: HashMap<LocalId, usize>,
    /// The number of `channel()` calls checked so far: the next channel's number.
    channels_made: usize,
    /// The nesting of the expressions and loops being checked.
    depth: usize,
    /// Nesting past [`MAX_NESTING`] was reported.
    nesting_reported: bool,
    /// The helpers called, where, and whether in a branch of a `join!`.
    calls: Vec<(FnId, Span, bool)>,
    /// A `join!` of futures was seen.
    joins: bool,
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

    /// Sets the type of every untyped literal in `e` (and of the operators over them) to `s`,
    /// and reports a `-` that this makes apply to an unsigned integer.
    fn fix_literals(&mut self, e: &mut Expr, s: Scalar) {
        let mut negated = Vec::new();
        set_literal_types(e, s, &mut negated);
        for span in negated {
            self.diags.error(span, negation_message(s));
        }
    }

    /// Fixes the type of literals in `e` to `ty`, or reports a mismatch.
    fn expect(&mut self, e: &mut Expr, ty: &Ty) {
        if !assignable(&e.ty, ty) {
            self.diags
                .error(e.span, format!("expected `{ty}`, found `{}`", e.ty));
            return;
        }
        if e.ty == Ty::Never && !matches!(ty, Ty::Error | Ty::Unit | Ty::Never) {
            self.coerce_never(e, ty);
            return;
        }
        if let Ty::Scalar(s) = ty {
            self.fix_literals(e, *s);
        }
        if let (Ty::Tuple(want), ExprKind::TupleLit(elems)) = (ty, &mut e.kind) {
            for (x, t) in elems.iter_mut().zip(want) {
                if let Ty::Scalar(s) = t {
                    self.fix_literals(x, *s);
                }
            }
            e.ty = ty.clone();
        }
    }

    /// `!` coerces to any type, as in Rust (`block_tiles(n, return)`): the expression that never
    /// ends runs as a statement, then a zero of `ty` stands for the value that never exists, so
    /// that its user reads a value of its type.
    fn coerce_never(&mut self, e: &mut Expr, ty: &Ty) {
        let span = e.span;
        let Some(zero) = self.zero_of(ty, span) else {
            self.diags.error(
                span,
                format!("this expression never ends, and it stands where a `{ty}` is needed: write it as a statement of its own"),
            );
            return;
        };
        let never = std::mem::replace(e, err(span));
        *e = mk(
            ExprKind::Block(crate::tir::Block {
                stmts: vec![crate::tir::Stmt::Expr(never)],
                tail: Some(Box::new(zero)),
            }),
            ty.clone(),
            span,
        );
    }

    /// A zero value of `ty`, for the types that have one (scalars but the halves, which have no
    /// literal, enums, and tuples, arrays and structs of them).
    fn zero_of(&self, ty: &Ty, span: Span) -> Option<Expr> {
        let scalar = |s: Scalar| {
            let lit = if s.is_half() {
                return None;
            } else if s.is_float() {
                Lit::Float(0.0)
            } else if s == Scalar::Bool {
                Lit::Bool(false)
            } else {
                Lit::Int(0)
            };
            Some(mk(ExprKind::Lit(lit), Ty::Scalar(s), span))
        };
        Some(match ty {
            Ty::Scalar(s) => scalar(*s)?,
            Ty::Enum(..) => mk(ExprKind::Lit(Lit::Int(0)), ty.clone(), span),
            Ty::Tuple(ts) => {
                let elems = ts
                    .iter()
                    .map(|t| t.scalar().and_then(scalar))
                    .collect::<Option<Vec<Expr>>>()?;
                mk(ExprKind::TupleLit(elems), ty.clone(), span)
            }
            Ty::Array(s, n) => mk(
                ExprKind::ArrayRepeat(Box::new(scalar(*s)?), *n),
                ty.clone(),
                span,
            ),
            Ty::Struct(id, _) => {
                let def = &self.scope.struct_defs[*id as usize];
                let elems = def
                    .declared
                    .iter()
                    .map(|(_, first, len)| {
                        let s = def.fields.get(*first)?.1;
                        Some(match len {
                            Some(n) => mk(
                                ExprKind::ArrayRepeat(Box::new(scalar(s)?), *n),
                                Ty::Array(s, *n),
                                span,
                            ),
                            None => scalar(s)?,
                        })
                    })
                    .collect::<Option<Vec<Expr>>>()?;
                mk(ExprKind::TupleLit(elems), ty.clone(), span)
            }
            _ => return None,
        })
    }

    /// Checks an expression. `expected` is the type its context wants, where known: it gives
    /// untyped literals their type.
    fn expr(&mut self, e: &mut syn::Expr, expected: Option<&Ty>) -> Expr {
        let span = span_of(e);
        if !self.enter(opening_span(e, span)) {
            return err(span);
        }
        let out = self.expr_kind(e, expected, span);
        self.depth -= 1;
        out
    }

    /// One level deeper into the code, at `span`: false (after reporting it once per function)
    /// past [`MAX_NESTING`] levels, where checking stops instead of recursing further.
    fn enter(&mut self, span: Span) -> bool {
        if self.depth >= MAX_NESTING {
            if !self.nesting_reported {
                self.nesting_reported = true;
                self.diags.error(
                    span,
                    format!("expressions nested deeper than {MAX_NESTING} levels are not supported in kernels: give inner parts names with `let`, or move them into a helper fn"),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    /// [`Checker::expr`] one level down, by the kind of expression.
    fn expr_kind(&mut self, e: &mut syn::Expr, expected: Option<&Ty>, span: Span) -> Expr {
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
                let out = self.binary(b, expected, span);
                if let Some(wrapping) = wrapping_form(b, &out) {
                    *e = wrapping;
                }
                out
            }
            syn::Expr::Unary(u) => {
                let out = self.unary(u, expected, span);
                if let Some(rewritten) = self.pending_rewrite.take() {
                    *e = rewritten;
                }
                out
            }
            syn::Expr::Cast(c) => self.cast(c, span),
            syn::Expr::MethodCall(m) => self.method_call(m, span),
            syn::Expr::Call(c) => self.call(c, span),
            syn::Expr::Await(a) => self.await_expr(a, span),
            syn::Expr::Index(ix) => self.index(ix, span),
            syn::Expr::Range(r) => self.range_expr(r, span),
            syn::Expr::Reference(r) => self.reference(r, span),
            syn::Expr::Block(b) => self.block_expr(b, span),
            syn::Expr::If(i) => self.if_expr(i, expected, span),
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

/// Sets the type of every untyped literal in `e` (and of the operators over them) to `s`; pushes
/// to `negated` the span of each `-` this makes apply to an unsigned integer.
fn set_literal_types(e: &mut Expr, s: Scalar, negated: &mut Vec<Span>) {
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
        ExprKind::Unary(op, a) => {
            if *op == UnOp::Neg && s.is_int() && !s.is_signed() {
                negated.push(e.span);
            }
            set_literal_types(a, s, negated)
        }
        ExprKind::Binary(op, a, b) => {
            set_literal_types(a, s, negated);
            if !matches!(op, BinOp::Shl | BinOp::Shr) {
                set_literal_types(b, s, negated);
            }
        }
        ExprKind::Block(b) => {
            if let Some(t) = b.tail.as_mut() {
                set_literal_types(t, s, negated);
            }
        }
        ExprKind::Match(_, arms) => {
            for a in arms.iter_mut() {
                set_literal_types(&mut a.body, s, negated);
            }
        }
        ExprKind::If(_, then, else_) | ExprKind::IfLetSome { then, else_, .. } => {
            if let Some(t) = then.tail.as_mut() {
                set_literal_types(t, s, negated);
            }
            if let Some(e) = else_ {
                set_literal_types(e, s, negated);
            }
        }
        _ => {}
    }
}

/// The error for `-` on an unsigned integer type `s`.
pub(super) fn negation_message(s: Scalar) -> String {
    format!("`-` is not defined for the unsigned `{s}`: unsigned values cannot be negated; write `{s}::MAX` for the largest value, `0{s}.wrapping_sub(x)` for a wrapping negation, or use a signed type")
}

/// The span of `e`'s first token (a whole group for a delimited one): what `Spanned::span` gives
/// on stable Rust, where spans do not join, found without printing `e` (printing a large
/// expression is costly, and recursive).
pub(crate) fn span_of(e: &syn::Expr) -> Span {
    let mut e = e;
    loop {
        // An expression's outer attributes come first.
        macro_rules! attrs_first {
            ($x:expr) => {
                if let Some(a) = $x.attrs.first() {
                    return a.pound_token.span;
                }
            };
        }
        match e {
            syn::Expr::Array(x) => {
                attrs_first!(x);
                return x.bracket_token.span.join();
            }
            syn::Expr::Assign(x) => {
                attrs_first!(x);
                e = &x.left;
            }
            syn::Expr::Async(x) => {
                attrs_first!(x);
                return x.async_token.span;
            }
            syn::Expr::Await(x) => {
                attrs_first!(x);
                e = &x.base;
            }
            syn::Expr::Binary(x) => {
                attrs_first!(x);
                e = &x.left;
            }
            syn::Expr::Block(x) => {
                attrs_first!(x);
                return match &x.label {
                    Some(l) => l.name.apostrophe,
                    None => x.block.brace_token.span.join(),
                };
            }
            syn::Expr::Break(x) => {
                attrs_first!(x);
                return x.break_token.span;
            }
            syn::Expr::Call(x) => {
                attrs_first!(x);
                e = &x.func;
            }
            syn::Expr::Cast(x) => {
                attrs_first!(x);
                e = &x.expr;
            }
            syn::Expr::Closure(x) => {
                attrs_first!(x);
                return match (
                    &x.lifetimes,
                    &x.constness,
                    &x.movability,
                    &x.asyncness,
                    &x.capture,
                ) {
                    (Some(l), ..) => l.for_token.span,
                    (_, Some(c), ..) => c.span,
                    (_, _, Some(m), ..) => m.span,
                    (_, _, _, Some(a), _) => a.span,
                    (_, _, _, _, Some(c)) => c.span,
                    _ => x.or1_token.spans[0],
                };
            }
            syn::Expr::Const(x) => {
                attrs_first!(x);
                return x.const_token.span;
            }
            syn::Expr::Continue(x) => {
                attrs_first!(x);
                return x.continue_token.span;
            }
            syn::Expr::Field(x) => {
                attrs_first!(x);
                e = &x.base;
            }
            syn::Expr::ForLoop(x) => {
                attrs_first!(x);
                return match &x.label {
                    Some(l) => l.name.apostrophe,
                    None => x.for_token.span,
                };
            }
            syn::Expr::Group(x) => {
                attrs_first!(x);
                return x.group_token.span;
            }
            syn::Expr::If(x) => {
                attrs_first!(x);
                return x.if_token.span;
            }
            syn::Expr::Index(x) => {
                attrs_first!(x);
                e = &x.expr;
            }
            syn::Expr::Infer(x) => {
                attrs_first!(x);
                return x.underscore_token.span;
            }
            syn::Expr::Let(x) => {
                attrs_first!(x);
                return x.let_token.span;
            }
            syn::Expr::Lit(x) => {
                attrs_first!(x);
                return x.lit.span();
            }
            syn::Expr::Loop(x) => {
                attrs_first!(x);
                return match &x.label {
                    Some(l) => l.name.apostrophe,
                    None => x.loop_token.span,
                };
            }
            syn::Expr::Macro(x) => {
                attrs_first!(x);
                return path_span(None, &x.mac.path);
            }
            syn::Expr::Match(x) => {
                attrs_first!(x);
                return x.match_token.span;
            }
            syn::Expr::MethodCall(x) => {
                attrs_first!(x);
                e = &x.receiver;
            }
            syn::Expr::Paren(x) => {
                attrs_first!(x);
                return x.paren_token.span.join();
            }
            syn::Expr::Path(x) => {
                attrs_first!(x);
                return path_span(x.qself.as_ref(), &x.path);
            }
            syn::Expr::Range(x) => {
                attrs_first!(x);
                match &x.start {
                    Some(start) => e = start,
                    None => {
                        return match &x.limits {
                            syn::RangeLimits::HalfOpen(t) => t.spans[0],
                            syn::RangeLimits::Closed(t) => t.spans[0],
                        }
                    }
                }
            }
            syn::Expr::RawAddr(x) => {
                attrs_first!(x);
                return x.and_token.spans[0];
            }
            syn::Expr::Reference(x) => {
                attrs_first!(x);
                return x.and_token.spans[0];
            }
            syn::Expr::Repeat(x) => {
                attrs_first!(x);
                return x.bracket_token.span.join();
            }
            syn::Expr::Return(x) => {
                attrs_first!(x);
                return x.return_token.span;
            }
            syn::Expr::Struct(x) => {
                attrs_first!(x);
                return path_span(x.qself.as_ref(), &x.path);
            }
            syn::Expr::Try(x) => {
                attrs_first!(x);
                e = &x.expr;
            }
            syn::Expr::TryBlock(x) => {
                attrs_first!(x);
                return x.try_token.span;
            }
            syn::Expr::Tuple(x) => {
                attrs_first!(x);
                return x.paren_token.span.join();
            }
            syn::Expr::Unary(x) => {
                attrs_first!(x);
                return match x.op {
                    syn::UnOp::Deref(t) => t.spans[0],
                    syn::UnOp::Not(t) => t.spans[0],
                    syn::UnOp::Neg(t) => t.spans[0],
                    _ => x.op.span(),
                };
            }
            syn::Expr::Unsafe(x) => {
                attrs_first!(x);
                return x.unsafe_token.span;
            }
            syn::Expr::While(x) => {
                attrs_first!(x);
                return match &x.label {
                    Some(l) => l.name.apostrophe,
                    None => x.while_token.span,
                };
            }
            syn::Expr::Yield(x) => {
                attrs_first!(x);
                return x.yield_token.span;
            }
            syn::Expr::Verbatim(t) => {
                return t
                    .clone()
                    .into_iter()
                    .next()
                    .map_or_else(Span::call_site, |t| t.span());
            }
            other => return other.span(),
        }
    }
}

/// `span`, `e`'s span, narrowed to the opening delimiter where `e` is a delimited group (where an
/// error about the nesting points).
pub(crate) fn opening_span(e: &syn::Expr, span: Span) -> Span {
    match e {
        syn::Expr::Block(b) if b.attrs.is_empty() && b.label.is_none() => {
            b.block.brace_token.span.open()
        }
        syn::Expr::Paren(p) if p.attrs.is_empty() => p.paren_token.span.open(),
        syn::Expr::Tuple(t) if t.attrs.is_empty() => t.paren_token.span.open(),
        syn::Expr::Array(a) if a.attrs.is_empty() => a.bracket_token.span.open(),
        _ => span,
    }
}

/// The span of the first token of a path (with its `<T as Trait>::` qualification, if any).
fn path_span(qself: Option<&syn::QSelf>, path: &syn::Path) -> Span {
    if let Some(q) = qself {
        return q.lt_token.span;
    }
    if let Some(c) = &path.leading_colon {
        return c.spans[0];
    }
    path.segments
        .first()
        .map_or_else(Span::call_site, |s| s.ident.span())
}
