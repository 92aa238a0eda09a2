//! The kernel entry: its parameters, the shared memory's barriers set up by thread 0, the
//! prologue, the dispatch on the warp index, and each role's region with the registers of its
//! channel ends, barrier phases and bulk-copy issuer ([`RoleCtx`]).

use gpu_async_wire::HiddenParam;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use super::channels::{Ring, SEND};
use super::error::WriteResult;
use super::types::{ptx_ty, Class};
use super::Writer;
use crate::ir::{Block, ChannelId, Inst, ParamKind, RecvEnd, Role, UnOp};
use crate::types::Scalar;

/// What the code of the role being written can use.
pub(super) struct RoleCtx {
    pub(super) index: usize,
    pub(super) threads: u32,
    pub(super) warps: u32,
    /// The thread's index within the role.
    pub(super) rtid: String,
    pub(super) leader: String,
    pub(super) lane0: String,
    /// The thread that issues the role's bulk copies (see [`Writer::bulk_split`]), for roles
    /// that have some.
    pub(super) bulk_issuer: Option<String>,
    pub(super) rings: HashMap<(ChannelId, u32), Ring>,
    /// Phase of the role's barrier (roles of several warps that have one).
    pub(super) barrier_phase: String,
    /// Phase of each barrier between roles that the role takes.
    pub(super) kernel_barrier_phases: HashMap<u32, String>,
    /// The rings (channel, sending end) the code written so far has used: a ring not in it is at
    /// slot 0 (see [`Unrolled`]).
    ///
    /// [`Unrolled`]: super::unroll::Unrolled
    pub(super) touched: HashSet<(ChannelId, u32)>,
    /// The channels this role receives whose end leaves the receiving loop for good
    /// ([`ends_that_leave`]): their `recv` does not test or set the ring's `closed` register.
    pub(super) ends_leave: HashSet<(ChannelId, u32)>,
    /// For a role with receives that unwrap ([`RecvEnd::Fail`]): the register holding the site
    /// of the panic of one that met the stream's end, [`NO_FAILURE`] until one does
    /// (`super::deferred` raises it).
    pub(super) failed: Option<String>,
}

/// The value of [`RoleCtx::failed`] while no receive that unwraps has met the end.
pub(super) const NO_FAILURE: u32 = u32::MAX;

/// The channels whose end, once received, sends the role out of the loop that received it for
/// good: every `recv` of the channel in `body` is `while let Some(..) = rx.recv().await` (a
/// `recv` at the top level of a loop that is itself at the role's top level, followed by `if !some
/// { break }` out of that loop) with no `recv` or `select!` of it after that loop, or unwraps
/// (`rx.recv().await.unwrap()`, which never answers the end), and no `select!` takes it. Such a
/// receiver never asks again after the end, so its `recv` needs no register remembering that the
/// channel closed, nor the test of it before every wait (two instructions per item on the path
/// from a wait to the slot's release; `docs/design.md`, "A receive whose end leaves its loop keeps
/// no closed flag").
fn ends_that_leave(body: &Block) -> HashSet<(ChannelId, u32)> {
    let mut selected = HashSet::new();
    crate::ir::for_each_inst(body, &mut |i| {
        if let Inst::SelectRecv { chans, .. } = i {
            selected.extend(chans.iter().map(|c| (*c, 0)));
        }
    });
    // The `recv`s of the `while let` shape, per receiver; walking the body backwards, `later`
    // counts the `recv`s (nested ones included) after the instruction at hand, so that each
    // instruction is visited once.
    let mut shaped: HashMap<(ChannelId, u32), usize> = HashMap::new();
    let mut later: HashMap<(ChannelId, u32), usize> = HashMap::new();
    for inst in body.0.iter().rev() {
        if let Inst::Loop { id, body: lbody } = inst {
            for (k, inner) in lbody.0.iter().enumerate() {
                let Inst::Recv {
                    chan,
                    end: RecvEnd::Answer(some),
                    rx,
                    ..
                } = inner
                else {
                    continue;
                };
                let key = (*chan, *rx);
                let breaks_on_end = match (lbody.0.get(k + 1), lbody.0.get(k + 2)) {
                    (
                        Some(Inst::Unary {
                            dst: not,
                            op: UnOp::Not,
                            src,
                        }),
                        Some(Inst::If { cond, then, else_ }),
                    ) => {
                        src == some
                            && cond == not
                            && else_.0.is_empty()
                            && matches!(then.0.as_slice(), [Inst::Break(b)] if b == id)
                    }
                    _ => false,
                };
                if breaks_on_end && !later.contains_key(&key) {
                    *shaped.entry(key).or_insert(0) += 1;
                }
            }
        }
        crate::ir::for_each_inst_in(inst, &mut |i| {
            if let Inst::Recv { chan, rx, .. } = i {
                *later.entry((*chan, *rx)).or_insert(0) += 1;
            }
        });
    }
    // A receive that unwraps never answers the end: it neither tests nor sets the register.
    crate::ir::for_each_inst(body, &mut |i| {
        if let Inst::Recv {
            chan,
            end: RecvEnd::Fail(_),
            rx,
            ..
        } = i
        {
            *shaped.entry((*chan, *rx)).or_insert(0) += 1;
        }
    });
    // Every `recv` of the receiver has the shape or unwraps, and no `select!` takes it.
    later
        .into_iter()
        .filter(|(c, n)| !selected.contains(c) && shaped.get(c) == Some(n))
        .map(|(c, _)| c)
        .collect()
}

