//! The channel protocol: each end's ring registers ([`Ring`]), the instructions on a channel
//! (`reserve`, `send`, `close`, `recv`, `release`, a slot's address), and the steps they share:
//! waiting for an empty slot, publishing a full one, taking it, advancing the ring. The slots,
//! their `full` and `empty` mbarriers and state words lie in shared memory (see
//! [`crate::ir::Channel`]).

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{Channel, ChannelId, SiteId, Value};

/// Registers of one channel end, owned by the role that holds it.
#[derive(Debug, Clone)]
pub(super) struct Ring {
    pub(super) slot: String,
    pub(super) phase: String,
    /// Receiver only: the slot being held, and whether the channel has closed.
    pub(super) held: String,
    pub(super) closed: String,
}

impl Writer<'_> {
    /// The registers of the ring `(chan, sender)` of the current role, noting that the code uses
    /// it. Inside an unrolled loop ([`Unrolled`]) its slot and held slot are the constants the
    /// copy being written is at.
    ///
    /// [`Unrolled`]: super::unroll::Unrolled
    pub(super) fn ring(&mut self, chan: ChannelId, sender: bool) -> WriteResult<Ring> {
        let key = (chan, sender);
        let role = self.role.as_mut().ok_or_else(WriteError::outside_role)?;
        role.touched.insert(key);
        let mut ring = role.rings.get(&key).cloned().ok_or_else(|| no_ring(key))?;
        if let Some(u) = &self.unroll {
            if let Some(slot) = u.slots.get(&key) {
                ring.slot = slot.to_string();
            }
            if let Some(held) = u.held.get(&key) {
                ring.held = held.to_string();
            }
        }
        Ok(ring)
    }

    /// `smem + offset + index * stride`, as a shared address.
    pub(super) fn shared_addr(
        &mut self,
        offset: u32,
        index: &str,
        stride: u32,
    ) -> WriteResult<String> {
        let smem = self.smem.clone();
        let base = self.tmp(Class::B32);
        self.line(format!("add.u32 {base}, {smem}, {offset};"))?;
        let addr = self.tmp(Class::B32);
        self.line(format!("mad.lo.u32 {addr}, {index}, {stride}, {base};"))?;
        Ok(addr)
    }

    /// `reserve`: waits for the sender's current slot to be empty.
    pub(super) fn reserve(&mut self, chan: ChannelId, site: SiteId) -> WriteResult {
        let ring = self.ring(chan, true)?;
        writeln!(self.body, "    // reserve {chan}")?;
        self.wait_empty(chan, &ring, site)
    }

    /// The shared address of the current slot (sending end) or the held one (receiving end).
    pub(super) fn slot_addr(&mut self, dst: Value, chan: ChannelId, send: bool) -> WriteResult {
        let ring = self.ring(chan, send)?;
        let c = self.k.channel(chan).clone();
        let index = if send {
            ring.slot.clone()
        } else {
            ring.held.clone()
        };
        let d = self.reg(dst);
        let smem = self.smem.clone();
        let base = self.tmp(Class::B32);
        self.line(format!("add.u32 {base}, {smem}, {};", c.data_offset))?;
        self.line(format!(
            "mad.lo.u32 {d}, {index}, {}, {base};",
            c.slot_stride
        ))
    }

    /// `send`: hands the reserved slot over as an item.
    pub(super) fn send(&mut self, chan: ChannelId) -> WriteResult {
        let ring = self.ring(chan, true)?;
        writeln!(self.body, "    // send {chan}")?;
        if self.k.channel(chan).bulk_reads {
            // The receiver copies the slot out with the async proxy: this thread's
            // ordinary writes to it must be visible to that proxy first.
            self.line("fence.proxy.async.shared::cta;")?;
        }
        self.publish(chan, &ring, 1)
    }

    /// `close`: the end-of-stream marker, in a slot of its own.
    pub(super) fn close(&mut self, chan: ChannelId, site: SiteId) -> WriteResult {
        let ring = self.ring(chan, true)?;
        writeln!(
            self.body,
            "    // close {chan}: the end-of-stream marker takes a slot"
        )?;
        self.wait_empty(chan, &ring, site)?;
        self.publish(chan, &ring, 0)
    }

    /// `recv`: waits for the next slot to be full and takes it; `some` says whether it holds an
    /// item.
    pub(super) fn recv(&mut self, chan: ChannelId, some: Value, site: SiteId) -> WriteResult {
        let ring = self.ring(chan, false)?;
        let c = self.k.channel(chan).clone();
        let s = self.reg(some);
        writeln!(self.body, "    // recv {chan}")?;
        let done = self.label("recv_done");
        if !self.role()?.ends_leave.contains(&chan) {
            // After the end, `recv` answers `None` again at once.
            self.line(format!("not.pred {s}, {};", ring.closed))?;
            self.line(format!("@{} bra {done};", ring.closed))?;
        }
        let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
        let state =
            self.wait_then_load(&full, &ring.phase, site, Some((c.state_offset, &ring.slot)))?;
        self.take_full_slot(chan, &ring, &c, &s, state.as_deref())?;
        self.place_label(&done)
    }

    /// `release`: the held slot is empty again.
    pub(super) fn release(&mut self, chan: ChannelId) -> WriteResult {
        let ring = self.ring(chan, false)?;
        let c = self.k.channel(chan).clone();
        writeln!(self.body, "    // release {chan}")?;
        if c.bulk_reads {
            // The bulk copies out of the slot must have read it before it is reused
            // (only the role's first thread has any; the others wait for none).
            self.line("cp.async.bulk.wait_group.read 0;")?;
            self.trace_copy(gpu_async_wire::trace::TraceEvent::CopyOutEnd, chan)?;
        }
        let empty = self.shared_addr(c.empty_offset, &ring.held, 8)?;
        self.warp_arrive(&empty)
    }

    /// The receiver's current slot is full (its wait passed): reads its state word into `some`
    /// (an item, or the end-of-stream marker, after which the channel answers `None` at once),
    /// holds the slot and advances the ring. `recv` and `select!` take a slot this way; `recv`
    /// passes the state word, which its wait loaded ([`Writer::wait_then_load`]).
    pub(super) fn take_full_slot(
        &mut self,
        chan: ChannelId,
        ring: &Ring,
        c: &Channel,
        some: &str,
        loaded: Option<&str>,
    ) -> WriteResult {
        let state = match loaded {
            Some(state) => state.to_string(),
            None => {
                let state_addr = self.shared_addr(c.state_offset, &ring.slot, 4)?;
                let state = self.tmp(Class::B32);
                self.line(format!("ld.shared.u32 {state}, [{state_addr}];"))?;
                state
            }
        };
        self.line(format!("setp.ne.u32 {some}, {state}, 0;"))?;
        if !self.role()?.ends_leave.contains(&chan) {
            self.line(format!("not.pred {}, {some};", ring.closed))?;
        }
        let key = (chan, false);
        match self.unroll.as_mut() {
            Some(u) if u.slots.contains_key(&key) => {
                let slot = u.slots.get(&key).copied().unwrap_or(0);
                u.held.insert(key, slot);
            }
            _ => self.line(format!("mov.u32 {}, {};", ring.held, ring.slot))?,
        }
        self.advance((chan, false), ring, c.ty.depth)
    }

    fn advance(&mut self, key: (ChannelId, bool), ring: &Ring, depth: u32) -> WriteResult {
        if let Some(slot) = self.unroll.as_mut().and_then(|u| u.slots.get_mut(&key)) {
            // A constant slot: only the wrap costs an instruction.
            *slot = (*slot + 1) % depth.max(1);
            if *slot == 0 {
                return self.line(format!("xor.b32 {}, {}, 1;", ring.phase, ring.phase));
            }
            return Ok(());
        }
        if depth == 1 {
            // One slot: the position stays 0 and every step completes a lap.
            return self.line(format!("xor.b32 {}, {}, 1;", ring.phase, ring.phase));
        }
        let p = self.tmp(Class::Pred);
        self.line(format!("add.u32 {}, {}, 1;", ring.slot, ring.slot))?;
        self.line(format!("setp.eq.u32 {p}, {}, {depth};", ring.slot))?;
        self.line(format!("@{p} mov.u32 {}, 0;", ring.slot))?;
        self.line(format!("@{p} xor.b32 {}, {}, 1;", ring.phase, ring.phase))
    }

    /// Lane 0 of each warp arrives on `barrier`, after the warp's writes.
    pub(super) fn warp_arrive(&mut self, barrier: &str) -> WriteResult {
        let lane0 = self.role()?.lane0.clone();
        self.line("bar.warp.sync -1;")?;
        self.line(format!(
            "@{lane0} mbarrier.arrive.release.cta.shared::cta.b64 _, [{barrier}];"
        ))
    }

    /// Waits for the sender's current slot to be empty.
    fn wait_empty(&mut self, chan: ChannelId, ring: &Ring, site: SiteId) -> WriteResult {
        let c = self.k.channel(chan).clone();
        let empty = self.shared_addr(c.empty_offset, &ring.slot, 8)?;
        let parity = self.tmp(Class::B32);
        self.line(format!("xor.b32 {parity}, {}, 1;", ring.phase))?;
        self.wait(&empty, &parity, site)
    }

    /// Marks the sender's current slot (1 = an item, 0 = closed) and hands it over. The state
    /// words start at 1 (the kernel's init block) and only the end-of-stream marker changes one,
    /// after which nothing is sent: an item's send writes no state.
    fn publish(&mut self, chan: ChannelId, ring: &Ring, state: u32) -> WriteResult {
        let c = self.k.channel(chan).clone();
        if state != 1 {
            let leader = self.role()?.leader.clone();
            let state_addr = self.shared_addr(c.state_offset, &ring.slot, 4)?;
            self.line(format!("@{leader} st.shared.u32 [{state_addr}], {state};"))?;
        }
        let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
        self.warp_arrive(&full)?;
        self.advance((chan, true), ring, c.ty.depth)
    }
}

/// The ring `(chan, sender)`, which the role being written does not own.
pub(super) fn no_ring((chan, sender): (ChannelId, bool)) -> WriteError {
    let end = if sender { "sending" } else { "receiving" };
    WriteError::inconsistent(
        format!("a role that owns the {end} end of {chan}"),
        "one that does not",
    )
}
