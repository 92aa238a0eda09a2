//! Tensor-core matrix multiply-accumulate in role code: an `Accumulator<M, N>` is the thread's
//! part of its warpgroup's 64 x N fragment in registers, `acc.mma(&a, &b).await` issues the
//! `wgmma` instructions that add `a · bᵀ` and waits for them, and `acc.store(out, cols, [row,
//! col])` writes the fragment to global memory.
//!
//! The fragment's layout is the `wgmma` one for an f32 accumulator of shape m64nN: warp `w` of
//! the warpgroup holds rows `16 w .. 16 w + 16`; lane `l` holds, for each 8 columns `j`, the
//! values `4 j .. 4 j + 4`: row `l / 4` at columns `8 j + 2 (l % 4)` and the next, then the same
//! columns of row `l / 4 + 8`. A role of several warpgroups splits the rows: warpgroup `g`
//! holds rows `64 g .. 64 g + 64` of the accumulator, and reads those rows of the A tile.

use proc_macro2::Span;

use super::matrices::tile_of;
use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, MmaA, MmaLayout, Value};
use crate::tir::{Expr, ExprKind, LocalId};
use crate::types::{Scalar, Ty, MMA_K_STEP, MMA_ROW_BYTES};

/// Rows of the accumulator one warpgroup holds.
const WARPGROUP_ROWS: u32 = 64;

