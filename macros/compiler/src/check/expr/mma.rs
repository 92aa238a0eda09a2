//! Tensor-core matrix multiply-accumulate: `Accumulator::<M, N>::zero()`, the future
//! `acc.mma(&a, &b)` that adds `a · bᵀ` (two tiles of received slots) to it, `acc.mma_kn(&a,
//! &b)` that adds `a · b` (B given as K x N), their loops over a channel's stages
//! (`mma_stages`, `mma_stages_kn`), and `acc.store(out, cols, [row, col])`, the epilogue that
//! writes it to a row-major matrix.
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
            "mma" | "mma_kn" if self.want_args(m, 2) => {
                let kn = name == "mma_kn";
                let call = if kn { "mma_kn(&a, &b)" } else { "mma(&a, &b)" };
                if !self.mma_in_role_code(&receiver, call, span) {
                    return err(span);
                }
                let a = self.mma_operand(&mut m.args[0], Operand::A, rows, kn);
                let b = self.mma_operand(&mut m.args[1], Operand::B, cols, kn);
                let (Some((a, a_elem, a_k)), Some((b, b_elem, b_k))) = (a, b) else {
                    return err(span);
                };
                if !self.same_k(m.args.span(), (a_elem, a_k), (b_elem, b_k), kn) {
                    return err(span);
                }
                mk(
                    ExprKind::Mma {
                        acc: Box::new(receiver),
                        a: Box::new(a),
                        b: Box::new(b),
                        b_kn: kn,
                    },
                    Ty::PendingMma,
                    span,
                )
            }
            "mma_stages" | "mma_stages_kn" if self.want_args(m, 2) => {
                let kn = name == "mma_stages_kn";
                self.accumulator_stages(receiver, m, (rows, cols), kn, span)
            }
            "row_max" | "row_sum" if self.want_args(m, 0) => {
                if !self.mma_in_role_code(&receiver, &format!("{name}()"), span) {
                    return err(span);
                }
                mk(
                    ExprKind::RowReduce {
                        acc: Box::new(receiver),
                        max: name == "row_max",
                    },
                    Ty::Rows { m: rows },
                    span,
                )
            }
            "apply" | "apply_at" if self.want_args(m, 1) => {
                self.accumulator_apply(receiver, &mut m.args[0], name == "apply_at", span)
            }
            "store" if self.want_args(m, 3) => self.accumulator_store(receiver, m, false, span),
            "store_tile" if self.want_args(m, 2) => {
                self.accumulator_tile(receiver, m, (rows, cols), span)
            }
            "store_scaled" if self.want_args(m, 5) => {
                self.accumulator_store(receiver, m, true, span)
            }
            "to_bf16" | "to_f16" if self.want_args(m, 0) => {
                if !self.mma_in_role_code(&receiver, &format!("{name}()"), span) {
                    return err(span);
                }
                let elem = if name == "to_bf16" {
                    Scalar::Bf16
                } else {
                    Scalar::F16
                };
                if cols % 16 != 0 {
                    self.diags.error(
                        m.method.span(),
                        format!("a fragment is the A operand of mmas of K = 16 each: its accumulator's N is a multiple of 16; found N = {cols}"),
                    );
                    return err(span);
                }
                mk(
                    ExprKind::AccumulatorToOperand {
                        acc: Box::new(receiver),
                        elem,
                    },
                    Ty::Fragment {
                        elem,
                        m: rows,
                        k: cols,
                    },
                    span,
                )
            }
            "mma" | "mma_kn" | "mma_stages" | "mma_stages_kn" | "store" | "store_scaled"
            | "store_tile" | "to_bf16" | "to_f16" | "apply" | "apply_at" | "row_max"
            | "row_sum" => err(span),
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("an accumulator has `mma(&a, &b)`, `mma_kn(&a, &b)`, `mma_stages(&rx, count)`, `mma_stages_kn(&rx, count)`, `to_bf16()`, `to_f16()`, `apply(|v| ..)`, `apply_at(|row, col, v| ..)`, `row_max()`, `row_sum()`, `store(out, cols, [row, col])`, `store_scaled(out, cols, [row, col], alpha, beta)` and `store_tile(&mut slot, col)`; `{name}` is not one of its methods (its elements are spread over the role's registers)"),
                );
                err(span)
            }
        }
    }

    /// Whether the A and B tiles of an mma (`kn`: of `mma_kn`) have one element type and one
    /// K; if not, says so at `span`.
    fn same_k(
        &mut self,
        span: Span,
        (a_elem, a_k): (Scalar, u32),
        (b_elem, b_k): (Scalar, u32),
        kn: bool,
    ) -> bool {
        if a_elem == b_elem && a_k == b_k {
            return true;
        }
        let b_k_is = if kn { "rows" } else { "columns" };
        self.diags.error(
            span,
            format!("the two tiles of an mma have one element type and one K (A's columns, B's {b_k_is}): A is {a_k} columns of `{a_elem}`, B {b_k} {b_k_is} of `{b_elem}`"),
        );
        false
    }

    /// An operand of an mma, `&tile`: a received tile slot or `stage.0` of a received pair,
    /// that fits the operand (see [`Checker::mma_tile_fits`]). Its expression without the `&`,
    /// element type and K.
    fn mma_operand(
        &mut self,
        arg: &mut syn::Expr,
        which: Operand,
        extent: u32,
        kn: bool,
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
        if let Ty::Fragment { elem, m, k } = tile.ty {
            if which == Operand::B {
                self.diags.error(
                    arg_span,
                    "the B operand of an mma is a tile in shared memory: a fragment in registers is an A operand",
                );
                return None;
            }
            if m != extent {
                self.diags.error(
                    arg_span,
                    format!("the A fragment has {m} rows, and the accumulator's rows (M) are {extent}: the fragment of an `Accumulator<M, K>` is the A operand of an mma into an `Accumulator<M, N>`"),
                );
                return None;
            }
            if !matches!(tile.kind, ExprKind::Local(_)) {
                self.diags.error(
                    arg_span,
                    "an mma reads a fragment held in a local: `let p = acc.to_bf16();`, then `&p`",
                );
                return None;
            }
            return Some((tile, elem, k));
        }
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
        let shape = chan.elem.tile_part(part)?;
        let k = self.mma_tile_fits(arg_span, which, shape, extent, kn)?;
        Some((tile, shape.0, k))
    }

    /// The K of a tile of `elem`, `tile_rows` x `tile_cols`, as the `which` operand of an mma
    /// (`kn`: of `mma_kn`) whose operand has `extent` rows (A: the accumulator's M; B: its N),
    /// if the tile fits it; if not, says why at `arg_span`. A K-major tile (A, or B of `mma`)
    /// is `extent` x K, a B tile of `mma_kn` is K x `extent`; either has rows of whole 128-byte
    /// lines, the 128-byte swizzle the descriptors name.
    fn mma_tile_fits(
        &mut self,
        arg_span: Span,
        which: Operand,
        (elem, tile_rows, tile_cols): (Scalar, u32, u32),
        extent: u32,
        kn: bool,
    ) -> Option<u32> {
        if !matches!(elem, Scalar::Bf16 | Scalar::F16) {
            self.diags.error(
                arg_span,
                format!("the tensor cores' mma takes tiles of `bf16` or `f16` (accumulating in `f32`); the {which} tile holds `{elem}`"),
            );
            return None;
        }
        let takes = if kn {
            "`mma_kn` of an `Accumulator<M, N>` takes an M x K tile A and a K x N tile B (it adds A · B)"
        } else {
            "an mma of an `Accumulator<M, N>` takes an M x K tile A and an N x K tile B (it adds A · Bᵀ)"
        };
        let n_major = kn && which == Operand::B;
        let (dim, along, found, k) = match (which, n_major) {
            (Operand::A, _) => ("M", "rows", tile_rows, tile_cols),
            (Operand::B, false) => ("N", "rows", tile_rows, tile_cols),
            (Operand::B, true) => ("N", "columns", tile_cols, tile_rows),
        };
        if found != extent {
            self.diags.error(
                arg_span,
                format!("the {which} tile has {found} {along}, and the accumulator's {} ({dim}) are {extent}: {takes}", if dim == "M" { "rows" } else { "columns" }),
            );
            return None;
        }
        let row_bytes = tile_cols * elem.size();
        if row_bytes % MMA_ROW_BYTES != 0 {
            let per_line = MMA_ROW_BYTES / elem.size();
            let (what, fix) = if n_major {
                ("N", format!("make N a multiple of {per_line}"))
            } else {
                ("K", format!("load K in steps of {per_line}"))
            };
            self.diags.error(
                arg_span,
                format!("the {which} tile's rows are {row_bytes} bytes ({tile_cols} `{elem}`s): an mma reads tiles whose rows are whole 128-byte lines ({what} a multiple of {per_line} for `{elem}`), laid out with the 128-byte swizzle its descriptors name; {fix}"),
            );
            return None;
        }
        Some(k)
    }

    /// Whether an mma (`acc.call`) is outside parallel loops and into an accumulator held in
    /// a local; if not, says so.
    pub(super) fn mma_in_role_code(&mut self, acc: &Expr, call: &str, span: Span) -> bool {
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

    /// `acc.mma_stages(&rx, count)` (`kn`: `mma_stages_kn`): `rx` a receiver of pairs of
    /// tiles that are the A (`rows` x K) and B (`cols` x K, or K x `cols`) operands of an mma
    /// into the accumulator.
    fn accumulator_stages(
        &mut self,
        acc: Expr,
        m: &mut syn::ExprMethodCall,
        (rows, cols): (u32, u32),
        kn: bool,
        span: Span,
    ) -> Expr {
        let call = if kn {
            "mma_stages_kn(&rx, count)"
        } else {
            "mma_stages(&rx, count)"
        };
        if !self.mma_in_role_code(&acc, call, span) {
            return err(span);
        }
        let arg_span = super::span_of(&m.args[0]);
        let syn::Expr::Reference(r) = &mut m.args[0] else {
            self.diags.error(
                arg_span,
                format!("pass the receiver by reference: `acc.{call}`"),
            );
            self.expr(&mut m.args[0], None);
            return err(span);
        };
        let rx = self.expr(&mut r.expr, None);
        let name = call.split('(').next().unwrap_or(call);
        let chan = match &rx.ty {
            Ty::Receiver(c) if matches!(rx.kind, ExprKind::Local(_)) => c.clone(),
            Ty::Error => return err(span),
            other => {
                self.diags.error(
                    rx.span,
                    format!("`{name}` receives from a channel's receiver held in a local, `&rx`; found `{other}`"),
                );
                return err(span);
            }
        };
        let tiles = chan.elem.tiles();
        let [a, b] = tiles[..] else {
            let pair = if kn {
                "(Tile<T, M, K>, Tile<T, K, N>)"
            } else {
                "(Tile<T, M, K>, Tile<T, N, K>)"
            };
            self.diags.error(
                rx.span,
                format!("`{name}` takes stages that are pairs of tiles, `{pair}` (A and B of each mma); this channel carries `{}`", Ty::Receiver(chan.clone())),
            );
            return err(span);
        };
        let Some(a_k) = self.mma_tile_fits(rx.span, Operand::A, a, rows, kn) else {
            return err(span);
        };
        let Some(b_k) = self.mma_tile_fits(rx.span, Operand::B, b, cols, kn) else {
            return err(span);
        };
        if !self.same_k(rx.span, (a.0, a_k), (b.0, b_k), kn) {
            return err(span);
        }
        if chan.depth < 2 {
            self.diags.error(
                rx.span,
                format!("`{name}` holds two stages at a time (one whose mma runs while the next is received): give the channel a ring of 2 slots or more (`channel::<_, 4>()`)"),
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
                b_kn: kn,
            },
            Ty::Future(Box::new(Ty::Scalar(Scalar::Bool))),
            span,
        )
    }

    /// `acc.store(out, cols, [row, col])`, or with `scaled` `acc.store_scaled(out, cols, [row,
    /// col], alpha, beta)`.
    fn accumulator_store(
        &mut self,
        acc: Expr,
        m: &mut syn::ExprMethodCall,
        scaled: bool,
        span: Span,
    ) -> Expr {
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
        let scale = if scaled {
            let f32_ty = Ty::Scalar(Scalar::F32);
            let mut alpha = self.expr(&mut m.args[3], Some(&f32_ty));
            self.expect(&mut alpha, &f32_ty);
            let mut beta = self.expr(&mut m.args[4], Some(&f32_ty));
            self.expect(&mut beta, &f32_ty);
            Some((Box::new(alpha), Box::new(beta)))
        } else {
            None
        };
        if !self.no_channel_ops_in_par(span, if scaled { "store_scaled" } else { "store" }) {
            return err(span);
        }
        mk(
            ExprKind::AccumulatorStore {
                acc: Box::new(acc),
                out: Box::new(out),
                cols: Box::new(cols),
                row: Box::new(row),
                col: Box::new(col),
                scale,
            },
            Ty::Unit,
            span,
        )
    }
}

/// Which operand of an mma a tile is, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    A,
    B,
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Operand::A => "A",
            Operand::B => "B",
        })
    }
}
