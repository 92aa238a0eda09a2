//! Tracing: the events a traced kernel records (see `gpu_async_wire::trace` for the parameters,
//! the buffer's layout and the event codes).
//!
//! The writer writes every kernel twice: [`super::write_kernel`] without tracing, where every
//! hook of this module writes nothing (the PTX is the untraced kernel's), and
//! [`super::write_kernel_traced`] with it. The hooks sit at the writer's existing emission
//! points, one call each: the entry loads the trace parameters and decides whether the block is
//! traced ([`Writer::trace_entry`]); each role's region starts by writing its header with its
//! start time ([`Writer::trace_role_start`]) and ends, normally or through its abort exit, by
//! writing its end time and its count ([`Writer::trace_role_end`]); a blocking wait records its
//! start and its end
//! ([`Writer::trace_wait`], [`Writer::trace_wait_end`]), a bulk copy its issue and, where the
//! protocol knows it, its end ([`Writer::trace_copy`]).
//!
//! Only the role's first thread records, predicated on `on` (the role's first thread of a traced
//! block); the others run the same few instructions predicated off, so that no branch is added
//! and the role's synchronization is untouched. An event costs the recording thread four
//! instructions: `mov` of `%globaltimer`, the test for room, one 16-byte `st.global.v2.u64`, and
//! the pointer's increment (which counts the dropped events too).

use std::collections::HashMap;

use gpu_async_wire::trace::{
    TraceEvent, TraceParam, HEADER_BYTES, HEADER_COUNT, HEADER_END, HEADER_START, NO_SITE,
    RECORD_BYTES, TRACE_PARAMS,
};
use gpu_async_wire::HIDDEN_PARAMS;

use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{ChannelId, Inst, Kernel, SiteId};

/// What a traced kernel's writer knows: the kernel-wide registers of the trace, the event of
/// each wait site, and the registers of the role being written.
pub(super) struct Tracing {
    /// Which event starts the wait at each site.
    waits: HashMap<SiteId, TraceEvent>,
    /// The site of the wait that takes the slot a role's copy moves: `(role, channel, sending
    /// end)` to its `reserve` (sending) or `recv` (receiving).
    copy_sites: HashMap<(usize, ChannelId, bool), SiteId>,
    /// Kernel-wide registers, set by [`Writer::trace_entry`].
    regs: Option<KernelRegs>,
    /// The registers of the role being written (kept through its abort exit).
    role: Option<RoleRegs>,
}

#[derive(Clone)]
struct KernelRegs {
    buffer: String,
    capacity: String,
    tag: String,
    block: String,
    slot: String,
    traced: String,
    region: String,
}

struct RoleRegs {
    /// The role's first thread, in a traced block.
    on: String,
    header: String,
    next: String,
    end: String,
    time: String,
    room: String,
}

impl Tracing {
    /// The tracing of `k`: each wait site's event and the sites of its copies' slots.
    pub(super) fn new(k: &Kernel) -> Tracing {
        let mut waits = HashMap::new();
        let mut copy_sites = HashMap::new();
        for (index, role) in k.roles.iter().enumerate() {
            crate::ir::for_each_inst(&role.body, &mut |inst| {
                let (event, site) = match inst {
                    Inst::Reserve { chan, site } => {
                        copy_sites.entry((index, *chan, true)).or_insert(*site);
                        (TraceEvent::WaitFree, *site)
                    }
                    Inst::Close { site, .. } => (TraceEvent::WaitFree, *site),
                    Inst::Recv { chan, site, .. } => {
                        copy_sites.entry((index, *chan, false)).or_insert(*site);
                        (TraceEvent::WaitFull, *site)
                    }
                    Inst::SelectRecv { chans, site, .. } => {
                        for chan in chans {
                            copy_sites.entry((index, *chan, false)).or_insert(*site);
                        }
                        (TraceEvent::WaitFull, *site)
                    }
                    Inst::BarrierWait { site, .. }
                    | Inst::OneshotWait { site, .. }
                    | Inst::RoleBarrier { site } => (TraceEvent::WaitBarrier, *site),
                    Inst::ParFor(p) => match &p.reduce {
                        Some(r) => (TraceEvent::WaitBarrier, r.site),
                        None => return,
                    },
                    _ => return,
                };
                waits.insert(site, event);
            });
        }
        Tracing {
            waits,
            copy_sites,
            regs: None,
            role: None,
        }
    }
}

