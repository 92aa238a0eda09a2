//! `acc.mma_stages(&rx, count).await`: the accumulator takes the products of the next `count`
//! stages of a channel of tile pairs, with one stage's mma kept running while the next stage is
//! received and its mma issued. Each stage is released once its mma has completed
//! (`wgmma.wait_group 1` after the next one is issued), so the tensor cores always have the
//! next mma queued while the warpgroup waits, releases and computes descriptors: the loop a
//! GEMM's compute role runs per output tile.
//!
//! The first stage is received before the loop, so that no branch of the loop depends on
//! whether a previous stage exists: the code between an mma's issue and its wait is the
//! receive of the next stage, whose slow paths ptxas would otherwise make wait for the mma.

use proc_macro2::Span;

use super::mma::OperandA;
use super::values::{SlotRef, Val};
use super::Lowerer;
use crate::ir::{BinOp, ChannelId, Imm, Inst, RecvEnd, SiteId, SiteKind, UnOp, Value};
use crate::tir::Expr;
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `acc.mma_stages(&rx, count).await`: whether all `count` stages came (`false` when the
    /// channel ended first; the stages that came are accumulated all the same).
    pub(super) fn mma_stages(
        &mut self,
        acc: &Expr,
        rx: &Expr,
        count: &Expr,
        b_kn: bool,
        span: Span,
    ) -> Val {
        let Some((values, n)) = self.role_accumulator(acc, span) else {
            return Val::Unit;
        };
        let Val::Receiver(chan, rx) = self.expr(rx) else {
            return Val::Unit;
        };
        let count = self.scalar(count);
        let ok = self.new_value(Scalar::Bool, Some("all_stages"));
        let zero = self.usize_const(0);
        if self.closed_rx.contains(&(chan, rx)) {
            // A closed receiver receives nothing: all of none came.
            let none = self.binary(BinOp::Eq, count, zero);
            self.emit(Inst::Copy { dst: ok, src: none });
            return Val::Scalar(ok);
        }
        self.check_held(chan, rx, 2, span);
        let name = self.channels[chan.0 as usize].name.clone();
        let site = self.site(
            SiteKind::Wait,
            format!("`mma_stages()` receiving from channel `{name}`"),
            span,
        );
        self.emit(Inst::Const {
            dst: ok,
            imm: Imm::Bool(true),
        });
        let stages = Stages {
            values,
            n,
            b_kn,
            chan,
            rx,
            site,
        };
        let any = self.binary(BinOp::Gt, count, zero);
        let first = self.sub_block(|l| {
            let (some, at) = l.stage_recv(&stages);
            let rest = l.sub_block(|l| l.later_stages(&stages, at, count, ok));
            let ended = l.sub_block(|l| {
                l.emit(Inst::Const {
                    dst: ok,
                    imm: Imm::Bool(false),
                })
            });
            l.emit(Inst::If {
                cond: some,
                then: rest,
                else_: ended,
            });
        });
        self.emit(Inst::If {
            cond: any,
            then: first,
            else_: Default::default(),
        });
        Val::Scalar(ok)
    }

    /// With the first stage received at ring position `first`: its mma, then a loop over the
    /// other `count - 1` stages (receive, issue, wait for the previous stage's mma, release the
    /// previous stage), then the wait for the last mma and the last release.
    fn later_stages(&mut self, s: &Stages, first: Value, count: Value, ok: Value) {
        self.stage_mma(s, first);
        let prev = self.new_value(Scalar::U32, Some("stage.prev"));
        self.emit(Inst::Copy {
            dst: prev,
            src: first,
        });
        let i = self.new_value(Scalar::Usize, Some("stage"));
        self.emit(Inst::Const {
            dst: i,
            imm: Imm::Int(1),
        });
        let id = self.new_loop();
        let body = self.sub_block(|l| {
            let done = l.binary(BinOp::Ge, i, count);
            l.break_if(done, id);
            let (some, at) = l.stage_recv(s);
            let ended = l.new_value(Scalar::Bool, None);
            l.emit(Inst::Unary {
                dst: ended,
                op: UnOp::Not,
                src: some,
            });
            let stop = l.sub_block(|l| {
                l.emit(Inst::Const {
                    dst: ok,
                    imm: Imm::Bool(false),
                });
                l.emit(Inst::Break(id));
            });
            l.emit(Inst::If {
                cond: ended,
                then: stop,
                else_: Default::default(),
            });
            l.stage_mma(s, at);
            l.emit(Inst::MmaWait { pending: 1 });
            l.release_stage(s, prev);
            l.emit(Inst::Copy { dst: prev, src: at });
            let one = l.usize_const(1);
            let next = l.binary(BinOp::Add, i, one);
            l.emit(Inst::Copy { dst: i, src: next });
        });
        self.emit(Inst::Loop { id, body });
        self.emit(Inst::MmaWait { pending: 0 });
        self.release_stage(s, prev);
    }

    /// The receive of the next stage: whether it came, and its ring position.
    fn stage_recv(&mut self, s: &Stages) -> (Value, Value) {
        let some = self.new_value(Scalar::Bool, None);
        let at = self.new_value(Scalar::U32, Some("stage.slot"));
        self.emit(Inst::Recv {
            chan: s.chan,
            end: RecvEnd::Answer(some),
            site: s.site,
            slot: Some(at),
            rx: s.rx,
        });
        (some, at)
    }

    /// The mma of the stage at ring position `at`: its tile 0 is A, its tile 1 is B.
    fn stage_mma(&mut self, s: &Stages, at: Value) {
        let slot = Val::RecvSlot(SlotRef {
            chan: s.chan,
            rx: s.rx,
            at: Some(at),
        });
        if let (Some(a), Some(b)) = (self.slot_tile(&slot, 0), self.slot_tile(&slot, 1)) {
            self.emit_mma(s.values.clone(), OperandA::Tile(a), (b, s.b_kn), s.n);
        }
    }

    fn release_stage(&mut self, s: &Stages, at: Value) {
        self.emit(Inst::Release {
            chan: s.chan,
            slot: Some(at),
            rx: s.rx,
        });
    }
}

/// What each stage of an `mma_stages` uses: the accumulator (`n` columns), the receiver and
/// the wait site of its receives.
struct Stages {
    values: Vec<Value>,
    n: u32,
    /// Each stage's B is K x N (`mma_stages_kn`).
    b_kn: bool,
    chan: ChannelId,
    rx: u32,
    site: SiteId,
}
