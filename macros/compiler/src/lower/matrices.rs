//! Matrices and tiles in role code: a matrix's dimensions, the tile load that fills a reserved
//! tile slot through one of the matrix's tensor maps, and the reads of a tile's elements, whose
//! addresses follow the swizzle the load lays the tile out with.
//!
//! Each distinct tile shape loaded from a matrix gets a tensor map of its own: a kernel
//! parameter that the launcher encodes from the shape (`ir::ParamKind::Matrix`).

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{self, BinOp, Imm, Inst, Space, Value};
use crate::tir::{Expr, ExprKind};
use crate::types::{tile_column_blocks, tile_swizzle_bytes, Scalar, Ty};
use gpu_async_wire::{
    TileBox, TileColumnMisaligned, MAX_TILE_COORD, TILE_COLUMN_ALIGN, TILE_CORNER_PAST,
    TILE_STORE_CORNER_PAST,
};

/// The slot expression of a tile (`slot`, or `stage` of `stage.1`) and which tile of the payload
/// it is.
pub(super) fn tile_of(tile: &Expr) -> (&Expr, u32) {
    match &tile.kind {
        ExprKind::TupleField(slot, part) if matches!(tile.ty, Ty::TilePart { .. }) => (slot, *part),
        _ => (tile, 0),
    }
}