impl Lowerer<'_> {
    /// The warp range of the role being lowered, if the accumulator's `m` rows are 64 per
    /// warpgroup of it; otherwise reported at `span`.
    pub(super) fn mma_role(&mut self, m: u32, span: Span) -> bool {
        let Some((name, start, end)) = self
            .warp_owners
            .last()
            .cloned()
            .filter(|_| self.role.is_some())
        else {
            self.diags.error(
                span,
                "an accumulator belongs to role code: make it in the role that runs its mmas",
            );
            return false;
        };
        let warps = end - start;
        if start % 4 != 0 || warps % 4 != 0 {
            let first = start.div_ceil(4) * 4;
            self.diags.error(
                span,
                format!("role `{name}` runs on warps {start}..{end}, and a tensor-core mma is issued by whole warpgroups (4 warps from a multiple of 4): give it `on_warpgroups(..)`, or a warp range such as `on_warps({first}..{})`", first + warps.div_ceil(4) * 4),
            );
            return false;
        }
        if m != WARPGROUP_ROWS * warps / 4 {
            self.diags.error(
                span,
                format!("role `{name}` runs on {} warpgroup{}, each holding 64 rows of an accumulator, so its accumulators have M = {}; found M = {m}", warps / 4, if warps == 4 { "" } else { "s" }, WARPGROUP_ROWS * warps / 4),
            );
            return false;
        }
        true
    }

    /// The registers and the `N` of accumulator `acc`, which an mma at `span` of the current
    /// role writes (if the role can: see [`Lowerer::mma_role`]).
    pub(super) fn role_accumulator(&mut self, acc: &Expr, span: Span) -> Option<(Vec<Value>, u32)> {
        let Ty::Accumulator { m, n } = acc.ty else {
            return None;
        };
        let Val::Acc(values) = self.expr(acc) else {
            return None;
        };
        self.mma_role(m, span).then_some((values, n))
    }

    /// `Accumulator::<M, N>::zero()`: `N / 2` registers of `0.0`.
    pub(super) fn accumulator_zero(&mut self, ty: &Ty, span: Span) -> Val {
        let Ty::Accumulator { m, n } = *ty else {
            return Val::Unit;
        };
        if !self.mma_role(m, span) {
            return Val::Unit;
        }
        Val::Acc(
            (0..n / 2)
                .map(|_| self.konst(Scalar::F32, Imm::F32(0.0)))
                .collect(),
        )
    }

    /// `acc = Accumulator::<M, N>::zero();` or `p = acc.to_bf16();`: the new values into the
    /// registers of the accumulator or fragment local, which the mmas of its loop read (and,
    /// for an accumulator, write).
    pub(super) fn assign_registers(&mut self, place: &Expr, value: &Expr) -> Val {
        let (Val::Acc(dst) | Val::Frag(dst) | Val::Rows(dst)) = self.expr(place) else {
            return Val::Unit;
        };
        // A zero goes straight into the registers (half the code of zeroing new ones and
        // copying them, which matters to a loop that would be unrolled by its ring's depth).
        if let ExprKind::AccumulatorZero = value.kind {
            for d in dst {
                self.emit(Inst::Const {
                    dst: d,
                    imm: Imm::F32(0.0),
                });
            }
            return Val::Unit;
        }
        if let Val::Acc(src) | Val::Frag(src) | Val::Rows(src) = self.expr(value) {
            for (d, s) in dst.into_iter().zip(src) {
                self.emit(Inst::Copy { dst: d, src: s });
            }
        }
        Val::Unit
    }

    /// The shared address of an mma operand's tile (`tile` or `stage.0`), its element type,
    /// rows and columns.
    fn mma_tile(&mut self, tile: &Expr, span: Span) -> Option<(Value, Scalar, u32, u32)> {
        let (slot, part) = tile_of(tile);
        self.check_not_copied(slot, span);
        let s = self.expr(slot);
        self.slot_tile(&s, part)
    }

    /// The shared address of tile `part` of slot `s`, its element type, rows and columns.
    pub(super) fn slot_tile(&mut self, s: &Val, part: u32) -> Option<(Value, Scalar, u32, u32)> {
        let (chan, _) = self.slot_parts(s)?;
        let ty = &self.channels[chan.0 as usize].ty;
        let (elem, rows, cols) = ty.elem.tile_part(part)?;
        let offset = ty.part_offsets().get(part as usize).copied().unwrap_or(0);
        let key = self.slot_key(chan);
        self.access(key);
        let (_, mut addr) = self.slot_addr(s)?;
        if offset != 0 {
            let at = self.konst(Scalar::U32, Imm::Int(offset));
            addr = self.binary(BinOp::Add, addr, at);
        }
        Some((addr, elem, rows, cols))
    }

    /// `acc.mma(&a, &b)` (`b_kn`: `acc.mma_kn(&a, &b)`): the warpgroup's mma over its 64 rows
    /// of `a` (a tile, or a fragment in registers) and all of `b`, issued; the pending mma,
    /// which its await or its drop waits for.
    pub(super) fn mma_issue(
        &mut self,
        acc: &Expr,
        a: &Expr,
        (b, b_kn): (&Expr, bool),
        span: Span,
    ) -> Val {
        let Some((values, n)) = self.role_accumulator(acc, span) else {
            return Val::Unit;
        };
        let a = match a.ty {
            Ty::Fragment { elem, k, .. } => match self.expr(a) {
                Val::Frag(regs) => Some(OperandA::Registers(regs, elem, k)),
                _ => None,
            },
            _ => self.mma_tile(a, span).map(OperandA::Tile),
        };
        let (Some(a), Some(b)) = (a, self.mma_tile(b, span)) else {
            return Val::Unit;
        };
        self.emit_mma(values, a, (b, b_kn), n);
        let group = self.mma_issued;
        self.mma_issued += 1;
        self.mma_groups.push(group);
        Val::PendingMma(group)
    }

    /// The mma of the warpgroup's rows of the A operand and the B tile (`b_kn`: of K rows and
    /// N columns) into the accumulator `values` of `n` columns. Tiles are stored in 128-byte
    /// lines, in column blocks of `rows` lines each.
    pub(super) fn emit_mma(
        &mut self,
        values: Vec<Value>,
        a: OperandA,
        ((b_addr, _, b_rows, _), b_kn): ((Value, Scalar, u32, u32), bool),
        n: u32,
    ) {
        let (a, elem, k) = match a {
            OperandA::Tile((a_addr, elem, a_rows, a_cols)) => {
                // Warpgroup g reads rows 64 g.. of A: 64 rows of 128 bytes each into every
                // block.
                let warp = self.lane_register(true);
                let two = self.konst(Scalar::U32, Imm::Int(2));
                let group = self.binary(BinOp::Shr, warp, two);
                let rows_bytes = self.konst(
                    Scalar::U32,
                    Imm::Int(u64::from(WARPGROUP_ROWS * MMA_ROW_BYTES)),
                );
                let offset = self.binary(BinOp::Mul, group, rows_bytes);
                let addr = self.binary(BinOp::Add, a_addr, offset);
                let layout = MmaLayout::KMajor {
                    block: a_rows * MMA_ROW_BYTES,
                };
                (MmaA::Tile { addr, layout }, elem, a_cols)
            }
            OperandA::Registers(regs, elem, k) => (MmaA::Registers(regs), elem, k),
        };
        let b_block = b_rows * MMA_ROW_BYTES;
        self.emit(Inst::Mma {
            acc: values,
            a,
            b: b_addr,
            n,
            elem,
            k_steps: k / MMA_K_STEP,
            b_layout: if b_kn {
                MmaLayout::NMajor { block: b_block }
            } else {
                MmaLayout::KMajor { block: b_block }
            },
        });
    }

    /// `acc.to_bf16()` (`elem` `bf16`) or `acc.to_f16()`: the accumulator's values rounded and
    /// packed in pairs, the register A operand of a later mma. Value `2 p` goes to the low half
    /// of register `p`: the accumulator fragment's values `8 s .. 8 s + 8` are K step `s` of the
    /// A fragment, pairwise, with no value moving between threads.
    pub(super) fn accumulator_to_operand(&mut self, acc: &Expr, elem: Scalar) -> Val {
        let Val::Acc(values) = self.expr(acc) else {
            return Val::Unit;
        };
        let packed = values
            .chunks_exact(2)
            .map(|pair| {
                let dst = self.new_value(Scalar::U32, None);
                self.emit(Inst::PackPair {
                    dst,
                    lo: pair[0],
                    hi: pair[1],
                    elem,
                });
                dst
            })
            .collect();
        Val::Frag(packed)
    }

    /// `pending.await` of a local holding an issued mma: the wait; the local is used up.
    pub(super) fn await_local(&mut self, id: LocalId, span: Span) -> Val {
        if let Val::PendingMma(group) = self.local_value(id) {
            self.mma_wait_for(group);
            self.mark_moved(id, span);
        }
        Val::Unit
    }

    /// The wait for issued mma `group`: `wgmma.wait_group` with the number of mmas issued after
    /// it that may still run, which it leaves running. Mmas issued and waited for in nested code
    /// are not counted, which only makes the wait wait for more.
    pub(super) fn mma_wait_for(&mut self, group: u32) {
        match self.mma_groups.iter().position(|&g| g == group) {
            Some(at) => {
                let pending = (self.mma_groups.len() - at - 1) as u32;
                self.emit(Inst::MmaWait { pending });
                // The mmas issued before it complete with it.
                self.mma_groups.drain(..=at);
            }
            // Completed on every path to here already.
            None => self.emit(Inst::MmaWait { pending: 0 }),
        }
    }

    /// After nested code, the mmas that may still run: those that may on the path around it
    /// (`before`) or through it.
    pub(super) fn merge_mma_groups(&mut self, before: Vec<u32>) {
        self.mma_groups.extend(before);
        self.mma_groups.sort_unstable();
        self.mma_groups.dedup();
    }

    /// `acc.store(out, cols, [row, col])`: each thread stores its fragment's values, converted
    /// to `out`'s element type, those inside the matrix (`out.len() / cols` rows of `cols`);
    /// `acc.store_scaled(.., alpha, beta)` (`scale`) stores `alpha` times each value plus `beta`
    /// times the element there.
    pub(super) fn accumulator_store(
        &mut self,
        acc: &Expr,
        (out, cols): (&Expr, &Expr),
        (row, col): (&Expr, &Expr),
        scale: Option<&(Box<Expr>, Box<Expr>)>,
    ) -> Val {
        let Val::Acc(values) = self.expr(acc) else {
            return Val::Unit;
        };
        let scale = scale.map(|(alpha, beta)| (self.scalar(alpha), self.scalar(beta)));
        let Val::Slice { ptr, len, elem, .. } = self.expr(out) else {
            return Val::Unit;
        };
        let (cols, row, col) = (self.scalar(cols), self.scalar(row), self.scalar(col));
        // `out.len() / cols` rows, none when `cols` is 0.
        let zero = self.usize_const(0);
        let one = self.usize_const(1);
        let empty = self.binary(BinOp::Eq, cols, zero);
        let divisor = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Select {
            dst: divisor,
            cond: empty,
            if_true: one,
            if_false: cols,
        });
        let quotient = self.binary(BinOp::Div, len, divisor);
        let rows = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Select {
            dst: rows,
            cond: empty,
            if_true: zero,
            if_false: quotient,
        });
        // The thread's first row and column.
        let (warp_rows, lane_row, lane_col) = self.fragment_origin();
        let r = self.binary(BinOp::Add, row, warp_rows);
        let first_row = self.binary(BinOp::Add, r, lane_row);
        let first_col = self.binary(BinOp::Add, col, lane_col);
        // What of the matrix lies from the thread's first element on (none past its edges).
        let rows_left = self.left_from(rows, first_row, zero);
        let cols_left = self.left_from(cols, first_col, zero);
        let size = self.usize_const(u64::from(elem.size()));
        let row_bytes = self.binary(BinOp::Mul, cols, size);
        let at = self.binary(BinOp::Mul, first_row, cols);
        let index = self.binary(BinOp::Add, at, first_col);
        let bytes = self.binary(BinOp::Mul, index, size);
        let addr = self.binary(BinOp::Add, ptr, bytes);
        self.emit(Inst::AccStore {
            acc: values,
            elem,
            addr,
            row_bytes,
            rows_left,
            cols_left,
            scale,
        });
        Val::Unit
    }
}

