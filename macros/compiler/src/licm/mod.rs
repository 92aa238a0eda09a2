//! Phase 4, licm: loop-invariant code motion: pure instructions of a loop's body whose operands do not change in
//! the loop are computed once, before it.
//!
//! Why: a role loop that bulk-copies `&src[0..n]` on every item re-checks `n <= src.len()` and
//! re-computes the source address on every item. ptxas does not hoist those (it reloads the
//! kernel parameter from the constant bank and compares again each time, on the item's critical
//! path); computed before the loop, the check is a predicate the loop only branches on. On the
//! H200 that chain of dependent instructions bounded the 16 KiB bulk handoff
//! (`docs/design.md`, "Loop invariants are computed before their loops").
//!
//! What moves: an instruction at the top level of a loop's body (not inside an `if`, a nested
//! loop or a parallel loop) that computes a value from other values and nothing else (constants,
//! copies, arithmetic except division and remainder, comparisons, casts, selects, special
//! registers, local and constant-table addresses), whose result is defined nowhere else in the
//! kernel and whose operands are defined nowhere in the loop (or by instructions moved before
//! it). Such an instruction has no effect but its value, so computing it before the loop, even
//! when the loop runs zero times or leaves before reaching it, changes nothing a program can
//! observe. Checks (`panic_if`), loads, channel operations and everything with an effect stay
//! where they are: only their operands are ready earlier. Inner loops are done first, so an
//! invariant of two nested loops leaves both.

use crate::ir::{for_each_inst, BinOp, Block, Inst, Kernel, Value};

/// Moves the loop invariants of every loop of `k` before their loops.
pub fn hoist_loop_invariants(k: &mut Kernel) {
    // Definitions of each value (by number), up to two.
    let mut defs = vec![0u8; k.values.len()];
    let mut count = |inst: &Inst| {
        for d in inst.defs() {
            if let Some(n) = defs.get_mut(d.0 as usize) {
                *n = n.saturating_add(1).min(2);
            }
        }
    };
    for_each_inst(&k.prologue, &mut count);
    for role in &k.roles {
        for_each_inst(&role.body, &mut count);
    }
    let single: Vec<bool> = defs.iter().map(|&n| n == 1).collect();
    let mut in_loop = vec![false; k.values.len()];
    hoist_in_block(&mut k.prologue, &single, &mut in_loop);
    for role in &mut k.roles {
        hoist_in_block(&mut role.body, &single, &mut in_loop);
    }
}

/// Whether value `v` is marked in `set` (a flag per value number).
fn marked(set: &[bool], v: Value) -> bool {
    set.get(v.0 as usize).copied().unwrap_or(false)
}

/// Hoists in the loops of `block` and of the blocks nested in it; `single`: the values with one
/// definition in the kernel; `in_loop`: a flag per value, all false (scratch for
/// [`take_invariants`]).
fn hoist_in_block(block: &mut Block, single: &[bool], in_loop: &mut [bool]) {
    let mut out = Vec::with_capacity(block.0.len());
    for mut inst in std::mem::take(&mut block.0) {
        match &mut inst {
            Inst::If { then, else_, .. } => {
                hoist_in_block(then, single, in_loop);
                hoist_in_block(else_, single, in_loop);
            }
            Inst::Join { branches } => {
                for b in branches {
                    hoist_in_block(b, single, in_loop);
                }
            }
            Inst::Loop { body, .. } => {
                hoist_in_block(body, single, in_loop);
                out.extend(take_invariants(body, single, in_loop));
            }
            _ => {}
        }
        out.push(inst);
    }
    block.0 = out;
}

/// Removes the invariant instructions from the top level of the loop body `body` and returns
/// them, in order. `in_loop` is all false, and is again when it returns.
fn take_invariants(body: &mut Block, single: &[bool], in_loop: &mut [bool]) -> Vec<Inst> {
    let mut defined = Vec::new();
    for_each_inst(body, &mut |inst: &Inst| defined.extend(inst.defs()));
    for d in &defined {
        if let Some(f) = in_loop.get_mut(d.0 as usize) {
            *f = true;
        }
    }
    let mut hoisted = Vec::new();
    let mut kept = Vec::with_capacity(body.0.len());
    for inst in std::mem::take(&mut body.0) {
        let invariant = match pure_operands(&inst) {
            Some(operands) => {
                let defs = inst.defs();
                defs.iter().all(|d| marked(single, *d))
                    && operands.iter().all(|v| !marked(in_loop, *v))
            }
            None => false,
        };
        if invariant {
            for d in inst.defs() {
                if let Some(f) = in_loop.get_mut(d.0 as usize) {
                    *f = false;
                }
            }
            hoisted.push(inst);
        } else {
            kept.push(inst);
        }
    }
    body.0 = kept;
    for d in defined {
        if let Some(f) = in_loop.get_mut(d.0 as usize) {
            *f = false;
        }
    }
    hoisted
}

/// The operands of `inst` when it computes its one value from them and has no other effect;
/// `None` for every other instruction.
fn pure_operands(inst: &Inst) -> Option<Vec<Value>> {
    match inst {
        Inst::Const { .. }
        | Inst::Special { .. }
        | Inst::LocalAddr { .. }
        | Inst::ArrayAddr { .. }
        | Inst::ConstAddr { .. } => Some(Vec::new()),
        Inst::Copy { src, .. }
        | Inst::Unary { src, .. }
        | Inst::Cast { src, .. }
        | Inst::Bitcast { src, .. } => Some(vec![*src]),
        // Division and remainder stay: their checks (a zero divisor, `MIN / -1`) come first.
        Inst::Binary { op, lhs, rhs, .. } if !matches!(op, BinOp::Div | BinOp::Rem) => {
            Some(vec![*lhs, *rhs])
        }
        Inst::Fma { a, b, c, .. } => Some(vec![*a, *b, *c]),
        Inst::Select {
            cond,
            if_true,
            if_false,
            ..
        } => Some(vec![*cond, *if_true, *if_false]),
        _ => None,
    }
}
