//! The epilogue through shared memory: `acc.store_tile(&mut slot, col)`, a block of an
//! accumulator's columns written into a reserved tile slot as the TMA lays a tile out, and
//! `tile.store(c, [row, col]).await`, a received tile slot written into a `&mut Matrix<T>` by
//! TMA stores. The role that computes sends its tiles to a role that stores them, so that the
//! stores to global memory run while the next tile is computed.

use proc_macro2::Span;

use super::values::{SlotRef, Val};
use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst};
use crate::tir::Expr;
use crate::types::{tile_column_blocks, tile_swizzle_bytes, Scalar};
use gpu_async_wire::ACC_TILE_COLUMN;

impl Lowerer<'_> {
    /// `tile.store(matrix, [row, col]).await` of a received tile slot, or
    /// `tile.store_rows(matrix, [row, col], rows).await` (`limit`, the rows written).
    pub(super) fn tile_store(
        &mut self,
        slot: &Expr,
        matrix: &Expr,
        (row, col): (&Expr, &Expr),
        limit: Option<&Expr>,
        span: Span,
    ) -> Val {
        let (s, m) = (self.expr(slot), self.expr(matrix));
        let (Val::RecvSlot(SlotRef { chan, rx, at }), Val::Matrix { param, elem, .. }) = (s, m)
        else {
            return Val::Unit;
        };
        let Some((tile_elem, rows, cols)) = self.channels[chan.0 as usize].ty.elem.tile_part(0)
        else {
            return Val::Unit;
        };
        if tile_elem != elem {
            return Val::Unit;
        }
        let [row, col] = self.tile_copy_corner((row, col), elem, true, span);
        // The rows written, at most the tile's, as the `u32` the writer compares.
        let limit = limit.map(|e| {
            let wanted = self.scalar(e);
            let all = self.usize_const(u64::from(rows));
            let capped = self.binary(BinOp::Min, wanted, all);
            self.cast_to(capped, Scalar::U32)
        });
        let map = self.tile_map(param, elem, (rows, cols));
        self.emit(Inst::TileStore {
            chan,
            slot: at,
            rx,
            param,
            map,
            row,
            col,
            rows: limit,
        });
        // The sender's writes reach the TMA through the proxy fence of its `send`; the release
        // waits for the store to have read the slot.
        self.channels[chan.0 as usize].bulk_reads = true;
        let key = self.slot_key(chan);
        self.access(key);
        Val::Unit
    }

    /// `acc.store_tile(&mut slot, col)`: the accumulator's columns `col .. col + C` (`C` the
    /// tile's columns), converted to the tile's element, into the reserved tile slot, each
    /// thread its own values at their swizzled places.
    pub(super) fn accumulator_tile(
        &mut self,
        acc: &Expr,
        slot: &Expr,
        col: &Expr,
        span: Span,
    ) -> Val {
        let Some((values, n)) = self.role_accumulator(acc, span) else {
            return Val::Unit;
        };
        self.check_not_moved(slot);
        let s = self.expr(slot);
        let col = self.scalar(col);
        let Some((base, elem, rows, cols)) = self.slot_tile(&s, 0) else {
            return Val::Unit;
        };
        // `col` a multiple of the tile's columns inside the accumulator; the simulator panics
        // with the same message.
        let width = self.usize_const(u64::from(cols));
        let rest = self.binary(BinOp::Rem, col, width);
        let zero = self.usize_const(0);
        let off_block = self.binary(BinOp::Ne, rest, zero);
        let n_v = self.usize_const(u64::from(n));
        let past = self.binary(BinOp::Ge, col, n_v);
        let bad = self.binary(BinOp::Or, off_block, past);
        self.panic_if(bad, ACC_TILE_COLUMN, span);
        let block_wide = self.binary(BinOp::Div, col, width);
        let block = self.cast_to(block_wide, Scalar::U32);
        // The thread's first element: row `first_row` of the tile, column `2 (lane % 4)`.
        let (warp_rows, lane_row, lane_col) = self.fragment_origin();
        let first_row = self.binary(BinOp::Add, warp_rows, lane_row);
        let first_row = self.cast_to(first_row, Scalar::U32);
        let lane_col = self.cast_to(lane_col, Scalar::U32);
        let size = elem.size();
        let (_, block_cols) = tile_column_blocks(elem, cols);
        let line = self.konst(Scalar::U32, Imm::Int(u64::from(block_cols * size)));
        let row_off = self.binary(BinOp::Mul, first_row, line);
        let esize = self.konst(Scalar::U32, Imm::Int(u64::from(size)));
        let col_off = self.binary(BinOp::Mul, lane_col, esize);
        let off = self.binary(BinOp::Add, row_off, col_off);
        let first = self.binary(BinOp::Add, base, off);
        // The 16-byte chunk's XOR: the line's bits (7 and up) over the span's chunks, as
        // `tile[r][c]` reads a tile (the row's bits alone: a pair's column stays in its line).
        let swizzle = match tile_swizzle_bytes(elem, cols) {
            Some(span_bytes) => {
                let mask = u64::from(span_bytes / 16 - 1) << 4;
                let three = self.konst(Scalar::U32, Imm::Int(3));
                let bits = self.binary(BinOp::Shr, row_off, three);
                let mask = self.konst(Scalar::U32, Imm::Int(mask));
                self.binary(BinOp::And, bits, mask)
            }
            None => self.konst(Scalar::U32, Imm::Int(0)),
        };
        self.emit(Inst::AccTile {
            acc: values,
            elem,
            tile: (rows, cols),
            first,
            swizzle,
            block,
        });
        Val::Unit
    }
}