impl Writer<'_> {
    /// The whole entry.
    pub(super) fn kernel(&mut self) -> WriteResult {
        let k = self.k;
        self.tid = self.tmp(Class::B32);
        self.smem = self.tmp(Class::B32);
        let (tid, smem) = (self.tid.clone(), self.smem.clone());
        let index = self.user_params()?;
        self.abort_params(index)?;
        self.trace_entry(index)?;
        self.line(format!("mov.u32 {tid}, %tid.x;"))?;
        self.line(format!("mov.u32 {smem}, gpu_async_smem;"))?;
        if !k.channels.is_empty()
            || k.role_barriers
                .iter()
                .flatten()
                .any(|b| b.mbarrier_offset().is_some())
            || !k.shared_cells.is_empty()
            || !k.barriers.is_empty()
            || !k.shared_arrays.is_empty()
        {
            self.init_shared()?;
        }
        self.block(&k.prologue)?;
        self.roles()
    }

    /// Loads the user's parameters into their values' registers; returns the number of PTX
    /// parameters they take (a slice takes two).
    fn user_params(&mut self) -> WriteResult<usize> {
        let k = self.k;
        let mut index = 0;
        for p in &k.params {
            match &p.kind {
                ParamKind::Scalar(v) => {
                    let r = self.reg(*v);
                    let ty = self.k.ty(*v);
                    if ty == Scalar::Bool {
                        let t = self.tmp(Class::B32);
                        self.line(format!("ld.param.u32 {t}, [{}_param_{index}];", k.name))?;
                        self.line(format!("setp.ne.u32 {r}, {t}, 0;"))?;
                    } else {
                        self.line(format!(
                            "ld.param.{} {r}, [{}_param_{index}];",
                            ptx_ty(ty),
                            k.name
                        ))?;
                    }
                    index += 1;
                }
                ParamKind::Slice { ptr, len, .. } => {
                    let (p, l) = (self.reg(*ptr), self.reg(*len));
                    self.line(format!("ld.param.u64 {p}, [{}_param_{index}];", k.name))?;
                    self.line(format!("cvta.to.global.u64 {p}, {p};"))?;
                    self.line(format!(
                        "ld.param.u64 {l}, [{}_param_{}];",
                        k.name,
                        index + 1
                    ))?;
                    index += 2;
                }
                ParamKind::Matrix {
                    ptr,
                    rows,
                    cols,
                    boxes,
                    ..
                } => {
                    for v in [ptr, rows, cols] {
                        let r = self.reg(*v);
                        self.line(format!("ld.param.u64 {r}, [{}_param_{index}];", k.name))?;
                        index += 1;
                    }
                    let p = self.reg(*ptr);
                    self.line(format!("cvta.to.global.u64 {p}, {p};"))?;
                    // The tensor maps stay in the parameter space; a tile load takes the
                    // generic address of its map (`ptx::tiles`).
                    index += boxes.len();
                }
            }
        }
        Ok(index)
    }

    /// Loads the abort protocol's parameters, which follow the user's from PTX parameter
    /// `index`: the abort word, the launch id, the failure record and the watchdog's bound.
    fn abort_params(&mut self, index: usize) -> WriteResult {
        let k = self.k;
        // The abort protocol's parameters follow the user's.
        self.abort = self.tmp(Class::B64);
        self.launch_id = self.tmp(Class::B32);
        self.record = self.tmp(Class::B64);
        self.watchdog = self.tmp(Class::B64);
        self.watchdog_on = self.tmp(Class::Pred);
        let (abort, launch_id, record, watchdog, on) = (
            self.abort.clone(),
            self.launch_id.clone(),
            self.record.clone(),
            self.watchdog.clone(),
            self.watchdog_on.clone(),
        );
        let load = |p: HiddenParam, dst: &str| {
            let (ty, n) = (p.ptx_type(), index + p.index());
            format!("ld.param.{ty} {dst}, [{}_param_{n}];", k.name)
        };
        self.line(load(HiddenParam::AbortWord, &abort))?;
        self.line(format!("cvta.to.global.u64 {abort}, {abort};"))?;
        self.line(load(HiddenParam::LaunchId, &launch_id))?;
        self.line(load(HiddenParam::Record, &record))?;
        self.line(format!("cvta.to.global.u64 {record}, {record};"))?;
        self.line(load(HiddenParam::WatchdogNs, &watchdog))?;
        self.line(format!("setp.ne.u64 {on}, {watchdog}, 0;"))?;
        Ok(())
    }

    /// Thread 0's set-up of the shared memory, before every thread meets at `bar.sync 0`.
    fn init_shared(&mut self) -> WriteResult {
        let k = self.k;
        let tid = self.tid.clone();
        let mbarriers = !k.channels.is_empty()
            || !k.barriers.is_empty()
            || k.role_barriers
                .iter()
                .flatten()
                .any(|b| b.mbarrier_offset().is_some());
        if !mbarriers && k.shared_cells.is_empty() {
            // Shared arrays alone (a kernel whose only role meets at `bar.sync 0`): thread 0 has
            // nothing to set up.
            self.zero_arrays()?;
            return self.line("bar.sync 0;");
        }
        // Thread 0 sets every barrier's arrival count: producer warps for `full`, consumer
        // warps for `empty`.
        let skip = self.label("init_done");
        let p = self.tmp(Class::Pred);
        self.line(format!("setp.ne.u32 {p}, {tid}, 0;"))?;
        self.line(format!("@{p} bra {skip};"))?;
        for c in &k.channels {
            let warps_of = |r: Option<crate::ir::RoleId>| {
                r.map_or(1, |r| {
                    let r = &k.roles[r.0 as usize];
                    r.end_warp - r.first_warp
                })
            };
            // A broadcast's `empty` barrier waits for the warps of every receiving role.
            let pw = warps_of(c.producer);
            let cw = if c.consumers.is_empty() {
                1
            } else {
                c.consumers.iter().map(|r| warps_of(Some(*r))).sum()
            };
            if c.closable {
                // The receiving warps that have not closed the channel.
                self.line(format!(
                    "st.shared.u32 [gpu_async_smem+{}], {cw};",
                    c.open_offset
                ))?;
            }
            if let Some(d) = c.debt_offset {
                for w in 0..2 * c.ty.depth {
                    self.line(format!("st.shared.u32 [gpu_async_smem+{}], 0;", d + 4 * w))?;
                }
            }
            for s in 0..c.ty.depth {
                // Every slot's state word says "an item" until the end marker takes it.
                self.line(format!(
                    "st.shared.u32 [gpu_async_smem+{}], 1;",
                    c.state_offset + 4 * s
                ))?;
                self.line(format!(
                    "mbarrier.init.shared::cta.b64 [gpu_async_smem+{}], {pw};",
                    c.full_offset + 8 * s
                ))?;
                self.line(format!(
                    "mbarrier.init.shared::cta.b64 [gpu_async_smem+{}], {cw};",
                    c.empty_offset + 8 * s
                ))?;
            }
        }
        for (r, barrier) in k.roles.iter().zip(&k.role_barriers) {
            if let Some(offset) = barrier.and_then(|b| b.mbarrier_offset()) {
                let warps = r.end_warp - r.first_warp;
                self.line(format!(
                    "mbarrier.init.shared::cta.b64 [gpu_async_smem+{offset}], {warps};"
                ))?;
            }
        }
        for kb in &k.barriers {
            self.line(format!(
                "mbarrier.init.shared::cta.b64 [gpu_async_smem+{}], {};",
                kb.offset,
                kb.arrivals.max(1)
            ))?;
        }
        // Shared values start at zero, as the simulator's `T::default()`.
        for cell in 0..k.shared_cells.len() as u32 {
            self.line(format!(
                "st.shared.u64 [gpu_async_smem+{}], 0;",
                k.cells_offset + 8 * cell
            ))?;
        }
        if mbarriers {
            self.line("fence.mbarrier_init.release.cluster;")?;
        }
        self.place_label(&skip)?;
        self.zero_arrays()?;
        self.line("bar.sync 0;")
    }

    /// Every thread zeroes its 16-byte words of the shared arrays (laid out one after another,
    /// each 16-byte aligned), as the simulator's arrays start at zero.
    fn zero_arrays(&mut self) -> WriteResult {
        let k = self.k;
        let (Some(first), Some(last)) = (k.shared_arrays.first(), k.shared_arrays.last()) else {
            return Ok(());
        };
        let start = first.offset;
        let end = (u64::from(last.offset) + last.bytes()).div_ceil(16) * 16;
        let step = 16 * 32 * k.warps;
        let (tid, smem) = (self.tid.clone(), self.smem.clone());
        writeln!(self.body, "    // shared arrays start at zero")?;
        let (off, addr, past) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::Pred),
        );
        let (head, done) = (self.label("zero_arrays"), self.label("zero_done"));
        self.line(format!("shl.b32 {off}, {tid}, 4;"))?;
        self.line(format!("add.u32 {off}, {off}, {start};"))?;
        self.place_label(&head)?;
        self.line(format!("setp.ge.u32 {past}, {off}, {end};"))?;
        self.line(format!("@{past} bra {done};"))?;
        self.line(format!("add.u32 {addr}, {smem}, {off};"))?;
        self.line(format!("st.shared.v4.u32 [{addr}], {{0, 0, 0, 0}};"))?;
        self.line(format!("add.u32 {off}, {off}, {step};"))?;
        self.line(format!("bra {head};"))?;
        self.place_label(&done)
    }

    /// The dispatch on the warp index, each role's region, and the entry's exit.
    fn roles(&mut self) -> WriteResult {
        let k = self.k;
        let tid = self.tid.clone();
        // Dispatch on the warp index; roles cover the warps without overlap.
        let warp = self.tmp(Class::B32);
        self.line(format!("shr.u32 {warp}, {tid}, 5;"))?;
        let mut order: Vec<usize> = (0..k.roles.len()).collect();
        order.sort_by_key(|&i| k.roles[i].first_warp);
        let role_labels: Vec<String> = (0..k.roles.len()).map(|i| format!("$role_{i}")).collect();
        // With register budgets, a role's region starts with its `setmaxnreg`, which every warp
        // of its warpgroups must execute: the idle warps past its end in its last warpgroup go
        // there too, and leave after it.
        let region_end = |r: &Role| match k.registers {
            Some(_) => crate::registers::group_end(r),
            None => r.end_warp,
        };
        // Warps before a role's first one that no earlier role took are idle
        // (`#[kernel(.., idle_warps)]`): they leave.
        let mut next = 0;
        for &i in &order {
            if k.roles[i].first_warp > next {
                let p = self.tmp(Class::Pred);
                self.line(format!(
                    "setp.lt.u32 {p}, {warp}, {};",
                    k.roles[i].first_warp
                ))?;
                self.line(format!("@{p} bra $exit;"))?;
            }
            let p = self.tmp(Class::Pred);
            let end = region_end(&k.roles[i]);
            self.line(format!("setp.lt.u32 {p}, {warp}, {end};"))?;
            self.line(format!("@{p} bra {};", role_labels[i]))?;
            next = end;
        }
        self.line("bra $exit;")?;
        for (i, r) in k.roles.iter().enumerate() {
            writeln!(
                self.body,
                "\n    // role {} `{}`: warps {}..{}",
                i, r.name, r.first_warp, r.end_warp
            )?;
            self.place_label(&role_labels[i])?;
            if let Some(set) = k
                .registers
                .as_ref()
                .and_then(|b| crate::registers::setmaxnreg(b, i))
            {
                // The role's register budget, before anything it waits for.
                self.line(set)?;
            }
            if region_end(r) > r.end_warp {
                let idle = self.tmp(Class::Pred);
                self.line(format!("setp.ge.u32 {idle}, {warp}, {};", r.end_warp))?;
                self.line(format!("@{idle} bra $exit;"))?;
            }
            self.role_region(i, r)?;
            self.line("bra $exit;")?;
        }
        self.place_label("$exit")?;
        self.line("ret;")
    }

    fn role_region(&mut self, index: usize, r: &Role) -> WriteResult {
        let tid = self.tid.clone();
        let rtid = self.tmp(Class::B32);
        self.line(format!("sub.u32 {rtid}, {tid}, {};", r.first_warp * 32))?;
        let lane = self.tmp(Class::B32);
        self.line(format!("and.b32 {lane}, {tid}, 31;"))?;
        let leader = self.tmp(Class::Pred);
        self.line(format!("setp.eq.u32 {leader}, {rtid}, 0;"))?;
        let lane0 = self.tmp(Class::Pred);
        self.line(format!("setp.eq.u32 {lane0}, {lane}, 0;"))?;
        // The role's bulk copies: in (`copy_from`, tile loads) and out (`copy_to`, tile stores),
        // which its end waits for.
        let (mut copies_in, mut copies_out) = (false, false);
        crate::ir::for_each_inst(&r.body, &mut |i| {
            copies_in |= matches!(i, Inst::CopyIn { .. } | Inst::TileLoad { .. });
            copies_out |= matches!(i, Inst::CopyOut { .. } | Inst::TileStore { .. });
        });
        let bulk_issuer = if copies_in || copies_out {
            // Elected once, here, where every thread of the role is converged: a copy then
            // costs no `ELECT` of its own, and ptxas still sees a single issuing thread.
            let issuer = self.tmp(Class::Pred);
            self.line(format!("elect.sync _|{issuer}, -1;"))?;
            if r.end_warp - r.first_warp > 1 {
                let first_warp = self.tmp(Class::Pred);
                self.line(format!("setp.lt.u32 {first_warp}, {rtid}, 32;"))?;
                self.line(format!("and.pred {issuer}, {issuer}, {first_warp};"))?;
            }
            Some(issuer)
        } else {
            None
        };
        let ends_leave = ends_that_leave(&r.body);
        let mut unwraps = false;
        crate::ir::for_each_inst(&r.body, &mut |i| {
            unwraps |= matches!(
                i,
                Inst::Recv {
                    end: RecvEnd::Fail(_),
                    ..
                }
            )
        });
        let failed = if unwraps {
            let failed = self.tmp(Class::B32);
            self.line(format!("mov.u32 {failed}, {NO_FAILURE};"))?;
            Some(failed)
        } else {
            None
        };
        let mut rings = HashMap::new();
        for (ci, c) in self.k.channels.iter().enumerate() {
            // One ring per end the role holds: its sending end, and each of its receivers (a
            // role may take several receivers of a broadcast).
            let receivers = c.consumers.iter().filter(|r| r.0 as usize == index).count() as u32;
            let sends = c.producer.map(|o| o.0 as usize) == Some(index);
            let ends = sends.then_some(SEND).into_iter().chain(0..receivers);
            for end in ends {
                let sender = end == SEND;
                let ring = Ring {
                    slot: self.tmp(Class::B32),
                    phase: self.tmp(Class::B32),
                    held: self.tmp(Class::B32),
                    closed: self.tmp(Class::Pred),
                };
                self.line(format!("mov.u32 {}, 0;", ring.slot))?;
                self.line(format!("mov.u32 {}, 0;", ring.phase))?;
                if !sender {
                    self.line(format!("mov.u32 {}, 0;", ring.held))?;
                }
                if !sender && !ends_leave.contains(&(ChannelId(ci as u32), end)) {
                    self.line(format!(
                        "setp.ne.u32 {}, {}, {};",
                        ring.closed, ring.slot, ring.slot
                    ))?;
                }
                rings.insert((ChannelId(ci as u32), end), ring);
            }
        }
        let barrier_phase = self.tmp(Class::B32);
        self.line(format!("mov.u32 {barrier_phase}, 0;"))?;
        let mut kernel_barrier_phases = HashMap::new();
        for (b, kb) in self.k.barriers.iter().enumerate() {
            if kb.roles.iter().any(|r| r.0 as usize == index) {
                let phase = self.tmp(Class::B32);
                self.line(format!("mov.u32 {phase}, 0;"))?;
                kernel_barrier_phases.insert(b as u32, phase);
            }
        }
        self.role = Some(RoleCtx {
            index,
            threads: r.threads(),
            warps: r.end_warp - r.first_warp,
            rtid,
            leader,
            lane0,
            bulk_issuer,
            rings,
            barrier_phase,
            kernel_barrier_phases,
            touched: HashSet::new(),
            ends_leave,
            failed,
        });
        self.abort_label = format!("$abort_{index}");
        let mut role_issues_mmas = false;
        crate::ir::for_each_inst(&r.body, &mut |i| {
            role_issues_mmas |= matches!(i, Inst::Mma { .. })
        });
        self.trace_role_start()?;
        self.block(&r.body)?;
        self.raise_deferred()?;
        self.deferred_stub()?;
        if copies_out {
            // The role's bulk copies to global memory are complete before its threads leave.
            self.line("cp.async.bulk.wait_group 0;")?;
        }
        self.trace_role_end()?;
        self.role = None;
        // The role's way out when the kernel aborts, then its panic and timeout paths.
        self.line("bra $exit;")?;
        let abort_label = std::mem::replace(&mut self.abort_label, "$exit".to_string());
        self.place_label(&abort_label)?;
        if role_issues_mmas {
            // Mmas may be in flight where a wait branches here; without this wait ptxas adds
            // one on every such branch, in the loops too, to keep their registers.
            self.mma_wait(0)?;
        }
        self.trace_role_end()?;
        self.line("exit;")?;
        let stubs = std::mem::take(&mut self.stubs);
        self.body.push_str(&stubs);
        Ok(())
    }
}
