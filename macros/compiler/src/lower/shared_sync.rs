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
    let mut marked = false;
    crate::ir::for_each_inst(body, &mut |i| {
        marked |= matches!(i, Inst::ArrayAccess { .. });
    });
    if !marked {
        return;
    }
    let mut pass = Pass {
        warps,
        jumps: HashMap::new(),
        loops: HashMap::new(),
    };
    let mut pending = Pending::new();
    pass.block(body, &mut pending);
}

/// What walking a loop from one state leaves: the state after it (what its `break`s leave) and
/// the `continue`s and `break`s of the loops around it that it makes.
type LoopFlow = (Pending, HashMap<LoopId, (Pending, Pending)>);

struct Pass {
    warps: u32,
    /// Per loop: what its `continue`s and its `break`s leave pending.
    jumps: HashMap<LoopId, (Pending, Pending)>,
    /// Per loop and state at its entry, what [`Pass::flow`] found: a loop nested in others is
    /// walked once per state it is entered with, not once per iteration of each fixpoint around
    /// it (which would be exponential in the nesting).
    loops: HashMap<(LoopId, Pending), LoopFlow>,
}

impl Pass {
    /// Notes what a `continue` (`to_head`) or a `break` of loop `id` leaves pending.
    fn jump(&mut self, id: LoopId, pending: &Pending, to_head: bool) {
        let (cont, brk) = self.jumps.entry(id).or_default();
        merge(if to_head { cont } else { brk }, pending);
    }

    /// Walks `block` from `pending`, inserting the barriers and removing the marks.
    fn block(&mut self, block: &mut Block, pending: &mut Pending) {
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
                    self.accesses(&accesses, pending, Some(&mut out));
                    continue;
                }
                Inst::ParFor(p) => {
                    let mut marks = Vec::new();
                    take_marks(&p.body, &mut marks);
                    remove_marks(&mut p.body);
                    if let Some(r) = p.reduce.as_mut() {
                        take_marks(&r.combine, &mut marks);
                        remove_marks(&mut r.combine);
                    }
                    self.par_for(&marks, p.reduce.is_some(), pending, Some(&mut out));
                }
                Inst::If { then, else_, .. } => {
                    let mut other = pending.clone();
                    self.block(then, pending);
                    self.block(else_, &mut other);
                    merge(pending, &other);
                }
                Inst::Join { branches } => {
                    let start = pending.clone();
                    for b in branches {
                        let mut mine = start.clone();
                        self.block(b, &mut mine);
                        merge(pending, &mine);
                    }
                }
                Inst::Loop { id, body } => {
                    let id = *id;
                    let (mut state, _) = self.loop_head(id, body, pending);
                    self.block(body, &mut state);
                    // After the loop (left only by its `break`s): what they leave.
                    let (_, brk) = self.jumps.remove(&id).unwrap_or_default();
                    *pending = brk;
                }
                other => self.step(other, pending),
            }
            out.push(inst);
        }
        block.0 = out;
    }

    /// [`Pass::block`] without changing anything: what `block` leaves pending from `pending`.
    fn flow(&mut self, block: &Block, pending: &mut Pending) {
        for inst in &block.0 {
            match inst {
                Inst::ArrayAccess {
                    array,
                    access,
                    site,
                } => self.accesses(&[(*array, *access, *site)], pending, None),
                Inst::ParFor(p) => {
                    let mut marks = Vec::new();
                    take_marks(&p.body, &mut marks);
                    if let Some(r) = &p.reduce {
                        take_marks(&r.combine, &mut marks);
                    }
                    self.par_for(&marks, p.reduce.is_some(), pending, None);
                }
                Inst::If { then, else_, .. } => {
                    let mut other = pending.clone();
                    self.flow(then, pending);
                    self.flow(else_, &mut other);
                    merge(pending, &other);
                }
                Inst::Join { branches } => {
                    let start = pending.clone();
                    for b in branches {
                        let mut mine = start.clone();
                        self.flow(b, &mut mine);
                        merge(pending, &mine);
                    }
                }
                Inst::Loop { id, body } => {
                    let key = (*id, pending.clone());
                    let (after, outer) = match self.loops.get(&key) {
                        Some(known) => known.clone(),
                        None => {
                            let around = std::mem::take(&mut self.jumps);
                            let (_, brk) = self.loop_head(*id, body, pending);
                            let outer = std::mem::replace(&mut self.jumps, around);
                            self.loops.insert(key, (brk.clone(), outer.clone()));
                            (brk, outer)
                        }
                    };
                    for (outer_id, (cont, brk)) in &outer {
                        self.jump(*outer_id, cont, true);
                        self.jump(*outer_id, brk, false);
                    }
                    *pending = after;
                }
                other => self.step(other, pending),
            }
        }
    }

    /// What an instruction without blocks or marks does to `pending`.
    fn step(&mut self, inst: &Inst, pending: &mut Pending) {
        match inst {
            Inst::RoleBarrier { .. } | Inst::BarrierWait { .. } => pending.clear(),
            Inst::Break(id) => self.jump(*id, pending, false),
            Inst::Continue(id) => self.jump(*id, pending, true),
            _ => {}
        }
    }

    /// The head's state of loop `id` entered with `entry` pending: what the entry, the end of
    /// an iteration and its `continue`s leave pending, to a fixpoint; and what its `break`s
    /// leave from there.
    fn loop_head(&mut self, id: LoopId, body: &Block, entry: &Pending) -> (Pending, Pending) {
        let mut head = entry.clone();
        loop {
            self.jumps.remove(&id);
            let mut state = head.clone();
            self.flow(body, &mut state);
            let (cont, brk) = self.jumps.remove(&id).unwrap_or_default();
            let mut next = head.clone();
            merge(&mut next, &state);
            merge(&mut next, &cont);
            if next == head {
                return (head, brk);
            }
            head = next;
        }
    }

    /// A parallel loop with the marks of its body: its accesses, then a reduction of several
    /// warps clears what is pending.
    fn par_for(
        &mut self,
        marks: &[(u32, ArrayAccess, SiteId)],
        reduces: bool,
        pending: &mut Pending,
        out: Option<&mut Vec<Inst>>,
    ) {
        self.accesses(marks, pending, out);
        if reduces && self.warps > 1 {
            pending.clear();
        }
    }

    /// The accesses of one instruction: a role barrier before it (into `out`, when editing)
    /// when one of them conflicts with what is pending, then all of them pending.
    fn accesses(
        &mut self,
        accesses: &[(u32, ArrayAccess, SiteId)],
        pending: &mut Pending,
        out: Option<&mut Vec<Inst>>,
    ) {
        let conflict = accesses
            .iter()
            .find(|(array, access, _)| pending.get(array).is_some_and(|p| conflicts(p, *access)));
        if let Some(&(_, _, site)) = conflict {
            if let Some(out) = out {
                out.push(Inst::RoleBarrier { site });
            }
            pending.clear();
        }
        for (array, access, _) in accesses {
            pending.entry(*array).or_default().insert(*access);
        }
    }
}

/// The marks in a parallel loop's body (nested blocks included).
fn take_marks(block: &Block, marks: &mut Vec<(u32, ArrayAccess, SiteId)>) {
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
