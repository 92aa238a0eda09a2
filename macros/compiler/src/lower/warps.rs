//! Warps in a lane loop (`for_each_lane`): the lane's position, and the warp operations
//! (shuffles, votes, and the butterfly reductions `sum`, `min` and `max`).
//!
//! Apart from `parallel`: these run inside a lane loop's body, between the lanes of one warp.

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, ShuffleMode, Special, Value, VoteMode};
use crate::tir::{self, Expr};
use crate::types::Scalar;

/// The panic of a lane loop whose item count is not a multiple of 32 (the simulator's is the
/// same text).
pub(super) const LANE_COUNT_MESSAGE: &str =
    "`for_each_lane` needs a multiple of 32 items, so that every lane of a warp takes part";

impl Lowerer<'_> {
    /// `lane.id()`, or (`warp`) `lane.warp()`.
    pub(super) fn lane_position(&mut self, warp: bool) -> Val {
        Val::Scalar(self.lane_register(warp))
    }

    /// The thread's lane in its warp, or (`warp`) its warp's number in the role: a `u32`.
    pub(super) fn lane_register(&mut self, warp: bool) -> Value {
        let dst = self.new_value(Scalar::U32, None);
        let reg = if warp {
            Special::RoleWarp
        } else {
            Special::LaneId
        };
        self.emit(Inst::Special { dst, reg });
        dst
    }

    /// A warp operation of a lane loop: one shuffle or vote, or for `sum`/`min`/`max` the
    /// reductions' butterfly (partners at distance 16, 8, 4, 2, 1, the lower lane's value on the
    /// left), so that the result has the same bits on every lane and on the simulator.
    pub(super) fn warp_op(&mut self, op: tir::WarpOp, args: &[Expr]) -> Value {
        use tir::WarpOp as W;
        let values: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
        let Some(&value) = values.first() else {
            return self.konst(Scalar::U32, Imm::Int(0));
        };
        let ty = self.values[value.0 as usize].ty;
        let shuffle = |l: &mut Self, mode: ShuffleMode, value: Value, operand: Value| {
            let dst = l.new_value(ty, None);
            l.emit(Inst::Shuffle {
                dst,
                mode,
                value,
                operand,
            });
            dst
        };
        let vote = |l: &mut Self, mode: VoteMode, out: Scalar| {
            let dst = l.new_value(out, None);
            l.emit(Inst::Vote {
                dst,
                mode,
                pred: value,
            });
            dst
        };
        let operand = values.get(1).copied();
        match (op, operand) {
            (W::Shuffle, Some(o)) => shuffle(self, ShuffleMode::Idx, value, o),
            (W::ShuffleXor, Some(o)) => shuffle(self, ShuffleMode::Xor, value, o),
            (W::ShuffleUp, Some(o)) => shuffle(self, ShuffleMode::Up, value, o),
            (W::ShuffleDown, Some(o)) => shuffle(self, ShuffleMode::Down, value, o),
            (W::Ballot, _) => vote(self, VoteMode::Ballot, Scalar::U32),
            (W::All, _) => vote(self, VoteMode::All, Scalar::Bool),
            (W::Any, _) => vote(self, VoteMode::Any, Scalar::Bool),
            (W::Sum | W::Min | W::Max, _) => {
                let combine = match op {
                    W::Sum => BinOp::Add,
                    W::Min => BinOp::Min,
                    _ => BinOp::Max,
                };
                let lane = self.new_value(Scalar::U32, None);
                self.emit(Inst::Special {
                    dst: lane,
                    reg: Special::LaneId,
                });
                let zero = self.konst(Scalar::U32, Imm::Int(0));
                let mut acc = value;
                for k in [16u64, 8, 4, 2, 1] {
                    let distance = self.konst(Scalar::U32, Imm::Int(k));
                    let partner = shuffle(self, ShuffleMode::Xor, acc, distance);
                    let bit = self.binary(BinOp::And, lane, distance);
                    let lower = self.binary(BinOp::Eq, bit, zero);
                    let (left, right) = (self.new_value(ty, None), self.new_value(ty, None));
                    self.emit(Inst::Select {
                        dst: left,
                        cond: lower,
                        if_true: acc,
                        if_false: partner,
                    });
                    self.emit(Inst::Select {
                        dst: right,
                        cond: lower,
                        if_true: partner,
                        if_false: acc,
                    });
                    acc = self.binary(combine, left, right);
                }
                acc
            }
            // The checker gives shuffles their operand.
            (W::Shuffle | W::ShuffleXor | W::ShuffleUp | W::ShuffleDown, None) => value,
        }
    }
}
