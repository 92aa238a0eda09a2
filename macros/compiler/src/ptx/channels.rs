//! The channel protocol: each end's ring registers ([`Ring`]), the instructions on a channel
//! (`reserve`, `send`, `close`, `recv`, `release`, a slot's address), and the steps they share:
//! waiting for an empty slot, publishing a full one, taking it, advancing the ring. The slots,
//! their `full` and `empty` mbarriers and state words lie in shared memory (see
//! [`crate::ir::Channel`]).

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{Channel, ChannelId, RecvEnd, SiteId, Value};

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
    /// The registers of the ring `(chan, end)` of the current role (`end` is [`SEND`] for the
    /// sending end, else which of the role's receivers of the channel), noting that the code
    /// uses it. Inside an unrolled loop ([`Unrolled`]) its slot and held slot are the constants the
    /// copy being written is at.
    ///
    /// [`Unrolled`]: super::unroll::Unrolled
    pub(super) fn ring(&mut self, chan: ChannelId, end: u32) -> WriteResult<Ring> {
        let key = (chan, end);
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

    /// `reserve`: waits for the sender's current slot to be empty; on a channel its receivers
    /// can close, `some` says whether it was (false: every receiver has closed).
    pub(super) fn reserve(
        &mut self,
        chan: ChannelId,
        site: SiteId,
        some: Option<Value>,
    ) -> WriteResult {
        let ring = self.ring(chan, SEND)?;
        writeln!(self.body, "    // reserve {chan}")?;
        match some {
            Some(some) => {
                let p = self.reg(some);
                self.wait_empty_or_closed(chan, &ring, site, &p)
            }
            None => self.wait_empty(chan, &ring, site),
        }
    }

    /// The `u32` at shared address `smem + offset + 4 index` (a slot's state word) into a new
    /// register, which is returned.
    pub(super) fn load_shared_word(&mut self, offset: u32, index: &str) -> WriteResult<String> {
        let addr = self.shared_addr(offset, index, 4)?;
        let word = self.tmp(Class::B32);
        self.line(format!("ld.shared.u32 {word}, [{addr}];"))?;
        Ok(word)
    }

    /// The shared address of the current slot (sending end), of the held one (receiving end),
    /// or of the received slot at ring position `slot`.
    pub(super) fn slot_addr(
        &mut self,
        dst: Value,
        chan: ChannelId,
        send: bool,
        slot: Option<Value>,
        rx: u32,
    ) -> WriteResult {
        let ring = self.ring(chan, if send { SEND } else { rx })?;
        let c = self.k.channel(chan).clone();
        let index = match (send, slot) {
            (true, _) => ring.slot.clone(),
            (false, Some(s)) => self.reg(s),
            (false, None) => ring.held.clone(),
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

    /// `dst` = the ring position of the receiving ring's held slot.
    pub(super) fn held_slot(&mut self, dst: Value, chan: ChannelId, rx: u32) -> WriteResult {
        let ring = self.ring(chan, rx)?;
        let d = self.reg(dst);
        self.line(format!("mov.u32 {d}, {};", ring.held))
    }

    /// The register holding the ring position of a received slot of `chan` (the role's receiver
    /// `rx`): the one at `slot`, or the ring's held slot.
    pub(super) fn received_slot(
        &mut self,
        chan: ChannelId,
        rx: u32,
        slot: Option<Value>,
    ) -> WriteResult<String> {
        let ring = self.ring(chan, rx)?;
        Ok(match slot {
            Some(v) => self.reg(v),
            None => ring.held,
        })
    }

    /// `send`: hands the reserved slot over as an item.
    pub(super) fn send(&mut self, chan: ChannelId) -> WriteResult {
        let ring = self.ring(chan, SEND)?;
        writeln!(self.body, "    // send {chan}")?;
        if self.k.channel(chan).bulk_reads {
            // The receiver copies the slot out with the async proxy: this thread's
            // ordinary writes to it must be visible to that proxy first.
            self.line("fence.proxy.async.shared::cta;")?;
        }
        self.publish(chan, &ring, 1)
    }

    /// `close`: the end-of-stream marker, in a slot of its own; on a channel its receivers have
    /// all closed, nothing (there is no one to tell).
    pub(super) fn close(&mut self, chan: ChannelId, site: SiteId) -> WriteResult {
        let ring = self.ring(chan, SEND)?;
        writeln!(
            self.body,
            "    // close {chan}: the end-of-stream marker takes a slot"
        )?;
        if !self.k.channel(chan).closable {
            self.wait_empty(chan, &ring, site)?;
            return self.publish(chan, &ring, 0);
        }
        let free = self.tmp(Class::Pred);
        let skip = self.label("closed_already");
        self.wait_empty_or_closed(chan, &ring, site, &free)?;
        self.line(format!("@!{free} bra {skip};"))?;
        self.publish(chan, &ring, 0)?;
        self.place_label(&skip)
    }

    /// The receiver closes the channel: every warp takes itself off the channel's open word,
    /// then owes each slot of the ring one arrival, for the next phase of the slot it has not
    /// arrived on (the release of an item it will not take). The warp that brings the word to 0
    /// (the last receiving warp of the channel to close) arrives, the others arrive and drop out
    /// of the barriers' later phases (the other receivers of a broadcast go on without them).
    /// With one receiving warp, that phase is the one in progress on every slot. With several,
    /// a warp can be a phase ahead on a slot (it released an item that another warp has not):
    /// it tests whether the phase before the one it owes has completed, and where not, adds
    /// itself to the debt word of the phase it owes, which the sender pays once that phase is
    /// in progress (the last warp leaves its debts: no one waits for them).
    pub(super) fn close_receiver(&mut self, chan: ChannelId, rx: u32) -> WriteResult {
        let ring = self.ring(chan, rx)?;
        let c = self.k.channel(chan).clone();
        if !c.closable {
            return Err(WriteError::inconsistent(
                format!("a closable {chan} (a receiver closes it)"),
                "a channel that is not",
            ));
        }
        writeln!(self.body, "    // close the receiving end of {chan}")?;
        let lane0 = self.role()?.lane0.clone();
        let (old, last, more) = (
            self.tmp(Class::B32),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        self.line("bar.warp.sync -1;")?;
        self.line(format!("mov.u32 {old}, 0;"))?;
        self.line(format!(
            "@{lane0} atom.shared.add.u32 {old}, [gpu_async_smem+{}], -1;",
            c.open_offset
        ))?;
        self.line(format!("setp.eq.u32 {last}, {old}, 1;"))?;
        self.line(format!("setp.gt.u32 {more}, {old}, 1;"))?;
        for s in 0..c.ty.depth {
            let empty = c.empty_offset + 8 * s;
            let (now_last, now_more) = match c.debt_offset {
                None => (last.clone(), more.clone()),
                Some(debts) => self.owed_now(&ring, s, (empty, debts), (&last, &more))?,
            };
            self.line(format!(
                "@{now_last} mbarrier.arrive.release.cta.shared::cta.b64 _, [gpu_async_smem+{empty}];"
            ))?;
            self.line(format!(
                "@{now_more} mbarrier.arrive_drop.release.cta.shared::cta.b64 _, [gpu_async_smem+{empty}];"
            ))?;
        }
        Ok(())
    }

    /// For a closing receiver's slot `s` (its `empty` barrier at `empty`): whether the phase
    /// this warp owes is in progress (the one before it has completed), as the predicates of
    /// the arrivals of the last warp and of the others; where it is not, a warp that is not the
    /// last adds itself to that phase's debt word (in the debt words at `debts`).
    fn owed_now(
        &mut self,
        ring: &Ring,
        s: u32,
        (empty, debts): (u32, u32),
        (last, more): (&str, &str),
    ) -> WriteResult<(String, String)> {
        // The phase owed is of this pass of the ring (the ring's phase) for a slot at or after
        // the ring's position, else of the next pass.
        let owed = self.tmp(Class::B32);
        match ring.slot.parse::<u32>() {
            Ok(at) if s >= at => self.line(format!("mov.b32 {owed}, {};", ring.phase))?,
            Ok(_) => self.line(format!("xor.b32 {owed}, {}, 1;", ring.phase))?,
            Err(_) => {
                let (this_pass, flipped) = (self.tmp(Class::Pred), self.tmp(Class::B32));
                self.line(format!("setp.le.u32 {this_pass}, {}, {s};", ring.slot))?;
                self.line(format!("xor.b32 {flipped}, {}, 1;", ring.phase))?;
                self.line(format!(
                    "selp.b32 {owed}, {}, {flipped}, {this_pass};",
                    ring.phase
                ))?;
            }
        }
        let (before, done) = (self.tmp(Class::B32), self.tmp(Class::Pred));
        self.line(format!("xor.b32 {before}, {owed}, 1;"))?;
        self.line(format!(
            "mbarrier.test_wait.parity.shared::cta.b64 {done}, [gpu_async_smem+{empty}], {before};"
        ))?;
        let (now_last, now_more, later) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        self.line(format!("and.pred {now_last}, {done}, {last};"))?;
        self.line(format!("and.pred {now_more}, {done}, {more};"))?;
        self.line(format!("and.pred {later}, !{done}, {more};"))?;
        let smem = self.smem.clone();
        let (base, debt) = (self.tmp(Class::B32), self.tmp(Class::B32));
        self.line(format!("add.u32 {base}, {smem}, {};", debts + 8 * s))?;
        self.line(format!("mad.lo.u32 {debt}, {owed}, 4, {base};"))?;
        self.line(format!("@{later} red.shared.add.u32 [{debt}], 1;"))?;
        Ok((now_last, now_more))
    }

    /// `recv`: waits for the next slot to be full and takes it. With [`RecvEnd::Answer`], its
    /// value says whether the slot holds an item; with [`RecvEnd::Fail`], a slot holding the
    /// end-of-stream marker sets the role's failed site ([`RoleCtx::failed`]) instead, with no
    /// branch on the state word. The slot's ring position goes to `slot`, or to the ring's held
    /// register.
    ///
    /// [`RoleCtx::failed`]: super::kernel::RoleCtx::failed
    pub(super) fn recv(
        &mut self,
        chan: ChannelId,
        end: RecvEnd,
        site: SiteId,
        slot: Option<Value>,
        rx: u32,
    ) -> WriteResult {
        let ring = self.ring(chan, rx)?;
        let c = self.k.channel(chan).clone();
        let leaves = self.role()?.ends_leave.contains(&(chan, rx));
        writeln!(self.body, "    // recv {chan}")?;
        let done = self.label("recv_done");
        match end {
            RecvEnd::Answer(some) => {
                let s = self.reg(some);
                if !leaves {
                    // After the end, `recv` answers `None` again at once.
                    self.line(format!("not.pred {s}, {};", ring.closed))?;
                    self.line(format!("@{} bra {done};", ring.closed))?;
                }
                let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
                let state = self
                    .wait_then_load(&full, &ring.phase, site, Some((c.state_offset, &ring.slot)))?
                    .ok_or_else(|| WriteError::inconsistent("the state word loaded", "none"))?;
                self.line(format!("setp.ne.u32 {s}, {state}, 0;"))?;
                if !leaves {
                    self.line(format!("not.pred {}, {s};", ring.closed))?;
                }
            }
            RecvEnd::Fail(fail) => {
                let failed = self.failed_register()?;
                if !leaves {
                    // After the end, an unwrap fails without waiting.
                    self.line(format!("@{} mov.u32 {failed}, {};", ring.closed, fail.0))?;
                    self.line(format!("@{} bra {done};", ring.closed))?;
                }
                // Loaded once, after the wait: nothing waits for it, and a word loaded on both
                // ways out of the wait made ptxas move it to a uniform register on each, right
                // after its load, stalling the warp there. Not a branch: the code after the
                // receive need not wait for the word.
                let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
                self.wait(&full, &ring.phase, site)?;
                let state = self.load_shared_word(c.state_offset, &ring.slot)?;
                let ended = self.tmp(Class::Pred);
                self.line(format!("setp.eq.u32 {ended}, {state}, 0;"))?;
                self.line(format!("@{ended} mov.u32 {failed}, {};", fail.0))?;
            }
        }
        let slot = slot.map(|v| self.reg(v));
        self.hold_and_advance((chan, rx), &ring, &c, slot.as_deref())?;
        self.place_label(&done)
    }

    /// `release`: the held slot (or the received slot at ring position `slot`) is empty again.
    pub(super) fn release(&mut self, chan: ChannelId, slot: Option<Value>, rx: u32) -> WriteResult {
        let c = self.k.channel(chan).clone();
        writeln!(self.body, "    // release {chan}")?;
        if c.bulk_reads {
            // The bulk copies out of the slot must have read it before it is reused
            // (only the role's first thread has any; the others wait for none).
            self.line("cp.async.bulk.wait_group.read 0;")?;
            self.trace_copy(gpu_async_wire::trace::TraceEvent::CopyOutEnd, chan)?;
        }
        let index = self.received_slot(chan, rx, slot)?;
        let empty = self.shared_addr(c.empty_offset, &index, 8)?;
        self.warp_arrive(&empty)
    }

    /// The receiver's current slot is full (its wait passed): reads its state word into `some`
    /// (an item, or the end-of-stream marker, after which the channel answers `None` at once),
    /// holds the slot and advances the ring, as `select!` takes a slot.
    pub(super) fn take_full_slot(
        &mut self,
        (chan, rx): (ChannelId, u32),
        ring: &Ring,
        c: &Channel,
        some: &str,
        slot: Option<&str>,
    ) -> WriteResult {
        let state = self.load_shared_word(c.state_offset, &ring.slot)?;
        self.line(format!("setp.ne.u32 {some}, {state}, 0;"))?;
        if !self.role()?.ends_leave.contains(&(chan, rx)) {
            self.line(format!("not.pred {}, {some};", ring.closed))?;
        }
        self.hold_and_advance((chan, rx), ring, c, slot)
    }

    /// The receiver's current slot is taken: holds it (in `slot`, or in the ring's held
    /// register) and advances the ring.
    fn hold_and_advance(
        &mut self,
        key: (ChannelId, u32),
        ring: &Ring,
        c: &Channel,
        slot: Option<&str>,
    ) -> WriteResult {
        // In a copy of an unrolled loop the ring's slot is a constant, not its register.
        let constant = self
            .unroll
            .as_ref()
            .and_then(|u| u.slots.get(&key).copied());
        match (slot, constant) {
            // A slot of its own: the held register stays with the slot it holds.
            (Some(dst), Some(at)) => self.line(format!("mov.u32 {dst}, {at};"))?,
            (Some(dst), None) => self.line(format!("mov.u32 {dst}, {};", ring.slot))?,
            (None, Some(at)) => {
                if let Some(u) = self.unroll.as_mut() {
                    u.held.insert(key, at);
                }
            }
            (None, None) => self.line(format!("mov.u32 {}, {};", ring.held, ring.slot))?,
        }
        self.advance(key, ring, c.ty.depth)
    }

    fn advance(&mut self, key: (ChannelId, u32), ring: &Ring, depth: u32) -> WriteResult {
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

    /// Waits for the sender's current slot to be empty, or for every receiver of the channel
    /// to have closed it: `result` says which ([`Writer::wait_or_closed`]).
    fn wait_empty_or_closed(
        &mut self,
        chan: ChannelId,
        ring: &Ring,
        site: SiteId,
        result: &str,
    ) -> WriteResult {
        let c = self.k.channel(chan).clone();
        let empty = self.shared_addr(c.empty_offset, &ring.slot, 8)?;
        let parity = self.tmp(Class::B32);
        self.line(format!("xor.b32 {parity}, {}, 1;", ring.phase))?;
        let open = format!("gpu_async_smem+{}", c.open_offset);
        let debts = c.debt_offset.map(|d| (d, ring.slot.as_str()));
        self.wait_or_closed((&empty, &parity), site, &open, debts, result)
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
        self.advance((chan, SEND), ring, c.ty.depth)
    }
}

/// The end of a ring's key ([`Writer::ring`]) that is the sending one.
pub(super) const SEND: u32 = u32::MAX;

/// The ring `(chan, end)`, which the role being written does not own.
pub(super) fn no_ring((chan, end): (ChannelId, u32)) -> WriteError {
    let end = if end == SEND { "sending" } else { "receiving" };
    WriteError::inconsistent(
        format!("a role that owns the {end} end of {chan}"),
        "one that does not",
    )
}
