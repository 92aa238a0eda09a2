//! Lanes: `for_each_lane`, a parallel loop whose lanes meet at warp operations, and the methods
//! of its `lane` (`id`, `warp`, shuffles, votes and warp reductions, which are awaited).

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{err, mk, Checker};
use crate::check::uniform;
use crate::tir::{Expr, ExprKind, WarpOp};
use crate::types::{ParShape, Scalar, Ty};

impl Checker<'_> {
    /// `iter.for_each_lane(async |lane, item| body)`: a parallel loop whose lanes meet at warp
    /// operations; the body is checked for warp operations that some lanes could skip.
    pub(super) fn for_each_lane(
        &mut self,
        iter: Expr,
        shape: ParShape,
        arg: &mut syn::Expr,
        span: Span,
    ) -> Expr {
        let syn::Expr::Closure(c) = arg else {
            self.diags.error_at(
                arg,
                "`for_each_lane` takes an async closure, `async |lane, x| ...`",
            );
            return err(span);
        };
        if c.asyncness.is_none() {
            self.diags.error_at(&c.or1_token, "the `for_each_lane` closure is async, because its lanes meet at warp operations (`lane.sum(v).await`): write `async |lane, x| ...`");
            return err(span);
        }
        if c.inputs.len() != 2 {
            self.diags.error_at(
                &super::parallel::closure_params(c),
                "the `for_each_lane` closure takes the lane and the item, as in `async |lane, (a, b)|`",
            );
            return err(span);
        }
        self.names.push(HashMap::new());
        let first_local = self.locals.len() as u32;
        let outer = self.par_locals_start.replace(first_local);
        let lane_pat = match &c.inputs[0] {
            syn::Pat::Type(t) => &*t.pat,
            p => p,
        };
        let lane = match lane_pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.declare(&pi.ident.to_string(), Ty::Lane, false, pi.ident.span())
            }
            syn::Pat::Wild(w) => self.declare("_", Ty::Lane, false, w.span()),
            other => {
                self.diags
                    .error_at(other, "name the lane, as in `async |lane, x|`");
                self.declare("_", Ty::Lane, false, span)
            }
        };
        let items_start = self.locals.len() as u32;
        let binding = self.par_binding(&c.inputs[1], &shape);
        let items: Vec<u32> = (items_start..self.locals.len() as u32).collect();
        let body = self.closure_body(&mut c.body);
        self.par_locals_start = outer;
        self.names.pop();
        uniform::check_lane_body(&body, first_local, &items, self.diags);
        mk(
            ExprKind::ForEach(Box::new(iter), binding, body, Some(lane)),
            Ty::Unit,
            span,
        )
    }

    /// `lane.id()`, `lane.warp()` and the warp operations (which must be awaited).
    pub(super) fn lane_method(
        &mut self,
        name: &str,
        m: &mut syn::ExprMethodCall,
        awaited: bool,
        span: Span,
    ) -> Expr {
        let method = m.method.span();
        if matches!(name, "id" | "warp") {
            if !m.args.is_empty() {
                self.diags
                    .error(method, format!("`{name}` takes no arguments"));
            }
            return mk(
                ExprKind::LanePosition(name == "warp"),
                Ty::Scalar(Scalar::U32),
                span,
            );
        }
        let Some(op) = WarpOp::from_name(name) else {
            self.diags.error(method, format!("`{name}` is not a method of a lane: it has `id`, `warp`, `shuffle`, `shuffle_xor`, `shuffle_up`, `shuffle_down`, `ballot`, `all`, `any`, `sum`, `min` and `max`"));
            return err(span);
        };
        let want = match op {
            WarpOp::Shuffle | WarpOp::ShuffleXor | WarpOp::ShuffleUp | WarpOp::ShuffleDown => 2,
            _ => 1,
        };
        if m.args.len() != want {
            self.diags.error(
                method,
                format!(
                    "`{name}` takes {want} argument{}",
                    if want == 1 { "" } else { "s" }
                ),
            );
            return err(span);
        }
        if !awaited {
            self.diags.error(method, format!("`lane.{name}(..)` is a meeting of the warp's lanes: await it, as in `lane.{name}(..).await`"));
            return err(span);
        }
        let mut args: Vec<Expr> = Vec::new();
        let value_ty = match op {
            WarpOp::Ballot | WarpOp::All | WarpOp::Any => {
                let b = Ty::Scalar(Scalar::Bool);
                let mut p = self.expr(&mut m.args[0], Some(&b));
                p = self.auto_deref(p);
                self.expect(&mut p, &b);
                args.push(p);
                Scalar::Bool
            }
            _ => {
                let mut v = self.expr(&mut m.args[0], None);
                v = self.auto_deref(v);
                if v.ty == Ty::IntLit {
                    self.fix_literals(&mut v, Scalar::I32);
                } else if v.ty == Ty::FloatLit {
                    self.fix_literals(&mut v, Scalar::F32);
                }
                let s = match &v.ty {
                    Ty::Scalar(s) if (s.is_int() || s.is_float()) && !s.is_half() => *s,
                    Ty::Error => return err(span),
                    t => {
                        self.diags.error(v.span, format!("a warp operation exchanges integers, `f32` or `f64`, found `{t}`: convert it first (`b as u32`, `h.to_f32()`)"));
                        return err(span);
                    }
                };
                args.push(v);
                if want == 2 {
                    let u = Ty::Scalar(Scalar::U32);
                    let mut l = self.expr(&mut m.args[1], Some(&u));
                    l = self.auto_deref(l);
                    self.expect(&mut l, &u);
                    args.push(l);
                }
                s
            }
        };
        let out = match op {
            WarpOp::Ballot => Scalar::U32,
            _ => value_ty,
        };
        // Errors about where the operation is (`check::uniform`) point at its name.
        mk(ExprKind::Warp(op, args), Ty::Scalar(out), method)
    }
}
