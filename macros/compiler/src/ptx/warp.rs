//! The thread's place and the warp's collective operations: special registers (block, grid,
//! lane, the warp within the role), shuffles and votes.

use super::error::WriteResult;
use super::types::Class;
use super::Writer;
use crate::ir::{ShuffleMode, Special, Value, VoteMode};

impl Writer<'_> {
    /// A special register: the block's index, the grid's size, the lane, the warp in the role.
    pub(super) fn special(&mut self, dst: Value, reg: Special) -> WriteResult {
        let d = self.reg(dst);
        let sreg = match reg {
            Special::BlockIdx => "%ctaid.x",
            Special::GridDim => "%nctaid.x",
            Special::LaneId => return self.line(format!("mov.u32 {d}, %laneid;")),
            Special::RoleWarp => {
                let rtid = self.role()?.rtid.clone();
                return self.line(format!("shr.u32 {d}, {rtid}, 5;"));
            }
        };
        let t = self.tmp(Class::B32);
        self.line(format!("mov.u32 {t}, {sreg};"))?;
        self.line(format!("cvt.u64.u32 {d}, {t};"))
    }

    /// A warp shuffle of `value`.
    pub(super) fn shuffle(
        &mut self,
        dst: Value,
        mode: ShuffleMode,
        value: Value,
        operand: Value,
    ) -> WriteResult {
        let (d, v, o) = (self.reg(dst), self.reg(value), self.reg(operand));
        // The clamp operand: lanes past 31 (down, idx, xor) or below 0 (up) keep their
        // own value; PTX takes the lane operand's low 5 bits, the language's `% 32`.
        let (name, clamp) = match mode {
            ShuffleMode::Idx => ("idx", 31),
            ShuffleMode::Xor => ("bfly", 31),
            ShuffleMode::Up => ("up", 0),
            ShuffleMode::Down => ("down", 31),
        };
        let class = Class::of(self.k.ty(dst));
        if matches!(class, Class::B64 | Class::F64) {
            let (lo, hi, lo2, hi2) = (
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::B32),
            );
            self.line(format!("mov.b64 {{{lo}, {hi}}}, {v};"))?;
            self.line(format!(
                "shfl.sync.{name}.b32 {lo2}, {lo}, {o}, {clamp}, -1;"
            ))?;
            self.line(format!(
                "shfl.sync.{name}.b32 {hi2}, {hi}, {o}, {clamp}, -1;"
            ))?;
            self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"))
        } else {
            let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
            self.line(format!("mov.b32 {x}, {v};"))?;
            self.line(format!("shfl.sync.{name}.b32 {y}, {x}, {o}, {clamp}, -1;"))?;
            self.line(format!("mov.b32 {d}, {y};"))
        }
    }

    /// A warp vote on `pred`.
    pub(super) fn vote(&mut self, dst: Value, mode: VoteMode, pred: Value) -> WriteResult {
        let (d, p) = (self.reg(dst), self.reg(pred));
        match mode {
            VoteMode::Ballot => self.line(format!("vote.sync.ballot.b32 {d}, {p}, -1;")),
            VoteMode::All => self.line(format!("vote.sync.all.pred {d}, {p}, -1;")),
            VoteMode::Any => self.line(format!("vote.sync.any.pred {d}, {p}, -1;")),
        }
    }
}
