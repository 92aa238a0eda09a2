//! The epilogue through shared memory: `acc.store_tile(&mut slot, col)`, a block of an
//! accumulator's columns into a reserved tile slot, and `tile.store(c, [row, col])`, a received
//! tile into a `&mut Matrix<T>` by the TMA.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind};
use crate::types::{ChanTy, Scalar, Ty};

impl Checker<'_> {
    /// `tile.store(c, [row, col])` of a received slot of one tile: a future that writes the
    /// tile into the box of `c` whose top-left element is `(row, col)`, nothing past its edges;
    /// `tile.store_rows(c, [row, col], rows)` writes only the tile's first `rows` rows.
    pub(super) fn tile_store(
        &mut self,
        c: &ChanTy,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some((elem, _, _)) = c.elem.tile() else {
            return err(span);
        };
        let method = if m.method == "store_rows" {
            "store_rows"
        } else {
            "store"
        };
        let args = if method == "store_rows" { 3 } else { 2 };
        if !self.want_args(m, args) || !self.no_channel_ops_in_par(span, method) {
            return err(span);
        }
        self.local_of(&receiver, method);
        let matrix = self.expr(&mut m.args[0], None);
        match matrix.ty {
            Ty::Matrix(e, true) if e == elem => {}
            Ty::Matrix(e, false) if e == elem => {
                self.diags.error(
                    matrix.span,
                    format!("a tile store writes the matrix: pass it as `&mut Matrix<{elem}>` (a kernel parameter `c: &mut Matrix<{elem}>`); `&Matrix<{elem}>` is only read"),
                );
                return err(span);
            }
            Ty::Error => return err(span),
            ref t => {
                self.diags.error(
                    matrix.span,
                    format!("`store` writes a tile of `{elem}` into a `&mut Matrix<{elem}>`; found `{t}`"),
                );
                return err(span);
            }
        }
        let Some((row, col)) = self.tile_corner(&mut m.args[1]) else {
            return err(span);
        };
        let rows = (method == "store_rows").then(|| {
            let usize_ty = Ty::Scalar(Scalar::Usize);
            let mut rows = self.expr(&mut m.args[2], Some(&usize_ty));
            self.expect(&mut rows, &usize_ty);
            Box::new(rows)
        });
        mk(
            ExprKind::TileStore {
                slot: Box::new(receiver),
                matrix: Box::new(matrix),
                row: Box::new(row),
                col: Box::new(col),
                rows,
            },
            Ty::Future(Box::new(Ty::Unit)),
            span,
        )
    }

    /// `acc.store_tile(&mut slot, col)`: the accumulator's columns `col .. col + C` into a
    /// reserved slot of one `Tile<T, M, C>`, `M` the accumulator's rows and `C` columns that
    /// divide its `N`.
    pub(super) fn accumulator_tile(
        &mut self,
        acc: Expr,
        m: &mut syn::ExprMethodCall,
        (rows, n): (u32, u32),
        span: Span,
    ) -> Expr {
        if !self.mma_in_role_code(&acc, "store_tile(&mut slot, col)", span) {
            return err(span);
        }
        let arg_span = super::span_of(&m.args[0]);
        let syn::Expr::Reference(r) = &mut m.args[0] else {
            self.diags.error(
                arg_span,
                "pass the reserved tile slot mutably: `acc.store_tile(&mut slot, col)`",
            );
            self.expr(&mut m.args[0], None);
            return err(span);
        };
        if r.mutability.is_none() {
            self.diags.error(
                arg_span,
                "`store_tile` writes the slot: pass it as `&mut slot`",
            );
            return err(span);
        }
        let slot_span = super::span_of(&r.expr);
        let slot = self.expr(&mut r.expr, None);
        let shape = match &slot.ty {
            Ty::SendSlot(c) => c.elem.tile(),
            Ty::Error => return err(span),
            _ => None,
        };
        let Some((elem, tile_rows, tile_cols)) = shape else {
            self.diags.error(
                slot_span,
                format!("`store_tile` writes a reserved slot of one tile, `Tile<f32, {rows}, C>` (or of `bf16`, `f16`), from `tx.reserve().await`; found `{}`", slot.ty),
            );
            return err(span);
        };
        if self.local_of(&slot, "store_tile").is_none() {
            return err(span);
        }
        if tile_rows != rows {
            self.diags.error(
                slot_span,
                format!("the tile has {tile_rows} rows and the accumulator {rows}: `store_tile` writes all the accumulator's rows, into a `Tile<{elem}, {rows}, C>`"),
            );
            return err(span);
        }
        if n % tile_cols != 0 {
            self.diags.error(
                slot_span,
                format!("the tile's {tile_cols} columns do not divide the accumulator's {n}: `store_tile` writes a block of C of them, so C is one of the divisors of N that are multiples of 8"),
            );
            return err(span);
        }
        if tile_cols % 8 != 0 {
            self.diags.error(
                slot_span,
                format!("the tile's columns are a multiple of 8 (the accumulator's column groups); found {tile_cols}"),
            );
            return err(span);
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut col = self.expr(&mut m.args[1], Some(&usize_ty));
        self.expect(&mut col, &usize_ty);
        mk(
            ExprKind::AccumulatorTile {
                acc: Box::new(acc),
                slot: Box::new(slot),
                col: Box::new(col),
            },
            Ty::Unit,
            span,
        )
    }
}
