//! The instruction dispatcher: each IR instruction goes to the method of the module that
//! writes its kind.

use super::error::WriteResult;
use super::Writer;
use crate::ir::{Block, Inst};

impl Writer<'_> {
    pub(super) fn block(&mut self, b: &Block) -> WriteResult {
        for inst in &b.0 {
            self.inst(inst)?;
        }
        Ok(())
    }

    /// One instruction.
    pub(super) fn inst(&mut self, inst: &Inst) -> WriteResult {
        match inst {
            Inst::Const { dst, imm } => self.constant(*dst, imm),
            Inst::Copy { dst, src } => self.copy(*dst, *src),
            Inst::Unary { dst, op, src } => self.unary(*dst, *op, *src),
            Inst::Binary { dst, op, lhs, rhs } => self.binary(*dst, *op, *lhs, *rhs),
            Inst::Cast { dst, src } => self.cast(*dst, *src),
            Inst::Select {
                dst,
                cond,
                if_true,
                if_false,
            } => self.select(*dst, *cond, *if_true, *if_false),
            Inst::Bitcast { dst, src } => self.bitcast(*dst, *src),
            Inst::Fma { dst, a, b, c } => self.fma(*dst, *a, *b, *c),
            Inst::Load { dst, space, addr } => self.load_value(*dst, *space, *addr),
            Inst::Store { space, addr, value } => self.store_value(*space, *addr, *value),
            Inst::LocalAddr { dst, offset } => self.local_addr(*dst, *offset),
            Inst::ConstAddr { dst, table } => self.const_addr(*dst, *table),
            Inst::LoadCell { dst, cell } => self.load_cell(*dst, *cell),
            Inst::StoreCell { cell, value } => self.store_cell(*cell, *value),
            Inst::Atomic {
                dst,
                op,
                space,
                addr,
                operands,
                order,
                once,
            } => match once {
                None => self.atomic(*dst, *op, *space, *addr, operands, *order),
                Some(site) => self.atomic_once(*dst, *op, *space, *addr, operands, *order, *site),
            },
            Inst::ArrayAddr { dst, array } => self.array_addr(*dst, *array),
            Inst::ArrayAccess { array, .. } => Err(super::error::WriteError::inconsistent(
                "no shared-array access marks after lowering",
                format!("a mark of a{array}"),
            )),
            Inst::Special { dst, reg } => self.special(*dst, *reg),
            Inst::Shuffle {
                dst,
                mode,
                value,
                operand,
            } => self.shuffle(*dst, *mode, *value, *operand),
            Inst::Vote { dst, mode, pred } => self.vote(*dst, *mode, *pred),
            Inst::PanicIf { cond, site } => self.panic_if(*cond, *site),
            Inst::If { cond, then, else_ } => self.if_else(*cond, then, else_),
            Inst::Loop { id, body } => self.loop_(*id, body),
            Inst::Break(id) => self.break_(*id),
            Inst::Continue(id) => self.continue_(*id),
            Inst::Reserve { chan, site, some } => self.reserve(*chan, *site, *some),
            Inst::SlotAddr {
                dst,
                chan,
                send,
                slot,
                rx,
            } => self.slot_addr(*dst, *chan, *send, *slot, *rx),
            Inst::HeldSlot { dst, chan, rx } => self.held_slot(*dst, *chan, *rx),
            Inst::CloseRecv { chan, rx } => self.close_receiver(*chan, *rx),
            Inst::RoleStore { space, addr, value } => self.role_store(*space, *addr, *value),
            Inst::Send { chan } => self.send(*chan),
            Inst::Close { chan, site } => self.close(*chan, *site),
            Inst::Recv {
                chan,
                end,
                site,
                slot,
                rx,
            } => self.recv(*chan, *end, *site, *slot, *rx),
            Inst::Release { chan, slot, rx } => self.release(*chan, *slot, *rx),
            Inst::CopyIn {
                chan,
                src,
                len,
                bulk,
            } => self.copy_in(*chan, *src, *len, *bulk),
            Inst::TileLoad {
                chan,
                part,
                param,
                map,
                row,
                col,
            } => self.tile_load((*chan, *part), (*param, *map), *row, *col),
            Inst::TileStore {
                chan,
                slot,
                rx,
                param,
                map,
                row,
                col,
                rows,
            } => self.tile_store((*chan, *slot, *rx), (*param, *map), [*row, *col], *rows),
            Inst::CopyOut {
                chan,
                dst,
                len,
                bulk,
                slot,
                rx,
            } => self.copy_out(*chan, *dst, *len, *bulk, (*slot, *rx)),
            Inst::AccTile {
                acc,
                elem,
                tile,
                first,
                swizzle,
                block,
            } => self.acc_tile(acc, *elem, *tile, (*first, *swizzle), *block),
            Inst::Mma {
                acc,
                a,
                b,
                n,
                elem,
                k_steps,
                b_layout,
            } => self.mma(acc, (a, (*b, *b_layout)), *n, *elem, *k_steps),
            Inst::PackPair { dst, lo, hi, elem } => self.pack_pair(*dst, (*lo, *hi), *elem),
            Inst::RowReduce { dst, acc, max } => self.row_reduce(*dst, acc, *max),
            Inst::RowsStore {
                values,
                addr,
                rows_left,
                owner,
            } => self.rows_store(*values, *addr, *rows_left, *owner),
            Inst::MmaWait { pending } => self.mma_wait(*pending),
            Inst::AccStore {
                acc,
                elem,
                addr,
                row_bytes,
                rows_left,
                cols_left,
                scale,
            } => self.acc_store(
                acc,
                *elem,
                (*addr, *row_bytes),
                (*rows_left, *cols_left),
                *scale,
            ),
            Inst::RoleBarrier { site } => self.role_barrier(*site),
            Inst::OneshotSignal { oneshot } => self.oneshot_signal(*oneshot),
            Inst::OneshotWait { oneshot, site } => self.oneshot_wait(*oneshot, *site),
            Inst::BarrierWait { barrier, site } => self.barrier_wait(*barrier, *site),
            Inst::ParFor(p) => self.par_for(p),
            Inst::Join { branches } => self.join(branches),
            Inst::SelectRecv {
                chans,
                enabled,
                chosen,
                some,
                site,
            } => self.select_recv(chans, *enabled, *chosen, *some, *site),
        }
    }
}
