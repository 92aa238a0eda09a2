//! The role barriers of shared arrays. The lowering marks each access of a shared array
//! ([`Inst::ArrayAccess`]: before a parallel loop for its sources, in its body for elements
//! read, written or updated by index, in role code for a read). A role's threads run a parallel
//! loop's iterations each on its own, so an access must wait for the role's earlier accesses of
//! the same array that another thread may have made and that it conflicts with:
//!
//! - a read after a write or an update (it must see them);
//! - a write after anything (a read must not see it early, nor an earlier write land after it);
//! - an update after a read, a write, or an update of another kind (`add` commutes with `add`,
//!   not with `max`).
//!
//! The pass walks each role's structured code with the accesses pending since the last role
//! barrier (a role barrier, a barrier between roles or a reduction of several warps clears
//! them), puts a role barrier before each marked instruction that conflicts with them (before the
//! parallel loop for marks in its body), and removes the marks. An `if` continues with what
//! either branch left pending; a loop's head starts from a fixpoint of what its entry, the end of
//! its body and its `continue`s leave pending, so an access early in the body is ordered after
//! one late in the previous iteration (a transpose's tile, written at the top and read at the
//! bottom of each step, gets a barrier at both places unless one is there already), and the
//! code after a loop starts from what its `break`s leave.

use std::collections::{BTreeMap, BTreeSet};

use std::collections::HashMap;

use crate::ir::{ArrayAccess, Block, Inst, LoopId, SiteId};

/// What each array has pending since the last role barrier.
type Pending = BTreeMap<u32, BTreeSet<ArrayAccess>>;

/// Whether `access` must wait for `pending` (the same array's accesses since the last barrier).
fn conflicts(pending: &BTreeSet<ArrayAccess>, access: ArrayAccess) -> bool {
    pending.iter().any(|p| match (access, *p) {
        (ArrayAccess::Read, ArrayAccess::Read) => false,
        (ArrayAccess::Read, _) => true,
        (ArrayAccess::Write, _) => true,
        (ArrayAccess::Update(_), ArrayAccess::Read | ArrayAccess::Write) => true,
        (ArrayAccess::Update(a), ArrayAccess::Update(b)) => a != b,
    })
}

fn merge(into: &mut Pending, from: &Pending) {
    for (k, v) in from {
        into.entry(*k).or_default().extend(v.iter().copied());
    }
}

/// Places the role barriers a role's shared-array accesses need and removes the marks;
/// `warps` is the role's (a reduction of several warps meets in a role barrier).
pub(super) fn place_barriers(body: &mut Block, warps: u32) {
    let mut pass = Pass {
        warps,
        jumps: HashMap::new(),
    };
    let mut pending = Pending::new();
    pass.block(body, &mut pending, true);
}

struct Pass {
    warps: u32,
    /// Per loop: what its `continue`s and its `break`s leave pending.
    jumps: HashMap<LoopId, (Pending, Pending)>,
}

impl Pass {
    /// Notes what a `continue` (`to_head`) or a `break` of loop `id` leaves pending.
    fn jump(&mut self, id: LoopId, pending: &Pending, to_head: bool) {
        let (cont, brk) = self.jumps.entry(id).or_default();
        merge(if to_head { cont } else { brk }, pending);
    }

    /// Walks `block` from `pending`; with `edit`, inserts the barriers and removes the marks.
    fn block(&mut self, block: &mut Block, pending: &mut Pending, edit: bool) {
        let insts = std::mem::take(&mut block.0);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            match &mut inst {
                Inst::ArrayAccess {
                    array,
                    access,
                    site,
                } => {
                    let accesses = [(*array, *access, *site)];
                    self.accesses(&accesses, pending, &mut out);
                    if !edit {
                        out.push(inst);
                    }
                    continue;
                }
                Inst::ParFor(p) => {
                    let mut marks = Vec::new();
                    take_marks(&mut p.body, &mut marks, edit);
                    if let Some(r) = p.reduce.as_mut() {
                        take_marks(&mut r.combine, &mut marks, edit);
                    }
                    self.accesses(&marks, pending, &mut out);
                    if p.reduce.is_some() && self.warps > 1 {
                        pending.clear();
                    }
                }
                Inst::RoleBarrier { .. } | Inst::BarrierWait { .. } => pending.clear(),
                Inst::If { then, else_, .. } => {
                    let mut other = pending.clone();
                    self.block(then, pending, edit);
                    self.block(else_, &mut other, edit);
                    merge(pending, &other);
                }
                Inst::Join { branches } => {
                    let start = pending.clone();
                    for b in branches {
                        let mut mine = start.clone();
                        self.block(b, &mut mine, edit);
                        merge(pending, &mine);
                    }
                }
                Inst::Break(id) => self.jump(*id, pending, false),
                Inst::Continue(id) => self.jump(*id, pending, true),
                Inst::Loop { id, body } => {
                    // The head's state: what the entry, the end of an iteration and its
                    // `continue`s leave pending, to a fixpoint.
                    let id = *id;
                    let mut head = pending.clone();
                    loop {
                        self.jumps.remove(&id);
                        let mut state = head.clone();
                        let mut copy = body.clone();
                        self.block(&mut copy, &mut state, false);
                        let (cont, _) = self.jumps.remove(&id).unwrap_or_default();
                        let mut next = head.clone();
                        merge(&mut next, &state);
                        merge(&mut next, &cont);
                        if next == head {
                            break;
                        }
                        head = next;
                    }
                    // After the loop (left only by its `break`s): what they leave.
                    let mut state = head;
                    self.block(body, &mut state, edit);
                    let (_, brk) = self.jumps.remove(&id).unwrap_or_default();
                    *pending = brk;
                }
                _ => {}
            }
            out.push(inst);
        }
        block.0 = out;
    }

    /// The accesses of one instruction: a role barrier before it when one of them conflicts
    /// with what is pending, then all of them pending.
    fn accesses(
        &mut self,
        accesses: &[(u32, ArrayAccess, SiteId)],
        pending: &mut Pending,
        out: &mut Vec<Inst>,
    ) {
        let conflict = accesses
            .iter()
            .find(|(array, access, _)| pending.get(array).is_some_and(|p| conflicts(p, *access)));
        if let Some(&(_, _, site)) = conflict {
            out.push(Inst::RoleBarrier { site });
            pending.clear();
        }
        for (array, access, _) in accesses {
            pending.entry(*array).or_default().insert(*access);
        }
    }
}

/// The marks in a parallel loop's body (nested blocks included), removed with `edit`.
fn take_marks(block: &mut Block, marks: &mut Vec<(u32, ArrayAccess, SiteId)>, edit: bool) {
    crate::ir::for_each_inst(block, &mut |i| {
        if let Inst::ArrayAccess {
            array,
            access,
            site,
        } = i
        {
            marks.push((*array, *access, *site));
        }
    });
    if edit {
        remove_marks(block);
    }
}

fn remove_marks(block: &mut Block) {
    block.0.retain(|i| !matches!(i, Inst::ArrayAccess { .. }));
    for inst in block.0.iter_mut() {
        match inst {
            Inst::If { then, else_, .. } => {
                remove_marks(then);
                remove_marks(else_);
            }
            Inst::Loop { body, .. } => remove_marks(body),
            Inst::Join { branches } => branches.iter_mut().for_each(remove_marks),
            Inst::ParFor(p) => {
                remove_marks(&mut p.body);
                if let Some(r) = p.reduce.as_mut() {
                    remove_marks(&mut r.combine);
                }
            }
            _ => {}
        }
    }
}
