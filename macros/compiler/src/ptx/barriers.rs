//! Barriers: a role's own barrier (its warps meet), barriers between roles, and one-shots (one
//! phase of a barrier, sent by one role and received by another).

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{RoleBarrier, SiteId};

impl Writer<'_> {
    /// All threads of the role meet, ordering their memory accesses.
    pub(super) fn role_barrier(&mut self, site: SiteId) -> WriteResult {
        let (index, warps, phase) = {
            let r = self.role()?;
            (r.index, r.warps, r.barrier_phase.clone())
        };
        match self.k.role_barriers.get(index).copied().flatten() {
            // The kernel's only role: every thread of the block meets, and one that exited
            // (through the role's abort exit) does not hold the others.
            Some(RoleBarrier::Block) if warps > 1 => self.line("bar.sync 0;"),
            Some(RoleBarrier::Mbarrier(offset)) if warps > 1 => {
                // An mbarrier, not a counted `bar.sync`: its wait watches the abort word, so a
                // role whose other warps stopped cannot hang here, where a counted `bar.sync`
                // would wait for a warp that exited.
                let smem = self.smem.clone();
                let addr = self.tmp(Class::B32);
                self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
                self.warp_arrive(&addr)?;
                self.wait(&addr, &phase, site)?;
                self.line(format!("xor.b32 {phase}, {phase}, 1;"))
            }
            _ => self.line("bar.warp.sync -1;"),
        }
    }

    /// Sends one-shot `oneshot`: the role's warps arrive on its barrier.
    pub(super) fn oneshot_signal(&mut self, oneshot: u32) -> WriteResult {
        let Some(kb) = self.k.oneshot_barrier(oneshot) else {
            return Err(no_oneshot(oneshot));
        };
        let (offset, name) = (kb.offset, kb.name.clone());
        let smem = self.smem.clone();
        let addr = self.tmp(Class::B32);
        writeln!(self.body, "    // send one-shot `{name}`")?;
        self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
        self.warp_arrive(&addr)
    }

    /// Receives one-shot `oneshot`: waits for its barrier's one phase.
    pub(super) fn oneshot_wait(&mut self, oneshot: u32, site: SiteId) -> WriteResult {
        let Some(kb) = self.k.oneshot_barrier(oneshot) else {
            return Err(no_oneshot(oneshot));
        };
        let (offset, name) = (kb.offset, kb.name.clone());
        let smem = self.smem.clone();
        let (addr, parity) = (self.tmp(Class::B32), self.tmp(Class::B32));
        writeln!(self.body, "    // receive one-shot `{name}`: its one phase")?;
        self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
        self.line(format!("mov.u32 {parity}, 0;"))?;
        self.wait(&addr, &parity, site)
    }

    /// Waits at barrier `barrier` between roles.
    pub(super) fn barrier_wait(&mut self, barrier: u32, site: SiteId) -> WriteResult {
        // The role's warps arrive (each after its own writes), then wait for the phase
        // to complete: every warp of every role that takes the barrier has arrived.
        let Some(kb) = self.k.barriers.get(barrier as usize) else {
            return Err(WriteError::inconsistent(
                format!("barrier b{barrier}"),
                "none",
            ));
        };
        let offset = kb.offset;
        let Some(phase) = self.role()?.kernel_barrier_phases.get(&barrier).cloned() else {
            return Err(WriteError::inconsistent(
                format!("a role that takes barrier b{barrier}"),
                "one that does not",
            ));
        };
        let smem = self.smem.clone();
        let addr = self.tmp(Class::B32);
        writeln!(self.body, "    // wait at barrier `{}`", kb.name)?;
        self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
        self.warp_arrive(&addr)?;
        self.wait(&addr, &phase, site)?;
        self.line(format!("xor.b32 {phase}, {phase}, 1;"))
    }
}

/// One-shot `oneshot`, whose barrier does not exist.
fn no_oneshot(oneshot: u32) -> WriteError {
    WriteError::inconsistent(format!("the barrier of one-shot o{oneshot}"), "none")
}