impl Writer<'_> {
    /// The trace parameters' declarations, from PTX parameter `index` (after the hidden ones).
    pub(super) fn trace_param_decls(&self, params: &mut Vec<String>, index: usize) {
        if self.trace.is_none() {
            return;
        }
        for p in TraceParam::ALL {
            params.push(format!(
                "    .param .{} {}_param_{}",
                p.ptx_type(),
                self.k.name,
                index + p.index()
            ));
        }
    }

    /// At the entry, after the hidden parameters (which follow the user's `user_params` PTX
    /// parameters): loads the trace parameters and decides whether this block is traced and in
    /// which slot.
    pub(super) fn trace_entry(&mut self, user_params: usize) -> WriteResult {
        if self.trace.is_none() {
            return Ok(());
        }
        let first = user_params + HIDDEN_PARAMS;
        let name = self.k.name.clone();
        let (buffer, magic) = (self.tmp(Class::B64), self.tmp(Class::B64));
        let [shift, stride, slots, capacity, tag] = [(); 5].map(|()| self.tmp(Class::B32));
        let (block, slot, check, region) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let wide = self.tmp(Class::B64);
        let traced = self.tmp(Class::Pred);
        writeln_comment(self, "trace: this block's slot, if it is traced")?;
        for (p, reg) in TraceParam::ALL
            .into_iter()
            .zip([&buffer, &magic, &shift, &stride, &slots, &capacity, &tag])
        {
            let n = first + p.index();
            self.line(format!(
                "ld.param.{} {reg}, [{name}_param_{n}];",
                p.ptx_type()
            ))?;
        }
        self.line(format!("cvta.to.global.u64 {buffer}, {buffer};"))?;
        self.line(format!("mov.u32 {block}, %ctaid.x;"))?;
        // `block / stride` as `(block * magic) >> shift` (see `gpu_async_wire::trace::Divisor`).
        self.line(format!("cvt.u64.u32 {wide}, {block};"))?;
        self.line(format!("mul.lo.u64 {wide}, {wide}, {magic};"))?;
        self.line(format!("shr.u64 {wide}, {wide}, {shift};"))?;
        self.line(format!("cvt.u32.u64 {slot}, {wide};"))?;
        self.line(format!("mul.lo.u32 {check}, {slot}, {stride};"))?;
        self.line(format!("setp.eq.u32 {traced}, {check}, {block};"))?;
        self.line(format!(
            "setp.lt.and.u32 {traced}, {slot}, {slots}, {traced};"
        ))?;
        self.line(format!(
            "mad.lo.u32 {region}, {capacity}, {RECORD_BYTES}, {HEADER_BYTES};"
        ))?;
        if let Some(t) = self.trace.as_mut() {
            t.regs = Some(KernelRegs {
                buffer,
                capacity,
                tag,
                block,
                slot,
                traced,
                region,
            });
        }
        Ok(())
    }

    /// At the start of a role's region (its context set): the role's region of the buffer and
    /// its header (count 0, block, SM, tag, start time, end time 0).
    pub(super) fn trace_role_start(&mut self) -> WriteResult {
        let Some(t) = self.trace.as_ref() else {
            return Ok(());
        };
        let Some(KernelRegs {
            buffer,
            capacity,
            tag,
            block,
            slot,
            traced,
            region,
        }) = t.regs.clone()
        else {
            return Err(WriteError::inconsistent(
                "the trace's registers at a role's start",
                "none",
            ));
        };
        let (index, leader) = {
            let r = self.role()?;
            (r.index, r.leader.clone())
        };
        let roles = self.k.roles.len();
        let on = self.tmp(Class::Pred);
        let room = self.tmp(Class::Pred);
        let (header, next, end, time) = (
            self.tmp(Class::B64),
            self.tmp(Class::B64),
            self.tmp(Class::B64),
            self.tmp(Class::B64),
        );
        let (at, sm) = (self.tmp(Class::B32), self.tmp(Class::B32));
        writeln_comment(self, "trace: the role's region, its header, its start")?;
        self.line(format!("and.pred {on}, {leader}, {traced};"))?;
        self.line(format!("mad.lo.u32 {at}, {slot}, {roles}, {index};"))?;
        self.line(format!("mul.wide.u32 {header}, {at}, {region};"))?;
        self.line(format!("add.u64 {header}, {header}, {buffer};"))?;
        self.line(format!("add.u64 {next}, {header}, {HEADER_BYTES};"))?;
        self.line(format!("mul.wide.u32 {end}, {capacity}, {RECORD_BYTES};"))?;
        self.line(format!("add.u64 {end}, {end}, {next};"))?;
        self.line(format!("mov.u32 {sm}, %smid;"))?;
        self.line(format!("@{on} mov.u64 {time}, %globaltimer;"))?;
        self.line(format!(
            "@{on} st.global.v4.u32 [{header}], {{0, {block}, {sm}, {tag}}};"
        ))?;
        self.line(format!(
            "@{on} st.global.v2.u64 [{header}+{}], {{{time}, 0}};",
            4 * HEADER_START
        ))?;
        if let Some(t) = self.trace.as_mut() {
            t.role = Some(RoleRegs {
                on,
                header,
                next,
                end,
                time,
                room,
            });
        }
        Ok(())
    }

    /// At a role's end (normally, or at its abort exit): the header's count of events and the
    /// role's end time.
    pub(super) fn trace_role_end(&mut self) -> WriteResult {
        let Some(r) = self.trace.as_ref().and_then(|t| t.role.as_ref()) else {
            return Ok(());
        };
        let (on, header, next, time) = (
            r.on.clone(),
            r.header.clone(),
            r.next.clone(),
            r.time.clone(),
        );
        let bytes = self.tmp(Class::B64);
        let count = self.tmp(Class::B32);
        writeln_comment(self, "trace: the role's end and its count of events")?;
        self.line(format!("@{on} mov.u64 {time}, %globaltimer;"))?;
        self.line(format!("sub.u64 {bytes}, {next}, {header};"))?;
        self.line(format!("cvt.u32.u64 {count}, {bytes};"))?;
        self.line(format!("sub.u32 {count}, {count}, {HEADER_BYTES};"))?;
        let shift = RECORD_BYTES.trailing_zeros();
        self.line(format!("shr.u32 {count}, {count}, {shift};"))?;
        self.line(format!(
            "@{on} st.global.u32 [{header}+{}], {count};",
            4 * HEADER_COUNT
        ))?;
        self.line(format!(
            "@{on} st.global.u64 [{header}+{}], {time};",
            4 * HEADER_END
        ))
    }

    /// One event of the role being written: its first thread of a traced block writes the time,
    /// `event` and `arg` while its region has room, and counts the event either way.
    pub(super) fn trace(&mut self, event: TraceEvent, arg: u32) -> WriteResult {
        let Some(r) = self.trace.as_ref().and_then(|t| t.role.as_ref()) else {
            return Ok(());
        };
        let (on, next, end, time, room) = (
            r.on.clone(),
            r.next.clone(),
            r.end.clone(),
            r.time.clone(),
            r.room.clone(),
        );
        let word = event.record_word(arg);
        self.line(format!("@{on} mov.u64 {time}, %globaltimer;"))?;
        self.line(format!("setp.lt.and.u64 {room}, {next}, {end}, {on};"))?;
        self.line(format!(
            "@{room} st.global.v2.u64 [{next}], {{{time}, {word}}};"
        ))?;
        self.line(format!("@{on} add.u64 {next}, {next}, {RECORD_BYTES};"))
    }

    /// The start of the blocking wait at `site`.
    pub(super) fn trace_wait(&mut self, site: SiteId) -> WriteResult {
        let Some(t) = self.trace.as_ref() else {
            return Ok(());
        };
        let event = t
            .waits
            .get(&site)
            .copied()
            .unwrap_or(TraceEvent::WaitBarrier);
        self.trace(event, site.0)
    }

    /// The end of the blocking wait at `site`.
    pub(super) fn trace_wait_end(&mut self, site: SiteId) -> WriteResult {
        self.trace(TraceEvent::WaitEnd, site.0)
    }

    /// A copy event (`CopyIn`, `CopyInEnd`, `CopyOut`, `CopyOutEnd`) on `chan`, whose argument is
    /// the site of the wait that took the copy's slot in the role being written.
    pub(super) fn trace_copy(&mut self, event: TraceEvent, chan: ChannelId) -> WriteResult {
        let Some(t) = self.trace.as_ref() else {
            return Ok(());
        };
        let sending = matches!(event, TraceEvent::CopyIn | TraceEvent::CopyInEnd);
        let role = self.role()?.index;
        let site = t
            .copy_sites
            .get(&(role, chan, sending))
            .map_or(NO_SITE, |s| s.0);
        self.trace(event, site)
    }
}

