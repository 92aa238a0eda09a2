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

    /// `slot.load(a, [row, col])` of a reserved tile slot (`part` 0), or `stage.0.load(..)` of
    /// tile `part` of a pair: a future that fills the tile with the box of the matrix whose
    /// top-left element is `(row, col)`, zeros past its edges.
    pub(super) fn tile_load(
        &mut self,
        c: &ChanTy,
        part: u32,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some((elem, _, _)) = c.elem.tile_part(part) else {
            return err(span);
        };
        if !self.want_args(m, 2) || !self.no_channel_ops_in_par(span, "load") {
            return err(span);
        }
        let matrix = self.expr(&mut m.args[0], None);
        match matrix.ty {
            Ty::Matrix(e, _) if e == elem => {}
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
        let Some((row, col)) = self.tile_corner(&mut m.args[1]) else {
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

    /// The corner of a tile load, `[row, col]` or a local `[usize; 2]`: its row and column.
    pub(super) fn tile_corner(&mut self, arg: &mut syn::Expr) -> Option<(Expr, Expr)> {
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let at_span = super::span_of(arg);
        let syn::Expr::Array(at) = arg else {
            // A local `[usize; 2]`: its two elements.
            let at = self.expr(arg, None);
            return match (&at.kind, &at.ty) {
                (ExprKind::Local(_), Ty::Array(Scalar::Usize, 2)) => {
                    let [row, col] = [0u128, 1].map(|k| {
                        let lit = mk(ExprKind::Lit(Lit::Int(k)), usize_ty.clone(), at_span);
                        mk(
                            ExprKind::Index(Box::new(at.clone()), Box::new(lit)),
                            usize_ty.clone(),
                            at_span,
                        )
                    });
                    Some((row, col))
                }
                (_, Ty::Error) => None,
                _ => {
                    self.diags.error(
                        at_span,
                        format!("write the matrix element at the tile's top-left corner as `[row, col]` (or a local `[usize; 2]`); found `{}`", at.ty),
                    );
                    None
                }
            };
        };
        if at.elems.len() != 2 {
            self.diags.error(
                at_span,
                format!(
                    "the tile's top-left corner is two indices, `[row, col]`; found {}",
                    at.elems.len()
                ),
            );
            return None;
        }
        let mut corner = Vec::new();
        for e in at.elems.iter_mut() {
            let mut ix = self.expr(e, Some(&usize_ty));
            self.expect(&mut ix, &usize_ty);
            corner.push(ix);
        }
        let col = corner.pop()?;
        let row = corner.pop()?;
        Some((row, col))
    }

    /// `stage.0` and `stage.1` of a slot of a pair of tiles.
    pub(super) fn tile_part(&mut self, base: Expr, index: u32, span: Span) -> Expr {
        let (c, reserved) = match &base.ty {
            Ty::SendSlot(c) => (c.clone(), true),
            Ty::RecvSlot(c) => (c.clone(), false),
            _ => return err(span),
        };
        let parts = c.elem.tiles().len();
        if index as usize >= parts {
            self.diags.error(
                span,
                format!(
                    "a slot of `{}` has {parts} tiles, `.0` to `.{}`",
                    c.elem,
                    parts - 1
                ),
            );
            return err(span);
        }
        if !matches!(base.kind, ExprKind::Local(_)) {
            self.diags.error(
                base.span,
                "take a tile of a slot held in a local: `stage.0`, with `stage` the slot",
            );
            return err(span);
        }
        mk(
            ExprKind::TupleField(Box::new(base), index),
            Ty::TilePart {
                chan: c,
                part: index,
                reserved,
            },
            span,
        )
    }

    /// A method of one tile of a pair: `load` (of a reserved slot's tile) and `len`.
    pub(super) fn tile_part_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Ty::TilePart {
            chan,
            part,
            reserved,
        } = receiver.ty.clone()
        else {
            return err(span);
        };
        match name {
            "load" if reserved => self.tile_load(&chan, part, receiver, m, span),
            "load" => {
                self.diags.error(
                    m.method.span(),
                    "a received tile is read-only: `load` fills a tile of a reserved slot",
                );
                err(span)
            }
            "len" if self.want_args(m, 0) => self.tile_len(&chan, part, span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("a tile has `load` (of a reserved slot), `len` and its elements `tile[r][c]`; `{name}` is not one of them"),
                );
                err(span)
            }
        }
    }

    /// `tile[r]` of a tile slot or of one tile of a pair (a row, indexed again) and
    /// `tile[r][c]` (an element).
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
        let row = match &base.ty {
            Ty::RecvSlot(c) | Ty::SendSlot(c) => Ty::TileRow(c.clone(), 0),
            Ty::TilePart { chan, part, .. } => Ty::TileRow(chan.clone(), *part),
            Ty::TileRow(c, part) => {
                let Some((elem, _, _)) = c.elem.tile_part(*part) else {
                    return err(span);
                };
                Ty::Scalar(elem)
            }
            _ => return err(span),
        };
        mk(ExprKind::Index(Box::new(base), Box::new(index)), row, span)
    }

    /// `tile.len()`: its rows, as the simulator's `[[T; C]; R]` has.
    pub(super) fn tile_len(&mut self, c: &ChanTy, part: u32, span: Span) -> Expr {
        let rows = c.elem.tile_part(part).map_or(0, |(_, r, _)| r);
        mk(
            ExprKind::Lit(Lit::Int(u128::from(rows))),
            Ty::Scalar(Scalar::Usize),
            span,
        )
    }
}
