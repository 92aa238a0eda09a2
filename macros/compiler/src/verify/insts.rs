//! The checks of each instruction, by kind: values and their types, memory, control flow,
//! channel ends, the role-level synchronization (`join!`, one-shots, barriers) and parallel
//! loops. [`Verifier::inst`] sends each instruction to its group.

use super::{Verifier, VerifyError as E};
use crate::ir::{
    BinOp, Inst, LoopId, MmaA, MmaLayout, ParFor, ParamKind, RecvEnd, RoleBarrier, RoleId,
    SiteKind, Space, UnOp, VoteMode,
};
use crate::types::Scalar;

impl Verifier<'_> {
    /// Checks `inst`, in role `role` (`None`: the prologue), inside the loops `loops` and, when
    /// `in_par`, in a parallel loop's body.
    pub(super) fn inst(
        &mut self,
        inst: &Inst,
        role: Option<RoleId>,
        loops: &mut Vec<LoopId>,
        in_par: bool,
    ) {
        match inst {
            Inst::Const { .. }
            | Inst::Special { .. }
            | Inst::Shuffle { .. }
            | Inst::Vote { .. }
            | Inst::Copy { .. }
            | Inst::Unary { .. }
            | Inst::Binary { .. }
            | Inst::Fma { .. }
            | Inst::Select { .. }
            | Inst::Bitcast { .. }
            | Inst::PackPair { .. }
            | Inst::RowReduce { .. }
            | Inst::Cast { .. } => self.value_inst(inst),
            Inst::Atomic { .. }
            | Inst::Load { .. }
            | Inst::Store { .. }
            | Inst::RoleStore { .. }
            | Inst::LoadCell { .. }
            | Inst::StoreCell { .. }
            | Inst::ConstAddr { .. }
            | Inst::ArrayAddr { .. }
            | Inst::ArrayAccess { .. }
            | Inst::LocalAddr { .. } => self.memory_inst(inst, role, in_par),
            Inst::PanicIf { .. }
            | Inst::If { .. }
            | Inst::Loop { .. }
            | Inst::Break(_)
            | Inst::Continue(_) => self.control_inst(inst, role, loops, in_par),
            Inst::Reserve { .. }
            | Inst::Close { .. }
            | Inst::Send { .. }
            | Inst::CopyIn { .. }
            | Inst::TileLoad { .. }
            | Inst::TileStore { .. }
            | Inst::CopyOut { .. }
            | Inst::Recv { .. }
            | Inst::Release { .. }
            | Inst::HeldSlot { .. }
            | Inst::CloseRecv { .. }
            | Inst::SelectRecv { .. }
            | Inst::SlotAddr { .. } => self.channel_inst(inst, role, in_par),
            Inst::Join { .. }
            | Inst::OneshotSignal { .. }
            | Inst::OneshotWait { .. }
            | Inst::BarrierWait { .. }
            | Inst::RoleBarrier { .. } => self.sync_inst(inst, role, in_par),
            Inst::ParFor(p) => self.par_for(p, role, in_par),
            Inst::Mma { .. }
            | Inst::MmaWait { .. }
            | Inst::AccStore { .. }
            | Inst::AccTile { .. }
            | Inst::RowsStore { .. } => self.mma_inst(inst, role, in_par),
        }
    }

    /// Tensor-core mmas: in role code of a role of whole warpgroups, outside parallel loops;
    /// the accumulator `n / 2` `f32`s, the descriptors `u64`s, the shape one `wgmma` has.
    fn mma_inst(&mut self, inst: &Inst, role: Option<RoleId>, in_par: bool) {
        let warps = role
            .and_then(|r| self.k.roles.get(r.0 as usize))
            .map(|x| (x.first_warp, x.end_warp));
        if in_par || !warps.is_some_and(|(a, b)| a % 4 == 0 && b % 4 == 0) {
            self.errors.push(E::MmaOutsideWarpgroups);
        }
        if let Inst::RowsStore {
            values,
            addr,
            rows_left,
            owner,
        } = inst
        {
            for &v in values {
                self.use_(v);
                self.expect_ty(v, Scalar::F32, "a stored row's value");
            }
            for v in [*addr, *rows_left] {
                self.use_(v);
                self.expect_ty(v, Scalar::Usize, "a rows store's address or extent");
            }
            self.use_(*owner);
            self.expect_ty(*owner, Scalar::Bool, "a rows store's owning lane");
        }
        if let Inst::AccTile {
            acc,
            elem,
            tile: (rows, cols),
            first,
            swizzle,
            block,
        } = inst
        {
            for &v in acc {
                self.use_(v);
                self.expect_ty(v, Scalar::F32, "a stored accumulator value");
            }
            for v in [*first, *swizzle, *block] {
                self.use_(v);
                self.expect_ty(v, Scalar::U32, "a tile store's address, swizzle or block");
            }
            // The tile holds the warpgroups' rows (64 each) and a whole number of its columns
            // divide the accumulator's.
            let n = 2 * acc.len() as u32;
            let fits = *rows % 64 == 0 && *cols % 8 == 0 && *cols > 0 && n % *cols == 0;
            if acc.len() % 4 != 0
                || !fits
                || !matches!(elem, Scalar::F32 | Scalar::Bf16 | Scalar::F16)
            {
                self.errors.push(E::MmaShape {
                    n,
                    values: acc.len(),
                });
            }
        }
        if let Inst::AccStore {
            acc,
            elem,
            addr,
            row_bytes,
            rows_left,
            cols_left,
            scale,
        } = inst
        {
            for v in scale.iter().flat_map(|(a, b)| [*a, *b]) {
                self.use_(v);
                self.expect_ty(v, Scalar::F32, "a scaled store's alpha or beta");
            }
            for &v in acc {
                self.use_(v);
                self.expect_ty(v, Scalar::F32, "a stored accumulator value");
            }
            for v in [*addr, *row_bytes, *rows_left, *cols_left] {
                self.use_(v);
                self.expect_ty(v, Scalar::Usize, "an accumulator store's address or extent");
            }
            if acc.len() % 4 != 0 || !matches!(elem, Scalar::F32 | Scalar::Bf16 | Scalar::F16) {
                self.errors.push(E::MmaShape {
                    n: 2 * acc.len() as u32,
                    values: acc.len(),
                });
            }
        }
        if let Inst::Mma {
            acc,
            a,
            b,
            n,
            elem,
            k_steps,
            b_layout,
        } = inst
        {
            for &v in acc {
                self.use_(v);
                self.expect_ty(v, Scalar::F32, "an mma's accumulator");
                self.def(v);
            }
            self.use_(*b);
            self.expect_ty(*b, Scalar::U32, "an mma's tile address");
            // A tile's layout, or whether the registers are 4 per K step.
            let (a_layout, a_regs_ok) = match a {
                MmaA::Tile { addr, layout } => {
                    self.use_(*addr);
                    self.expect_ty(*addr, Scalar::U32, "an mma's tile address");
                    (Some(*layout), true)
                }
                MmaA::Registers(regs) => {
                    for &v in regs {
                        self.use_(v);
                        self.expect_ty(v, Scalar::U32, "an mma's register A operand");
                    }
                    (None, regs.len() as u32 == 4 * *k_steps)
                }
            };
            let shape_ok = *n % 8 == 0
                && (8..=256).contains(n)
                && acc.len() as u32 == *n / 2
                && matches!(elem, Scalar::Bf16 | Scalar::F16)
                && *k_steps > 0
                // A is K-major; the column blocks of a K of more than 64 lie somewhere; an
                // N-major B comes in blocks of 64 columns.
                && a_regs_ok
                && a_layout.is_none_or(|l| matches!(l, MmaLayout::KMajor { .. }))
                && a_layout.iter().chain([b_layout]).all(|l| match *l {
                    MmaLayout::KMajor { block } => *k_steps <= 4 || block > 0,
                    MmaLayout::NMajor { block } => block > 0 && *n % 64 == 0,
                });
            if !shape_ok {
                self.errors.push(E::MmaShape {
                    n: *n,
                    values: acc.len(),
                });
            }
        }
    }

    /// Values: each operand defined and of the types the operation takes; shuffles and votes
    /// in lane loops.
    fn value_inst(&mut self, inst: &Inst) {
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
                    self.errors.push(E::ShuffleOutsideLanes);
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
                    self.errors.push(E::VoteOutsideLanes);
                }
                self.def(*dst);
            }
            Inst::Copy { dst, src } => {
                self.use_(*src);
                if self.ty(*dst) != self.ty(*src) {
                    self.errors.push(E::CopyTypes {
                        dst: *dst,
                        src: *src,
                    });
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
                    self.errors.push(E::UnaryOperand { op: *op, src: *src });
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
                    self.errors.push(E::BinaryOperands {
                        op: *op,
                        lhs: l,
                        rhs: r,
                        dst: d,
                    });
                }
                self.def(*dst);
            }
            Inst::Fma { dst, a, b, c } => {
                let ty = self.ty(*dst);
                if !ty.is_float() {
                    self.errors.push(E::FmaType { dst: *dst, ty });
                }
                for v in [*a, *b, *c] {
                    self.use_(v);
                    self.expect_ty(v, ty, "fma operand");
                }
                self.def(*dst);
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
                    self.errors.push(E::SelectTypes { dst: *dst });
                }
                self.def(*dst);
            }
            Inst::RowReduce { dst, acc, .. } => {
                for v in acc {
                    self.use_(*v);
                    self.expect_ty(*v, Scalar::F32, "an accumulator value");
                }
                for d in dst {
                    self.expect_ty(*d, Scalar::F32, "a row's value");
                    self.def(*d);
                }
            }
            Inst::PackPair { dst, lo, hi, elem } => {
                for v in [*lo, *hi] {
                    self.use_(v);
                    self.expect_ty(v, Scalar::F32, "a packed pair's value");
                }
                if !matches!(elem, Scalar::Bf16 | Scalar::F16) {
                    self.errors.push(E::MmaShape { n: 0, values: 0 });
                }
                self.expect_ty(*dst, Scalar::U32, "a packed pair");
                self.def(*dst);
            }
            Inst::Bitcast { dst, src } => {
                self.use_(*src);
                if self.ty(*dst).size() != self.ty(*src).size() || self.ty(*dst) == Scalar::Bool {
                    self.errors.push(E::BitcastSizes {
                        dst: *dst,
                        src: *src,
                    });
                }
                self.def(*dst);
            }
            Inst::Cast { dst, src } => {
                self.use_(*src);
                self.def(*dst);
            }
            // The other kinds go to the other groups (see `inst`).
            _ => {}
        }
    }

    /// Memory: addresses of the right type, atomics in parallel loops, stores to local memory
    /// only, shared values and tables that exist, shared values written by role code.
    fn memory_inst(&mut self, inst: &Inst, role: Option<RoleId>, in_par: bool) {
        match inst {
            Inst::Atomic {
                dst,
                op,
                space,
                addr,
                operands,
                once,
                ..
            } => {
                self.use_(*addr);
                let want = if *space == Space::Shared {
                    Scalar::U32
                } else {
                    Scalar::Usize
                };
                self.expect_ty(*addr, want, "atomic address");
                for v in operands {
                    self.use_(*v);
                }
                // A load gives each thread the value, so role code may load; any other
                // operation in role code runs once for the role, and in a parallel loop once
                // per iteration.
                let rmw = *op != crate::tir::AtomicOp::Load;
                if once.is_some() != (rmw && !in_par) || (once.is_some() && role.is_none()) {
                    self.errors.push(E::AtomicOnceOutsideRoleCode {
                        once: once.is_some(),
                    });
                }
                if let Some(d) = dst {
                    for v in operands {
                        self.expect_ty(*v, self.ty(*d), "atomic operand");
                    }
                    self.def(*d);
                }
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
                // A parallel loop writes elements by index: of a shared array, or of a slice.
                let by_index = in_par && matches!(space, Space::Shared | Space::Global);
                if *space != Space::Local && !by_index {
                    self.errors.push(E::StoreOutsideLocal { space: *space });
                }
                let want = if *space == Space::Shared {
                    Scalar::U32
                } else {
                    Scalar::Usize
                };
                self.expect_ty(*addr, want, "address");
            }
            Inst::ArrayAddr { dst, array } => {
                if *array as usize >= self.k.shared_arrays.len() {
                    self.errors.push(E::NoSharedArray { array: *array });
                }
                self.expect_ty(*dst, Scalar::U32, "shared array address");
                self.def(*dst);
            }
            Inst::ArrayAccess { array, .. } => {
                self.errors.push(E::ArrayAccessLeft { array: *array });
            }
            Inst::RoleStore { space, addr, value } => {
                self.use_(*addr);
                self.use_(*value);
                if in_par || role.is_none() {
                    self.errors.push(E::RoleStoreOutsideRole);
                }
                match space {
                    Space::Global => self.expect_ty(*addr, Scalar::Usize, "address"),
                    Space::Shared => self.expect_ty(*addr, Scalar::U32, "address"),
                    _ => self.errors.push(E::StoreOutsideLocal { space: *space }),
                }
            }
            Inst::LoadCell { dst, cell } => {
                match self.k.shared_cells.get(*cell as usize) {
                    Some(t) => self.expect_ty(*dst, *t, "shared value"),
                    None => self.errors.push(E::NoSharedValue { cell: *cell }),
                }
                self.def(*dst);
            }
            Inst::StoreCell { cell, value } => {
                self.use_(*value);
                if in_par || role.is_none() {
                    self.errors.push(E::SharedValueOutsideRole);
                }
                match self.k.shared_cells.get(*cell as usize) {
                    Some(t) => self.expect_ty(*value, *t, "shared value"),
                    None => self.errors.push(E::NoSharedValue { cell: *cell }),
                }
            }
            Inst::ConstAddr { dst, table } => {
                if *table as usize >= self.k.const_tables.len() {
                    self.errors.push(E::NoConstTable { table: *table });
                }
                self.expect_ty(*dst, Scalar::Usize, "constant address");
                self.def(*dst);
            }
            Inst::LocalAddr { dst, offset } => {
                if *offset >= self.k.local_bytes.max(1) {
                    self.errors.push(E::LocalAddressPastEnd { offset: *offset });
                }
                self.expect_ty(*dst, Scalar::Usize, "local address");
                self.def(*dst);
            }
            // The other kinds go to the other groups (see `inst`).
            _ => {}
        }
    }

    /// Control flow: conditions of type `bool`, `break` and `continue` of enclosing loops.
    fn control_inst(
        &mut self,
        inst: &Inst,
        role: Option<RoleId>,
        loops: &mut Vec<LoopId>,
        in_par: bool,
    ) {
        match inst {
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
            Inst::Break(id) | Inst::Continue(id) if !loops.contains(id) => {
                self.errors.push(E::NotEnclosingLoop { id: *id });
            }
            // The other kinds go to the other groups (see `inst`).
            _ => {}
        }
    }

    /// Channel ends: each used by the role that owns it, outside parallel loops; `select!` over
    /// 1 to 32 channels, in a role of one warp.
    fn channel_inst(&mut self, inst: &Inst, role: Option<RoleId>, in_par: bool) {
        match inst {
            Inst::Reserve { chan, site, some } => {
                self.site(*site, SiteKind::Wait);
                self.chan_end(*chan, role, true, in_par);
                if let Some(some) = some {
                    self.expect_ty(*some, Scalar::Bool, "reserve result");
                    self.def(*some);
                }
            }
            Inst::Close { chan, site } => {
                self.site(*site, SiteKind::Wait);
                self.chan_end(*chan, role, true, in_par)
            }
            Inst::HeldSlot { dst, chan, .. } => {
                self.chan_end(*chan, role, false, in_par);
                self.expect_ty(*dst, Scalar::U32, "held slot");
                self.def(*dst);
            }
            Inst::CloseRecv { chan, .. } => self.chan_end(*chan, role, false, in_par),
            Inst::Send { chan } => self.chan_end(*chan, role, true, in_par),
            Inst::TileLoad {
                chan,
                part,
                param,
                map,
                row,
                col,
            } => {
                self.chan_end(*chan, role, true, in_par);
                self.use_(*row);
                self.use_(*col);
                self.expect_ty(*row, Scalar::U32, "a tile load's row");
                self.expect_ty(*col, Scalar::U32, "a tile load's column");
                if !self.tile_map_fits(*chan, *part, (*param, *map)) {
                    self.errors.push(E::TileLoadMap {
                        channel: *chan,
                        param: *param,
                        map: *map,
                    });
                }
            }
            Inst::TileStore {
                chan,
                slot,
                param,
                map,
                row,
                col,
                rows,
                ..
            } => {
                self.chan_end(*chan, role, false, in_par);
                self.slot_value(*slot);
                self.use_(*row);
                self.use_(*col);
                self.expect_ty(*row, Scalar::U32, "a tile store's row");
                self.expect_ty(*col, Scalar::U32, "a tile store's column");
                if let Some(rows) = rows {
                    self.use_(*rows);
                    self.expect_ty(*rows, Scalar::U32, "a tile store's rows");
                }
                let mutable = matches!(
                    self.k.params.get(*param as usize).map(|p| &p.kind),
                    Some(ParamKind::Matrix { mutable: true, .. })
                );
                if !mutable || !self.tile_map_fits(*chan, 0, (*param, *map)) {
                    self.errors.push(E::TileStoreMap {
                        channel: *chan,
                        param: *param,
                        map: *map,
                    });
                }
            }
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
                slot,
                ..
            } => {
                self.chan_end(*chan, role, false, in_par);
                self.slot_value(*slot);
                self.use_(*dst);
                self.use_(*len);
                self.use_(*bulk);
                self.expect_ty(*dst, Scalar::Usize, "copy_to destination");
                self.expect_ty(*bulk, Scalar::Usize, "copy_to's bulk bytes");
            }
            Inst::Recv {
                chan,
                end,
                site,
                slot,
                ..
            } => {
                self.site(*site, SiteKind::Wait);
                self.chan_end(*chan, role, false, in_par);
                match end {
                    RecvEnd::Answer(some) => self.def(*some),
                    RecvEnd::Fail(fail) => self.site(*fail, SiteKind::Panic),
                }
                if let Some(slot) = slot {
                    self.expect_ty(*slot, Scalar::U32, "received slot");
                    self.def(*slot);
                }
            }
            Inst::Release { chan, slot, .. } => {
                self.chan_end(*chan, role, false, in_par);
                self.slot_value(*slot);
            }
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
                    self.errors.push(E::SelectInWideRole { role });
                }
                if chans.is_empty() || chans.len() > 32 {
                    self.errors.push(E::SelectChannels { count: chans.len() });
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
            Inst::SlotAddr {
                dst,
                chan,
                send,
                slot,
                ..
            } => {
                self.chan_end(*chan, role, *send, false);
                self.slot_value(*slot);
                self.expect_ty(*dst, Scalar::U32, "slot address");
                self.def(*dst);
            }
            // The other kinds go to the other groups (see `inst`).
            _ => {}
        }
    }

    /// A received slot's ring position, where an instruction names one: a `u32` defined before.
    fn slot_value(&mut self, slot: Option<crate::ir::Value>) {
        if let Some(slot) = slot {
            self.use_(slot);
            self.expect_ty(slot, Scalar::U32, "received slot");
        }
    }

    /// Synchronization in role code: `join!` branches that neither nest nor make the role's
    /// warps meet, one-shots sent and received by their roles, barriers waited at by the roles
    /// that take them, role barriers with their mbarrier.
    fn sync_inst(&mut self, inst: &Inst, role: Option<RoleId>, in_par: bool) {
        match inst {
            Inst::Join { branches } => {
                if in_par || role.is_none() {
                    self.errors.push(E::JoinOutsideRole);
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
                            self.errors.push(E::NestedJoin);
                        } else if meets && warps > 1 {
                            self.errors.push(E::JoinBranchMeetsRole);
                        }
                    });
                }
            }
            Inst::OneshotSignal { oneshot } => match self.k.oneshot_barrier(*oneshot) {
                Some(b) if role.is_some_and(|r| b.roles.contains(&r)) && !in_par => {}
                _ => self.errors.push(E::OneshotSender { oneshot: *oneshot }),
            },
            Inst::OneshotWait { oneshot, site } => {
                self.site(*site, SiteKind::Wait);
                match self.k.oneshot_barrier(*oneshot) {
                    Some(b) if role.is_some() && b.receiver == role && !in_par => {}
                    _ => self.errors.push(E::OneshotReceiver { oneshot: *oneshot }),
                }
            }
            Inst::BarrierWait { barrier, site } => {
                self.site(*site, SiteKind::Wait);
                match (self.k.barriers.get(*barrier as usize), role) {
                    (Some(b), Some(r)) if !in_par => {
                        if !b.roles.contains(&r) {
                            self.errors.push(E::BarrierNotTaken {
                                role: r,
                                barrier: *barrier,
                            });
                        }
                    }
                    (None, _) => self.errors.push(E::NoBarrier { barrier: *barrier }),
                    _ => self.errors.push(E::BarrierWaitOutsideRole),
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
                            .is_some_and(|b| match b {
                                RoleBarrier::Mbarrier(_) => true,
                                // `bar.sync 0` is every thread of the block's.
                                RoleBarrier::Block => self.k.roles.len() == 1,
                            });
                        if x.end_warp - x.first_warp > 1 && !has_barrier {
                            self.errors.push(E::NoRoleMbarrier {
                                role: r,
                                name: x.name.clone(),
                            });
                        }
                    }
                    _ => self.errors.push(E::RoleBarrierOutsideRole),
                }
            }
            // The other kinds go to the other groups (see `inst`).
            _ => {}
        }
    }

    /// A parallel loop: not nested, with sources of the right address types, and a reduction's
    /// values of the accumulator's type and its combining block without loops.
    fn par_for(&mut self, p: &ParFor, role: Option<RoleId>, in_par: bool) {
        if in_par {
            self.errors.push(E::NestedParallelLoop);
        }
        self.use_(p.len);
        if p.sources.is_empty() && p.index.is_none() {
            self.errors.push(E::ParallelLoopWithoutSources);
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
            if let Some(sc) = &r.scan {
                self.use_(sc.init);
                self.expect_ty(sc.init, self.ty(r.acc), "scan's initial value");
                match p.sources.get(sc.dst) {
                    Some(s) if s.write && s.elem == self.ty(r.acc) => {}
                    _ => self.errors.push(E::ScanDestination { dst: sc.dst }),
                }
            }
            self.def(r.acc);
        }
        if p.lanes && p.reduce.is_some() {
            self.errors.push(E::LaneLoopReduction);
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
                self.errors.push(E::CombineLoops);
            }
            self.block(&r.combine, role, &mut inner_loops, true);
            self.use_(r.out);
        }
    }
}
