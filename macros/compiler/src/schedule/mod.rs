//! Work that does not depend on a wait is done before it: pure instructions right after a
//! `reserve` or a `recv` whose operands are ready before the wait are moved above it.
//!
//! Why: a loader role such as `let mut slot = tx.reserve().await; slot.copy_from(&x[tile])`
//! computes the tile's bounds checks, its address and the split of the bulk copy after the wait
//! for a free slot, on the path from the moment a slot frees to the moment the next copy is
//! issued. That delay is time the slot holds no data in flight. Computed before the wait, those
//! values are ready when the slot frees; the wait is followed by the checks' branches and the copy.
//! Measured on the H200 in `docs/benchmarks.md` (seventh session).
//!
//! What moves: an instruction that computes a value from other values and nothing else (the
//! instructions [`crate::licm`] moves out of loops), in the run of such instructions and checks
//! (`panic_if`) that follows a `reserve` or a `recv` in the same block, when none of its operands
//! is defined by the wait or by an instruction that stays, and its result is neither read nor
//! defined by one that stays. Checks stay after the wait (a failed check still reports after the
//! wait, as written); so do loads, stores, channel operations and control flow, which end the run.
//! Waits inside `join!` and `select!` branches are left alone: there, a value computed before the
//! wait lives across the branch's yields, and on the H200 that made `join!` slower (sixth session).

use std::collections::HashSet;

use crate::ir::{Block, Inst, Kernel, Value};
use crate::licm::pure_operands;

/// Moves the instructions that do not depend on each wait of `k` (outside `join!` and `select!`
/// branches) before it.
pub fn hoist_above_waits(k: &mut Kernel) {
    for role in &mut k.roles {
        schedule_block(&mut role.body);
    }
}

/// Schedules the waits of `block` and of the blocks nested in it, except `join!` branches.
fn schedule_block(block: &mut Block) {
    let insts = std::mem::take(&mut block.0);
    let mut out = Vec::with_capacity(insts.len());
    let mut rest = insts.into_iter().peekable();
    while let Some(mut inst) = rest.next() {
        match &mut inst {
            Inst::If { then, else_, .. } => {
                schedule_block(then);
                schedule_block(else_);
            }
            Inst::Loop { body, .. } => schedule_block(body),
            _ => {}
        }
        let waited: Vec<Value> = match &inst {
            Inst::Reserve { .. } => Vec::new(),
            Inst::Recv { some, .. } => vec![*some],
            _ => {
                out.push(inst);
                continue;
            }
        };
        // The run after the wait: pure instructions and checks.
        let mut run = Vec::new();
        while let Some(next) = rest.peek() {
            if pure_operands(next).is_none() && !matches!(next, Inst::PanicIf { .. }) {
                break;
            }
            if let Some(next) = rest.next() {
                run.push(next);
            }
        }
        // What the staying instructions define and read, the wait first.
        let mut stay_defs: HashSet<Value> = waited.into_iter().collect();
        let mut stay_reads: HashSet<Value> = HashSet::new();
        let mut moved = Vec::new();
        let mut stayed = Vec::new();
        for candidate in run {
            let movable = pure_operands(&candidate).is_some_and(|operands| {
                operands.iter().all(|v| !stay_defs.contains(v))
                    && candidate
                        .defs()
                        .iter()
                        .all(|d| !stay_defs.contains(d) && !stay_reads.contains(d))
            });
            if movable {
                moved.push(candidate);
            } else {
                stay_defs.extend(candidate.defs());
                match &candidate {
                    Inst::PanicIf { cond, .. } => {
                        stay_reads.insert(*cond);
                    }
                    other => stay_reads.extend(pure_operands(other).unwrap_or_default()),
                }
                stayed.push(candidate);
            }
        }
        out.extend(moved);
        out.push(inst);
        out.extend(stayed);
    }
    block.0 = out;
}