impl Lowerer<'_> {
    /// How much of `extent` (rows or columns of a destination) lies from `first` on: `extent -
    /// first`, or `zero` (a `usize` 0) where `first` is past it.
    pub(super) fn left_from(&mut self, extent: Value, first: Value, zero: Value) -> Value {
        let inside = self.binary(BinOp::Gt, extent, first);
        let rest = self.binary(BinOp::Sub, extent, first);
        let dst = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Select {
            dst,
            cond: inside,
            if_true: rest,
            if_false: zero,
        });
        dst
    }

    /// Where the thread's accumulator fragments start in the accumulator, as three `usize`s
    /// that add up to its first row (the first two) and column (the third): warp `w` of the
    /// role holds rows `16 w ..` (warpgroup `g`'s warps `4 g ..` hold rows `64 g ..`), and lane
    /// `l` of it rows `l / 4` and `l / 4 + 8` of those, columns `2 (l % 4)` and on of each
    /// 8 (`ir::fragment_place`).
    pub(super) fn fragment_origin(&mut self) -> (Value, Value, Value) {
        let warp32 = self.lane_register(true);
        let lane32 = self.lane_register(false);
        let widen = |l: &mut Self, v: Value| {
            let dst = l.new_value(Scalar::Usize, None);
            l.emit(Inst::Cast { dst, src: v });
            dst
        };
        let (warp, lane) = (widen(self, warp32), widen(self, lane32));
        let sixteen = self.usize_const(16);
        let four = self.usize_const(4);
        let two = self.usize_const(2);
        let warp_rows = self.binary(BinOp::Mul, warp, sixteen);
        let lane_row = self.binary(BinOp::Div, lane, four);
        let lane_quad = self.binary(BinOp::Rem, lane, four);
        let lane_col = self.binary(BinOp::Mul, lane_quad, two);
        (warp_rows, lane_row, lane_col)
    }
}

/// The A operand of an mma as the lowering has it.
pub(super) enum OperandA {
    /// A tile: its shared address, element type, rows and columns.
    Tile((Value, Scalar, u32, u32)),
    /// A fragment: its packed registers (4 per K step of 16), element type and K.
    Registers(Vec<Value>, Scalar, u32),
}
