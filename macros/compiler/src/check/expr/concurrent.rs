//! Concurrency inside a role: `.await` (of a future or of an `async { .. }` block), `join!` of
//! futures and `select!` between channel receives.
//!
//! `join!` and `select!` are checked here and rewritten, for the shadow code, into calls of
//! `gpu_async::device::{joinN, selectN}` (what rustc checks and the simulator runs).

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;

use super::{err, mk, span_of, Checker};
use crate::tir::{Block, Expr, ExprKind, LetPattern, LocalId, SelectArm, Stmt, SELECT_DISABLED};
use crate::types::Ty;

/// The most branches of a `join!` and arms of a `select!` (the runtime's `join8`, `select8`).
const MAX_BRANCHES: usize = 8;

/// One arm of `select!` as written.
struct SelectArmSyn {
    pat: syn::Pat,
    fut: syn::Expr,
    body: syn::Expr,
}

/// The body of `select! { pat = fut => body, .. else => body }`.
struct SelectSyn {
    arms: Vec<SelectArmSyn>,
    else_: Option<(syn::Token![else], syn::Expr)>,
}

impl Parse for SelectSyn {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut arms = Vec::new();
        let mut else_ = None;
        while !input.is_empty() {
            if input.peek(syn::Token![else]) {
                let token: syn::Token![else] = input.parse()?;
                input.parse::<syn::Token![=>]>()?;
                let body: syn::Expr = input.parse()?;
                if else_.is_some() {
                    return Err(syn::Error::new(token.span, "`select!` has one `else` arm"));
                }
                else_ = Some((token, body));
            } else {
                let pat = syn::Pat::parse_single(input)?;
                input.parse::<syn::Token![=]>()?;
                let fut: syn::Expr = input.parse()?;
                input.parse::<syn::Token![=>]>()?;
                let body: syn::Expr = input.parse()?;
                arms.push(SelectArmSyn { pat, fut, body });
            }
            if input.is_empty() {
                break;
            }
            // As in `match`: a block-like arm body needs no comma after it.
            let block_like = match arms.last() {
                Some(a) if else_.is_none() => ends_in_block(&a.body),
                _ => else_.as_ref().is_some_and(|(_, b)| ends_in_block(b)),
            };
            if block_like && !input.peek(syn::Token![,]) {
                continue;
            }
            input.parse::<syn::Token![,]>()?;
        }
        Ok(SelectSyn { arms, else_ })
    }
}

