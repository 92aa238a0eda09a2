//! Per-row values of an accumulator (`Rows<M>`): made by `acc.row_max()`, `acc.row_sum()` or
//! `Rows::<M>::splat(v)`, changed by `rows.apply(|x| ..)` and `rows.apply_at(|i, x| ..)` (whose
//! body may read other rows as `other[i]`), and written out by `rows.store(out, row)`.

use proc_macro2::Span;

use super::parallel::closure_params;
use super::{err, mk, Checker};
use crate::check::sig;
use crate::tir::{Expr, ExprKind};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `Rows::<M>::splat(v)` (`rows` is the `Rows::<M>` segment).
    pub(super) fn rows_new(
        &mut self,
        c: &mut syn::ExprCall,
        rows: &syn::PathSegment,
        name: &str,
        span: Span,
    ) -> Expr {
        if name != "splat" {
            self.diags.error_at(
                &c.func,
                format!("rows are made with `Rows::<M>::splat(v)` (or `acc.row_max()`, `acc.row_sum()`); `{name}` is not one of their constructors"),
            );
            return err(span);
        }
        if c.args.len() != 1 {
            self.diags
                .error_at(&c.func, "`Rows::splat` takes one `f32`, every row's value");
            return err(span);
        }
        let Some(m) = sig::rows_arg(rows, self.scope, self.diags) else {
            return err(span);
        };
        if self.is_kernel() {
            self.diags.error_at(&c.func, "rows live in the registers of the role whose accumulator they go with: make them in that role's code, not in the kernel body");
            return err(span);
        }
        if !self.no_channel_ops_in_par(span, "Rows::splat") {
            return err(span);
        }
        let f32_ty = Ty::Scalar(Scalar::F32);
        let mut value = self.expr(&mut c.args[0], Some(&f32_ty));
        self.expect(&mut value, &f32_ty);
        mk(
            ExprKind::RowsNew {
                value: Box::new(value),
            },
            Ty::Rows { m },
            span,
        )
    }

    /// `rows.apply(..)`, `rows.apply_at(..)` and `rows.store(out, row)`.
    pub(super) fn rows_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        match name {
            "apply" | "apply_at" if self.want_args(m, 1) => {
                self.rows_apply(receiver, &mut m.args[0], name == "apply_at", span)
            }
            "store" if self.want_args(m, 2) => self.rows_store(receiver, m, span),
            "apply" | "apply_at" | "store" => err(span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("rows have `apply(|x| ..)`, `apply_at(|i, x| ..)` and `store(out, row)`, and are read as `rows[i]` inside `apply_at`; `{name}` is not one of their methods"),
                );
                err(span)
            }
        }
    }

    /// `rows.apply(|x| body)`, or with `at` `rows.apply_at(|i, x| body)`.
    fn rows_apply(&mut self, rows: Expr, arg: &mut syn::Expr, at: bool, span: Span) -> Expr {
        let name = if at { "apply_at" } else { "apply" };
        if !matches!(rows.kind, ExprKind::Local(_)) {
            self.diags.error(
                rows.span,
                format!("`{name}` changes rows held in a local: `let mut m = acc.row_max(); m.{name}(..)`"),
            );
            return err(span);
        }
        if !self.no_channel_ops_in_par(span, name) {
            return err(span);
        }
        let example = if at {
            "`m.apply_at(|i, x| x.max(other[i]))`"
        } else {
            "`m.apply(|x| x * 0.5)`"
        };
        let syn::Expr::Closure(c) = arg else {
            self.diags.error_at(
                arg,
                format!(
                    "`{name}` takes a closure that computes a row's new value, as in {example}"
                ),
            );
            return err(span);
        };
        let params: &[Scalar] = if at {
            &[Scalar::Usize, Scalar::F32]
        } else {
            &[Scalar::F32]
        };
        if c.asyncness.is_some() || c.inputs.len() != params.len() {
            let shape = if at {
                "two parameters, the row and its value"
            } else {
                "one parameter, the row's value"
            };
            self.diags.error_at(
                &closure_params(c),
                format!("the closure of `{name}` is a plain closure of {shape}, as in {example}"),
            );
            return err(span);
        }
        let Some((bound, body)) = self.apply_closure(c, params, at, (name, "row")) else {
            return err(span);
        };
        mk(
            ExprKind::RowsApply {
                rows: Box::new(rows),
                row: bound.first().copied().flatten().filter(|_| at),
                value: bound.last().copied().flatten(),
                body,
            },
            Ty::Unit,
            span,
        )
    }

    /// `rows.store(out, row)`: into a `&mut [f32]` from element `row` on.
    fn rows_store(&mut self, rows: Expr, m: &mut syn::ExprMethodCall, span: Span) -> Expr {
        if !self.no_channel_ops_in_par(span, "store") {
            return err(span);
        }
        let out = self.expr(&mut m.args[0], None);
        match out.ty {
            Ty::Slice {
                elem: Scalar::F32,
                mutable: true,
            } => {}
            Ty::Error => return err(span),
            ref other => {
                self.diags.error(
                    out.span,
                    format!(
                        "rows are stored into a `&mut [f32]`, one element per row; found `{other}`"
                    ),
                );
                return err(span);
            }
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut row = self.expr(&mut m.args[1], Some(&usize_ty));
        self.expect(&mut row, &usize_ty);
        mk(
            ExprKind::RowsStore {
                rows: Box::new(rows),
                out: Box::new(out),
                row: Box::new(row),
            },
            Ty::Unit,
            span,
        )
    }
}
