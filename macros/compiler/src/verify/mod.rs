//! Phase 4, verify: the invariants of the role/channel IR, checked before any PTX is written.
//!
//! A failure here is a compiler bug, not a user error: it is reported as an internal error on the
//! kernel's name rather than emitting a kernel that could hang or race.

use std::collections::HashSet;

use crate::ir::{
    BinOp, Block, Inst, Kernel, LoopId, ParamKind, RoleId, SiteId, SiteKind, Space, UnOp, Value,
    VoteMode,
};
use crate::types::Scalar;

/// Checks `k`; returns every violated invariant.
pub fn verify(k: &Kernel) -> Vec<String> {
    let mut v = Verifier {
        k,
        errors: Vec::new(),
        defined: HashSet::new(),
        in_lanes: false,
    };
    v.kernel();
    v.errors.extend(crate::registers::invariants(k));
    v.errors
}

struct Verifier<'k> {
    k: &'k Kernel,
    errors: Vec<String>,
    defined: HashSet<Value>,
    /// Inside a lane loop, where shuffles and votes belong.
    in_lanes: bool,
}

impl Verifier<'_> {
    fn kernel(&mut self) {
        let k = self.k;
        if k.warps == 0 || k.warps > 32 {
            self.errors.push(format!("{} warps per block", k.warps));
        }
        let mut owner = vec![None; k.warps as usize];
        for (i, r) in k.roles.iter().enumerate() {
            if r.first_warp >= r.end_warp || r.end_warp > k.warps {
                self.errors.push(format!(
                    "role {} has warps {}..{}",
                    r.name, r.first_warp, r.end_warp
                ));
                continue;
            }
            for w in r.first_warp..r.end_warp {
                if let Some(o) = owner[w as usize].replace(i) {
                    self.errors
                        .push(format!("warp {w} belongs to roles {o} and {i}"));
                }
            }
        }
        if !k.idle_warps && owner.iter().any(Option::is_none) {
            self.errors.push("a warp runs no role".into());
        }
        if k.shared_bytes > crate::target::SHARED_LIMIT {
            self.errors
                .push(format!("{} B of shared memory", k.shared_bytes));
        }
        for (i, c) in k.channels.iter().enumerate() {
            if c.producer.is_none()
                || c.consumers.is_empty()
                || c.producer.is_some_and(|p| c.consumers.contains(&p))
            {
                self.errors.push(format!(
                    "channel {i} needs distinct producer and consumer roles"
                ));
            }
            if c.data_offset % 128 != 0
                || c.full_offset % 8 != 0
                || c.empty_offset % 8 != 0
                || c.state_offset % 4 != 0
            {
                self.errors.push(format!("channel {i} is misaligned"));
            }
            let end = u64::from(c.data_offset) + u64::from(c.slot_stride) * u64::from(c.ty.depth);
            if end > u64::from(k.shared_bytes)
                || u64::from(c.state_offset) + 4 * u64::from(c.ty.depth) > u64::from(k.shared_bytes)
            {
                self.errors
                    .push(format!("channel {i} lies outside the shared memory"));
            }
        }
        for p in &k.params {
            match p.kind {
                ParamKind::Scalar(v) => {
                    self.defined.insert(v);
                }
                ParamKind::Slice { ptr, len, .. } => {
                    self.expect_ty(ptr, Scalar::Usize, "slice address");
                    self.expect_ty(len, Scalar::Usize, "slice length");
                    self.defined.insert(ptr);
                    self.defined.insert(len);
                }
            }
        }
        let mut loops = Vec::new();
        self.block(&k.prologue, None, &mut loops, false);
        let prologue_defs = self.defined.clone();
        for (i, r) in k.roles.iter().enumerate() {
            self.defined = prologue_defs.clone();
            self.block(&r.body, Some(RoleId(i as u32)), &mut loops, false);
        }
    }

    fn site(&mut self, site: SiteId, kind: SiteKind) {
        match self.k.sites.get(site.0 as usize) {
            Some(s) if s.kind == kind => {}
            Some(s) => self.errors.push(format!(
                "{site} is a {:?} site where a {kind:?} site is needed",
                s.kind
            )),
            None => self.errors.push(format!("{site} does not exist")),
        }
    }

    fn expect_ty(&mut self, v: Value, ty: Scalar, what: &str) {
        match self.k.values.get(v.0 as usize) {
            Some(info) if info.ty == ty => {}
            Some(info) => self.errors.push(format!(
                "{what} {v} is a {} where a {ty} is needed",
                info.ty
            )),
            None => self.errors.push(format!("{what} {v} is not declared")),
        }
    }

    fn use_(&mut self, v: Value) {
        if (v.0 as usize) >= self.k.values.len() {
            self.errors.push(format!("{v} is not declared"));
        } else if !self.defined.contains(&v) {
            self.errors
                .push(format!("{v} is used before it is defined"));
        }
    }

    fn def(&mut self, v: Value) {
        if (v.0 as usize) >= self.k.values.len() {
            self.errors.push(format!("{v} is not declared"));
        }
        self.defined.insert(v);
    }

    fn ty(&self, v: Value) -> Scalar {
        self.k
            .values
            .get(v.0 as usize)
            .map_or(Scalar::Bool, |i| i.ty)
    }

    fn block(&mut self, b: &Block, role: Option<RoleId>, loops: &mut Vec<LoopId>, in_par: bool) {
        for inst in &b.0 {
            self.inst(inst, role, loops, in_par);
        }
    }

    fn chan_end(
        &mut self,
        chan: crate::ir::ChannelId,
        role: Option<RoleId>,
        sender: bool,
        in_par: bool,
    ) {
        if in_par {
            self.errors.push(format!(
                "channel operation on {chan} inside a parallel loop"
            ));
        }
        let Some(c) = self.k.channels.get(chan.0 as usize) else {
            self.errors.push(format!("{chan} does not exist"));
            return;
        };
        let owns = match role {
            Some(r) if sender => c.producer == Some(r),
            Some(r) => c.consumers.contains(&r),
            None => false,
        };
        if !owns {
            self.errors.push(format!(
                "{chan} is used by a role that does not own that end"
            ));
        }
    }

    fn inst(&mut self, inst: &Inst, role: Option<RoleId>, loops: &mut Vec<LoopId>, in_par: bool) {
        match inst {
            Inst::Const { dst, .. } | Inst::Special { dst, .. } => self.def(*dst),
            Inst::Shuffle {
                dst,
                value,
                operand,
                ..
            } => {
                self.use_(*value);
                self.use_(*operand);
                self.expect_ty(*operand, Scalar::U32, "shuffle operand");
                self.expect_ty(*dst, self.ty(*value), "shuffle result");
                if !self.in_lanes {
                    self.errors.push("a shuffle outside a lane loop".into());
                }
                self.def(*dst);
            }
            Inst::Vote { dst, mode, pred } => {
                self.use_(*pred);
                self.expect_ty(*pred, Scalar::Bool, "vote predicate");
                let want = match mode {
                    VoteMode::Ballot => Scalar::U32,
                    VoteMode::All | VoteMode::Any => Scalar::Bool,
                };
                self.expect_ty(*dst, want, "vote result");
                if !self.in_lanes {
                    self.errors.push("a vote outside a lane loop".into());
                }
                self.def(*dst);
            }
            Inst::Copy { dst, src } => {
                self.use_(*src);
                if self.ty(*dst) != self.ty(*src) {
                    self.errors
                        .push(format!("copy {dst} = {src} between types"));
                }
                self.def(*dst);
            }
            Inst::Unary { dst, op, src } => {
                self.use_(*src);
                let ty = self.ty(*src);
                let ok = match op {
                    UnOp::Neg => ty.is_float() || ty.is_signed() || ty.is_half(),
                    UnOp::Not => ty == Scalar::Bool || ty.is_int(),
                    UnOp::Abs => ty.is_float() || ty.is_signed(),
                    UnOp::Sqrt | UnOp::Floor | UnOp::Ceil | UnOp::Trunc => ty.is_float(),
                    UnOp::Ex2Approx | UnOp::Lg2Approx => ty == Scalar::F32,
                };
                if self.ty(*dst) != ty || !ok {
                    self.errors.push(format!("bad unary {op:?} on {src}"));
                }
                self.def(*dst);
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                self.use_(*lhs);
                self.use_(*rhs);
                let (l, r, d) = (self.ty(*lhs), self.ty(*rhs), self.ty(*dst));
                let ok = match op {
                    BinOp::Shl | BinOp::Shr => l.is_int() && r.is_int() && d == l,
                    o if o.is_comparison() => l == r && d == Scalar::Bool,
                    _ => l == r && d == l,
                };
                if !ok {
                    self.errors
                        .push(format!("bad operand types for {op:?}: {l}, {r} -> {d}"));
                }
                self.def(*dst);
            }
            Inst::Fma { dst, a, b, c } => {
                let ty = self.ty(*dst);
                if !ty.is_float() {
                    self.errors.push(format!("fma {dst} of type {ty}"));
                }
                for v in [*a, *b, *c] {
                    self.use_(v);
                    self.expect_ty(v, ty, "fma operand");
                }
                self.def(*dst);
            }
            Inst::Atomic {
                dst,
                addr,
                operands,
                ..
            } => {
                self.use_(*addr);
                self.expect_ty(*addr, Scalar::Usize, "atomic address");
                for v in operands {
                    self.use_(*v);
                }
                if !in_par {
                    self.errors
                        .push("an atomic operation outside a parallel loop".into());
                }
                if let Some(d) = dst {
                    for v in operands {
                        self.expect_ty(*v, self.ty(*d), "atomic operand");
                    }
                    self.def(*d);
                }
            }
            Inst::Select {
                dst,
                cond,
                if_true,
                if_false,
            } => {
                self.use_(*cond);
                self.use_(*if_true);
                self.use_(*if_false);
                self.expect_ty(*cond, Scalar::Bool, "select condition");
                let ty = self.ty(*dst);
                if self.ty(*if_true) != ty || self.ty(*if_false) != ty {
                    self.errors.push(format!("select {dst} between types"));
                }
                self.def(*dst);
            }
            Inst::Bitcast { dst, src } => {
                self.use_(*src);
                if self.ty(*dst).size() != self.ty(*src).size() || self.ty(*dst) == Scalar::Bool {
                    self.errors
                        .push(format!("bitcast {dst} = {src} between sizes"));
                }
                self.def(*dst);
            }
            Inst::Cast { dst, src } => {
                self.use_(*src);
                self.def(*dst);
            }
            Inst::Load { dst, space, addr } => {
                self.use_(*addr);
                let want = if *space == Space::Shared {
                    Scalar::U32
                } else {
                    Scalar::Usize
                };
                self.expect_ty(*addr, want, "address");
                self.def(*dst);
            }
            Inst::Store { space, addr, value } => {
                self.use_(*addr);
                self.use_(*value);
                if *space != Space::Local {
                    self.errors.push("a store outside local memory".into());
                }
                self.expect_ty(*addr, Scalar::Usize, "address");
            }
            Inst::LoadCell { dst, cell } => {
                match self.k.shared_cells.get(*cell as usize) {
                    Some(t) => self.expect_ty(*dst, *t, "shared value"),
                    None => self
                        .errors
                        .push(format!("shared value {cell} does not exist")),
                }
                self.def(*dst);
            }
            Inst::StoreCell { cell, value } => {
                self.use_(*value);
                if in_par || role.is_none() {
                    self.errors
                        .push("a shared value is written outside role code".into());
                }
                match self.k.shared_cells.get(*cell as usize) {
                    Some(t) => self.expect_ty(*value, *t, "shared value"),
                    None => self
                        .errors
                        .push(format!("shared value {cell} does not exist")),
                }
            }
            Inst::ConstAddr { dst, table } => {
                if *table as usize >= self.k.const_tables.len() {
                    self.errors
                        .push(format!("constant table {table} does not exist"));
                }
                self.expect_ty(*dst, Scalar::Usize, "constant address");
                self.def(*dst);
            }
            Inst::LocalAddr { dst, offset } => {
                if *offset >= self.k.local_bytes.max(1) {
                    self.errors
                        .push(format!("local address {offset} past the local memory"));
                }
                self.expect_ty(*dst, Scalar::Usize, "local address");
                self.def(*dst);
            }
            Inst::PanicIf { cond, site } => {
                self.site(*site, SiteKind::Panic);
                self.use_(*cond);
                self.expect_ty(*cond, Scalar::Bool, "condition");
            }
            Inst::If { cond, then, else_ } => {
                self.use_(*cond);
                self.expect_ty(*cond, Scalar::Bool, "condition");
                self.block(then, role, loops, in_par);
                self.block(else_, role, loops, in_par);
            }
            Inst::Loop { id, body } => {
                loops.push(*id);
                self.block(body, role, loops, in_par);
                loops.pop();
            }
            Inst::Break(id) | Inst::Continue(id) => {
                if !loops.contains(id) {
                    self.errors.push(format!("{id} is not an enclosing loop"));
                }
            }
            Inst::Reserve { chan, site } | Inst::Close { chan, site } => {
                self.site(*site, SiteKind::Wait);
                self.chan_end(*chan, role, true, in_par)
            }
            Inst::Send { chan } => self.chan_end(*chan, role, true, in_par),
            Inst::CopyIn {
                chan,
                src,
                len,
                bulk,
            } => {
                self.chan_end(*chan, role, true, in_par);
                self.use_(*src);
                self.use_(*len);
                self.use_(*bulk);
                self.expect_ty(*bulk, Scalar::Usize, "copy_from's bulk bytes");
            }
            Inst::CopyOut {
                chan,
                dst,
                len,
                bulk,
            } => {
                self.chan_end(*chan, role, false, in_par);
                self.use_(*dst);
                self.use_(*len);
                self.use_(*bulk);
                self.expect_ty(*dst, Scalar::Usize, "copy_to destination");
                self.expect_ty(*bulk, Scalar::Usize, "copy_to's bulk bytes");
            }
            Inst::Recv { chan, some, site } => {
                self.site(*site, SiteKind::Wait);
                self.chan_end(*chan, role, false, in_par);
                self.def(*some);
            }
            Inst::Release { chan } => self.chan_end(*chan, role, false, in_par),
            Inst::SelectRecv {
                chans,
                enabled,
                chosen,
                some,
                site,
            } => {
                self.site(*site, SiteKind::Wait);
                let warps = role
                    .and_then(|r| self.k.roles.get(r.0 as usize))
                    .map_or(1, |x| x.end_warp - x.first_warp);
                if warps > 1 {
                    self.errors
                        .push("a select in a role of several warps".into());
                }
                if chans.is_empty() || chans.len() > 32 {
                    self.errors
                        .push(format!("select over {} channels", chans.len()));
                }
                for c in chans {
                    self.chan_end(*c, role, false, in_par);
                }
                self.use_(*enabled);
                self.expect_ty(*enabled, Scalar::U32, "select mask");
                self.expect_ty(*chosen, Scalar::U32, "select choice");
                self.expect_ty(*some, Scalar::Bool, "select result");
                self.def(*chosen);
                self.def(*some);
            }
            Inst::Join { branches } => {
                if in_par || role.is_none() {
                    self.errors.push("a join outside role code".into());
                }
                let warps = role
                    .and_then(|r| self.k.roles.get(r.0 as usize))
                    .map_or(1, |x| x.end_warp - x.first_warp);
                for b in branches {
                    // A branch is left only at its end: the state machine has no way to jump
                    // from one branch to a loop around the join.
                    let mut inner = Vec::new();
                    self.block(b, role, &mut inner, in_par);
                    crate::ir::for_each_inst(b, &mut |i| {
                        let meets = i.meets_role_threads();
                        if matches!(i, Inst::Join { .. }) {
                            self.errors.push("a join inside a join".into());
                        } else if meets && warps > 1 {
                            self.errors.push(
                                "a join branch meets the role's other warps (a role barrier)"
                                    .into(),
                            );
                        }
                    });
                }
            }
            Inst::SlotAddr { dst, chan, send } => {
                self.chan_end(*chan, role, *send, false);
                self.expect_ty(*dst, Scalar::U32, "slot address");
                self.def(*dst);
            }
            Inst::OneshotSignal { oneshot } => match self.k.oneshot_barrier(*oneshot) {
                Some(b) if role.is_some_and(|r| b.roles.contains(&r)) && !in_par => {}
                _ => self.errors.push(format!(
                    "one-shot o{oneshot} is sent outside its sender role"
                )),
            },
            Inst::OneshotWait { oneshot, site } => {
                self.site(*site, SiteKind::Wait);
                match self.k.oneshot_barrier(*oneshot) {
                    Some(b) if role.is_some() && b.receiver == role && !in_par => {}
                    _ => self.errors.push(format!(
                        "one-shot o{oneshot} is received outside its receiver role"
                    )),
                }
            }
            Inst::BarrierWait { barrier, site } => {
                self.site(*site, SiteKind::Wait);
                match (self.k.barriers.get(*barrier as usize), role) {
                    (Some(b), Some(r)) if !in_par => {
                        if !b.roles.contains(&r) {
                            self.errors.push(format!(
                                "role {} waits at barrier b{barrier}, which it does not take",
                                r.0
                            ));
                        }
                    }
                    (None, _) => self
                        .errors
                        .push(format!("barrier b{barrier} does not exist")),
                    _ => self.errors.push("a barrier wait outside role code".into()),
                }
            }
            Inst::RoleBarrier { site } => {
                self.site(*site, SiteKind::Wait);
                match role.and_then(|r| self.k.roles.get(r.0 as usize).map(|x| (r, x))) {
                    Some((r, x)) if !in_par => {
                        let has_barrier = self
                            .k
                            .role_barriers
                            .get(r.0 as usize)
                            .copied()
                            .flatten()
                            .is_some();
                        if x.end_warp - x.first_warp > 1 && !has_barrier {
                            self.errors.push(format!(
                                "role {} has a role barrier but no mbarrier for it",
                                x.name
                            ));
                        }
                    }
                    _ => self.errors.push("a role barrier outside role code".into()),
                }
            }
            Inst::ParFor(p) => {
                if in_par {
                    self.errors.push("nested parallel loop".into());
                }
                self.use_(p.len);
                if p.sources.is_empty() {
                    self.errors.push("parallel loop without sources".into());
                }
                for s in &p.sources {
                    self.use_(s.base);
                    let want = if s.space == Space::Global {
                        Scalar::Usize
                    } else {
                        Scalar::U32
                    };
                    self.expect_ty(s.base, want, "source address");
                    self.expect_ty(s.elem_value, s.elem, "element");
                    self.def(s.elem_value);
                }
                if let Some(i) = p.index {
                    self.def(i);
                }
                let mut inner_loops = Vec::new();
                if let Some(r) = &p.reduce {
                    self.use_(r.identity);
                    self.def(r.acc);
                }
                if p.lanes && p.reduce.is_some() {
                    self.errors.push("a lane loop with a reduction".into());
                }
                let outer = std::mem::replace(&mut self.in_lanes, p.lanes);
                self.block(&p.body, role, &mut inner_loops, true);
                self.in_lanes = outer;
                if let Some(r) = &p.reduce {
                    self.use_(r.item);
                    self.def(r.lhs);
                    self.def(r.rhs);
                    let ty = self.ty(r.acc);
                    for v in [r.item, r.identity, r.lhs, r.rhs, r.out] {
                        self.expect_ty(v, ty, "reduction value");
                    }
                    let mut loops = false;
                    crate::ir::for_each_inst(&r.combine, &mut |i| {
                        loops |= matches!(i, Inst::Loop { .. } | Inst::ParFor(_));
                    });
                    if loops {
                        self.errors.push("a reduction's combine block loops".into());
                    }
                    self.block(&r.combine, role, &mut inner_loops, true);
                    self.use_(r.out);
                }
            }
        }
    }
}
