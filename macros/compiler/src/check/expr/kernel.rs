//! The kernel body: it makes channels and scalars, then runs its roles with
//! `join!(on_warps(first..end, role(args)), ..).await`, and nothing else.

use proc_macro2::Span;
use quote::quote_spanned;

use super::{err, mk, span_of, Checker};
use crate::check::consts;
use crate::target::{MAX_WARPS, WARPGROUP};
use crate::tir::{Block, Expr, ExprKind, LocalId, Stmt};
use crate::types::Ty;

impl Checker<'_> {
    /// A kernel body creates channels, scalars and parts of slices, then ends with
    /// `join!(..).await;`.
    pub(super) fn check_kernel_shape(&mut self, body: &Block, name_span: Span) {
        let mut joins = 0;
        for (i, stmt) in body.stmts.iter().enumerate() {
            match stmt {
                Stmt::Let(_, e)
                    if matches!(
                        e.ty,
                        Ty::ChanPair(_)
                            | Ty::Receiver(_)
                            | Ty::OneshotPair(_)
                            | Ty::Scalar(_)
                            | Ty::Shared(_)
                            | Ty::SharedArray(_)
                            | Ty::Barrier
                            | Ty::Slice { .. }
                            | Ty::SlicePair { .. }
                            | Ty::Chunks { .. }
                            | Ty::Error
                    ) => {}
                Stmt::Expr(e) if matches!(&e.kind, ExprKind::Await(inner) if matches!(inner.kind, ExprKind::Join(_))) => {
                    joins += 1;
                    if i + 1 != body.stmts.len() {
                        self.diags.error(e.span, "code after `join!(..).await` is not supported yet: the kernel ends when its roles end");
                    }
                }
                Stmt::Let(_, e) | Stmt::Expr(e) => {
                    if e.ty != Ty::Error {
                        self.diags.error(e.span, "a kernel body creates channels and scalars, then runs its roles with `join!(on_warps(..), ..).await;`; put other code in a role");
                    }
                }
                _ => self.diags.error(name_span, "a kernel body creates channels and scalars, then runs its roles with `join!(..).await;`; loops belong in roles"),
            }
        }
        if let Some(tail) = &body.tail {
            if tail.ty != Ty::Error {
                self.diags
                    .error(tail.span, "end the kernel with `join!(..).await;`");
            }
        }
        if joins == 0 {
            self.diags.error(
                name_span,
                "a kernel runs its roles with `join!(on_warps(0..1, role(args)), ..).await;`",
            );
        }
    }

    /// `join!(on_warps(..), ..)` in a kernel body: its roles. The shadow code calls
    /// `join_roles`, after telling each barrier how many roles meet at it.
    pub(super) fn kernel_join(
        &mut self,
        mac: &syn::Macro,
        node: &mut syn::Expr,
        span: Span,
    ) -> Expr {
        let parsed = mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        );
        let mut roles_syn = match parsed {
            Ok(r) => r,
            Err(e) => {
                self.diags.push(e);
                return err(span);
            }
        };
        let mut roles = Vec::new();
        let mut rewritten = Vec::new();
        for role in roles_syn.iter_mut() {
            if let Some((e, role_name)) = self.on_warps(role) {
                roles.push(e);
                let rspan = span_of(role);
                let lit = syn::LitStr::new(&role_name, rspan);
                rewritten.push(quote_spanned!(rspan=> #role.__named(#lit)));
            }
        }
        if roles_syn.is_empty() {
            self.diags.error(
                span,
                "`join!` needs at least one role: `join!(on_warps(0..1, role(args)), ..)`",
            );
        }
        self.check_channel_ends(&roles);
        // Each barrier learns, in the simulator, how many roles meet at it: those given it.
        let mut meeting: Vec<(LocalId, usize)> = Vec::new();
        for role in &roles {
            let ExprKind::OnWarps { call, .. } = &role.kind else {
                continue;
            };
            let ExprKind::Call(_, args) = &call.kind else {
                continue;
            };
            let mut mine: Vec<LocalId> = Vec::new();
            for a in args {
                let local = match &a.kind {
                    ExprKind::Block(b) => b.tail.as_deref(),
                    _ => Some(a),
                };
                if let (
                    Ty::BarrierRef,
                    Some(Expr {
                        kind: ExprKind::Local(id),
                        ..
                    }),
                ) = (&a.ty, local)
                {
                    if !mine.contains(id) {
                        mine.push(*id);
                    }
                }
            }
            for id in mine {
                match meeting.iter_mut().find(|(l, _)| *l == id) {
                    Some((_, n)) => *n += 1,
                    None => meeting.push((id, 1)),
                }
            }
        }
        let counts = meeting.iter().map(|(id, n)| {
            let local = &self.locals[id.0 as usize].name;
            let name = match local.strip_prefix("r#") {
                Some(raw) => syn::Ident::new_raw(raw, span),
                None => syn::Ident::new(local, span),
            };
            quote_spanned!(span=> #name.__participants(#n);)
        });
        *node = syn::Expr::Verbatim(quote_spanned!(span=> {
            #(#counts)*
            ::gpu_async::device::join_roles([#(#rewritten),*])
        }));
        mk(ExprKind::Join(roles), Ty::Future(Box::new(Ty::Unit)), span)
    }

    /// Reports a role given both a sender and a receiver of one channel: a channel connects a
    /// producer role to consumer roles.
    fn check_channel_ends(&mut self, roles: &[Expr]) {
        for role in roles {
            let ExprKind::OnWarps { call, .. } = &role.kind else {
                continue;
            };
            let ExprKind::Call(f, args) = &call.kind else {
                continue;
            };
            let role_name = &self.scope.sigs[f.0 as usize].name;
            let mut senders: Vec<(usize, LocalId)> = Vec::new();
            let mut receivers: Vec<(usize, LocalId, Span)> = Vec::new();
            for a in args {
                let local = match &a.kind {
                    ExprKind::Block(b) => b.tail.as_deref(),
                    _ => Some(a),
                };
                let Some(Expr {
                    kind: ExprKind::Local(id),
                    ..
                }) = local
                else {
                    continue;
                };
                let Some(&channel) = self.channel_of.get(id) else {
                    continue;
                };
                match a.ty {
                    Ty::Sender(_) => senders.push((channel, *id)),
                    Ty::Receiver(_) => receivers.push((channel, *id, a.span)),
                    _ => {}
                }
            }
            for (channel, rx, span) in receivers {
                if let Some((_, tx)) = senders.iter().find(|(c, _)| *c == channel) {
                    let tx = &self.locals[tx.0 as usize].name;
                    let rx = &self.locals[rx.0 as usize].name;
                    self.diags.error(
                        span,
                        format!("role `{role_name}` holds both ends of the channel `{tx}`/`{rx}`: a channel carries values from one role to others; give `{rx}` to another `on_warps(..)` role, or keep the values in locals within the role"),
                    );
                }
            }
        }
    }

    /// `on_warps(a..b, role(args))`.
    fn on_warps(&mut self, e: &mut syn::Expr) -> Option<(Expr, String)> {
        let span = span_of(e);
        let syn::Expr::Call(c) = e else {
            self.diags.error(
                span,
                "each argument of `join!` is `on_warps(first..end, role(args))`",
            );
            return None;
        };
        let placement = match &*c.func {
            syn::Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let group = match placement.as_deref() {
            Some("on_warps") => 1,
            Some("on_warpgroups") => WARPGROUP,
            _ => 0,
        };
        if group == 0 || c.args.len() != 2 {
            self.diags.error(
                span,
                "each argument of `join!` is `on_warps(first..end, role(args))` or `on_warpgroups(first..end, role(args))`",
            );
            return None;
        }
        let range_span = span_of(&c.args[0]);
        let range = quote::ToTokens::to_token_stream(&c.args[0]);
        let (start, end) = match &c.args[0] {
            syn::Expr::Range(r) if matches!(r.limits, syn::RangeLimits::HalfOpen(_)) => {
                let s = r
                    .start
                    .as_ref()
                    .map(|s| consts::eval_usize(s, &self.scope.consts, self.diags));
                let t = r
                    .end
                    .as_ref()
                    .map(|t| consts::eval_usize(t, &self.scope.consts, self.diags));
                match (s, t) {
                    (Some(Some(s)), Some(Some(t))) => {
                        let in_warps = |n: u64| u32::try_from(n).ok()?.checked_mul(group);
                        match (in_warps(s), in_warps(t)) {
                            (Some(s), Some(t)) => (s, t),
                            _ => {
                                self.diags.error(
                                    range_span,
                                    format!("a block has at most {MAX_WARPS} warps: give the role a range within them"),
                                );
                                return None;
                            }
                        }
                    }
                    (Some(None), _) | (_, Some(None)) => return None,
                    _ => {
                        self.diags
                            .error(range_span, "a warp range has both ends: `first..end`");
                        return None;
                    }
                }
            }
            _ => {
                self.diags.error(
                    range_span,
                    "a warp range is a constant half-open range, `first..end`",
                );
                return None;
            }
        };
        let call = self.expr(&mut c.args[1], None);
        let name = match &call.kind {
            ExprKind::Call(id, _) => {
                let sig = &self.scope.sigs[id.0 as usize];
                if !sig.is_async || sig.ret != Ty::Unit {
                    self.diags.error(
                        call.span,
                        "a role is a call of an `async fn` that returns nothing",
                    );
                }
                sig.name.clone()
            }
            _ => {
                if call.ty != Ty::Error {
                    self.diags.error(
                        call.span,
                        "a role is a call of an async fn of the module, as in `load(x, tx)`",
                    );
                }
                return None;
            }
        };
        Some((
            mk(
                ExprKind::OnWarps {
                    start,
                    end,
                    group,
                    range,
                    call: Box::new(call),
                },
                Ty::Role,
                span,
            ),
            name,
        ))
    }
}
