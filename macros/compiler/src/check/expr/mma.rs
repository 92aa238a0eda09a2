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
                if !self.mma_in_role_code(&receiver, "mma(&a, &b)", span) {
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
            "mma_stages" if self.want_args(m, 2) => {
                self.accumulator_stages(receiver, m, (rows, cols), span)
            }
            "store" if self.want_args(m, 3) => self.accumulator_store(receiver, m, span),
            "mma" | "mma_stages" | "store" => err(span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("an accumulator has `mma(&a, &b)`, `mma_stages(&rx, count)` and `store(out, cols, [row, col])`; `{name}` is not one of its methods (its elements are spread over the role's registers)"),
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
        let (elem, _, tile_cols) = chan.elem.tile_part(part)?;
        if !self.mma_tile_fits(arg_span, which, chan.elem.tile_part(part)?, rows) {
            return None;
        }
        Some((tile, elem, tile_cols))
    }

    /// Whether a tile of `elem`, `tile_rows` x `tile_cols` can be the `which` operand of an mma
    /// whose operand has `rows` rows; if not, says why at `arg_span`.
    fn mma_tile_fits(
        &mut self,
        arg_span: Span,
        which: &str,
        (elem, tile_rows, tile_cols): (Scalar, u32, u32),
        rows: u32,
    ) -> bool {
        if !matches!(elem, Scalar::Bf16 | Scalar::F16) {
            self.diags.error(
                arg_span,
                format!("the tensor cores' mma takes tiles of `bf16` or `f16` (accumulating in `f32`); the {which} tile holds `{elem}`"),
            );
            return false;
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
            return false;
        }
        if tile_cols * elem.size() != MMA_ROW_BYTES {
            self.diags.error(
                arg_span,
                format!("the {which} tile's rows are {} bytes ({tile_cols} `{elem}`s): an mma reads tiles whose rows are 128 bytes (K = 64 for `{elem}`), laid out with the 128-byte swizzle its descriptors name; load K in steps of 64", tile_cols * elem.size()),
            );
            return false;
        }
        true
    }

    /// Whether an mma (`acc.call`) is outside parallel loops and into an accumulator held in
    /// a local; if not, says so.
    fn mma_in_role_code(&mut self, acc: &Expr, call: &str, span: Span) -> bool {
        let name = call.split('(').next().unwrap_or(call);
        if !self.no_channel_ops_in_par(span, name) {
            return false;
        }
        if !matches!(acc.kind, ExprKind::Local(_)) {
            self.diags.error(
                acc.span,
                format!("an mma accumulates into an accumulator held in a local: `acc.{call}` with `let mut acc = Accumulator::<M, N>::zero();`"),
            );
            return false;
        }
        true
    }

    /// `acc.mma_stages(&rx, count)`: `rx` a receiver of pairs of tiles that are the A (`rows` x
    /// K) and B (`cols` x K) operands of an mma into the accumulator.
    fn accumulator_stages(
        &mut self,
        acc: Expr,
        m: &mut syn::ExprMethodCall,
        (rows, cols): (u32, u32),
        span: Span,
    ) -> Expr {
        if !self.mma_in_role_code(&acc, "mma_stages(&rx, count)", span) {
            return err(span);
        }
        let arg_span = super::span_of(&m.args[0]);
        let syn::Expr::Reference(r) = &mut m.args[0] else {
            self.diags.error(
                arg_span,
                "pass the receiver by reference: `acc.mma_stages(&rx, count)`",
            );
            self.expr(&mut m.args[0], None);
            return err(span);
        };
        let rx = self.expr(&mut r.expr, None);
        let chan = match &rx.ty {
            Ty::Receiver(c) if matches!(rx.kind, ExprKind::Local(_)) => c.clone(),
            Ty::Error => return err(span),
            other => {
                self.diags.error(
                    rx.span,
                    format!("`mma_stages` receives from a channel's receiver held in a local, `&rx`; found `{other}`"),
                );
                return err(span);
            }
        };
        let tiles = chan.elem.tiles();
        let [a, b] = tiles[..] else {
            self.diags.error(
                rx.span,
                format!("`mma_stages` takes stages that are pairs of tiles, `(Tile<T, M, K>, Tile<T, N, K>)` (A and B of each mma); this channel carries `{}`", Ty::Receiver(chan.clone())),
            );
            return err(span);
        };
        if !self.mma_tile_fits(rx.span, "A", a, rows) || !self.mma_tile_fits(rx.span, "B", b, cols)
        {
            return err(span);
        }
        if a.0 != b.0 || a.2 != b.2 {
            self.diags.error(
                rx.span,
                format!("the two tiles of an mma have one element type and one K (their columns): A is {} columns of `{}`, B {} columns of `{}`", a.2, a.0, b.2, b.0),
            );
            return err(span);
        }
        if chan.depth < 2 {
            self.diags.error(
                rx.span,
                "`mma_stages` holds two stages at a time (one whose mma runs while the next is received): give the channel a ring of 2 slots or more (`channel::<_, 4>()`)",
            );
            return err(span);
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut count = self.expr(&mut m.args[1], Some(&usize_ty));
        self.expect(&mut count, &usize_ty);
        mk(
            ExprKind::MmaStages {
                acc: Box::new(acc),
                rx: Box::new(rx),
                count: Box::new(count),
            },
            Ty::Future(Box::new(Ty::Scalar(Scalar::Bool))),
            span,
        )
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
