//! Atomics: the methods of an atomic slice (`len`), of its elements (`fetch_add`,
//! `compare_exchange`, ..., with their memory orderings) and of a `compare_exchange` result.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{AtomicOp, Expr, ExprKind, MemOrder};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// A method of an atomic slice, of one of its elements, or of a `compare_exchange` result.
    pub(super) fn atomic_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("len", Ty::AtomicSlice(_)) if self.want_args(m, 0) => mk(
                ExprKind::Len(Box::new(receiver)),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            (_, Ty::AtomicRef(s)) if AtomicOp::lookup(name).is_some() => {
                let s = *s;
                self.atomic_call(name, receiver, s, m, span)
            }
            ("is_ok" | "is_err", Ty::CasResult(_)) if self.want_args(m, 0) => mk(
                ExprKind::CasIsOk(Box::new(receiver), name == "is_ok"),
                Ty::Scalar(Scalar::Bool),
                span,
            ),
            ("unwrap_or_else", Ty::CasResult(s)) if self.want_args(m, 1) => {
                let s = *s;
                let identity = match &m.args[0] {
                    syn::Expr::Closure(c) if c.inputs.len() == 1 => {
                        match (&c.inputs[0], &*c.body) {
                            (syn::Pat::Ident(p), syn::Expr::Path(b)) => b.path.is_ident(&p.ident),
                            _ => false,
                        }
                    }
                    _ => false,
                };
                if !identity {
                    self.diags.error_at(&m.args[0], "on a `compare_exchange` result, `unwrap_or_else` takes `|v| v`: the previous value either way");
                    return err(span);
                }
                mk(ExprKind::CasValue(Box::new(receiver)), Ty::Scalar(s), span)
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// `x[i].fetch_add(v, Ordering::Relaxed)` and the other atomic methods.
    fn atomic_call(
        &mut self,
        name: &str,
        receiver: Expr,
        s: Scalar,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some((op, values)) = AtomicOp::lookup(name) else {
            return err(span);
        };
        if s.is_float() && matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) {
            self.diags.error(
                m.method.span(),
                format!("`{}` has no `{name}`: bitwise operations are for atomic integers; update the bits through an integer atomic", crate::types::atomic_name(s)),
            );
            return err(span);
        }
        let orderings = if op == AtomicOp::CompareExchange {
            2
        } else {
            1
        };
        if m.args.len() != values + orderings {
            self.diags.error(
                m.method.span(),
                format!(
                    "`{name}` takes {} value{} and {} `Ordering`{}",
                    values,
                    if values == 1 { "" } else { "s" },
                    orderings,
                    if orderings == 1 { "" } else { "s" }
                ),
            );
            return err(span);
        }
        let ty = Ty::Scalar(s);
        let mut operands = Vec::new();
        for a in m.args.iter_mut().take(values) {
            let e = self.expr(a, Some(&ty));
            let mut e = self.auto_deref(e);
            self.expect(&mut e, &ty);
            operands.push(e);
        }
        let mut order = MemOrder::Relaxed;
        for (k, a) in m.args.iter().skip(values).enumerate() {
            let Some(o) = memory_order(a) else {
                self.diags.error_at(a, "an atomic ordering is written `Ordering::Relaxed` (or `Acquire`, `Release`, `AcqRel`, `SeqCst`)");
                return err(span);
            };
            let bad = match op {
                AtomicOp::Load => matches!(o, MemOrder::Release | MemOrder::AcqRel),
                AtomicOp::Store => matches!(o, MemOrder::Acquire | MemOrder::AcqRel),
                AtomicOp::CompareExchange if k == 1 => {
                    matches!(o, MemOrder::Release | MemOrder::AcqRel)
                }
                _ => false,
            };
            if bad {
                self.diags.error_at(
                    a,
                    format!("`{name}` cannot take this ordering (Rust panics on it at run time)"),
                );
                return err(span);
            }
            if k == 0 {
                order = o;
            }
        }
        let out = match op {
            AtomicOp::Store => Ty::Unit,
            AtomicOp::CompareExchange => Ty::CasResult(s),
            _ => ty,
        };
        mk(
            ExprKind::Atomic(Box::new(receiver), op, operands, order),
            out,
            span,
        )
    }
}

/// `Ordering::Relaxed` (with any path before `Ordering`) as a [`MemOrder`].
fn memory_order(e: &syn::Expr) -> Option<MemOrder> {
    let syn::Expr::Path(p) = e else { return None };
    let last = p.path.segments.last()?.ident.to_string();
    Some(match last.as_str() {
        "Relaxed" => MemOrder::Relaxed,
        "Acquire" => MemOrder::Acquire,
        "Release" => MemOrder::Release,
        "AcqRel" => MemOrder::AcqRel,
        "SeqCst" => MemOrder::SeqCst,
        _ => return None,
    })
}
