//! The grid's blocks and `block_tiles`: the block's index and count, and the iterator that
//! hands each block every tile whose number is its index plus a multiple of the block count.
//!
//! Apart from `parallel`: tiles split work between the grid's blocks, not between a role's
//! threads.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Block, Imm, Inst, Special, Value};
use crate::tir::Expr;
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `block_index()`, or (`count`) `block_count()`.
    pub(super) fn block_position(&mut self, count: bool) -> Val {
        let dst = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Special {
            dst,
            reg: if count {
                Special::GridDim
            } else {
                Special::BlockIdx
            },
        });
        Val::Scalar(dst)
    }

    /// `block_tiles(len, tile)`: the iterator's state, starting at this block's tile.
    pub(super) fn block_tiles(&mut self, len: &Expr, tile: &Expr, span: Span) -> Val {
        let len = self.scalar(len);
        let tile = self.scalar(tile);
        let zero = self.usize_const(0);
        let bad = self.binary(BinOp::Eq, tile, zero);
        self.panic_if(bad, "block_tiles: the tile size must not be zero", span);
        let next = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Special {
            dst: next,
            reg: Special::BlockIdx,
        });
        let step = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Special {
            dst: step,
            reg: Special::GridDim,
        });
        Val::Tiles {
            next,
            step,
            len,
            tile,
        }
    }

    /// `tiles.next()`: an optional range.
    pub(super) fn tiles_next_expr(&mut self, t: &Expr) -> Val {
        let tiles = self.expr(t);
        let (some, start, end) = self.tiles_next(&tiles);
        Val::OptRange { some, start, end }
    }

    /// `BlockTiles::next`: `(some, start, end)`, advancing the iterator when `some`.
    pub(super) fn tiles_next(&mut self, tiles: &Val) -> (Value, Value, Value) {
        let Val::Tiles {
            next,
            step,
            len,
            tile,
        } = *tiles
        else {
            let f = self.konst(Scalar::Bool, Imm::Bool(false));
            let z = self.usize_const(0);
            return (f, z, z);
        };
        let start = self.binary(BinOp::Mul, next, tile);
        let some = self.binary(BinOp::Lt, start, len);
        let stop = self.binary(BinOp::Add, start, tile);
        let end = self.binary(BinOp::Min, stop, len);
        let advance = self.sub_block(|l| {
            l.emit(Inst::Binary {
                dst: next,
                op: BinOp::Add,
                lhs: next,
                rhs: step,
            })
        });
        self.emit(Inst::If {
            cond: some,
            then: advance,
            else_: Block::default(),
        });
        (some, start, end)
    }
}