// `trace_entry` loads the parameters into seven registers; `trace_role_end` divides by a shift.
const _: () = assert!(TRACE_PARAMS == 7 && RECORD_BYTES.is_power_of_two());

/// A comment line in the body, marking the trace's code.
fn writeln_comment(w: &mut Writer<'_>, what: &str) -> WriteResult {
    use std::fmt::Write;
    writeln!(w.body, "    // {what}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use gpu_async_wire::trace::{TraceEvent, TraceParam, NO_SITE};
    use gpu_async_wire::{HiddenParam, HIDDEN_PARAMS};

    use crate::ir::SiteKind;

    fn pipeline() -> crate::CompiledKernel {
        let mut kernels = crate::compile(quote::quote! {
            mod m {
                use gpu_async::device::*;
                #[kernel(warps = 3)]
                pub async fn p(x: &[f32], y: &mut [f32]) {
                    let (a_tx, a_rx) = channel::<[f32; 256], 2>();
                    let (b_tx, b_rx) = channel::<[f32; 256], 2>();
                    join!(
                        on_warps(0..1, load(x, a_tx)),
                        on_warps(1..2, step(a_rx, b_tx)),
                        on_warps(2..3, store(b_rx, y)),
                    )
                    .await;
                }
                async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
                    for t in block_tiles(x.len(), 256) {
                        let mut s = tx.reserve().await;
                        s.copy_from(&x[t]).await;
                        s.send();
                    }
                }
                async fn step(mut rx: Receiver<[f32; 256], 2>, mut tx: Sender<[f32; 256], 2>) {
                    while let Some(i) = rx.recv().await {
                        let mut o = tx.reserve().await;
                        o.par_iter_mut().zip(i.par_iter()).for_each(|(o, i)| *o = *i);
                        o.send();
                    }
                }
                async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
                    let mut tiles = block_tiles(y.len(), 256);
                    while let Some(s) = rx.recv().await {
                        let t = tiles.next().unwrap();
                        s.copy_to(&mut y[t]).await;
                    }
                }
            }
        })
        .expect("compiles");
        kernels.remove(0)
    }

    /// The record of `event` with `arg`, as the traced PTX stores it.
    fn record(event: TraceEvent, arg: u32) -> String {
        format!(", {}}};", event.record_word(arg))
    }

    #[test]
    fn the_traced_module_takes_the_trace_parameters_after_the_hidden_ones() {
        let k = pipeline();
        // x and y: two PTX parameters each.
        let first = 4 + HIDDEN_PARAMS;
        for p in TraceParam::ALL {
            let decl = format!(".param .{} p_param_{}", p.ptx_type(), first + p.index());
            assert!(k.ptx_traced.contains(&decl), "missing {decl}");
            assert!(!k.ptx.contains(&decl));
        }
        let last_hidden = format!("p_param_{}", 4 + HiddenParam::WatchdogNs.index());
        assert!(k.ptx.contains(&last_hidden));
        for marker in ["%smid", "trace:", "st.global.v2.u64"] {
            assert!(!k.ptx.contains(marker), "the plain module has {marker}");
            assert!(
                k.ptx_traced.contains(marker),
                "the traced module lacks {marker}"
            );
        }
    }

    #[test]
    fn every_wait_records_its_start_and_end_and_copies_name_their_slot() {
        let k = pipeline();
        let ptx = &k.ptx_traced;
        let site = |message: &str| {
            k.ir.sites
                .iter()
                .position(|s| s.kind == SiteKind::Wait && s.message == message)
                .unwrap_or_else(|| panic!("no site {message:?}")) as u32
        };
        let reserve_a = site("`reserve()` on channel `a_tx/a_rx`");
        let recv_a = site("`recv()` on channel `a_tx/a_rx`");
        let reserve_b = site("`reserve()` on channel `b_tx/b_rx`");
        let recv_b = site("`recv()` on channel `b_tx/b_rx`");
        for (event, arg) in [
            (TraceEvent::WaitFree, reserve_a),
            (TraceEvent::WaitFull, recv_a),
            (TraceEvent::WaitFree, reserve_b),
            (TraceEvent::WaitFull, recv_b),
            (TraceEvent::WaitEnd, reserve_a),
            (TraceEvent::WaitEnd, recv_b),
            (TraceEvent::CopyIn, reserve_a),
            (TraceEvent::CopyInEnd, reserve_a),
            (TraceEvent::CopyOut, recv_b),
            (TraceEvent::CopyOutEnd, recv_b),
        ] {
            assert!(
                ptx.contains(&record(event, arg)),
                "no {event:?} of site {arg}"
            );
        }
        // The closes of the two channels are waits for a free slot too.
        for (i, s) in k.ir.sites.iter().enumerate() {
            if s.message.starts_with("closing channel") {
                assert!(ptx.contains(&record(TraceEvent::WaitFree, i as u32)));
            }
        }
        assert!(!ptx.contains(&record(TraceEvent::CopyIn, NO_SITE)));
        // As many ends as starts of waits.
        let starts = [
            TraceEvent::WaitFull,
            TraceEvent::WaitFree,
            TraceEvent::WaitBarrier,
        ]
        .iter()
        .map(|e| {
            (0..k.ir.sites.len() as u32)
                .map(|s| ptx.matches(&record(*e, s)).count())
                .sum::<usize>()
        })
        .sum::<usize>();
        let ends: usize = (0..k.ir.sites.len() as u32)
            .map(|s| ptx.matches(&record(TraceEvent::WaitEnd, s)).count())
            .sum();
        assert_eq!(starts, ends);
    }
}
