//! Blocks and `let` statements.
//!
//! A `let` binds a name, a tuple's elements or a channel's two ends, and writes the type the
//! checker inferred into the shadow code's pattern, so that rustc checks the inference.

use std::collections::HashMap;

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;

use super::{err, mk, Checker};
use crate::check::{sig, value_size_message};
use crate::tir::{Block, Expr, ExprKind, LetPattern, Stmt};
use crate::types::{Scalar, Ty, MAX_VALUE_SCALARS};

impl Checker<'_> {
    /// A block, in a scope of its own: its statements and its tail expression.
    pub(super) fn block(&mut self, block: &mut syn::Block) -> Block {
        self.names.push(HashMap::new());
        let mut out = Block::default();
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter_mut().enumerate() {
            let last = i + 1 == n;
            match stmt {
                syn::Stmt::Local(local) => {
                    if let Some(parts) = self.split_parts(local) {
                        out.stmts.extend(parts);
                    } else if let Some(s) = self.let_stmt(local) {
                        out.stmts.push(s);
                    }
                }
                syn::Stmt::Item(item) => self.diags.error_at(
                    &*item,
                    "items inside kernel functions are not supported: declare them at the module level",
                ),
                // A stray `;` (Rust warns about it, and so does rustc on the shadow code).
                syn::Stmt::Expr(syn::Expr::Verbatim(t), Some(_)) if t.is_empty() => {}
                syn::Stmt::Expr(e, semi) => {
                    if let Some(s) = self.control_stmt(e) {
                        out.stmts.push(s);
                        continue;
                    }
                    let ex = self.expr(e, None);
                    if semi.is_none() && last {
                        out.tail = Some(Box::new(ex));
                    } else {
                        if semi.is_none() && !matches!(ex.ty, Ty::Unit | Ty::Error | Ty::Never) {
                            self.diags.error(ex.span, "expected `;` after this expression");
                        }
                        out.stmts.push(Stmt::Expr(ex));
                    }
                }
                syn::Stmt::Macro(m) => {
                    // As an expression statement, so that the macro can be rewritten in place.
                    let semi = m.semi_token;
                    let mut e = syn::Expr::Macro(syn::ExprMacro {
                        attrs: std::mem::take(&mut m.attrs),
                        mac: m.mac.clone(),
                    });
                    let ex = self.expr(&mut e, None);
                    *stmt = syn::Stmt::Expr(e, semi);
                    if ex.ty != Ty::Error {
                        out.stmts.push(Stmt::Expr(ex));
                    }
                }
            }
        }
        self.names.pop();
        out
    }

    /// A block as an expression: its value is its tail's.
    pub(super) fn block_expr(&mut self, b: &mut syn::ExprBlock, span: Span) -> Expr {
        if let Some(l) = &b.label {
            self.diags.error_at(l, "block labels are not supported yet");
        }
        let block = self.block(&mut b.block);
        let ty = block.tail.as_ref().map_or(Ty::Unit, |t| t.ty.clone());
        mk(ExprKind::Block(block), ty, span)
    }

    /// `unsafe { .. }`, inside which the unchecked accessors may be called.
    pub(super) fn unsafe_block(&mut self, u: &mut syn::ExprUnsafe, span: Span) -> Expr {
        // Only for the unchecked accessors: what else is unsafe in Rust (raw pointers,
        // `unsafe fn`s) is not in the language, and says so where it appears.
        let outer = std::mem::replace(&mut self.in_unsafe, true);
        let block = self.block(&mut u.block);
        self.in_unsafe = outer;
        let ty = block.tail.as_ref().map_or(Ty::Unit, |t| t.ty.clone());
        mk(ExprKind::Block(block), ty, span)
    }

    /// `let pattern = value;`, with the type the checker infers written into the shadow code's
    /// pattern (unless the user wrote one).
    fn let_stmt(&mut self, local: &mut syn::Local) -> Option<Stmt> {
        let Some(init) = local.init.as_mut() else {
            self.diags.error_at(
                &local.pat,
                "a `let` in a kernel needs an initial value: write `let x = ...;`",
            );
            return None;
        };
        if init.diverge.is_some() {
            return self.let_else(local);
        }
        // A user's ascription fixes the type; otherwise the checker infers it and writes it in.
        let (pat, ascribed) = match &local.pat {
            syn::Pat::Type(pt) => {
                let ty = sig::value_type(&pt.ty, self.scope, self.diags);
                ((*pt.pat).clone(), Some(ty))
            }
            p => (p.clone(), None),
        };
        let mut value = self.expr(&mut init.expr, ascribed.as_ref());
        if let Some(ty) = &ascribed {
            self.expect(&mut value, ty);
            value.ty = ty.clone();
        }
        match &pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.let_name(local, &pat, pi, value, ascribed.as_ref())
            }
            syn::Pat::Wild(_) => Some(Stmt::Let(LetPattern::Ignore, value)),
            syn::Pat::Tuple(t) if matches!(value.ty, Ty::Tuple(ref ts) if ts.len() == t.elems.len()) => {
                self.let_tuple(local, &pat, t, value, ascribed.as_ref())
            }
            syn::Pat::Tuple(t) if t.elems.len() == 2 => self.let_pair(&pat, t, value),
            other => {
                self.diags.error_at(
                    other,
                    "this pattern is not supported in kernels: bind a name, `let x = ...`",
                );
                None
            }
        }
    }

    /// `let Some(x) = option else { diverge };`: `x` is bound after the statement, where the
    /// `Option` was `Some`; the `else` block must not end (`return`, `break`, `continue`,
    /// `panic!`).
    fn let_else(&mut self, local: &mut syn::Local) -> Option<Stmt> {
        let init = local.init.as_mut()?;
        let value = self.expr(&mut init.expr, None);
        let binding = match &local.pat {
            syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
                match &ts.elems[0] {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some((
                        pi.ident.to_string(),
                        pi.mutability.is_some(),
                        pi.ident.span(),
                    )),
                    syn::Pat::Wild(w) => Some(("_".to_string(), false, w.span())),
                    other => {
                        self.diags
                            .error_at(other, "bind the value to a name: `let Some(x) = .. else`");
                        None
                    }
                }
            }
            other => {
                self.diags.error_at(
                    other,
                    "`let .. else` takes `Some(x)` in kernels: `let Some(x) = option else { .. };`",
                );
                None
            }
        };
        let (_, diverge) = init.diverge.as_mut()?;
        let else_block = match &mut **diverge {
            syn::Expr::Block(b) => self.block(&mut b.block),
            other => {
                let e = self.expr(other, None);
                Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(e)),
                }
            }
        };
        let (name, mutable, at) = binding?;
        let item = match value.ty.option_item() {
            Some(t) => t,
            None if value.ty == Ty::Error => Ty::Error,
            None => {
                self.diags.error(
                    value.span,
                    format!("`let Some(x) = .. else` takes an `Option` (a receive, a reserve, `tiles.next()`, a `checked_*` result), not a `{}`", value.ty),
                );
                Ty::Error
            }
        };
        if !diverges(&else_block) {
            self.diags.error_at(
                &*diverge,
                "the `else` of `let .. else` must not end: `return`, `break`, `continue` or `panic!`",
            );
        }
        let id = self.declare(&name, item, mutable, at);
        Some(Stmt::LetElse(id, value, else_block))
    }

    /// `let name = value;` (`pat` is `local`'s pattern without its ascription).
    fn let_name(
        &mut self,
        local: &mut syn::Local,
        pat: &syn::Pat,
        pi: &syn::PatIdent,
        mut value: Expr,
        ascribed: Option<&Ty>,
    ) -> Option<Stmt> {
        if let Ty::IntLit = value.ty {
            self.fix_literals(&mut value, Scalar::I32);
        } else if let Ty::FloatLit = value.ty {
            self.fix_literals(&mut value, Scalar::F32);
        }
        if matches!(value.ty, Ty::ChanPair(_)) {
            self.diags.error_at(
                &pat,
                "a channel is two ends: write `let (tx, rx) = channel::<..>();`",
            );
        }
        if matches!(value.ty, Ty::OptSendSlot(_)) {
            self.diags.error(
                value.span,
                "take the reserved slot where it is made: `let Some(mut slot) = tx.reserve().await else { return };` (or `while let`, `if let`, `match`), so that it is sent on every path",
            );
        }
        if matches!(value.ty, Ty::ElemRef { .. })
            || matches!(value.ty, Ty::Future(_) | Ty::ParIter(_) | Ty::Role)
        {
            self.diags.error(
                value.span,
                format!(
                    "a value of type `{}` cannot be stored in a local: use it where it is made",
                    value.ty
                ),
            );
        }
        if let Ty::Array(_, n) = value.ty {
            // A `static` table, bigger than a value may be, read whole into a local.
            if n > MAX_VALUE_SCALARS {
                self.diags
                    .error(value.span, value_size_message("this array", n.into()));
                value = err(value.span);
            }
        }
        if let Ty::Tuple(ts) = value.ty.clone() {
            let defaults: Vec<Ty> = ts
                .iter()
                .map(|t| match t {
                    Ty::IntLit => Ty::Scalar(Scalar::I32),
                    Ty::FloatLit => Ty::Scalar(Scalar::F32),
                    t => t.clone(),
                })
                .collect();
            self.expect(&mut value, &Ty::Tuple(defaults));
            if ascribed.is_none() {
                let span = pi.ident.span();
                let names: Vec<syn::Ident> = value_tuple_names(&value.ty, span);
                local.pat = syn::Pat::Type(syn::PatType {
                    attrs: Vec::new(),
                    pat: Box::new(pat.clone()),
                    colon_token: Default::default(),
                    ty: Box::new(syn::Type::Verbatim(quote_spanned!(span=> (#(#names,)*)))),
                });
            }
        }
        if ascribed.is_none() {
            if let Ty::Array(s, n) = value.ty {
                // Written in, so that rustc's element type is the checker's.
                let span = pi.ident.span();
                let s_ident = syn::Ident::new(s.rust_name(), span);
                let n = n as usize;
                local.pat = syn::Pat::Type(syn::PatType {
                    attrs: Vec::new(),
                    pat: Box::new(pat.clone()),
                    colon_token: Default::default(),
                    ty: Box::new(syn::Type::Verbatim(quote_spanned!(span=> [#s_ident; #n]))),
                });
            }
            if let Ty::Scalar(s) = value.ty {
                let span = pi.ident.span();
                let s_ident = syn::Ident::new(s.rust_name(), span);
                local.pat = syn::Pat::Type(syn::PatType {
                    attrs: Vec::new(),
                    pat: Box::new(pat.clone()),
                    colon_token: Default::default(),
                    ty: Box::new(syn::Type::Verbatim(quote_spanned!(span=> #s_ident))),
                });
            }
        }
        let id = self.declare(
            &pi.ident.to_string(),
            value.ty.clone(),
            pi.mutability.is_some(),
            pi.ident.span(),
        );
        // `rx.subscribe()` is another receiver of `rx`'s channel.
        if let ExprKind::Subscribe(rx) = &value.kind {
            if let ExprKind::Local(rx) = rx.kind {
                if let Some(&channel) = self.channel_of.get(&rx) {
                    self.channel_of.insert(id, channel);
                }
            }
        }
        Some(Stmt::Let(LetPattern::Local(id), value))
    }

    /// `let (a, b, ..) = value;` of a tuple value: each element bound to a name or `_`.
    fn let_tuple(
        &mut self,
        local: &mut syn::Local,
        pat: &syn::Pat,
        t: &syn::PatTuple,
        mut value: Expr,
        ascribed: Option<&Ty>,
    ) -> Option<Stmt> {
        let Ty::Tuple(ts) = value.ty.clone() else {
            return None;
        };
        let defaults: Vec<Ty> = ts
            .iter()
            .map(|t| match t {
                Ty::IntLit => Ty::Scalar(Scalar::I32),
                Ty::FloatLit => Ty::Scalar(Scalar::F32),
                t => t.clone(),
            })
            .collect();
        self.expect(&mut value, &Ty::Tuple(defaults.clone()));
        let mut ids = Vec::new();
        for (p, ty) in t.elems.iter().zip(defaults) {
            match p {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    ids.push(Some(self.declare(
                        &pi.ident.to_string(),
                        ty,
                        pi.mutability.is_some(),
                        pi.ident.span(),
                    )));
                }
                syn::Pat::Wild(_) => ids.push(None),
                other => {
                    self.diags
                        .error_at(other, "bind each element of the tuple to a name or `_`");
                    return None;
                }
            }
        }
        // Written in, so that rustc's element types are the checker's.
        if ascribed.is_none() {
            if let Ty::Tuple(ts) = &value.ty {
                let span = t.span();
                let names: Vec<syn::Ident> = ts
                    .iter()
                    .map(|t| syn::Ident::new(t.scalar().map_or("i32", |s| s.rust_name()), span))
                    .collect();
                local.pat = syn::Pat::Type(syn::PatType {
                    attrs: Vec::new(),
                    pat: Box::new(pat.clone()),
                    colon_token: Default::default(),
                    ty: Box::new(syn::Type::Verbatim(quote_spanned!(span=> (#(#names,)*)))),
                });
            }
        }
        Some(Stmt::Let(LetPattern::Tuple(ids), value))
    }

    /// `let (tx, rx) = ..;` of a channel or of a one-shot value: its two ends; `let (a, b) =
    /// s.split_at(mid);`: the two parts.
    fn let_pair(&mut self, pat: &syn::Pat, t: &syn::PatTuple, value: Expr) -> Option<Stmt> {
        if let Ty::SlicePair { elem, mutable } = value.ty {
            let mut ids = Vec::new();
            for p in &t.elems {
                let ty = Ty::Slice { elem, mutable };
                match p {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        ids.push(self.declare(&pi.ident.to_string(), ty, false, pi.ident.span()));
                    }
                    syn::Pat::Wild(w) => ids.push(self.declare("_", ty, false, w.span())),
                    other => {
                        self.diags
                            .error_at(other, "name each part: `let (left, right) = ...`");
                        return None;
                    }
                }
            }
            return Some(Stmt::Let(LetPattern::Pair(ids[0], ids[1]), value));
        }
        if let Ty::OneshotPair(s) = value.ty {
            let mut ids = Vec::new();
            for (i, p) in t.elems.iter().enumerate() {
                let syn::Pat::Ident(pi) = p else {
                    self.diags.error_at(
                        p,
                        "name each end of the one-shot value: `let (tx, rx) = ...`",
                    );
                    return None;
                };
                let ty = if i == 0 {
                    Ty::OneshotSender(s)
                } else {
                    Ty::OneshotReceiver(s)
                };
                ids.push(self.declare(
                    &pi.ident.to_string(),
                    ty,
                    pi.mutability.is_some(),
                    pi.ident.span(),
                ));
            }
            return Some(Stmt::Let(LetPattern::Pair(ids[0], ids[1]), value));
        }
        let Ty::ChanPair(c) = value.ty.clone() else {
            if value.ty != Ty::Error {
                self.diags.error_at(
                    &pat,
                    "tuple patterns are supported for `let (tx, rx) = channel::<..>();` only",
                );
            }
            // Declare the names anyway, so that their uses are not reported again.
            for p in &t.elems {
                if let syn::Pat::Ident(pi) = p {
                    self.declare(&pi.ident.to_string(), Ty::Error, true, pi.ident.span());
                }
            }
            return None;
        };
        let mut ids = Vec::new();
        let channel = self.channels_made;
        self.channels_made += 1;
        for (i, p) in t.elems.iter().enumerate() {
            match p {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    let ty = if i == 0 {
                        Ty::Sender(c.clone())
                    } else {
                        Ty::Receiver(c.clone())
                    };
                    let id = self.declare(
                        &pi.ident.to_string(),
                        ty,
                        pi.mutability.is_some(),
                        pi.ident.span(),
                    );
                    self.channel_of.insert(id, channel);
                    ids.push(id);
                }
                other => {
                    self.diags
                        .error_at(other, "name each end of the channel: `let (tx, rx) = ...`");
                    return None;
                }
            }
        }
        Some(Stmt::Let(LetPattern::Pair(ids[0], ids[1]), value))
    }
}

/// Whether a block never ends normally: its value is `!` (a `return`, `break`, `continue` or
/// panic as its last statement or tail).
fn diverges(b: &Block) -> bool {
    if let Some(t) = &b.tail {
        return t.ty == Ty::Never || t.ty == Ty::Error;
    }
    match b.stmts.last() {
        Some(Stmt::Break(..) | Stmt::Continue(..)) => true,
        Some(Stmt::Expr(e)) => {
            e.ty == Ty::Never || e.ty == Ty::Error || matches!(e.kind, ExprKind::Panic(None, _))
        }
        _ => false,
    }
}

/// The scalar type names of a tuple type, for the shadow code's ascriptions.
fn value_tuple_names(ty: &Ty, span: Span) -> Vec<syn::Ident> {
    match ty {
        Ty::Tuple(ts) => ts
            .iter()
            .map(|t| syn::Ident::new(t.scalar().map_or("i32", |s| s.rust_name()), span))
            .collect(),
        _ => Vec::new(),
    }
}