impl Checker<'_> {
    /// Whether concurrency inside a role is allowed here; reports why not.
    fn concurrency_allowed(&mut self, what: &str, span: Span) -> bool {
        if !self.sig.is_async {
            self.diags.error(
                span,
                format!("`{what}` waits, so it is only allowed inside `async fn`s"),
            );
            return false;
        }
        if self.par_locals_start.is_some() {
            self.diags.error(span, format!("`{what}` inside a `par_iter` closure: the iterations run on all threads of the role at once and cannot wait; use it before or after the parallel loop"));
            return false;
        }
        true
    }

    /// `join!(a, b, ..)` in role code: each argument is a future (an async fn call, a channel
    /// operation, ...) or an async block, run concurrently on the role's warps.
    pub(super) fn role_join(&mut self, mac: &syn::Macro, node: &mut syn::Expr, span: Span) -> Expr {
        if !self.concurrency_allowed("join!", span) {
            return err(span);
        }
        if self.in_join {
            self.diags.error(span, "`join!` inside a branch of a `join!` is not supported yet: join all the futures in one `join!`");
            return err(span);
        }
        self.joins = true;
        let parsed = mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        );
        let mut branches_syn = match parsed {
            Ok(b) => b,
            Err(e) => {
                self.diags.push(e);
                return err(span);
            }
        };
        let n = branches_syn.len();
        if n == 0 || n > MAX_BRANCHES {
            self.diags.error(span, format!("`join!` in a role takes 1 to {MAX_BRANCHES} futures, not {n}: `join!(produce(tx), consume(rx)).await`"));
            return err(span);
        }
        // A branch cannot leave a loop around the join (Rust forbids `break` out of an async
        // block), and the warp runs it as one state of the join.
        let loops = std::mem::take(&mut self.loops);
        let outer = std::mem::replace(&mut self.in_join, true);
        let mut branches = Vec::new();
        for b in branches_syn.iter_mut() {
            branches.push(self.join_branch(b));
        }
        self.in_join = outer;
        self.loops = loops;
        let mut tys = Vec::new();
        let mut failed = false;
        for b in &branches {
            match &b.ty {
                Ty::Unit => tys.push(None),
                Ty::Scalar(s) => tys.push(Some(Ty::Scalar(*s))),
                Ty::Error => failed = true,
                other => {
                    self.diags.error(b.span, format!("a `join!` branch of a role gives `()` or a scalar, not `{other}`: keep the value inside the branch"));
                    failed = true;
                }
            }
        }
        if failed {
            return err(span);
        }
        let ty = if tys.iter().all(Option::is_none) {
            Ty::Unit
        } else if tys.iter().all(Option::is_some) {
            Ty::Tuple(tys.into_iter().flatten().collect())
        } else {
            self.diags.error(span, "the branches of this `join!` mix `()` and values: give every branch a value, or none");
            return err(span);
        };
        let func = format_ident!("join{}", n, span = span);
        let args = branches_syn.iter();
        *node = syn::Expr::Verbatim(quote_spanned!(span=> ::gpu_async::device::#func(#(#args),*)));
        mk(
            ExprKind::JoinFutures(branches),
            Ty::Future(Box::new(ty)),
            span,
        )
    }

    /// One branch of a role's `join!`: an async block (checked in place, in its own scope) or
    /// an expression whose type is a future (awaited by the branch).
    fn join_branch(&mut self, b: &mut syn::Expr) -> Expr {
        let span = span_of(b);
        if let syn::Expr::Async(block) = b {
            return self.async_block(block, span);
        }
        let e = self.expr(b, None);
        match e.ty.clone() {
            Ty::Future(out) => mk(ExprKind::Await(Box::new(e)), *out, span),
            Ty::Error => err(span),
            other => {
                self.diags.error(span, format!("`{other}` is not a future: `join!` in a role takes async fn calls, channel operations and async blocks, written without `.await`"));
                err(span)
            }
        }
    }

    /// `x.await`: of a future, of a warp operation (checked where it is called), or of an
    /// `async { .. }` block, which runs in place in the enclosing role.
    pub(super) fn await_expr(&mut self, a: &mut syn::ExprAwait, span: Span) -> Expr {
        if matches!(&*a.base, syn::Expr::Async(_)) {
            // `async { .. }.await`: the block runs in place, in the enclosing role.
            let syn::Expr::Async(block) = &mut *a.base else {
                return err(span);
            };
            if self.par_locals_start.is_some() || !self.sig.is_async {
                self.diags.error(
                    a.await_token.span,
                    "an async block is awaited in an async fn's role code, not in a parallel loop",
                );
                return err(span);
            }
            return self.async_block(block, span);
        }
        self.await_base = matches!(&*a.base, syn::Expr::MethodCall(_));
        let mut inner = self.expr(&mut a.base, None);
        self.await_base = false;
        if inner.ty == Ty::Error {
            return err(span);
        }
        // `{ f }.await` is `f.await`; a block with statements before its future is not
        // awaited as a whole.
        while let ExprKind::Block(b) = &inner.kind {
            match (&b.stmts[..], &b.tail) {
                ([], Some(tail)) => inner = (**tail).clone(),
                _ => {
                    if matches!(inner.ty, Ty::Future(_) | Ty::PendingMma) {
                        self.diags.error(inner.span, "`.await` of a block: await the future where it is made, after the block's statements (`{ a; f }.await` is `a; f.await`)");
                        return err(span);
                    }
                    break;
                }
            }
        }
        if let ExprKind::Warp(..) = inner.kind {
            // A warp operation: checked (and typed as its result) by `lane_method`.
            return inner;
        }
        if self.par_locals_start.is_some() {
            // An async helper that never suspends (checked with the whole module) runs in
            // place, on each iteration's thread; nothing else can be awaited there.
            if let (ExprKind::Call(fid, _), Ty::Future(out)) = (&inner.kind, &inner.ty) {
                let (fid, out) = (*fid, (**out).clone());
                self.par_awaits.push((fid, a.await_token.span));
                return mk(ExprKind::Await(Box::new(inner)), out, span);
            }
            self.diags.error(a.await_token.span, "`.await` inside a `par_iter` closure: the iterations run on all threads of the role at once and cannot suspend; only an async helper that never waits (no channel, barrier, one-shot value or warp operation) can be awaited there; await the rest before or after the parallel loop");
            return err(span);
        }
        if !self.sig.is_async {
            self.diags.error(
                a.await_token.span,
                "`.await` is only allowed inside `async fn`s",
            );
            return err(span);
        }
        match inner.ty.clone() {
            Ty::Future(out) => mk(ExprKind::Await(Box::new(inner)), *out, span),
            // An issued mma (kept in a local, or awaited where it is issued).
            Ty::PendingMma => mk(ExprKind::Await(Box::new(inner)), Ty::Unit, span),
            Ty::Error => err(span),
            other => {
                self.diags.error(inner.span, format!("`{other}` is not a future: only channel operations, `copy_from`, async helper calls and `join!` can be awaited"));
                err(span)
            }
        }
    }

    /// An async block (a `join!` branch, or awaited in place), checked in its own scope. An
    /// `async move` block owns the values it mentions: those dropped with an effect (a sender
    /// closes its channel, a slot is released) are dropped where the block ends, as in Rust, not
    /// where the enclosing function ends; the block gets those drops as its last statements.
    fn async_block(&mut self, block: &mut syn::ExprAsync, span: Span) -> Expr {
        let first_own = self.locals.len() as u32;
        let outer = std::mem::replace(&mut self.in_async_block, true);
        self.names.push(HashMap::new());
        // `break` and `continue` cannot leave an async block (Rust forbids it).
        let loops = std::mem::take(&mut self.loops);
        let outer_closure = std::mem::replace(&mut self.in_closure, true);
        let mut body = self.block(&mut block.block);
        self.in_closure = outer_closure;
        self.loops = loops;
        self.names.pop();
        self.in_async_block = outer;
        let ty = body.tail.as_ref().map_or(Ty::Unit, |t| t.ty.clone());
        if block.capture.is_some() {
            let mut mentioned = Vec::new();
            block_locals(&body, &mut mentioned);
            let owned: Vec<LocalId> = mentioned
                .into_iter()
                .filter(|id| id.0 < first_own && self.locals[id.0 as usize].ty.has_drop_effect())
                .collect();
            if !owned.is_empty() {
                // `{ let value = tail; drop(owned..); value }`
                let value = match body.tail.take() {
                    Some(t) if matches!(t.ty, Ty::Unit | Ty::Never | Ty::Error) => {
                        body.stmts.push(Stmt::Expr(*t));
                        None
                    }
                    Some(t) => {
                        let id = self.declare("__async_value", t.ty.clone(), false, t.span);
                        let tspan = t.span;
                        body.stmts.push(Stmt::Let(LetPattern::Local(id), *t));
                        Some(mk(ExprKind::Local(id), ty.clone(), tspan))
                    }
                    None => None,
                };
                for id in owned {
                    let local_ty = self.locals[id.0 as usize].ty.clone();
                    let local = mk(ExprKind::Local(id), local_ty, span);
                    body.stmts.push(Stmt::Expr(mk(
                        ExprKind::Drop(Box::new(local)),
                        Ty::Unit,
                        span,
                    )));
                }
                body.tail = value.map(Box::new);
            }
        }
        mk(ExprKind::Block(body), ty, span)
    }

    /// `select! { Some(x) = rx.recv() => body, .. else => body }`: waits for the first channel
    /// with an item; a closed channel disables its arm; `else` runs once every arm is disabled.
    pub(super) fn select(
        &mut self,
        mac: &syn::Macro,
        node: Option<&mut syn::Expr>,
        span: Span,
    ) -> Expr {
        if !self.concurrency_allowed("select!", span) {
            return err(span);
        }
        let mut parsed: SelectSyn = match mac.parse_body() {
            Ok(p) => p,
            Err(e) => {
                self.diags.push(e);
                return err(span);
            }
        };
        let n = parsed.arms.len();
        if n == 0 || n > MAX_BRANCHES {
            self.diags.error(
                span,
                format!(
                    "`select!` takes 1 to {MAX_BRANCHES} arms `Some(x) = rx.recv() => ..`, not {n}"
                ),
            );
            return err(span);
        }
        let mut arms = Vec::new();
        let mut ty: Option<Ty> = None;
        let mut failed = false;
        for arm in parsed.arms.iter_mut() {
            let recv = self.expr(&mut arm.fut, None);
            let chan = match (&recv.kind, &recv.ty) {
                (ExprKind::Recv(_), Ty::Future(out)) => match &**out {
                    Ty::OptRecvSlot(c) => Some(c.clone()),
                    _ => None,
                },
                _ => None,
            };
            let Some(chan) = chan else {
                if recv.ty != Ty::Error {
                    self.diags.error(recv.span, "`select!` waits on channel receives: write `Some(slot) = rx.recv() => ..`, without `.await`");
                }
                failed = true;
                continue;
            };
            let Some(binding) = slot_binding(&arm.pat) else {
                self.diags.error_at(&arm.pat, "a `select!` arm binds the received slot: write `Some(slot) = rx.recv() => ..` (a closed channel disables its arm, and `else => ..` runs when every arm is disabled)");
                failed = true;
                continue;
            };
            self.names.push(HashMap::new());
            let local = self.declare(&binding.0, Ty::RecvSlot(chan), false, binding.1);
            let mut body = self.arm_body(&mut arm.body, ty.as_ref());
            self.names.pop();
            self.unify_arm(&mut ty, &mut body);
            arms.push(SelectArm {
                recv,
                binding: local,
                body,
            });
        }
        let else_ = parsed.else_.as_mut().map(|(_, body)| {
            let mut e = self.arm_body(body, ty.as_ref());
            self.unify_arm(&mut ty, &mut e);
            Box::new(e)
        });
        if failed {
            return err(span);
        }
        let ty = ty.unwrap_or_else(|| {
            let all_never = arms.iter().all(|a| a.body.ty == Ty::Never)
                && else_.as_ref().is_none_or(|e| e.ty == Ty::Never);
            if all_never {
                Ty::Never
            } else {
                Ty::Unit
            }
        });
        if let Some(node) = node {
            *node = syn::Expr::Verbatim(shadow_select(&parsed, span));
        }
        mk(ExprKind::Select(arms, else_), ty, span)
    }

    /// An arm's body; `break`, `continue` and `return` (statements in the kernel language) are
    /// checked as a block's statement, and the arm never gives a value.
    pub(super) fn arm_body(&mut self, body: &mut syn::Expr, expected: Option<&Ty>) -> Expr {
        let jumps = matches!(
            body,
            syn::Expr::Break(_) | syn::Expr::Continue(_) | syn::Expr::Return(_)
        );
        if !jumps {
            return self.expr(body, expected);
        }
        let jump = body.clone();
        *body = syn::parse_quote!({ #jump; });
        let mut e = self.expr(body, None);
        if e.ty != Ty::Error {
            e.ty = Ty::Never;
        }
        e
    }

    /// The arms of a `select!` have one type, as a `match`'s do.
    fn unify_arm(&mut self, ty: &mut Option<Ty>, body: &mut Expr) {
        match (&*ty, &body.ty) {
            (_, Ty::Never | Ty::Error) => {}
            (Some(t), _) => {
                let t = t.clone();
                self.expect(body, &t);
            }
            (None, Ty::IntLit) => {
                self.fix_literals(body, crate::types::Scalar::I32);
                *ty = Some(body.ty.clone());
            }
            (None, Ty::FloatLit) => {
                self.fix_literals(body, crate::types::Scalar::F32);
                *ty = Some(body.ty.clone());
            }
            (None, other) => *ty = Some(other.clone()),
        }
    }
}

/// The locals `b` mentions (nested blocks and closures included), in order, each once.
fn block_locals(b: &Block, out: &mut Vec<LocalId>) {
    for s in &b.stmts {
        match s {
            Stmt::Let(_, e) | Stmt::Expr(e) | Stmt::Break(_, Some(e), _) => expr_locals(e, out),
            Stmt::For(_, _, e, body)
            | Stmt::WhileLet(_, _, e, body)
            | Stmt::While(_, e, body)
            | Stmt::LetElse(_, e, body) => {
                expr_locals(e, out);
                block_locals(body, out);
            }
            Stmt::Break(_, None, _) | Stmt::Continue(..) => {}
        }
    }
    if let Some(t) = &b.tail {
        expr_locals(t, out);
    }
}

fn expr_locals(e: &Expr, out: &mut Vec<LocalId>) {
    match &e.kind {
        ExprKind::Local(id) if !out.contains(id) => out.push(*id),
        ExprKind::Block(b) | ExprKind::Loop(_, b) => block_locals(b, out),
        ExprKind::ForEach(_, _, b, _)
        | ExprKind::ParMap(_, _, b)
        | ExprKind::AccumulatorApply { body: b, .. }
        | ExprKind::RowsApply { body: b, .. } => block_locals(b, out),
        ExprKind::If(_, then, _) | ExprKind::IfLetSome { then, .. } => block_locals(then, out),
        ExprKind::Match(_, arms) => {
            for a in arms {
                if let Some(g) = &a.guard {
                    expr_locals(g, out);
                }
                expr_locals(&a.body, out);
            }
        }
        _ => {}
    }
    for c in crate::check::uniform::children(e) {
        expr_locals(c, out);
    }
}

/// An arm body that `match` lets go without a comma.
fn ends_in_block(e: &syn::Expr) -> bool {
    matches!(
        e,
        syn::Expr::Block(_)
            | syn::Expr::If(_)
            | syn::Expr::Match(_)
            | syn::Expr::Loop(_)
            | syn::Expr::While(_)
            | syn::Expr::ForLoop(_)
            | syn::Expr::Unsafe(_)
    )
}

/// `Some(name)` or `Some(_)`: the slot's local name and span.
fn slot_binding(pat: &syn::Pat) -> Option<(String, Span)> {
    let syn::Pat::TupleStruct(ts) = pat else {
        return None;
    };
    if !ts.path.is_ident("Some") || ts.elems.len() != 1 {
        return None;
    }
    match &ts.elems[0] {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            Some((pi.ident.to_string(), pi.ident.span()))
        }
        syn::Pat::Wild(w) => Some(("_".to_string(), w.span())),
        _ => None,
    }
}

/// The shadow code of a `select!`: a `match` on what `selectN(..).await` chose.
fn shadow_select(s: &SelectSyn, span: Span) -> TokenStream {
    let n = s.arms.len();
    let func = format_ident!("select{}", n, span = span);
    let selected = format_ident!("Selected{}", n, span = span);
    let futs = s.arms.iter().map(|a| &a.fut);
    let arms = s.arms.iter().enumerate().map(|(k, a)| {
        let variant = format_ident!("Arm{}", k, span = span);
        let inner = match &a.pat {
            syn::Pat::TupleStruct(ts) => ts.elems.first().map(|p| p.to_token_stream()),
            _ => None,
        };
        let body = &a.body;
        quote_spanned!(span=> ::gpu_async::device::#selected::#variant(#inner) => #body,)
    });
    let else_body = match &s.else_ {
        Some((_, body)) => body.to_token_stream(),
        None => quote_spanned!(span=> ::core::panic!(#SELECT_DISABLED)),
    };
    quote_spanned!(span=> match ::gpu_async::device::#func(#(#futs),*).await {
        #(#arms)*
        ::gpu_async::device::#selected::Disabled => #else_body,
    })
}
