//! Tensor-core matrix multiply-accumulate: `Accumulator::<M, N>::zero()`, the future
//! `acc.mma(&a, &b)` that adds `a · bᵀ` (two tiles of received slots) to it, and
//! `acc.store(out, cols, [row, col])`, the epilogue that writes it to a row-major matrix.
//!
//! What the types alone decide is checked here: the shapes the tensor cores take, the tiles'
//! element types and layout, the output's element type. That `M` is 64 rows per warpgroup of the
//! role that runs the mma is the lowering's check, which knows the role.

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{err, mk, Checker};
use crate::check::sig;
use crate::tir::{Expr, ExprKind};
use crate::types::{Scalar, Ty, MMA_ROW_BYTES};

impl Checker<'_> {
    /// `Accumulator::<M, N>::zero()` (`accumulator` is the `Accumulator::<M, N>` segment).
    pub(super) fn accumulator_new(
        &mut self,
        c: &mut syn::ExprCall,
        accumulator: &syn::PathSegment,
        name: &str,
        span: Span,
    ) -> Expr {
        if name != "zero" {
            self.diags.error_at(
                &c.func,
                format!("an accumulator is made with `Accumulator::<M, N>::zero()`; `{name}` is not one of its constructors"),
            );
            return err(span);
        }
        if !c.args.is_empty() {
            self.diags
                .error_at(&c.args, "`Accumulator::zero()` takes no arguments");
        }
        let Some((m, n)) = sig::accumulator_args(accumulator, self.scope, self.diags) else {
            return err(span);
        };
        if self.is_kernel() {
            self.diags.error_at(&c.func, "an accumulator lives in the registers of the role that runs its mmas: make it in that role's code, not in the kernel body");
            return err(span);
        }
        if !self.no_channel_ops_in_par(span, "Accumulator::zero") {
            return err(span);
        }
        mk(ExprKind::AccumulatorZero, Ty::Accumulator { m, n }, span)
    }

    /// `acc.mma(&a, &b)` and `acc.store(out, cols, [row, col])`.
    pub(super) fn accumulator_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Ty::Accumulator { m: rows, n: cols } = receiver.ty else {
            return err(span);
        };
        match name {
            "mma" if self.want_args(m, 2) => {
                if !self.no_channel_ops_in_par(span, "mma") {
                    return err(span);
                }
                if !matches!(receiver.kind, ExprKind::Local(_)) {
                    self.diags.error(
                        receiver.span,
                        "an mma accumulates into an accumulator held in a local: `acc.mma(&a, &b)` with `let mut acc = Accumulator::<M, N>::zero();`",
                    );
                    return err(span);
                }
                let a = self.mma_operand(&mut m.args[0], "A", rows);
                let b = self.mma_operand(&mut m.args[1], "B", cols);
                let (Some((a, a_elem, a_k)), Some((b, b_elem, b_k))) = (a, b) else {
                    return err(span);
                };
                if a_elem != b_elem || a_k != b_k {
                    self.diags.error(
                        m.args.span(),
                        format!("the two tiles of an mma have one element type and one K (their columns): A is {a_k} columns of `{a_elem}`, B {b_k} columns of `{b_elem}`"),
                    );
                    return err(span);
                }
                mk(
                    ExprKind::Mma {
                        acc: Box::new(receiver),
                        a: Box::new(a),
                        b: Box::new(b),
                    },
                    Ty::PendingMma,
                    span,
                )
            }
            "store" if self.want_args(m, 3) => self.accumulator_store(receiver, m, span),
            "mma" | "store" => err(span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("an accumulator has `mma(&a, &b)` and `store(out, cols, [row, col])`; `{name}` is not one of its methods (its elements are spread over the role's registers)"),
                );
                err(span)
            }
        }
    }

    /// An operand of an mma, `&tile`: a received tile slot or `stage.0` of a received pair,
    /// whose rows are `rows` (the accumulator's `M` for A, `N` for B) and each 128 bytes of
    /// `bf16` or `f16`. Its expression without the `&`, element type and columns.
    fn mma_operand(
        &mut self,
        arg: &mut syn::Expr,
        which: &str,
        rows: u32,
    ) -> Option<(Expr, Scalar, u32)> {
        let arg_span = super::span_of(arg);
        let syn::Expr::Reference(r) = arg else {
            self.diags.error(
                arg_span,
                format!("pass the {which} tile by reference: `&tile` (a received tile slot) or `&stage.0` (a tile of a received pair)"),
            );
            self.expr(arg, None);
            return None;
        };
        if r.mutability.is_some() {
            self.diags.error(
                arg_span,
                format!("an mma only reads its tiles: write `&` for the {which} tile, not `&mut`"),
            );
        }
        // Reported on the tile itself (a span cannot join the `&` to it on stable Rust).
        let arg_span = super::span_of(&r.expr);
        let tile = self.expr(&mut r.expr, None);
        let (chan, part) = match &tile.ty {
            Ty::RecvSlot(c) if c.elem.tile().is_some() => (c.clone(), 0),
            Ty::TilePart {
                chan,
                part,
                reserved: false,
            } => (chan.clone(), *part),
            Ty::SendSlot(_) | Ty::TilePart { reserved: true, .. } => {
                self.diags.error(
                    arg_span,
                    format!("the {which} tile of an mma is a received one: a reserved tile's load completes on the slot's barrier, which the receiver's `recv` waits for"),
                );
                return None;
            }
            Ty::Error => return None,
            other => {
                self.diags.error(
                    arg_span,
                    format!("the {which} operand of an mma is a tile in shared memory (a received `Tile<bf16, R, C>` slot, or `stage.0` of a received pair of tiles); found `{other}`"),
                );
                return None;
            }
        };
        let (elem, tile_rows, tile_cols) = chan.elem.tile_part(part)?;
        if !matches!(elem, Scalar::Bf16 | Scalar::F16) {
            self.diags.error(
                arg_span,
                format!("the tensor cores' mma takes tiles of `bf16` or `f16` (accumulating in `f32`); the {which} tile holds `{elem}`"),
            );
            return None;
        }
        if tile_rows != rows {
            let (dim, what) = if which == "A" {
                ("M", "rows")
            } else {
                ("N", "columns")
            };
            self.diags.error(
                arg_span,
                format!("the {which} tile has {tile_rows} rows, and the accumulator's {what} ({dim}) are {rows}: an mma of an `Accumulator<M, N>` takes an M x K tile A and an N x K tile B (it adds A · Bᵀ)"),
            );
            return None;
        }
        if tile_cols * elem.size() != MMA_ROW_BYTES {
            self.diags.error(
                arg_span,
                format!("the {which} tile's rows are {} bytes ({tile_cols} `{elem}`s): an mma reads tiles whose rows are 128 bytes (K = 64 for `{elem}`), laid out with the 128-byte swizzle its descriptors name; load K in steps of 64", tile_cols * elem.size()),
            );
            return None;
        }
        Some((tile, elem, tile_cols))
    }

    /// `acc.store(out, cols, [row, col])`.
    fn accumulator_store(&mut self, acc: Expr, m: &mut syn::ExprMethodCall, span: Span) -> Expr {
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let out = self.expr(&mut m.args[0], None);
        match out.ty {
            Ty::Slice {
                elem: Scalar::F32 | Scalar::Bf16 | Scalar::F16,
                mutable: true,
            } => {}
            Ty::Error => return err(span),
            ref other => {
                self.diags.error(
                    out.span,
                    format!("an accumulator is stored into a `&mut [f32]`, `&mut [bf16]` or `&mut [f16]` (a row-major matrix, converted on the way); found `{other}`"),
                );
                return err(span);
            }
        }
        let mut cols = self.expr(&mut m.args[1], Some(&usize_ty));
        self.expect(&mut cols, &usize_ty);
        let Some((row, col)) = self.tile_corner(&mut m.args[2]) else {
            return err(span);
        };
        if !self.no_channel_ops_in_par(span, "store") {
            return err(span);
        }
        mk(
            ExprKind::AccumulatorStore {
                acc: Box::new(acc),
                out: Box::new(out),
                cols: Box::new(cols),
                row: Box::new(row),
                col: Box::new(col),
            },
            Ty::Unit,
            span,
        )
    }
}
