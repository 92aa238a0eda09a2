//! Scans and index loops: `src.exclusive_sum(dst, init)`, `inclusive_sum`, `exclusive_scan` and
//! `inclusive_scan` (with `|| identity, |a, b| op`), and `(a..b).into_par_iter()`, a parallel
//! loop over the indices of a range.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind, ParScan, Reduction};
use crate::types::{ParShape, Ty};

impl Checker<'_> {
    /// `(a..b).into_par_iter()`: its items are the indices `a`, `a + 1`, .. `b - 1`.
    pub(super) fn par_indices(&mut self, range: Expr, span: Span) -> Expr {
        if self.par_locals_start.is_some() {
            self.diags.error(
                span,
                "parallel iterators cannot nest: a `par_iter` closure runs on one thread",
            );
            return err(span);
        }
        if !matches!(range.kind, ExprKind::Range(..)) {
            self.diags.error(
                range.span,
                "`into_par_iter` takes a range written in place, `(a..b).into_par_iter()`",
            );
            return err(span);
        }
        mk(
            ExprKind::ParSource(Box::new(range)),
            Ty::ParIter(ParShape::Indices),
            span,
        )
    }

    /// `src.exclusive_sum(dst, init)`, `inclusive_sum(dst, init)`, `exclusive_scan(dst, init,
    /// || identity, |a, b| op)` and `inclusive_scan(..)`: the items of `src` (scalars, maybe
    /// mapped) scanned into `dst`, a `par_iter_mut()` of the same scalar.
    pub(super) fn par_scan(
        &mut self,
        name: &str,
        src: Expr,
        shape: ParShape,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let custom = name.ends_with("_scan");
        if !self.want_args(m, if custom { 4 } else { 2 }) {
            return err(span);
        }
        let Some(elem) = self.reduction_elem(&shape, m.method.span()) else {
            return err(span);
        };
        let dst = self.expr(&mut m.args[0], None);
        match &dst.ty {
            Ty::ParIter(ParShape::Source {
                elem: e,
                mutable: true,
            }) if *e == elem => {}
            Ty::Error => return err(span),
            Ty::ParIter(ParShape::Source {
                elem: e,
                mutable: true,
            }) => {
                self.diags.error(dst.span, format!("the scan's items are `{elem}`s, so it writes them into `{elem}`s: this destination holds `{e}`s"));
                return err(span);
            }
            _ => {
                self.diags.error(dst.span, format!("`{name}` writes its results into a destination of `{elem}`s: pass `dst.par_iter_mut()`"));
                return err(span);
            }
        }
        let ty = Ty::Scalar(elem);
        let init = self.expr(&mut m.args[1], Some(&ty));
        let mut init = self.auto_deref(init);
        self.expect(&mut init, &ty);
        let op = if custom {
            let (head, tail) = m.args.iter_mut().skip(2).fold((None, None), |(a, b), x| {
                if a.is_none() {
                    (Some(x), b)
                } else {
                    (a, Some(x))
                }
            });
            let (Some(id_arg), Some(op_arg)) = (head, tail) else {
                return err(span);
            };
            match self.custom_op(name, elem, id_arg, op_arg, span) {
                Some(op) => op,
                None => return err(span),
            }
        } else {
            Reduction::Sum
        };
        mk(
            ExprKind::ParScan(ParScan {
                src: Box::new(src),
                dst: Box::new(dst),
                init: Box::new(init),
                op,
                inclusive: name.starts_with("inclusive"),
            }),
            ty,
            span,
        )
    }
}
