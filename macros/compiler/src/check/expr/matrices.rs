//! Matrices and tiles: a `&Matrix<T>` parameter's `rows()` and `cols()`, the tile load that
//! fills a reserved `Tile<T, R, C>` slot from a matrix (`slot.load(a, [row, col]).await`), and a
//! tile's elements, `tile[r][c]`.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind, Lit};
use crate::types::{ChanTy, Scalar, Ty};

impl Checker<'_> {
    /// `a.rows()` and `a.cols()` of a matrix.
    pub(super) fn matrix_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        match name {
            "rows" | "cols" if self.want_args(m, 0) => mk(
                ExprKind::MatrixDim(Box::new(receiver), name == "cols"),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            "rows" | "cols" => err(span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("a matrix has `rows()` and `cols()`, and is read by tile loads (`slot.load({}, [row, col]).await`); `{name}` is not one of its methods", quote::ToTokens::to_token_stream(&m.receiver)),
                );
                err(span)
            }
        }
    }

    /// `slot.load(a, [row, col])` of a reserved tile slot: a future that fills the slot with
    /// the box of the matrix whose top-left element is `(row, col)`, zeros past its edges.
    pub(super) fn tile_load(
        &mut self,
        c: &ChanTy,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some((elem, _, _)) = c.elem.tile() else {
            return err(span);
        };
        if !self.want_args(m, 2) {
            return err(span);
        }
        if self.par_locals_start.is_some() {
            self.diags.error(span, "`load` inside a `par_iter` closure: a tile load belongs to the role, outside the parallel loop");
            return err(span);
        }
        self.local_of(&receiver, "load");
        let matrix = self.expr(&mut m.args[0], None);
        match matrix.ty {
            Ty::Matrix(e) if e == elem => {}
            Ty::Error => return err(span),
            ref t => {
                self.diags.error(
                    matrix.span,
                    format!(
                        "`load` fills a tile of `{elem}` from a `&Matrix<{elem}>`; found `{t}`"
                    ),
                );
                return err(span);
            }
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let at_span = super::span_of(&m.args[1]);
        let syn::Expr::Array(at) = &mut m.args[1] else {
            self.diags.error(
                at_span,
                "write the matrix element at the tile's top-left corner as `[row, col]`",
            );
            return err(span);
        };
        if at.elems.len() != 2 {
            self.diags.error(
                at_span,
                format!(
                    "the tile's top-left corner is two indices, `[row, col]`; found {}",
                    at.elems.len()
                ),
            );
            return err(span);
        }
        let mut corner = Vec::new();
        for e in at.elems.iter_mut() {
            let mut ix = self.expr(e, Some(&usize_ty));
            self.expect(&mut ix, &usize_ty);
            corner.push(ix);
        }
        let (Some(col), Some(row)) = (corner.pop(), corner.pop()) else {
            return err(span);
        };
        mk(
            ExprKind::TileLoad {
                slot: Box::new(receiver),
                matrix: Box::new(matrix),
                row: Box::new(row),
                col: Box::new(col),
            },
            Ty::Future(Box::new(Ty::Unit)),
            span,
        )
    }

    /// `tile[r]` of a tile slot (a row, indexed again) and `tile[r][c]` (an element).
    pub(super) fn tile_index(&mut self, base: Expr, mut index: Expr, span: Span) -> Expr {
        let usize_ty = Ty::Scalar(Scalar::Usize);
        if index.ty == Ty::Range {
            self.diags.error(
                index.span,
                "a tile has no sub-slices: read its elements as `tile[r][c]`",
            );
            return err(span);
        }
        self.expect(&mut index, &usize_ty);
        match &base.ty {
            Ty::RecvSlot(c) | Ty::SendSlot(c) => {
                let c = c.clone();
                mk(
                    ExprKind::Index(Box::new(base), Box::new(index)),
                    Ty::TileRow(c),
                    span,
                )
            }
            Ty::TileRow(c) => {
                let Some((elem, _, _)) = c.elem.tile() else {
                    return err(span);
                };
                mk(
                    ExprKind::Index(Box::new(base), Box::new(index)),
                    Ty::Scalar(elem),
                    span,
                )
            }
            _ => err(span),
        }
    }

    /// `tile.len()`: its rows, as the simulator's `[[T; C]; R]` has.
    pub(super) fn tile_len(&mut self, c: &ChanTy, span: Span) -> Expr {
        let rows = c.elem.tile().map_or(0, |(_, r, _)| r);
        mk(
            ExprKind::Lit(Lit::Int(u128::from(rows))),
            Ty::Scalar(Scalar::Usize),
            span,
        )
    }
}
