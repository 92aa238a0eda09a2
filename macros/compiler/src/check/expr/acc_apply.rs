//! Elementwise operations on an accumulator: `acc.apply(|v| body)` and
//! `acc.apply_at(|row, col, v| body)`, whose closure computes each element's new value from the
//! element (and its place in the accumulator).
//!
//! The closure runs once per element, on the thread that holds the element, so its body is
//! checked as a parallel loop's is (no channel operation, no assignment to a captured local),
//! and it may not write memory or update atomics: each thread would do that once per element
//! it holds, which is no order the simulator's element-by-element calls could match.

use std::collections::HashMap;

use proc_macro2::Span;

use super::parallel::closure_params;
use super::{err, mk, Checker};
use crate::tir::{Block, Expr, ExprKind, LocalId, Stmt};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `acc.apply(|v| body)`, or with `at` `acc.apply_at(|row, col, v| body)`.
    pub(super) fn accumulator_apply(
        &mut self,
        acc: Expr,
        arg: &mut syn::Expr,
        at: bool,
        span: Span,
    ) -> Expr {
        let name = if at { "apply_at" } else { "apply" };
        let example = if at {
            "`acc.apply_at(|row, col, v| v + bias[col])`"
        } else {
            "`acc.apply(|v| v.max(0.0))`"
        };
        if !self.mma_in_role_code(&acc, &format!("{name}(..)"), span) {
            return err(span);
        }
        let syn::Expr::Closure(c) = arg else {
            self.diags.error_at(
                arg,
                format!("`{name}` takes a closure that computes an element's new value, as in {example}"),
            );
            return err(span);
        };
        if let Some(a) = &c.asyncness {
            self.diags.error_at(
                a,
                format!(
                    "the closure of `{name}` computes each element at once: it cannot be async"
                ),
            );
            return err(span);
        }
        let params: &[Scalar] = if at {
            &[Scalar::Usize, Scalar::Usize, Scalar::F32]
        } else {
            &[Scalar::F32]
        };
        if c.inputs.len() != params.len() {
            let shape = if at {
                "three parameters, the element's row and column in the accumulator and the element"
            } else {
                "one parameter, the element"
            };
            self.diags.error_at(
                &closure_params(c),
                format!("the closure of `{name}` takes {shape}, as in {example}"),
            );
            return err(span);
        }
        let Some((bound, body)) = self.apply_closure(c, params, at, (name, "element")) else {
            return err(span);
        };
        let (row, col, value) = match bound[..] {
            [row, col, value] => (row, col, value),
            [value] => (None, None, value),
            _ => return err(span),
        };
        mk(
            ExprKind::AccumulatorApply {
                acc: Box::new(acc),
                row,
                col,
                value,
                body,
            },
            Ty::Unit,
            span,
        )
    }

    /// The parameters (of types `params`) and the body of the closure `c` of `name` (`apply` or
    /// `apply_at` of an accumulator or of rows, which runs once per `per`, an element or a row),
    /// checked as a parallel loop's body is; with `row_first`, the first parameter is the row,
    /// by which the body may index rows (`m[i]`). `None` after an error.
    pub(super) fn apply_closure(
        &mut self,
        c: &mut syn::ExprClosure,
        params: &[Scalar],
        row_first: bool,
        (name, per): (&str, &str),
    ) -> Option<(Vec<Option<LocalId>>, Block)> {
        self.names.push(HashMap::new());
        let first_local = self.locals.len() as u32;
        let outer = self.par_locals_start.replace(first_local);
        let bound: Vec<Option<LocalId>> = c
            .inputs
            .iter()
            .zip(params)
            .map(|(p, &ty)| self.apply_param(p, ty, name))
            .collect();
        let row = bound.first().copied().flatten().filter(|_| row_first);
        let outer_row = std::mem::replace(&mut self.apply_row, row);
        let body = self.apply_body(&mut c.body, name);
        self.apply_row = outer_row;
        self.par_locals_start = outer;
        self.names.pop();
        if let Some(at) = memory_write(&body) {
            self.diags.error(
                at,
                format!("the closure of `{name}` runs once per {per}, on the thread that holds it, and only computes its new value: it cannot write memory or update an atomic; store the result after it (`.store(..)`), or update memory in a parallel loop"),
            );
            return None;
        }
        Some((bound, body))
    }

    /// A parameter of the closure of `apply`: a name (`mut` allowed), `_`, or either with its
    /// type written (rustc checks the type against the method's).
    fn apply_param(&mut self, p: &syn::Pat, ty: Scalar, name: &str) -> Option<LocalId> {
        match p {
            syn::Pat::Type(t) => self.apply_param(&t.pat, ty, name),
            syn::Pat::Wild(_) => None,
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                Some(self.declare(
                    &pi.ident.to_string(),
                    Ty::Scalar(ty),
                    pi.mutability.is_some(),
                    pi.ident.span(),
                ))
            }
            other => {
                self.diags.error_at(
                    other,
                    format!("bind each parameter of the closure of `{name}` to a name or `_`"),
                );
                None
            }
        }
    }

    /// The closure's body, whose value is the element's new `f32` value.
    fn apply_body(&mut self, body: &mut syn::Expr, name: &str) -> Block {
        let f32_ty = Ty::Scalar(Scalar::F32);
        let mut block = self.closure_body(body);
        match block.tail.as_deref_mut() {
            Some(tail) => self.expect(tail, &f32_ty),
            None => {
                let ends = matches!(block.stmts.last(), Some(Stmt::Expr(e)) if e.ty == Ty::Never);
                if !ends {
                    self.diags.error_at(
                        body,
                        format!("the closure of `{name}` gives each element's new value, an `f32`: end its body with that value"),
                    );
                }
            }
        }
        block
    }
}

/// The first write to memory or atomic operation in `b` (an assignment to anything but a local
/// of the closure, its fields or its array's elements).
fn memory_write(b: &Block) -> Option<Span> {
    let mut found = None;
    crate::check::suspend::for_each_expr(b, &mut |e| {
        if found.is_some() {
            return;
        }
        let writes = match &e.kind {
            ExprKind::Atomic(..) | ExprKind::SharedSet(..) => true,
            ExprKind::Assign(place, _) | ExprKind::CompoundAssign(_, place, _) => {
                !is_local_place(place)
            }
            _ => false,
        };
        if writes {
            found = Some(e.span);
        }
    });
    found
}

/// Whether `place` is a local, a field of one or an element of a local array.
fn is_local_place(place: &Expr) -> bool {
    match &place.kind {
        ExprKind::Local(_) => true,
        ExprKind::TupleField(base, _) => is_local_place(base),
        ExprKind::Index(base, _) => matches!(base.ty, Ty::Array(..)) && is_local_place(base),
        _ => false,
    }
}

impl Checker<'_> {
    /// `rows[i]`: the value of a row, read inside the closure of `acc.apply_at(|i, j, v| ..)`
    /// with its row parameter `i`, where each element knows its row.
    pub(super) fn row_of(&mut self, rows: Expr, index: &Expr, span: Span) -> Expr {
        match (self.apply_row, &index.kind) {
            (Some(row), ExprKind::Local(id)) if *id == row => mk(
                ExprKind::RowOf {
                    rows: Box::new(rows),
                    row,
                },
                Ty::Scalar(Scalar::F32),
                span,
            ),
            _ => {
                self.diags.error(
                    span,
                    "a row's value is read by the elements of that row: index the rows inside `acc.apply_at(|i, j, v| ..)` with its row parameter, `rows[i]` (each element's row lies in the registers of the lanes that hold it)",
                );
                err(span)
            }
        }
    }
}