impl Lowerer<'_> {
    /// `m.rows()` or `m.cols()`.
    pub(super) fn matrix_dim(&mut self, m: &Expr, cols: bool) -> Val {
        match self.expr(m) {
            Val::Matrix { rows, cols: c, .. } => Val::Scalar(if cols { c } else { rows }),
            _ => Val::Unit,
        }
    }

    /// `slot.load(matrix, [row, col]).await` of a reserved tile slot, or `stage.1.load(..)` of
    /// a tile of a pair.
    pub(super) fn tile_load(
        &mut self,
        target: &Expr,
        matrix: &Expr,
        (row, col): (&Expr, &Expr),
        span: Span,
    ) -> Val {
        let (slot, part) = tile_of(target);
        // Loading the other tile of a pair after one is loaded is what a stage does, so only a
        // load after a move is checked (rustc's error).
        self.check_not_moved(slot);
        let (s, m) = (self.expr(slot), self.expr(matrix));
        let (Val::SendSlot(c), Val::Matrix { param, elem, .. }) = (s, m) else {
            return Val::Unit;
        };
        let Some((tile_elem, rows, cols)) = self.channels[c.0 as usize].ty.elem.tile_part(part)
        else {
            return Val::Unit;
        };
        if tile_elem != elem {
            return Val::Unit;
        }
        let corner = self.tile_copy_corner((row, col), elem, false, span);
        let map = self.tile_map(param, elem, (rows, cols));
        self.emit(Inst::TileLoad {
            chan: c,
            part,
            param,
            map,
            row: corner[0],
            col: corner[1],
        });
        let key = self.slot_key(c);
        self.access(key);
        if let ExprKind::Local(id) = slot.kind {
            self.frame().copied.insert(id);
        }
        Val::Unit
    }

    /// The corner of a tile load (or, `store`, a tile store) as the two `u32`s of the copy, after
    /// the device panics of a coordinate past `2^31 - 1` and a column off 16 bytes (the
    /// simulator's messages, one text each in the wire crate).
    pub(super) fn tile_copy_corner(
        &mut self,
        (row, col): (&Expr, &Expr),
        elem: Scalar,
        store: bool,
        span: Span,
    ) -> [Value; 2] {
        let mut corner = [Value(0); 2];
        let mut wide = [Value(0); 2];
        for (k, e) in [row, col].into_iter().enumerate() {
            let v = self.scalar(e);
            wide[k] = v;
            let limit = self.usize_const(MAX_TILE_COORD);
            let past = self.binary(BinOp::Gt, v, limit);
            let message = if store {
                TILE_STORE_CORNER_PAST
            } else {
                TILE_CORNER_PAST
            };
            self.panic_if(past, message, span);
            corner[k] = self.cast_to(v, Scalar::U32);
        }
        // A TMA copy starts each row on a 16-byte boundary (`TILE_COLUMN_ALIGN`).
        let per = TILE_COLUMN_ALIGN / elem.size();
        let per_v = self.usize_const(u64::from(per));
        let rest = self.binary(BinOp::Rem, wide[1], per_v);
        let zero = self.usize_const(0);
        let misaligned = self.binary(BinOp::Ne, rest, zero);
        let op = if store { "store" } else { "load" };
        self.panic_if(
            misaligned,
            &TileColumnMisaligned { op, per }.to_string(),
            span,
        );
        corner
    }

    /// The tensor map of matrix parameter `param` that copies a `rows` x `cols` tile of `elem`
    /// (one column block of it at a time), added to the parameter's maps if new: loads and
    /// stores of one tile shape share it.
    pub(super) fn tile_map(&mut self, param: u32, elem: Scalar, (rows, cols): (u32, u32)) -> u32 {
        let tile = TileBox { rows, cols }.load_box(elem.size());
        let boxes = self.matrix_boxes.entry(param).or_default();
        (match boxes.iter().position(|b| *b == tile) {
            Some(k) => k,
            None => {
                boxes.push(tile);
                boxes.len() - 1
            }
        }) as u32
    }

    /// `tile[r][c]` (`row` is the `tile[r]` expression): the element, read from the slot at the
    /// swizzled offset of row `r`, column `c`, after the bounds checks of both.
    pub(super) fn tile_element(&mut self, row: &Expr, index: &Expr, span: Span) -> Val {
        let ExprKind::Index(tile, r) = &row.kind else {
            self.tile_row_alone(row.span);
            return Val::Unit;
        };
        let (slot, part) = tile_of(tile);
        self.check_not_copied(slot, span);
        let s = self.expr(slot);
        let (r, c) = (self.scalar(r), self.scalar(index));
        let Some((chan, _)) = self.slot_parts(&s) else {
            return Val::Unit;
        };
        let ty = &self.channels[chan.0 as usize].ty;
        let Some((elem, rows, cols)) = ty.elem.tile_part(part) else {
            return Val::Unit;
        };
        let part_offset = ty.part_offsets().get(part as usize).copied().unwrap_or(0);
        let key = self.slot_key(chan);
        self.access(key);
        for (v, n) in [(r, rows), (c, cols)] {
            let n = self.usize_const(u64::from(n));
            let oob = self.binary(BinOp::Ge, v, n);
            self.panic_if(oob, "index out of bounds", span);
        }
        let Some((_, base)) = self.slot_addr(&s) else {
            return Val::Unit;
        };
        let size = elem.size();
        let narrow = |l: &mut Self, v: Value| {
            let dst = l.new_value(Scalar::U32, None);
            l.emit(Inst::Cast { dst, src: v });
            dst
        };
        let (r32, c32) = (narrow(self, r), narrow(self, c));
        // Column `c` lies in column block `c / block_cols`, `rows` lines of the block's row
        // bytes apart (one block, the whole row, unless the rows are several 128-byte lines).
        let (blocks, block_cols) = tile_column_blocks(elem, cols);
        let (c32, block_off) = if blocks > 1 {
            let width = self.konst(Scalar::U32, Imm::Int(u64::from(block_cols)));
            let block = self.binary(BinOp::Div, c32, width);
            let within = self.binary(BinOp::Rem, c32, width);
            let block_bytes =
                self.konst(Scalar::U32, Imm::Int(u64::from(rows * block_cols * size)));
            (within, Some(self.binary(BinOp::Mul, block, block_bytes)))
        } else {
            (c32, None)
        };
        let row_bytes = self.konst(Scalar::U32, Imm::Int(u64::from(block_cols * size)));
        let esize = self.konst(Scalar::U32, Imm::Int(u64::from(size)));
        let row_off = self.binary(BinOp::Mul, r32, row_bytes);
        let col_off = self.binary(BinOp::Mul, c32, esize);
        let mut off = self.binary(BinOp::Add, row_off, col_off);
        // The swizzle applies within the block, which starts on its pattern's repeat.
        if let Some(span_bytes) = tile_swizzle_bytes(elem, cols) {
            // The 16-byte chunk's index (bits 4 and up) XOR the 128-byte line's (bits 7 and
            // up), over the span's chunks: the placement the tensor map's swizzle gives.
            let mask = u64::from(span_bytes / 16 - 1) << 4;
            let three = self.konst(Scalar::U32, Imm::Int(3));
            let line = self.binary(BinOp::Shr, off, three);
            let mask = self.konst(Scalar::U32, Imm::Int(mask));
            let bits = self.binary(BinOp::And, line, mask);
            off = self.binary(BinOp::Xor, off, bits);
        }
        if let Some(block_off) = block_off {
            off = self.binary(BinOp::Add, off, block_off);
        }
        if part_offset != 0 {
            let at = self.konst(Scalar::U32, Imm::Int(part_offset));
            off = self.binary(BinOp::Add, off, at);
        }
        let addr = self.binary(BinOp::Add, base, off);
        Val::Scalar(self.load(elem, Space::Shared, addr))
    }

    /// A tile's row taken as a value (`let row = tile[r];`): its elements are read in place.
    pub(super) fn tile_row_alone(&mut self, span: Span) {
        self.diags.error(
            span,
            "a tile's row is not a value of its own (the tile is stored swizzled): read each element in place, as `tile[r][c]`",
        );
    }

    /// Gives each matrix parameter the tensor maps its loads asked for.
    pub(super) fn matrix_maps(&mut self, params: &mut [ir::Param]) {
        for (i, p) in params.iter_mut().enumerate() {
            if let ir::ParamKind::Matrix { boxes, .. } = &mut p.kind {
                *boxes = self.matrix_boxes.remove(&(i as u32)).unwrap_or_default();
            }
        }
    }
}
