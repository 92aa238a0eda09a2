//! Phase 5, emit: the PTX [`Writer`].
//!
//! Every role becomes a region of the one kernel entry, selected by warp index. Ring positions
//! and phase bits of each channel end live in registers of the role that owns the end; every
//! `.await` on a channel is an `mbarrier.try_wait.parity` loop; barrier arrivals are made by lane
//! 0 of each warp of a role after `bar.warp.sync` (so that they publish the whole warp's writes),
//! and bulk copies and state words by the role's first thread. Arithmetic is IEEE without
//! contraction (`.rn` on every float operation), as Rust computes it on the host.
//!
//! Parallel loops spread iteration `i` over the role's threads (`i = tid, tid + threads, ...`);
//! when every source has 4-byte elements and 16-byte-aligned bases, four consecutive elements go
//! to one thread as one 16-byte access, and a scalar loop handles the tail.

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write};

use crate::ir::{
    BinOp, Block, Channel, ChannelId, Imm, Inst, Kernel, LoopId, ParFor, ParReduce, ParamKind,
    Role, ShuffleMode, SiteId, Space, Special, UnOp, Value, VoteMode,
};
use crate::tir::{AtomicOp, MemOrder};
use crate::types::Scalar;

/// Groups of four elements each thread handles per step of an unrolled vector loop.
const UNROLL: u32 = 4;

/// Failure kinds in the record: a device panic, a wait stopped by the watchdog.
const FAILURE_PANIC: u32 = 1;
const FAILURE_TIMEOUT: u32 = 2;

pub use crate::target::{PTX_TARGET, PTX_TARGET_BUDGETS, PTX_VERSION};

/// Writes `kernel` as a PTX module.
pub fn write_kernel(kernel: &Kernel) -> Result<String, fmt::Error> {
    let mut w = Writer::new(kernel);
    w.kernel()?;
    let mut out = String::new();
    w.finish(&mut out)?;
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Class {
    Pred,
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl Class {
    fn of(s: Scalar) -> Class {
        match s {
            Scalar::Bool => Class::Pred,
            Scalar::F32 => Class::F32,
            Scalar::F64 => Class::F64,
            Scalar::F16 | Scalar::Bf16 => Class::B16,
            s if s.is_wide_int() => Class::B64,
            _ => Class::B32,
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Class::Pred => "%p",
            Class::B16 => "%h",
            Class::B32 => "%r",
            Class::B64 => "%rd",
            Class::F32 => "%f",
            Class::F64 => "%fd",
        }
    }

    fn decl(self) -> &'static str {
        match self {
            Class::Pred => ".pred",
            Class::B16 => ".b16",
            Class::B32 => ".b32",
            Class::B64 => ".b64",
            Class::F32 => ".f32",
            Class::F64 => ".f64",
        }
    }
}

/// The registers of [`Writer::bulk_split`]: the copy's length in elements, the bytes of its
/// bulk part, and whether this thread issues the bulk copy.
struct BulkSplit {
    len32: String,
    bulk: String,
    go: String,
}

/// Registers of one channel end, owned by the role that holds it.
#[derive(Debug, Clone)]
struct Ring {
    slot: String,
    phase: String,
    /// Receiver only: the slot being held, and whether the channel has closed.
    held: String,
    closed: String,
}

/// What the code of the role being written can use.
struct RoleCtx {
    index: usize,
    threads: u32,
    warps: u32,
    /// The thread's index within the role.
    rtid: String,
    leader: String,
    lane0: String,
    /// The thread that issues the role's bulk copies (see [`Writer::bulk_split`]), for roles
    /// that have some.
    bulk_issuer: Option<String>,
    rings: HashMap<(ChannelId, bool), Ring>,
    /// Phase of the role's barrier (roles of several warps that have one).
    barrier_phase: String,
    /// Phase of each barrier between roles that the role takes.
    kernel_barrier_phases: HashMap<u32, String>,
    /// The rings (channel, sending end) the code written so far has used: a ring not in it is at
    /// slot 0 (see [`Unrolled`]).
    touched: HashSet<(ChannelId, bool)>,
    /// The channels this role receives whose end leaves the receiving loop for good
    /// ([`ends_that_leave`]): their `recv` does not test or set the ring's `closed` register.
    ends_leave: HashSet<ChannelId>,
}

/// A role loop being written as `factor` copies of its body, in which each ring's slot is a
/// constant: the ring's slot register is not read or written inside the copies, its phase
/// register still flips where the slot wraps, and every `break` of the loop first writes the
/// slot (and the held slot) the copy is at into the registers, for the code after the loop.
/// The loop is entered at slot 0 of every ring it uses (no code before it used them), and after
/// the `factor` copies each ring is back at slot 0, so the back edge keeps that true.
struct Unrolled {
    id: LoopId,
    /// The slot each ring is at, where the code being written is.
    slots: HashMap<(ChannelId, bool), u32>,
    /// For receiving ends: the slot held (the one the last `recv` took).
    held: HashMap<(ChannelId, bool), u32>,
}

/// The size of `block` for [`MAX_UNROLLED_BODY`]: `weight` per instruction, nested ones
/// included, and [`PAR_BODY_WEIGHT`] times that in the bodies of parallel loops.
fn unroll_size(block: &Block, weight: usize) -> usize {
    block
        .0
        .iter()
        .map(|inst| {
            weight
                + match inst {
                    Inst::If { then, else_, .. } => {
                        unroll_size(then, weight) + unroll_size(else_, weight)
                    }
                    Inst::Loop { body, .. } => unroll_size(body, weight),
                    Inst::Join { branches } => {
                        branches.iter().map(|b| unroll_size(b, weight)).sum()
                    }
                    Inst::ParFor(p) => {
                        let inner = weight * PAR_BODY_WEIGHT;
                        unroll_size(&p.body, inner)
                            + p.reduce
                                .as_ref()
                                .map_or(0, |r| unroll_size(&r.combine, inner))
                    }
                    _ => 0,
                }
        })
        .sum()
}

/// Most copies of a loop body an unrolled loop has. Each copy carries its waits' slow paths, so
/// the copies grow a role's code quickly, and every role's loop is hot at once: on the H200 the
/// pipeline with an 8-slot ring, unrolled 8 times (64-73 KiB of code), spent 31% of its warps'
/// stall samples fetching instructions and ran at 0.62-0.80x device copy where 4 copies (39
/// KiB) spent 3% (docs/benchmarks.md, seventh session).
const MAX_UNROLL: u32 = 4;
/// Most IR instructions (nested ones included, see [`PAR_BODY_WEIGHT`]) of a loop body that is
/// unrolled.
const MAX_UNROLLED_BODY: usize = 200;
/// What an instruction of a parallel loop's body counts for in [`MAX_UNROLLED_BODY`]: the
/// vector loop writes the body once per element of its [`UNROLL`] groups of four, the loop of
/// single groups four times more and the scalar tail once more. Counted once, the 64-FMA
/// kernel's compute loop was unrolled 4 times into 121 KiB of code and ran 20% slower on the
/// H200 than not unrolled (docs/benchmarks.md, seventh session).
const PAR_BODY_WEIGHT: usize = (UNROLL as usize + 1) * 4 + 1;

/// The `join!` being written: a state machine with one state per warp. Each branch's state
/// register says where the warp goes on with it (0: its start, `k`: resume point `k`,
/// [`BRANCH_DONE`]: it has ended). A wait that finds its phase incomplete saves its resume point
/// and jumps to the next branch's dispatch; after the last branch, the round's tail ends the join
/// when every branch has ended, and otherwise watches the abort word and the watchdog as a
/// blocking wait does.
struct JoinCtx {
    /// The join's number, in its labels.
    id: u32,
    /// The branch being written.
    branch: usize,
    /// Each branch's state register.
    states: Vec<String>,
    /// Each branch's resume points: state number and label.
    resumes: Vec<Vec<(u32, String)>>,
    /// Set (to 1) when a wait of a branch passes; the round's tail clears it.
    progress: String,
    /// The site of the wait that yielded last, for the watchdog's report.
    site: String,
}

/// The state of a `join!` branch that has ended.
const BRANCH_DONE: u32 = u32::MAX;

impl JoinCtx {
    fn dispatch_label(&self, branch: usize) -> String {
        if branch < self.states.len() {
            format!("$join{}_dispatch_{branch}", self.id)
        } else {
            format!("$join{}_round", self.id)
        }
    }
}

/// Writes PTX for one kernel: the body first (allocating registers), then the header with the
/// register declarations, through [`Writer::finish`].
pub struct Writer<'k> {
    k: &'k Kernel,
    body: String,
    counts: HashMap<Class, u32>,
    names: HashMap<Value, String>,
    labels: u32,
    smem: String,
    tid: String,
    role: Option<RoleCtx>,
    /// The abort protocol's registers: abort word address, launch id, record address, watchdog
    /// bound in ns, and whether the watchdog is on.
    abort: String,
    launch_id: String,
    record: String,
    watchdog: String,
    watchdog_on: String,
    /// Where the current code goes when the kernel aborts (the role's exit).
    abort_label: String,
    /// Where a panicking thread of the current parallel loop goes (the loop's end).
    par_exit: Option<String>,
    /// Out-of-line code (panic and timeout paths) written after the current role.
    stubs: String,
    /// Values that are integer constants (defined once, by a `Const`).
    constants: HashMap<Value, u64>,
    /// The `join!` whose branch is being written.
    join: Option<JoinCtx>,
    /// `join!`s written so far (their numbers).
    joins: u32,
    /// The role loop being written unrolled, if any.
    unroll: Option<Unrolled>,
    /// Bulk copies (their `(len, bulk)` values) known to have no tail where the code being
    /// written runs: the version of a role loop that [`whole_copies`] chose.
    whole: HashSet<(Value, Value)>,
    /// How many loops the code being written is inside (in the current role).
    loop_depth: u32,
}

/// The bulk copies at the top level of the role loop `body` whose split (`len`, `bulk`) the body
/// does not change, and which can therefore be tested once, before the loop: when the bulk part
/// covers them whole, the loop runs a version of its body without their tail loops. The branch
/// after each copy that skips its tail, with the tail's code, was on the producer's path from
/// its wait to its send: 7.2 ns per item of a 16 KiB bulk handoff at depth 4 on the H200 (93.9
/// -> 86.7 without them, docs/benchmarks.md, ninth session). Only for loops without nested
/// loops, `continue`, `join!` or `select!`, whose labels a second version would repeat.
fn whole_copies(id: LoopId, body: &Block) -> Vec<(Value, Value, ChannelId)> {
    let mut defined = HashSet::new();
    let mut plain = true;
    crate::ir::for_each_inst(body, &mut |i| {
        defined.extend(i.defs());
        plain &= !matches!(
            i,
            Inst::Loop { .. } | Inst::Join { .. } | Inst::SelectRecv { .. }
        ) && !matches!(i, Inst::Continue(c) if *c == id);
    });
    if !plain {
        return Vec::new();
    }
    let mut copies = Vec::new();
    for inst in &body.0 {
        let (len, bulk, chan) = match inst {
            Inst::CopyIn {
                chan, len, bulk, ..
            }
            | Inst::CopyOut {
                chan, len, bulk, ..
            } => (*len, *bulk, *chan),
            _ => continue,
        };
        if !defined.contains(&len) && !defined.contains(&bulk) {
            copies.push((len, bulk, chan));
        }
    }
    copies
}

/// The channels whose end, once received, sends the role out of the loop that received it for
/// good: every `recv` of the channel in `body` is `while let Some(..) = rx.recv().await` (a
/// `recv` at the top level of a loop that is itself at the role's top level, followed by `if !some
/// { break }` out of that loop), no `recv` or `select!` of it follows that loop, and no `select!`
/// takes it. Such a receiver never asks again after the end, so its `recv` needs no register
/// remembering that the channel closed, nor the test of it before every wait (two instructions per
/// item on the path from a wait to the slot's release; docs/benchmarks.md, ninth session).
fn ends_that_leave(body: &Block) -> HashSet<ChannelId> {
    // How many `recv`s of each channel `insts` has, nested ones included.
    fn recv_counts(insts: &[Inst]) -> HashMap<ChannelId, usize> {
        let mut counts = HashMap::new();
        for inst in insts {
            crate::ir::for_each_inst_in(inst, &mut |i| {
                if let Inst::Recv { chan, .. } = i {
                    *counts.entry(*chan).or_insert(0) += 1;
                }
            });
        }
        counts
    }
    let mut selected = HashSet::new();
    crate::ir::for_each_inst(body, &mut |i| {
        if let Inst::SelectRecv { chans, .. } = i {
            selected.extend(chans.iter().copied());
        }
    });
    // The `recv`s of the `while let` shape, per channel.
    let mut shaped: HashMap<ChannelId, usize> = HashMap::new();
    for (at, inst) in body.0.iter().enumerate() {
        let Inst::Loop { id, body: lbody } = inst else {
            continue;
        };
        let later = recv_counts(&body.0[at + 1..]);
        for (k, inner) in lbody.0.iter().enumerate() {
            let Inst::Recv { chan, some, .. } = inner else {
                continue;
            };
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
            if breaks_on_end && !later.contains_key(chan) {
                *shaped.entry(*chan).or_insert(0) += 1;
            }
        }
    }
    // Every `recv` of the channel has the shape, and no `select!` takes it.
    recv_counts(&body.0)
        .into_iter()
        .filter(|(c, n)| !selected.contains(c) && shaped.get(c) == Some(n))
        .map(|(c, _)| c)
        .collect()
}

/// The greatest common divisor (`gcd(0, b) = b`).
fn gcd(a: u32, b: u32) -> u32 {
    if a == 0 {
        b
    } else {
        gcd(b % a, a)
    }
}

/// The type of a register holding `s` in arithmetic: narrow integers compute as 32-bit ones.
fn ptx_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "pred",
        Scalar::I8 | Scalar::I16 | Scalar::I32 => "s32",
        Scalar::U8 | Scalar::U16 | Scalar::U32 => "u32",
        Scalar::I64 | Scalar::Isize => "s64",
        Scalar::U64 | Scalar::Usize => "u64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        // Halves are stored and moved as 16 bits; their arithmetic is in `f32`.
        Scalar::F16 | Scalar::Bf16 => "b16",
    }
}

/// The PTX name of a half type, in conversions.
fn half_name(s: Scalar) -> &'static str {
    if s == Scalar::Bf16 {
        "bf16"
    } else {
        "f16"
    }
}

/// The untyped form of [`ptx_ty`], for moves and bitwise operations.
fn bits_ty(s: Scalar) -> &'static str {
    match Class::of(s) {
        Class::Pred => "pred",
        Class::B16 => "b16",
        Class::B32 => "b32",
        Class::B64 => "b64",
        Class::F32 => "f32",
        Class::F64 => "f64",
    }
}

/// The type of `s` in memory (loads sign- or zero-extend narrow integers into 32 bits).
fn mem_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool | Scalar::U8 => "u8",
        Scalar::I8 => "s8",
        Scalar::I16 => "s16",
        Scalar::U16 => "u16",
        s => ptx_ty(s),
    }
}

/// The exact integer type, for the saturating float-to-integer conversion.
fn exact_int_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::I8 => "s8",
        Scalar::I16 => "s16",
        Scalar::U8 => "u8",
        Scalar::U16 => "u16",
        s => ptx_ty(s),
    }
}

fn space_name(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Const => "const",
    }
}

impl<'k> Writer<'k> {
    /// A writer for `k`.
    pub fn new(k: &'k Kernel) -> Self {
        Writer {
            k,
            body: String::new(),
            counts: HashMap::new(),
            names: HashMap::new(),
            labels: 0,
            smem: String::new(),
            tid: String::new(),
            role: None,
            abort: String::new(),
            launch_id: String::new(),
            record: String::new(),
            watchdog: String::new(),
            watchdog_on: String::new(),
            abort_label: "$exit".to_string(),
            par_exit: None,
            stubs: String::new(),
            constants: crate::ir::integer_constants(
                std::iter::once(&k.prologue).chain(k.roles.iter().map(|r| &r.body)),
            ),
            join: None,
            joins: 0,
            unroll: None,
            whole: HashSet::new(),
            loop_depth: 0,
        }
    }

    fn tmp(&mut self, c: Class) -> String {
        let n = self.counts.entry(c).or_insert(0);
        *n += 1;
        format!("{}{}", c.prefix(), *n - 1)
    }

    fn reg(&mut self, v: Value) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let name = self.tmp(Class::of(self.k.ty(v)));
        self.names.insert(v, name.clone());
        name
    }

    fn label(&mut self, what: &str) -> String {
        self.labels += 1;
        format!("${what}_{}", self.labels)
    }

    fn line(&mut self, s: impl fmt::Display) -> fmt::Result {
        writeln!(self.body, "    {s}")
    }

    fn place_label(&mut self, l: &str) -> fmt::Result {
        writeln!(self.body, "{l}:")
    }

    fn role(&self) -> Result<&RoleCtx, fmt::Error> {
        self.role.as_ref().ok_or(fmt::Error)
    }

    /// The whole entry.
    fn kernel(&mut self) -> fmt::Result {
        let k = self.k;
        self.tid = self.tmp(Class::B32);
        self.smem = self.tmp(Class::B32);
        let (tid, smem) = (self.tid.clone(), self.smem.clone());
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
            }
        }
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
        self.line(format!("ld.param.u64 {abort}, [{}_param_{index}];", k.name))?;
        self.line(format!("cvta.to.global.u64 {abort}, {abort};"))?;
        self.line(format!(
            "ld.param.u32 {launch_id}, [{}_param_{}];",
            k.name,
            index + 1
        ))?;
        self.line(format!(
            "ld.param.u64 {record}, [{}_param_{}];",
            k.name,
            index + 2
        ))?;
        self.line(format!("cvta.to.global.u64 {record}, {record};"))?;
        self.line(format!(
            "ld.param.u64 {watchdog}, [{}_param_{}];",
            k.name,
            index + 3
        ))?;
        self.line(format!("setp.ne.u64 {on}, {watchdog}, 0;"))?;
        self.line(format!("mov.u32 {tid}, %tid.x;"))?;
        self.line(format!("mov.u32 {smem}, gpu_async_smem;"))?;
        if !k.channels.is_empty()
            || k.role_barriers.iter().any(Option::is_some)
            || !k.shared_cells.is_empty()
            || !k.barriers.is_empty()
        {
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
            for (r, offset) in k.roles.iter().zip(&k.role_barriers) {
                if let Some(offset) = offset {
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
            self.line("fence.mbarrier_init.release.cluster;")?;
            self.place_label(&skip)?;
            self.line("bar.sync 0;")?;
        }
        self.block(&k.prologue)?;
        // Dispatch on the warp index; roles cover the warps without overlap.
        let warp = self.tmp(Class::B32);
        self.line(format!("shr.u32 {warp}, {tid}, 5;"))?;
        let mut order: Vec<usize> = (0..k.roles.len()).collect();
        order.sort_by_key(|&i| k.roles[i].first_warp);
        let role_labels: Vec<String> = (0..k.roles.len()).map(|i| format!("$role_{i}")).collect();
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
            self.line(format!("setp.lt.u32 {p}, {warp}, {};", k.roles[i].end_warp))?;
            self.line(format!("@{p} bra {};", role_labels[i]))?;
            next = k.roles[i].end_warp;
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
            self.role_region(i, r)?;
            self.line("bra $exit;")?;
        }
        self.place_label("$exit")?;
        self.line("ret;")
    }

    fn role_region(&mut self, index: usize, r: &Role) -> fmt::Result {
        let tid = self.tid.clone();
        let rtid = self.tmp(Class::B32);
        self.line(format!("sub.u32 {rtid}, {tid}, {};", r.first_warp * 32))?;
        let lane = self.tmp(Class::B32);
        self.line(format!("and.b32 {lane}, {tid}, 31;"))?;
        let leader = self.tmp(Class::Pred);
        self.line(format!("setp.eq.u32 {leader}, {rtid}, 0;"))?;
        let lane0 = self.tmp(Class::Pred);
        self.line(format!("setp.eq.u32 {lane0}, {lane}, 0;"))?;
        // The role's bulk copies: in (`copy_from`) and out (`copy_to`), which its end waits for.
        let (mut copies_in, mut copies_out) = (false, false);
        crate::ir::for_each_inst(&r.body, &mut |i| {
            copies_in |= matches!(i, Inst::CopyIn { .. });
            copies_out |= matches!(i, Inst::CopyOut { .. });
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
        let mut rings = HashMap::new();
        for (ci, c) in self.k.channels.iter().enumerate() {
            let receives = c.consumers.iter().any(|r| r.0 as usize == index);
            for (sender, owns) in [
                (true, c.producer.map(|o| o.0 as usize) == Some(index)),
                (false, receives),
            ] {
                if !owns {
                    continue;
                }
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
                if !sender && !ends_leave.contains(&ChannelId(ci as u32)) {
                    self.line(format!(
                        "setp.ne.u32 {}, {}, {};",
                        ring.closed, ring.slot, ring.slot
                    ))?;
                }
                rings.insert((ChannelId(ci as u32), sender), ring);
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
        });
        self.abort_label = format!("$abort_{index}");
        self.block(&r.body)?;
        if copies_out {
            // The role's bulk copies to global memory are complete before its threads leave.
            self.line("cp.async.bulk.wait_group 0;")?;
        }
        self.role = None;
        // The role's way out when the kernel aborts, then its panic and timeout paths.
        self.line("bra $exit;")?;
        let abort_label = std::mem::replace(&mut self.abort_label, "$exit".to_string());
        self.place_label(&abort_label)?;
        self.line("exit;")?;
        let stubs = std::mem::take(&mut self.stubs);
        self.body.push_str(&stubs);
        Ok(())
    }

    fn block(&mut self, b: &Block) -> fmt::Result {
        for inst in &b.0 {
            self.inst(inst)?;
        }
        Ok(())
    }

    /// The registers of the ring `(chan, sender)` of the current role, noting that the code uses
    /// it. Inside an unrolled loop ([`Unrolled`]) its slot and held slot are the constants the
    /// copy being written is at.
    fn ring(&mut self, chan: ChannelId, sender: bool) -> Result<Ring, fmt::Error> {
        let key = (chan, sender);
        let role = self.role.as_mut().ok_or(fmt::Error)?;
        role.touched.insert(key);
        let mut ring = role.rings.get(&key).cloned().ok_or(fmt::Error)?;
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
    fn shared_addr(&mut self, offset: u32, index: &str, stride: u32) -> Result<String, fmt::Error> {
        let smem = self.smem.clone();
        let base = self.tmp(Class::B32);
        self.line(format!("add.u32 {base}, {smem}, {offset};"))?;
        let addr = self.tmp(Class::B32);
        self.line(format!("mad.lo.u32 {addr}, {index}, {stride}, {base};"))?;
        Ok(addr)
    }

    /// Waits for the phase `parity` of `barrier` to complete. The decision is made warp-uniform
    /// with `vote`, so that a warp leaves the loop together. While the phase is not complete, the
    /// loop watches the abort word (another thread panicked, the host cancelled) and, when the
    /// watchdog is on, the time spent in this wait; either way the warp leaves through the role's
    /// abort exit, so that no wait outlives a failure.
    fn wait(&mut self, barrier: &str, parity: &str, site: SiteId) -> fmt::Result {
        self.wait_then_load(barrier, parity, site, None).map(|_| ())
    }

    /// [`Writer::wait`], then, for `load = Some((offset, index))`, the `u32` at shared address
    /// `offset + 4 index` (a word the other side wrote before it completed the phase: a
    /// receiver's state word) into a new register, which is returned. Outside `join!` branches,
    /// the first test, which passes whenever the phase is already complete, issues the load
    /// right after its `try_wait`, predicated on the lane's result, and before the `vote`, so
    /// that the load's latency overlaps the `vote` and the branch instead of following them;
    /// when the warp's test fails, the value is not used and the slow loop loads again after its
    /// own successful test. In a `join!` branch, whose wait yields, the address is computed and
    /// the word loaded after the wait (an address computed before the yield made `join_cost`'s
    /// `join!` 16% slower).
    fn wait_then_load(
        &mut self,
        barrier: &str,
        parity: &str,
        site: SiteId,
        load: Option<(u32, &str)>,
    ) -> Result<Option<String>, fmt::Error> {
        if self.join.is_some() {
            // In a `join!` branch: test without blocking, and let the warp run another branch
            // while the phase is incomplete.
            let done = self.label("waited");
            let p = self.tmp(Class::Pred);
            self.yield_point(site, &mut |w: &mut Self| {
                w.line(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {done};"))
            })?;
            self.place_label(&done)?;
            self.note_progress()?;
            let Some((offset, index)) = load else {
                return Ok(None);
            };
            let addr = self.shared_addr(offset, index, 4)?;
            let dst = self.tmp(Class::B32);
            self.line(format!("ld.shared.u32 {dst}, [{addr}];"))?;
            return Ok(Some(dst));
        }
        let load = match load {
            Some((offset, index)) => {
                let addr = self.shared_addr(offset, index, 4)?;
                Some((self.tmp(Class::B32), addr))
            }
            None => None,
        };
        let l = self.label("wait");
        let done = self.label("waited");
        let timeout = self.label("timeout");
        let p = self.tmp(Class::Pred);
        let deadline = self.tmp(Class::B64);
        let spins = self.tmp(Class::B32);
        // With a load, the slow loop's successful test goes to `slow_done`, which loads and
        // falls into `done`; the first test has loaded already.
        let slow_done = match load {
            Some(_) => self.label("waited_slow"),
            None => done.clone(),
        };
        let test = |w: &mut Self, first: bool| {
            w.line(format!(
                "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
            ))?;
            if let (true, Some((dst, addr))) = (first, &load) {
                // Predicated on this lane's result: the load waits for the `try_wait` to have
                // seen the phase complete. Unpredicated, it was issued before that on the H200
                // and read a stale state word (an end-of-stream marker read as an item).
                w.line(format!("@{p} ld.shared.u32 {dst}, [{addr}];"))?;
            }
            w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
            w.line(format!(
                "@{p} bra {};",
                if first { &done } else { &slow_done }
            ))
        };
        // The first test is out of the loop, so that a wait that finds its phase complete (the
        // common case in a streaming pipeline) costs three instructions (four with a load).
        test(self, true)?;
        let word = self.slow_wait_start(&deadline, &spins)?;
        self.place_label(&l)?;
        test(self, false)?;
        self.slow_wait_tail(&l, &timeout, &deadline, &spins, &word, true)?;
        if let Some((dst, addr)) = &load {
            // `slow_wait_tail` ends with a branch back to `l`: nothing falls into this label.
            self.place_label(&slow_done)?;
            self.line(format!("ld.shared.u32 {dst}, [{addr}];"))?;
        }
        self.place_label(&done)?;
        self.stub(&timeout, FAILURE_TIMEOUT, site, &self.abort_label.clone())?;
        Ok(load.map(|(dst, _)| dst))
    }

    /// The start of a blocking wait's slow loop: the watchdog's deadline and the spin count at 0,
    /// and the register the abort word is read into, set to a value that is not this launch's id
    /// (the first poll reads the word, the next one tests it: no read before a wait has spun 16
    /// times, as before); returns that register.
    fn slow_wait_start(&mut self, deadline: &str, spins: &str) -> Result<String, fmt::Error> {
        let launch_id = self.launch_id.clone();
        let word = self.tmp(Class::B32);
        self.line(format!("mov.u64 {deadline}, 0;"))?;
        self.line(format!("mov.u32 {spins}, 0;"))?;
        self.line(format!("not.b32 {word}, {launch_id};"))?;
        Ok(word)
    }

    /// The rest of a blocking wait's loop at `l`, after its test: every 16th iteration, the
    /// abort word and, when the watchdog is on, the time spent (going to `timeout` when it is
    /// past the bound); then back to `l`.
    ///
    /// `read_ahead`: a wait that `try_wait` suspends tests the word read at the previous poll and
    /// then reads it again, so that no spin waits for the load. A polling loop (a `select!`, a
    /// `join!`'s rounds) whose tests do not block spins on the issue slots that the other roles'
    /// warps need: it reads the word and waits for it (about 1 µs every 16 spins), which is its
    /// back-off. (On the H200, reading ahead in `select!` made `join_cost` 2x slower, 164 to 322
    /// ns per item.)
    fn slow_wait_tail(
        &mut self,
        l: &str,
        timeout: &str,
        deadline: &str,
        spins: &str,
        word: &str,
        read_ahead: bool,
    ) -> fmt::Result {
        let (abort, launch_id, abort_label) = (
            self.abort.clone(),
            self.launch_id.clone(),
            self.abort_label.clone(),
        );
        let hit = self.tmp(Class::Pred);
        // Every warp of every block waits here at times: reading the one abort word on every slow
        // iteration would make it a hot spot of the L2, and a short wait should not pay a global
        // load's latency. So the word and the watchdog's clock are read on every 16th slow
        // iteration, the first time after 16 (`try_wait` suspends between them), and each read
        // is tested at the next poll, so that no iteration waits for the load.
        let skip = self.label("poll_skip");
        let low = self.tmp(Class::B32);
        let quiet = self.tmp(Class::Pred);
        self.line(format!("add.u32 {spins}, {spins}, 1;"))?;
        self.line(format!("and.b32 {low}, {spins}, 15;"))?;
        self.line(format!("setp.ne.u32 {quiet}, {low}, 0;"))?;
        self.line(format!("@{quiet} bra {l};"))?;
        if !read_ahead {
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        // With `read_ahead`, `word` was read at the previous poll (or set when the slow loop
        // began): testing it does not wait for a load.
        self.line(format!("setp.eq.u32 {hit}, {word}, {launch_id};"))?;
        self.line(format!("vote.sync.any.pred {hit}, {hit}, -1;"))?;
        self.line(format!("@{hit} bra {abort_label};"))?;
        if read_ahead {
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        self.place_label(&skip)?;
        let (watchdog, on) = (self.watchdog.clone(), self.watchdog_on.clone());
        self.line(format!("@!{on} bra {l};"))?;
        let now = self.tmp(Class::B64);
        let first = self.tmp(Class::Pred);
        let late = self.tmp(Class::Pred);
        self.line(format!("mov.u64 {now}, %globaltimer;"))?;
        self.line(format!("setp.eq.u64 {first}, {deadline}, 0;"))?;
        self.line(format!("@{first} add.u64 {deadline}, {now}, {watchdog};"))?;
        self.line(format!("setp.gt.u64 {late}, {now}, {deadline};"))?;
        self.line(format!("vote.sync.any.pred {late}, {late}, -1;"))?;
        self.line(format!("@{late} bra {timeout};"))?;
        self.line(format!("bra {l};"))
    }

    /// A resume point of the `join!` branch being written: `test` branches away when the awaited
    /// thing is ready and falls through when not; then the warp saves this point in the
    /// branch's state and goes on with the next branch.
    fn yield_point(
        &mut self,
        site: SiteId,
        test: &mut dyn FnMut(&mut Self) -> fmt::Result,
    ) -> fmt::Result {
        let Some(j) = self.join.as_mut() else {
            return Err(fmt::Error);
        };
        let branch = j.branch;
        let point = j.resumes[branch].len() as u32 + 1;
        let label = format!("$join{}_b{branch}_r{point}", j.id);
        j.resumes[branch].push((point, label.clone()));
        let (state, next, site_reg) = (
            j.states[branch].clone(),
            j.dispatch_label(branch + 1),
            j.site.clone(),
        );
        self.place_label(&label)?;
        test(self)?;
        self.line(format!("mov.u32 {state}, {point};"))?;
        self.line(format!("mov.u32 {site_reg}, {};", site.0))?;
        self.line(format!("bra {next};"))
    }

    /// In a `join!` branch: a wait has passed (the round's watchdog restarts).
    fn note_progress(&mut self) -> fmt::Result {
        match self.join.as_ref().map(|j| j.progress.clone()) {
            Some(progress) => self.line(format!("mov.u32 {progress}, 1;")),
            None => Ok(()),
        }
    }

    /// `join!` in role code: the branches one after the other, each ending in a jump to the
    /// next branch's dispatch, then the dispatches (a chain of compares on the branch's state)
    /// and the round's tail.
    fn join(&mut self, branches: &[Block]) -> fmt::Result {
        if self.join.is_some() {
            // The verifier rejects a join inside a join.
            return Err(fmt::Error);
        }
        let id = self.joins;
        self.joins += 1;
        writeln!(self.body, "    // join of {} branches", branches.len())?;
        let states: Vec<String> = branches.iter().map(|_| self.tmp(Class::B32)).collect();
        for st in &states {
            self.line(format!("mov.u32 {st}, 0;"))?;
        }
        let (progress, site) = (self.tmp(Class::B32), self.tmp(Class::B32));
        let (deadline, spins) = (self.tmp(Class::B64), self.tmp(Class::B32));
        self.line(format!("mov.u32 {progress}, 0;"))?;
        self.line(format!("mov.u32 {site}, 0;"))?;
        let word = self.slow_wait_start(&deadline, &spins)?;
        self.join = Some(JoinCtx {
            id,
            branch: 0,
            states: states.clone(),
            resumes: vec![Vec::new(); branches.len()],
            progress: progress.clone(),
            site: site.clone(),
        });
        let start = |b: usize| format!("$join{id}_start_{b}");
        let mut written = Ok(());
        for (b, block) in branches.iter().enumerate() {
            if let Some(j) = self.join.as_mut() {
                j.branch = b;
            }
            written = written
                .and_then(|_| self.place_label(&start(b)))
                .and_then(|_| self.block(block))
                .and_then(|_| self.line(format!("mov.u32 {}, {BRANCH_DONE};", states[b])));
            let next = self.join.as_ref().map(|j| j.dispatch_label(b + 1));
            written = written.and_then(|_| self.line(format!("bra {};", next.unwrap_or_default())));
        }
        let Some(ctx) = self.join.take() else {
            return Err(fmt::Error);
        };
        written?;
        // Dispatch: go on with each branch where it stopped; skip the ended ones.
        for (b, state) in states.iter().enumerate() {
            self.place_label(&ctx.dispatch_label(b))?;
            let p = self.tmp(Class::Pred);
            self.line(format!("setp.eq.u32 {p}, {state}, {BRANCH_DONE};"))?;
            self.line(format!("@{p} bra {};", ctx.dispatch_label(b + 1)))?;
            for (point, label) in &ctx.resumes[b] {
                self.line(format!("setp.eq.u32 {p}, {state}, {point};"))?;
                self.line(format!("@{p} bra {label};"))?;
            }
            self.line(format!("bra {};", start(b)))?;
        }
        // The round's tail: done when every branch has ended; a round in which no wait passed
        // counts as a slow iteration of a blocking wait (abort word, watchdog).
        let end = format!("$join{id}_end");
        let timeout = self.label("timeout");
        self.place_label(&ctx.dispatch_label(states.len()))?;
        let all = self.tmp(Class::Pred);
        for (b, state) in states.iter().enumerate() {
            if b == 0 {
                self.line(format!("setp.eq.u32 {all}, {state}, {BRANCH_DONE};"))?;
            } else {
                self.line(format!(
                    "setp.eq.and.u32 {all}, {state}, {BRANCH_DONE}, {all};"
                ))?;
            }
        }
        self.line(format!("@{all} bra {end};"))?;
        let moved = self.tmp(Class::Pred);
        let first = ctx.dispatch_label(0);
        self.line(format!("setp.ne.u32 {moved}, {progress}, 0;"))?;
        self.line(format!("mov.u32 {progress}, 0;"))?;
        self.line(format!("@{moved} mov.u32 {spins}, 0;"))?;
        self.line(format!("@{moved} mov.u64 {deadline}, 0;"))?;
        self.line(format!("@{moved} bra {first};"))?;
        self.slow_wait_tail(&first, &timeout, &deadline, &spins, &word, false)?;
        self.place_label(&end)?;
        let abort_label = self.abort_label.clone();
        self.stub_at(&timeout, FAILURE_TIMEOUT, &site, &abort_label)
    }

    /// `select!`: tests the enabled channels' next slots in order, and takes the first that is
    /// full (an item, or the end of the stream) as `recv` does. A channel that has closed is
    /// ready at once. Tests do not block (`test_wait`), so that no channel delays the others.
    fn select_recv(
        &mut self,
        chans: &[ChannelId],
        enabled: Value,
        chosen: Value,
        some: Value,
        site: SiteId,
    ) -> fmt::Result {
        let (en, ch, s) = (self.reg(enabled), self.reg(chosen), self.reg(some));
        let names: Vec<String> = chans.iter().map(|c| c.to_string()).collect();
        writeln!(self.body, "    // select over {}", names.join(", "))?;
        let done = self.label("selected");
        let mut rings = Vec::new();
        for &c in chans {
            rings.push((self.ring(c, false)?, self.k.channel(c).clone()));
        }
        let got: Vec<String> = chans.iter().map(|_| self.label("select_got")).collect();
        let ended: Vec<String> = chans.iter().map(|_| self.label("select_closed")).collect();
        let (bit, on, p) = (
            self.tmp(Class::B32),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        let mut fulls = Vec::new();
        for (ring, c) in &rings {
            fulls.push(self.shared_addr(c.full_offset, &ring.slot, 8)?);
        }
        let mut test = |w: &mut Self| -> fmt::Result {
            for (k, (ring, _)) in rings.iter().enumerate() {
                let skip = w.label("select_skip");
                w.line(format!("and.b32 {bit}, {en}, {};", 1u32 << k))?;
                w.line(format!("setp.ne.u32 {on}, {bit}, 0;"))?;
                w.line(format!("@!{on} bra {skip};"))?;
                w.line(format!("@{} bra {};", ring.closed, ended[k]))?;
                w.line(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, [{}], {};",
                    fulls[k], ring.phase
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {};", got[k]))?;
                w.place_label(&skip)?;
            }
            Ok(())
        };
        if self.join.is_some() {
            self.yield_point(site, &mut test)?;
        } else {
            let l = self.label("select_wait");
            let timeout = self.label("timeout");
            let (deadline, spins) = (self.tmp(Class::B64), self.tmp(Class::B32));
            let word = self.slow_wait_start(&deadline, &spins)?;
            self.place_label(&l)?;
            test(self)?;
            self.slow_wait_tail(&l, &timeout, &deadline, &spins, &word, false)?;
            let abort_label = self.abort_label.clone();
            self.stub(&timeout, FAILURE_TIMEOUT, site, &abort_label)?;
        }
        for (k, (ring, c)) in rings.iter().enumerate() {
            // A full slot: an item or the end-of-stream marker, taken as `recv` takes it.
            self.place_label(&got[k])?;
            self.take_full_slot(chans[k], ring, c, &s, None)?;
            self.line(format!("mov.u32 {ch}, {k};"))?;
            self.line(format!("bra {done};"))?;
            // A channel that closed before: its `recv` answers `None` at once.
            self.place_label(&ended[k])?;
            self.line(format!("setp.ne.u32 {s}, {ch}, {ch};"))?;
            self.line(format!("mov.u32 {ch}, {k};"))?;
            self.line(format!("bra {done};"))?;
        }
        self.place_label(&done)?;
        self.note_progress()
    }

    /// The receiver's current slot is full (its wait passed): reads its state word into `some`
    /// (an item, or the end-of-stream marker, after which the channel answers `None` at once),
    /// holds the slot and advances the ring. `recv` and `select!` take a slot this way; `recv`
    /// passes the state word, which its wait loaded ([`Writer::wait_then_load`]).
    fn take_full_slot(
        &mut self,
        chan: ChannelId,
        ring: &Ring,
        c: &Channel,
        some: &str,
        loaded: Option<&str>,
    ) -> fmt::Result {
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

    /// Out-of-line code at `label`: the first failing thread of this launch writes the failure
    /// record (`kind`, `site`, block, thread, role), then every thread goes on to `cont`.
    fn stub(&mut self, label: &str, kind: u32, site: SiteId, cont: &str) -> fmt::Result {
        self.stub_at(label, kind, &site.0.to_string(), cont)
    }

    /// [`Writer::stub`] with the site as an operand (an immediate or a register).
    fn stub_at(&mut self, label: &str, kind: u32, site: &str, cont: &str) -> fmt::Result {
        let (abort, launch_id, record, tid) = (
            self.abort.clone(),
            self.launch_id.clone(),
            self.record.clone(),
            self.tid.clone(),
        );
        let role = self.role.as_ref().map_or(u32::MAX, |r| r.index as u32);
        let prev = self.tmp(Class::B32);
        let dup = self.tmp(Class::Pred);
        let block = self.tmp(Class::B32);
        let mut out = String::new();
        writeln!(out, "{label}:")?;
        for line in [
            format!("atom.global.exch.b32 {prev}, [{abort}], {launch_id};"),
            format!("setp.eq.u32 {dup}, {prev}, {launch_id};"),
            format!("@{dup} bra {cont};"),
            format!("st.volatile.global.u32 [{record}+4], {kind};"),
            format!("st.volatile.global.u32 [{record}+8], {site};"),
            format!("mov.u32 {block}, %ctaid.x;"),
            format!("st.volatile.global.u32 [{record}+12], {block};"),
            format!("st.volatile.global.u32 [{record}+16], {tid};"),
            format!("st.volatile.global.u32 [{record}+20], {role};"),
            "fence.sc.sys;".to_string(),
            format!("st.volatile.global.u32 [{record}], {launch_id};"),
            format!("bra {cont};"),
        ] {
            writeln!(out, "    {line}")?;
        }
        self.stubs.push_str(&out);
        Ok(())
    }

    fn advance(&mut self, key: (ChannelId, bool), ring: &Ring, depth: u32) -> fmt::Result {
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
    fn warp_arrive(&mut self, barrier: &str) -> fmt::Result {
        let lane0 = self.role()?.lane0.clone();
        self.line("bar.warp.sync -1;")?;
        self.line(format!(
            "@{lane0} mbarrier.arrive.release.cta.shared::cta.b64 _, [{barrier}];"
        ))
    }

    /// Waits for the sender's current slot to be empty.
    fn wait_empty(&mut self, chan: ChannelId, ring: &Ring, site: SiteId) -> fmt::Result {
        let c = self.k.channel(chan).clone();
        let empty = self.shared_addr(c.empty_offset, &ring.slot, 8)?;
        let parity = self.tmp(Class::B32);
        self.line(format!("xor.b32 {parity}, {}, 1;", ring.phase))?;
        self.wait(&empty, &parity, site)
    }

    /// Marks the sender's current slot (1 = an item, 0 = closed) and hands it over. The state
    /// words start at 1 (the kernel's init block) and only the end-of-stream marker changes one,
    /// after which nothing is sent: an item's send writes no state.
    fn publish(&mut self, chan: ChannelId, ring: &Ring, state: u32) -> fmt::Result {
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

    /// Whether the role loop `id` is written as copies of `body` with constant ring slots
    /// ([`Unrolled`]), and how many copies: when every channel operation of the body is at its
    /// top level (so each runs once per completed iteration), the rings it uses were not used
    /// before (so they are at slot 0), the body has no nested loop (whose labels would repeat),
    /// no `continue` (which would skip copies), no `join!`, `select!` or close, and the copies
    /// bring every ring back to slot 0: the least common multiple of each ring's period (its
    /// depth over the gcd of the depth and its steps per iteration), from 2 to [`MAX_UNROLL`].
    fn unroll_plan(&self, id: LoopId, body: &Block) -> Option<(u32, Unrolled)> {
        let role = self.role.as_ref()?;
        // Steps (sends, receives) per iteration of each ring the top level uses.
        let mut steps: HashMap<(ChannelId, bool), u32> = HashMap::new();
        for inst in &body.0 {
            let (key, step) = match inst {
                Inst::Reserve { chan, .. } | Inst::CopyIn { chan, .. } => ((*chan, true), 0),
                Inst::Send { chan } => ((*chan, true), 1),
                Inst::SlotAddr { chan, send, .. } => ((*chan, *send), 0),
                Inst::Recv { chan, .. } => ((*chan, false), 1),
                Inst::Release { chan } | Inst::CopyOut { chan, .. } => ((*chan, false), 0),
                Inst::Loop { .. }
                | Inst::Continue(_)
                | Inst::Close { .. }
                | Inst::Join { .. }
                | Inst::SelectRecv { .. } => return None,
                _ => continue,
            };
            *steps.entry(key).or_insert(0) += step;
        }
        // Nested blocks: no channel operation, loop, `continue`, `join!` or `select!`.
        let mut nested_ok = true;
        for inst in &body.0 {
            let nested: Vec<&Block> = match inst {
                Inst::If { then, else_, .. } => vec![then, else_],
                Inst::ParFor(p) => vec![&p.body],
                _ => Vec::new(),
            };
            for b in nested {
                crate::ir::for_each_inst(b, &mut |i| {
                    nested_ok &= !matches!(
                        i,
                        Inst::Reserve { .. }
                            | Inst::CopyIn { .. }
                            | Inst::Send { .. }
                            | Inst::SlotAddr { .. }
                            | Inst::Recv { .. }
                            | Inst::Release { .. }
                            | Inst::CopyOut { .. }
                            | Inst::Close { .. }
                            | Inst::Loop { .. }
                            | Inst::Continue(_)
                            | Inst::Join { .. }
                            | Inst::SelectRecv { .. }
                    );
                });
            }
        }
        let size = unroll_size(body, 1);
        if !nested_ok || size > MAX_UNROLLED_BODY || steps.is_empty() {
            return None;
        }
        let mut factor = 1u32;
        for (key, &n) in &steps {
            if role.touched.contains(key) || !role.rings.contains_key(key) {
                return None;
            }
            let depth = self.k.channel(key.0).ty.depth.max(1);
            let period = depth / gcd(n % depth, depth);
            factor = factor / gcd(factor, period) * period;
            if factor > MAX_UNROLL {
                return None;
            }
        }
        if factor < 2 {
            return None;
        }
        let slots = steps.keys().map(|&key| (key, 0)).collect();
        let held = steps
            .keys()
            .filter(|key| !key.1)
            .map(|&key| (key, 0))
            .collect();
        Some((factor, Unrolled { id, slots, held }))
    }

    /// One version of a role loop: its head, its body (unrolled when [`Writer::unroll_plan`]
    /// says so and `top`), the abort-word watch of [`Inst::Loop`] at its `next` label, and the
    /// branch back to its head.
    fn loop_version(
        &mut self,
        id: LoopId,
        body: &Block,
        top: bool,
        (head, next): (&str, &str),
        count: Option<&(String, String)>,
    ) -> fmt::Result {
        self.place_label(head)?;
        let plan = if top {
            self.unroll_plan(id, body)
        } else {
            None
        };
        self.loop_depth += 1;
        match plan {
            Some((factor, unrolled)) => {
                writeln!(
                    self.body,
                    "    // {factor} copies of the loop body: ring slots are constants"
                )?;
                self.unroll = Some(unrolled);
                for _ in 0..factor {
                    self.block(body)?;
                }
                self.unroll = None;
            }
            None => self.block(body)?,
        }
        self.loop_depth -= 1;
        self.place_label(next)?;
        if let Some((c, word)) = count {
            let abort = self.abort.clone();
            let (launch_id, abort_label) = (self.launch_id.clone(), self.abort_label.clone());
            let (low, quiet, hit) = (
                self.tmp(Class::B32),
                self.tmp(Class::Pred),
                self.tmp(Class::Pred),
            );
            self.line(format!("add.u32 {c}, {c}, 1;"))?;
            self.line(format!("and.b32 {low}, {c}, 15;"))?;
            self.line(format!("setp.ne.u32 {quiet}, {low}, 0;"))?;
            self.line(format!("@{quiet} bra {head};"))?;
            self.line(format!("setp.eq.u32 {hit}, {word}, {launch_id};"))?;
            self.line(format!("vote.sync.any.pred {hit}, {hit}, -1;"))?;
            self.line(format!("@{hit} bra {abort_label};"))?;
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        self.line(format!("bra {head};"))?;
        Ok(())
    }

    fn inst(&mut self, inst: &Inst) -> fmt::Result {
        match inst {
            Inst::Const { dst, imm } => {
                let d = self.reg(*dst);
                match (imm, self.k.ty(*dst)) {
                    (Imm::Bool(b), _) => {
                        let t = self.tmp(Class::B32);
                        self.line(format!("mov.u32 {t}, {};", u32::from(*b)))?;
                        self.line(format!("setp.ne.u32 {d}, {t}, 0;"))
                    }
                    (Imm::F32(f), _) => self.line(format!("mov.f32 {d}, 0f{:08X};", f.to_bits())),
                    (Imm::F64(f), _) => self.line(format!("mov.f64 {d}, 0d{:016X};", f.to_bits())),
                    (Imm::Int(v), s) if s.is_wide_int() => self.line(format!("mov.b64 {d}, {v};")),
                    (Imm::Int(v), s) if s.is_half() => {
                        self.line(format!("mov.b16 {d}, {};", *v as u16))
                    }
                    (Imm::Int(v), _) => self.line(format!("mov.b32 {d}, {};", *v as u32)),
                }
            }
            Inst::Copy { dst, src } => {
                let (d, s) = (self.reg(*dst), self.reg(*src));
                self.line(format!("mov.{} {d}, {s};", bits_ty(self.k.ty(*dst))))
            }
            Inst::Unary { dst, op, src } => {
                let (d, s) = (self.reg(*dst), self.reg(*src));
                let ty = self.k.ty(*dst);
                let t = ptx_ty(ty);
                match op {
                    // Negating a half flips its sign bit, as the `half` crate does.
                    UnOp::Neg if ty.is_half() => self.line(format!("xor.b16 {d}, {s}, 0x8000;")),
                    UnOp::Neg if ty.is_float() => self.line(format!("neg.{t} {d}, {s};")),
                    UnOp::Neg => {
                        let signed = if ty.is_wide_int() { "s64" } else { "s32" };
                        self.line(format!("neg.{signed} {d}, {s};"))?;
                        self.normalize(&d, ty)
                    }
                    UnOp::Not => {
                        self.line(format!("not.{} {d}, {s};", bits_ty(ty)))?;
                        self.normalize(&d, ty)
                    }
                    UnOp::Abs => {
                        self.line(format!("abs.{t} {d}, {s};"))?;
                        self.normalize(&d, ty)
                    }
                    UnOp::Sqrt => self.line(format!("sqrt.rn.{t} {d}, {s};")),
                    UnOp::Floor => self.line(format!("cvt.rmi.{t}.{t} {d}, {s};")),
                    UnOp::Ceil => self.line(format!("cvt.rpi.{t}.{t} {d}, {s};")),
                    UnOp::Trunc => self.line(format!("cvt.rzi.{t}.{t} {d}, {s};")),
                    UnOp::Ex2Approx => self.line(format!("ex2.approx.f32 {d}, {s};")),
                    UnOp::Lg2Approx => self.line(format!("lg2.approx.f32 {d}, {s};")),
                }
            }
            Inst::Binary { dst, op, lhs, rhs } => self.binary(*dst, *op, *lhs, *rhs),
            Inst::Cast { dst, src } => self.cast(*dst, *src),
            Inst::Atomic {
                dst,
                op,
                addr,
                operands,
                order,
            } => self.atomic(*dst, *op, *addr, operands, *order),
            Inst::Store { space, addr, value } => {
                let (a, v) = (self.reg(*addr), self.reg(*value));
                let ty = self.k.ty(*value);
                self.store(&v, ty, *space, &a)
            }
            Inst::LocalAddr { dst, offset } => {
                let d = self.reg(*dst);
                self.line(format!("mov.u64 {d}, gpu_async_local;"))?;
                self.line(format!("add.u64 {d}, {d}, {offset};"))
            }
            Inst::LoadCell { dst, cell } => {
                let smem = self.smem.clone();
                let a = self.tmp(Class::B32);
                let offset = self.k.cells_offset + 8 * cell;
                self.line(format!("add.u32 {a}, {smem}, {offset};"))?;
                self.load(*dst, Space::Shared, &a)
            }
            Inst::StoreCell { cell, value } => {
                // The role's first thread writes; the role barrier that follows publishes it.
                let leader = self.role()?.leader.clone();
                let smem = self.smem.clone();
                let a = self.tmp(Class::B32);
                let offset = self.k.cells_offset + 8 * cell;
                self.line(format!("add.u32 {a}, {smem}, {offset};"))?;
                let skip = self.label("cell_stored");
                self.line(format!("@!{leader} bra {skip};"))?;
                let v = self.reg(*value);
                let ty = self.k.ty(*value);
                self.store(&v, ty, Space::Shared, &a)?;
                self.place_label(&skip)
            }
            Inst::ConstAddr { dst, table } => {
                let d = self.reg(*dst);
                self.line(format!("mov.u64 {d}, gpu_async_const_{table};"))
            }
            Inst::Select {
                dst,
                cond,
                if_true,
                if_false,
            } => {
                let (d, c, a, b) = (
                    self.reg(*dst),
                    self.reg(*cond),
                    self.reg(*if_true),
                    self.reg(*if_false),
                );
                let ty = self.k.ty(*dst);
                if ty == Scalar::Bool {
                    // d = (c & a) | (!c & b)
                    let (x, y) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
                    self.line(format!("and.pred {x}, {c}, {a};"))?;
                    self.line(format!("not.pred {y}, {c};"))?;
                    self.line(format!("and.pred {y}, {y}, {b};"))?;
                    self.line(format!("or.pred {d}, {x}, {y};"))
                } else {
                    self.line(format!("selp.{} {d}, {a}, {b}, {c};", bits_ty(ty)))
                }
            }
            Inst::Bitcast { dst, src } => {
                let (d, s) = (self.reg(*dst), self.reg(*src));
                let (to, from) = (Class::of(self.k.ty(*dst)), Class::of(self.k.ty(*src)));
                match (from, to) {
                    // A `u16` lives in a 32-bit register, a half in a 16-bit one.
                    (Class::B16, Class::B32) => self.line(format!("cvt.u32.u16 {d}, {s};")),
                    (Class::B32, Class::B16) => self.line(format!("cvt.u16.u32 {d}, {s};")),
                    _ => self.line(format!("mov.b{} {d}, {s};", self.k.ty(*dst).size() * 8)),
                }
            }
            Inst::Fma { dst, a, b, c } => {
                let (d, a, b, c) = (self.reg(*dst), self.reg(*a), self.reg(*b), self.reg(*c));
                let t = ptx_ty(self.k.ty(*dst));
                self.line(format!("fma.rn.{t} {d}, {a}, {b}, {c};"))
            }
            Inst::Special { dst, reg } => {
                let d = self.reg(*dst);
                let sreg = match reg {
                    Special::BlockIdx => "%ctaid.x",
                    Special::GridDim => "%nctaid.x",
                    Special::LaneId => return self.line(format!("mov.u32 {d}, %laneid;")),
                    Special::RoleWarp => {
                        let rtid = self.role()?.rtid.clone();
                        return self.line(format!("shr.u32 {d}, {rtid}, 5;"));
                    }
                };
                let t = self.tmp(Class::B32);
                self.line(format!("mov.u32 {t}, {sreg};"))?;
                self.line(format!("cvt.u64.u32 {d}, {t};"))
            }
            Inst::Shuffle {
                dst,
                mode,
                value,
                operand,
            } => {
                let (d, v, o) = (self.reg(*dst), self.reg(*value), self.reg(*operand));
                // The clamp operand: lanes past 31 (down, idx, xor) or below 0 (up) keep their
                // own value; PTX takes the lane operand's low 5 bits, the language's `% 32`.
                let (name, clamp) = match mode {
                    ShuffleMode::Idx => ("idx", 31),
                    ShuffleMode::Xor => ("bfly", 31),
                    ShuffleMode::Up => ("up", 0),
                    ShuffleMode::Down => ("down", 31),
                };
                let class = Class::of(self.k.ty(*dst));
                if matches!(class, Class::B64 | Class::F64) {
                    let (lo, hi, lo2, hi2) = (
                        self.tmp(Class::B32),
                        self.tmp(Class::B32),
                        self.tmp(Class::B32),
                        self.tmp(Class::B32),
                    );
                    self.line(format!("mov.b64 {{{lo}, {hi}}}, {v};"))?;
                    self.line(format!(
                        "shfl.sync.{name}.b32 {lo2}, {lo}, {o}, {clamp}, -1;"
                    ))?;
                    self.line(format!(
                        "shfl.sync.{name}.b32 {hi2}, {hi}, {o}, {clamp}, -1;"
                    ))?;
                    self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"))
                } else {
                    let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                    self.line(format!("mov.b32 {x}, {v};"))?;
                    self.line(format!("shfl.sync.{name}.b32 {y}, {x}, {o}, {clamp}, -1;"))?;
                    self.line(format!("mov.b32 {d}, {y};"))
                }
            }
            Inst::Vote { dst, mode, pred } => {
                let (d, p) = (self.reg(*dst), self.reg(*pred));
                match mode {
                    VoteMode::Ballot => self.line(format!("vote.sync.ballot.b32 {d}, {p}, -1;")),
                    VoteMode::All => self.line(format!("vote.sync.all.pred {d}, {p}, -1;")),
                    VoteMode::Any => self.line(format!("vote.sync.any.pred {d}, {p}, -1;")),
                }
            }
            Inst::Load { dst, space, addr } => {
                let a = self.reg(*addr);
                self.load(*dst, *space, &a)
            }
            Inst::PanicIf { cond, site } => {
                let c = self.reg(*cond);
                let message = self.k.sites[site.0 as usize].message.clone();
                writeln!(self.body, "    // panics: {message}")?;
                let label = self.label("panic");
                self.line(format!("@{c} bra {label};"))?;
                // A thread that fails inside a parallel loop leaves the loop (its warp may not
                // leave a warp-wide barrier); elsewhere the whole role stops.
                let cont = self
                    .par_exit
                    .clone()
                    .unwrap_or_else(|| self.abort_label.clone());
                self.stub(&label, FAILURE_PANIC, *site, &cont)
            }
            Inst::If { cond, then, else_ } => {
                let c = self.reg(*cond);
                let (l_else, l_end) = (self.label("else"), self.label("endif"));
                self.line(format!("@!{c} bra {l_else};"))?;
                self.block(then)?;
                self.line(format!("bra {l_end};"))?;
                self.place_label(&l_else)?;
                self.block(else_)?;
                self.place_label(&l_end)
            }
            Inst::Loop { id, body } => {
                let head = format!("$loop_{}", id.0);
                // A role loop watches the abort word (a cancelled or failed launch stops even in
                // a loop without awaits) every 16th iteration (of an unrolled loop: every 16th
                // round of its copies): every warp of every block runs
                // these loops, and one word read by all of them on every iteration would be a hot
                // spot of the L2. Loops inside parallel bodies run per thread and are not watched.
                // The word is read 16 iterations before it is tested, so that the loop never
                // stalls on the load: a global load's ~1 µs every 32 items was measured on the
                // H200 at up to 22 ns per item of a bulk-copy handoff. It is not read before the
                // loop (its register starts as the complement of the launch id, so the first
                // test never fires): a loop of a few iterations, as in a grid of one block per few
                // tiles, reads nothing, where a read before every such loop (196,608 per launch
                // of the pipeline example at 2^28) cost 0.2% of its bandwidth on the H200.
                let watched = self.role.is_some() && self.par_exit.is_none();
                let count = if watched {
                    let (c, word) = (self.tmp(Class::B32), self.tmp(Class::B32));
                    let launch_id = self.launch_id.clone();
                    self.line(format!("mov.u32 {c}, 0;"))?;
                    self.line(format!("not.b32 {word}, {launch_id};"))?;
                    Some((c, word))
                } else {
                    None
                };
                let top =
                    watched && self.loop_depth == 0 && self.unroll.is_none() && self.join.is_none();
                let whole = if top {
                    whole_copies(*id, body)
                } else {
                    Vec::new()
                };
                if whole.is_empty() {
                    let next = format!("$loop_next_{}", id.0);
                    self.loop_version(*id, body, top, (&head, &next), count.as_ref())?;
                } else {
                    // Two versions of the loop: without the copies' tails when every one of
                    // them is whole (tested here, once), and as written otherwise.
                    let tails = format!("$loop_{}_tails", id.0);
                    let mut all_whole: Option<String> = None;
                    for &(len, bulk, chan) in &whole {
                        // The checker allows bulk copies of scalar payloads only.
                        let esize = self
                            .k
                            .channel(chan)
                            .ty
                            .elem
                            .scalar()
                            .map(Scalar::size)
                            .ok_or(fmt::Error)?;
                        let (len, bulk) = (self.reg(len), self.reg(bulk));
                        let covered = self.tmp(Class::B64);
                        self.line(format!(
                            "shr.u64 {covered}, {bulk}, {};",
                            esize.trailing_zeros()
                        ))?;
                        let p = self.tmp(Class::Pred);
                        self.line(format!("setp.ge.u64 {p}, {covered}, {len};"))?;
                        match &all_whole {
                            Some(w) => self.line(format!("and.pred {w}, {w}, {p};"))?,
                            None => all_whole = Some(p),
                        }
                    }
                    let all_whole = all_whole.ok_or(fmt::Error)?;
                    self.line(format!("@!{all_whole} bra {tails};"))?;
                    let touched = self.role()?.touched.clone();
                    self.whole = whole.iter().map(|&(len, bulk, _)| (len, bulk)).collect();
                    writeln!(
                        self.body,
                        "    // the loop's version whose bulk copies have no tail"
                    )?;
                    let next = format!("$loop_next_{}", id.0);
                    self.loop_version(*id, body, top, (&head, &next), count.as_ref())?;
                    self.whole.clear();
                    self.role.as_mut().ok_or(fmt::Error)?.touched = touched;
                    writeln!(
                        self.body,
                        "    // the loop's version with the copies' tails"
                    )?;
                    let next = format!("$loop_next_{}_tails", id.0);
                    self.loop_version(*id, body, top, (&tails, &next), count.as_ref())?;
                }
                self.place_label(&format!("$loop_end_{}", id.0))
            }
            Inst::Break(id) => {
                // Leaving an unrolled loop: the code after it reads the ring registers.
                let leaving = match &self.unroll {
                    Some(u) if u.id == *id => {
                        let mut movs: Vec<((ChannelId, bool), u32, Option<u32>)> = u
                            .slots
                            .iter()
                            .map(|(key, &slot)| (*key, slot, u.held.get(key).copied()))
                            .collect();
                        movs.sort_by_key(|(key, ..)| (key.0 .0, key.1));
                        movs
                    }
                    _ => Vec::new(),
                };
                for (key, slot, held) in leaving {
                    let ring = self.role()?.rings.get(&key).cloned().ok_or(fmt::Error)?;
                    self.line(format!("mov.u32 {}, {slot};", ring.slot))?;
                    if let Some(held) = held {
                        self.line(format!("mov.u32 {}, {held};", ring.held))?;
                    }
                }
                self.line(format!("bra $loop_end_{};", id.0))
            }
            Inst::Continue(id) => self.line(format!("bra $loop_next_{};", id.0)),
            Inst::Reserve { chan, site } => {
                let ring = self.ring(*chan, true)?;
                writeln!(self.body, "    // reserve {chan}")?;
                self.wait_empty(*chan, &ring, *site)
            }
            Inst::SlotAddr { dst, chan, send } => {
                let ring = self.ring(*chan, *send)?;
                let c = self.k.channel(*chan).clone();
                let index = if *send {
                    ring.slot.clone()
                } else {
                    ring.held.clone()
                };
                let d = self.reg(*dst);
                let smem = self.smem.clone();
                let base = self.tmp(Class::B32);
                self.line(format!("add.u32 {base}, {smem}, {};", c.data_offset))?;
                self.line(format!(
                    "mad.lo.u32 {d}, {index}, {}, {base};",
                    c.slot_stride
                ))
            }
            Inst::CopyIn {
                chan,
                src,
                len,
                bulk,
            } => self.copy_in(*chan, *src, *len, *bulk),
            Inst::Send { chan } => {
                let ring = self.ring(*chan, true)?;
                writeln!(self.body, "    // send {chan}")?;
                if self.k.channel(*chan).bulk_reads {
                    // The receiver copies the slot out with the async proxy: this thread's
                    // ordinary writes to it must be visible to that proxy first.
                    self.line("fence.proxy.async.shared::cta;")?;
                }
                self.publish(*chan, &ring, 1)
            }
            Inst::CopyOut {
                chan,
                dst,
                len,
                bulk,
            } => self.copy_out(*chan, *dst, *len, *bulk),
            Inst::Close { chan, site } => {
                let ring = self.ring(*chan, true)?;
                writeln!(
                    self.body,
                    "    // close {chan}: the end-of-stream marker takes a slot"
                )?;
                self.wait_empty(*chan, &ring, *site)?;
                self.publish(*chan, &ring, 0)
            }
            Inst::Recv { chan, some, site } => {
                let ring = self.ring(*chan, false)?;
                let c = self.k.channel(*chan).clone();
                let s = self.reg(*some);
                writeln!(self.body, "    // recv {chan}")?;
                let done = self.label("recv_done");
                if !self.role()?.ends_leave.contains(chan) {
                    // After the end, `recv` answers `None` again at once.
                    self.line(format!("not.pred {s}, {};", ring.closed))?;
                    self.line(format!("@{} bra {done};", ring.closed))?;
                }
                let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
                let state = self.wait_then_load(
                    &full,
                    &ring.phase,
                    *site,
                    Some((c.state_offset, &ring.slot)),
                )?;
                self.take_full_slot(*chan, &ring, &c, &s, state.as_deref())?;
                self.place_label(&done)
            }
            Inst::Release { chan } => {
                let ring = self.ring(*chan, false)?;
                let c = self.k.channel(*chan).clone();
                writeln!(self.body, "    // release {chan}")?;
                if c.bulk_reads {
                    // The bulk copies out of the slot must have read it before it is reused
                    // (only the role's first thread has any; the others wait for none).
                    self.line("cp.async.bulk.wait_group.read 0;")?;
                }
                let empty = self.shared_addr(c.empty_offset, &ring.held, 8)?;
                self.warp_arrive(&empty)
            }
            Inst::RoleBarrier { site } => self.role_barrier(*site),
            Inst::OneshotSignal { oneshot } => {
                let Some(kb) = self.k.oneshot_barrier(*oneshot) else {
                    return Err(fmt::Error);
                };
                let (offset, name) = (kb.offset, kb.name.clone());
                let smem = self.smem.clone();
                let addr = self.tmp(Class::B32);
                writeln!(self.body, "    // send one-shot `{name}`")?;
                self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
                self.warp_arrive(&addr)
            }
            Inst::OneshotWait { oneshot, site } => {
                let Some(kb) = self.k.oneshot_barrier(*oneshot) else {
                    return Err(fmt::Error);
                };
                let (offset, name) = (kb.offset, kb.name.clone());
                let smem = self.smem.clone();
                let (addr, parity) = (self.tmp(Class::B32), self.tmp(Class::B32));
                writeln!(self.body, "    // receive one-shot `{name}`: its one phase")?;
                self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
                self.line(format!("mov.u32 {parity}, 0;"))?;
                self.wait(&addr, &parity, *site)
            }
            Inst::BarrierWait { barrier, site } => {
                // The role's warps arrive (each after its own writes), then wait for the phase
                // to complete: every warp of every role that takes the barrier has arrived.
                let Some(kb) = self.k.barriers.get(*barrier as usize) else {
                    return Err(fmt::Error);
                };
                let offset = kb.offset;
                let Some(phase) = self.role()?.kernel_barrier_phases.get(barrier).cloned() else {
                    return Err(fmt::Error);
                };
                let smem = self.smem.clone();
                let addr = self.tmp(Class::B32);
                writeln!(self.body, "    // wait at barrier `{}`", kb.name)?;
                self.line(format!("add.u32 {addr}, {smem}, {offset};"))?;
                self.warp_arrive(&addr)?;
                self.wait(&addr, &phase, *site)?;
                self.line(format!("xor.b32 {phase}, {phase}, 1;"))
            }
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

    /// An atomic operation at GPU scope, with the ordering's PTX semantics (`SeqCst` is a
    /// `fence.sc` followed by the acquire/release form).
    fn atomic(
        &mut self,
        dst: Option<Value>,
        op: AtomicOp,
        addr: Value,
        operands: &[Value],
        order: MemOrder,
    ) -> fmt::Result {
        let a = self.reg(addr);
        let ty = match (dst, operands.first()) {
            (Some(d), _) => self.k.ty(d),
            (None, Some(v)) => self.k.ty(*v),
            (None, None) => return Err(fmt::Error),
        };
        let vals: Vec<String> = operands.iter().map(|v| self.reg(*v)).collect();
        if order == MemOrder::SeqCst {
            self.line("fence.sc.gpu;")?;
        }
        let t = ptx_ty(ty);
        let b = bits_ty(ty);
        match op {
            AtomicOp::Load => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let d = self.reg(dst.ok_or(fmt::Error)?);
                self.line(format!("ld.{sem}.gpu.global.{t} {d}, [{a}];"))
            }
            AtomicOp::Store => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "release"
                };
                self.line(format!("st.{sem}.gpu.global.{t} [{a}], {};", vals[0]))
            }
            _ => {
                let sem = match order {
                    MemOrder::Relaxed => "relaxed",
                    MemOrder::Acquire => "acquire",
                    MemOrder::Release => "release",
                    MemOrder::AcqRel | MemOrder::SeqCst => "acq_rel",
                };
                let d = self.reg(dst.ok_or(fmt::Error)?);
                // Addition wraps the same for signed and unsigned: PTX has it as unsigned.
                let add_ty = if ty.is_wide_int() { "u64" } else { "u32" };
                match op {
                    AtomicOp::Add => self.line(format!(
                        "atom.{sem}.gpu.global.add.{add_ty} {d}, [{a}], {};",
                        vals[0]
                    )),
                    AtomicOp::Sub => {
                        let n = self.tmp(Class::of(ty));
                        let neg = if ty.is_wide_int() { "s64" } else { "s32" };
                        self.line(format!("neg.{neg} {n}, {};", vals[0]))?;
                        self.line(format!(
                            "atom.{sem}.gpu.global.add.{add_ty} {d}, [{a}], {n};"
                        ))
                    }
                    AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Swap => {
                        let name = match op {
                            AtomicOp::And => "and",
                            AtomicOp::Or => "or",
                            AtomicOp::Xor => "xor",
                            _ => "exch",
                        };
                        self.line(format!(
                            "atom.{sem}.gpu.global.{name}.{b} {d}, [{a}], {};",
                            vals[0]
                        ))
                    }
                    AtomicOp::Max | AtomicOp::Min => {
                        let name = if op == AtomicOp::Max { "max" } else { "min" };
                        self.line(format!(
                            "atom.{sem}.gpu.global.{name}.{t} {d}, [{a}], {};",
                            vals[0]
                        ))
                    }
                    AtomicOp::CompareExchange => self.line(format!(
                        "atom.{sem}.gpu.global.cas.{b} {d}, [{a}], {}, {};",
                        vals[0], vals[1]
                    )),
                    AtomicOp::Load | AtomicOp::Store => Err(fmt::Error),
                }
            }
        }
    }

    /// All threads of the role meet, ordering their memory accesses.
    fn role_barrier(&mut self, site: SiteId) -> fmt::Result {
        let (index, warps, phase) = {
            let r = self.role()?;
            (r.index, r.warps, r.barrier_phase.clone())
        };
        match self.k.role_barriers.get(index).copied().flatten() {
            Some(offset) if warps > 1 => {
                // An mbarrier, not `bar.sync`: its wait watches the abort word, so a role
                // whose other warps stopped cannot hang here.
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

    /// `acc = combine(lhs, rhs)` with the reduction's combining block.
    fn combine(&mut self, r: &ParReduce, lhs: &str, rhs: &str) -> fmt::Result {
        let bt = bits_ty(self.k.ty(r.acc));
        let (l, rr, out, acc) = (
            self.reg(r.lhs),
            self.reg(r.rhs),
            self.reg(r.out),
            self.reg(r.acc),
        );
        self.line(format!("mov.{bt} {l}, {lhs};"))?;
        self.line(format!("mov.{bt} {rr}, {rhs};"))?;
        self.block(&r.combine)?;
        self.line(format!("mov.{bt} {acc}, {out};"))
    }

    /// A reduction (see [`ParReduce`] for the order): each thread folds the items of its groups
    /// of four, then the lanes of each warp combine by a butterfly of shuffles, then the warps'
    /// totals go through shared memory and every thread folds them in warp order.
    fn par_reduce(&mut self, p: &ParFor, r: &ParReduce) -> fmt::Result {
        let (threads, warps, rtid, index) = {
            let c = self.role()?;
            (c.threads, c.warps, c.rtid.clone(), c.index)
        };
        let ty = self.k.ty(r.acc);
        let bt = bits_ty(ty);
        let len = self.reg(p.len);
        let (acc, identity) = (self.reg(r.acc), self.reg(r.identity));
        writeln!(
            self.body,
            "    // reduction over {} source(s)",
            p.sources.len()
        )?;
        self.line(format!("mov.{bt} {acc}, {identity};"))?;
        let done = self.label("red_done");
        // Sources of 4-byte elements, all 16-byte aligned, take whole groups in one load each.
        let misaligned = if p.sources.iter().all(|s| s.elem.size() == 4) && straight_line(&p.body) {
            let m = self.tmp(Class::Pred);
            self.line(format!("setp.ne.u32 {m}, 0, 0;"))?;
            for s in &p.sources {
                let b = self.reg(s.base);
                let low = self.tmp(Class::B32);
                match s.space {
                    Space::Global | Space::Local | Space::Const => {
                        let l = self.tmp(Class::B64);
                        self.line(format!("and.b64 {l}, {b}, 15;"))?;
                        self.line(format!("cvt.u32.u64 {low}, {l};"))?;
                    }
                    Space::Shared => self.line(format!("and.b32 {low}, {b}, 15;"))?,
                }
                let q = self.tmp(Class::Pred);
                self.line(format!("setp.ne.u32 {q}, {low}, 0;"))?;
                self.line(format!("or.pred {m}, {m}, {q};"))?;
            }
            Some(m)
        } else {
            None
        };
        let outer_exit = self.par_exit.replace(done.clone());
        // Thread t takes the groups g = t, t + T, ...: elements 4g .. 4g + 3, in order.
        let g = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {g}, {rtid};"))?;
        let (head, next) = (self.label("red_group"), self.label("red_next"));
        self.place_label(&head)?;
        let i = self.tmp(Class::B64);
        self.line(format!("shl.b64 {i}, {g}, 2;"))?;
        let pc = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u64 {pc}, {i}, {len};"))?;
        self.line(format!("@{pc} bra {done};"))?;
        let end = self.tmp(Class::B64);
        self.line(format!("add.u64 {end}, {i}, 4;"))?;
        if let Some(misaligned) = &misaligned {
            // A whole group with aligned sources: one 16-byte load per source, the body four
            // times (it has no control flow), in element order.
            let (partial, scalar) = (self.tmp(Class::Pred), self.label("red_scalar"));
            self.line(format!("setp.gt.u64 {partial}, {end}, {len};"))?;
            self.line(format!("or.pred {partial}, {partial}, {misaligned};"))?;
            self.line(format!("@{partial} bra {scalar};"))?;
            let mut loaded = Vec::new();
            for s in &p.sources {
                let b = self.reg(s.base);
                let a = self.elem_addr(s.space, &b, &i, 4)?;
                let class = Class::of(s.elem);
                let regs: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
                if s.read {
                    self.line(format!(
                        "ld.{}.v4.{} {{{}}}, [{a}];",
                        space_name(s.space),
                        mem_ty(s.elem),
                        regs.join(", ")
                    ))?;
                }
                loaded.push(regs);
            }
            for k in 0..4 {
                for (s, regs) in p.sources.iter().zip(&loaded) {
                    if s.read {
                        let e = self.reg(s.elem_value);
                        self.line(format!("mov.{} {e}, {};", bits_ty(s.elem), regs[k]))?;
                    }
                }
                if let Some(ix) = p.index {
                    let reg = self.reg(ix);
                    self.line(format!("add.u64 {reg}, {i}, {k};"))?;
                }
                self.block(&p.body)?;
                let item = self.reg(r.item);
                let acc_now = acc.clone();
                self.combine(r, &acc_now, &item)?;
            }
            self.line(format!("bra {next};"))?;
            self.place_label(&scalar)?;
        }
        self.line(format!("min.u64 {end}, {end}, {len};"))?;
        let elem = self.label("red_elem");
        self.place_label(&elem)?;
        for s in &p.sources {
            let b = self.reg(s.base);
            let a = self.elem_addr(s.space, &b, &i, s.elem.size())?;
            if s.read {
                self.load(s.elem_value, s.space, &a)?;
            }
        }
        if let Some(ix) = p.index {
            let reg = self.reg(ix);
            self.line(format!("mov.u64 {reg}, {i};"))?;
        }
        self.block(&p.body)?;
        let item = self.reg(r.item);
        let acc_now = acc.clone();
        self.combine(r, &acc_now, &item)?;
        self.line(format!("add.u64 {i}, {i}, 1;"))?;
        let more = self.tmp(Class::Pred);
        self.line(format!("setp.lt.u64 {more}, {i}, {end};"))?;
        self.line(format!("@{more} bra {elem};"))?;
        self.place_label(&next)?;
        self.line(format!("add.u64 {g}, {g}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.par_exit = outer_exit;
        self.place_label(&done)?;
        // The lanes of each warp: partners at distance 16, 8, 4, 2, 1, lower lane on the left.
        let lane = self.tmp(Class::B32);
        self.line(format!("and.b32 {lane}, {rtid}, 31;"))?;
        let class = Class::of(ty);
        for k in [16, 8, 4, 2, 1] {
            let partner = self.tmp(class);
            let wide = matches!(class, Class::B64 | Class::F64);
            if wide {
                let (lo, hi, lo2, hi2) = (
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                );
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {acc};"))?;
                self.line(format!("shfl.sync.bfly.b32 {lo2}, {lo}, {k}, 31, -1;"))?;
                self.line(format!("shfl.sync.bfly.b32 {hi2}, {hi}, {k}, 31, -1;"))?;
                self.line(format!("mov.b64 {partner}, {{{lo2}, {hi2}}};"))?;
            } else {
                let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                self.line(format!("mov.b32 {x}, {acc};"))?;
                self.line(format!("shfl.sync.bfly.b32 {y}, {x}, {k}, 31, -1;"))?;
                self.line(format!("mov.b32 {partner}, {y};"))?;
            }
            let (bit, low) = (self.tmp(Class::B32), self.tmp(Class::Pred));
            self.line(format!("and.b32 {bit}, {lane}, {k};"))?;
            self.line(format!("setp.eq.u32 {low}, {bit}, 0;"))?;
            let (l, rr) = (self.tmp(class), self.tmp(class));
            self.line(format!("selp.{bt} {l}, {acc}, {partner}, {low};"))?;
            self.line(format!("selp.{bt} {rr}, {partner}, {acc}, {low};"))?;
            self.combine(r, &l, &rr)?;
        }
        // The warps' totals, folded in warp order by every thread.
        if warps > 1 {
            let Some(offset) = self.k.reduce_scratch.get(index).copied().flatten() else {
                return Err(fmt::Error);
            };
            let smem = self.smem.clone();
            let (wid, slot, is_lane0) = (
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::Pred),
            );
            self.line(format!("shr.u32 {wid}, {rtid}, 5;"))?;
            self.line(format!("mad.lo.u32 {slot}, {wid}, 8, {smem};"))?;
            self.line(format!("setp.eq.u32 {is_lane0}, {lane}, 0;"))?;
            self.line(format!(
                "@{is_lane0} st.shared.{bt} [{slot}+{offset}], {acc};"
            ))?;
            self.role_barrier(r.site)?;
            self.line(format!("ld.shared.{bt} {acc}, [{smem}+{offset}];"))?;
            for w in 1..warps {
                let t = self.tmp(class);
                self.line(format!("ld.shared.{bt} {t}, [{smem}+{}];", offset + 8 * w))?;
                let acc_now = acc.clone();
                self.combine(r, &acc_now, &t)?;
            }
            // The scratch is reused by the role's next reduction: every warp has read it first.
            self.role_barrier(r.site)?;
        }
        Ok(())
    }

    fn load(&mut self, dst: Value, space: Space, addr: &str) -> fmt::Result {
        let d = self.reg(dst);
        let ty = self.k.ty(dst);
        let sp = space_name(space);
        if ty == Scalar::Bool {
            let t = self.tmp(Class::B32);
            self.line(format!("ld.{sp}.u8 {t}, [{addr}];"))?;
            self.line(format!("setp.ne.u32 {d}, {t}, 0;"))
        } else {
            self.line(format!("ld.{sp}.{} {d}, [{addr}];", mem_ty(ty)))
        }
    }

    fn store(&mut self, src: &str, ty: Scalar, space: Space, addr: &str) -> fmt::Result {
        let sp = space_name(space);
        if ty == Scalar::Bool {
            let t = self.tmp(Class::B32);
            self.line(format!("selp.u32 {t}, 1, 0, {src};"))?;
            self.line(format!("st.{sp}.u8 [{addr}], {t};"))
        } else {
            self.line(format!("st.{sp}.{} [{addr}], {src};", mem_ty(ty)))
        }
    }

    fn binary(&mut self, dst: Value, op: BinOp, lhs: Value, rhs: Value) -> fmt::Result {
        let (d, a, b) = (self.reg(dst), self.reg(lhs), self.reg(rhs));
        let ty = self.k.ty(lhs);
        if ty == Scalar::Bool {
            return match op {
                BinOp::And => self.line(format!("and.pred {d}, {a}, {b};")),
                BinOp::Or => self.line(format!("or.pred {d}, {a}, {b};")),
                BinOp::Xor | BinOp::Ne => self.line(format!("xor.pred {d}, {a}, {b};")),
                BinOp::Eq => {
                    self.line(format!("xor.pred {d}, {a}, {b};"))?;
                    self.line(format!("not.pred {d}, {d};"))
                }
                _ => {
                    // Ordered comparisons of bools: compare them as 0/1.
                    let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                    self.line(format!("selp.u32 {x}, 1, 0, {a};"))?;
                    self.line(format!("selp.u32 {y}, 1, 0, {b};"))?;
                    self.line(format!(
                        "setp.{}.u32 {d}, {x}, {y};",
                        cmp_name(op, Scalar::U32)
                    ))
                }
            };
        }
        if ty.is_half() {
            // In `f32`, rounded back once: the `half` crate's arithmetic, and the correctly
            // rounded half result (f32 holds twice a half's precision and more).
            let h = half_name(ty);
            let (fa, fb) = (self.tmp(Class::F32), self.tmp(Class::F32));
            self.line(format!("cvt.f32.{h} {fa}, {a};"))?;
            self.line(format!("cvt.f32.{h} {fb}, {b};"))?;
            if op.is_comparison() {
                return self.line(format!(
                    "setp.{}.f32 {d}, {fa}, {fb};",
                    cmp_name(op, Scalar::F32)
                ));
            }
            let name = match op {
                BinOp::Add => "add",
                BinOp::Sub => "sub",
                BinOp::Mul => "mul",
                BinOp::Div => "div",
                _ => return Err(fmt::Error),
            };
            let r = self.tmp(Class::F32);
            self.line(format!("{name}.rn.f32 {r}, {fa}, {fb};"))?;
            return self.line(format!("cvt.rn.{h}.f32 {d}, {r};"));
        }
        if op.is_comparison() {
            return self.line(format!(
                "setp.{}.{} {d}, {a}, {b};",
                cmp_name(op, ty),
                ptx_ty(ty)
            ));
        }
        let t = ptx_ty(ty);
        if ty.is_float() {
            return match op {
                BinOp::Add => self.line(format!("add.rn.{t} {d}, {a}, {b};")),
                BinOp::Sub => self.line(format!("sub.rn.{t} {d}, {a}, {b};")),
                BinOp::Mul => self.line(format!("mul.rn.{t} {d}, {a}, {b};")),
                BinOp::Div => self.line(format!("div.rn.{t} {d}, {a}, {b};")),
                // PTX's copysign takes the sign from its first operand.
                BinOp::CopySign => self.line(format!("copysign.{t} {d}, {b}, {a};")),
                BinOp::Min => self.line(format!("min.{t} {d}, {a}, {b};")),
                BinOp::Max => self.line(format!("max.{t} {d}, {a}, {b};")),
                _ => Err(fmt::Error),
            };
        }
        match op {
            BinOp::Min => return self.line(format!("min.{t} {d}, {a}, {b};")),
            BinOp::Max => return self.line(format!("max.{t} {d}, {a}, {b};")),
            BinOp::Add => self.line(format!("add.{t} {d}, {a}, {b};"))?,
            BinOp::Sub => self.line(format!("sub.{t} {d}, {a}, {b};"))?,
            BinOp::Mul => self.line(format!("mul.lo.{t} {d}, {a}, {b};"))?,
            // Operands are normalized, so the 32-bit quotient of narrow integers is exact (the one
            // overflowing case, MIN / -1, panics before this).
            BinOp::Div => return self.line(format!("div.{t} {d}, {a}, {b};")),
            BinOp::Rem => return self.line(format!("rem.{t} {d}, {a}, {b};")),
            BinOp::And => return self.line(format!("and.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Or => return self.line(format!("or.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Xor => return self.line(format!("xor.{} {d}, {a}, {b};", bits_ty(ty))),
            BinOp::Shl | BinOp::Shr => {
                // Rust's wrapping shift: the amount is taken modulo the width.
                let width = ty.bits() - 1;
                let amount = self.tmp(Class::B32);
                if self.k.ty(rhs).is_wide_int() {
                    self.line(format!("cvt.u32.u64 {amount}, {b};"))?;
                    self.line(format!("and.b32 {amount}, {amount}, {width};"))?;
                } else {
                    self.line(format!("and.b32 {amount}, {b}, {width};"))?;
                }
                if op == BinOp::Shl {
                    self.line(format!("shl.{} {d}, {a}, {amount};", bits_ty(ty)))?;
                } else {
                    // Normalized narrow operands shift right correctly as 32-bit ones.
                    return self.line(format!("shr.{t} {d}, {a}, {amount};"));
                }
            }
            _ => return Err(fmt::Error),
        }
        self.normalize(&d, ty)
    }

    /// Brings an integer narrower than 32 bits back to its normalized form in its register
    /// (wrapping, as Rust's wrapping arithmetic does).
    fn normalize(&mut self, reg: &str, ty: Scalar) -> fmt::Result {
        match ty {
            Scalar::I8 => self.line(format!("cvt.s32.s8 {reg}, {reg};")),
            Scalar::I16 => self.line(format!("cvt.s32.s16 {reg}, {reg};")),
            Scalar::U8 => self.line(format!("and.b32 {reg}, {reg}, 255;")),
            Scalar::U16 => self.line(format!("and.b32 {reg}, {reg}, 65535;")),
            _ => Ok(()),
        }
    }

    /// Rust's `as` between scalars: integers wrap (truncate, or sign- or zero-extend by the
    /// source's signedness), floats to integers saturate (NaN to 0, which PTX's `cvt` does for
    /// integer destinations), integers to floats round to nearest.
    fn cast(&mut self, dst: Value, src: Value) -> fmt::Result {
        let (d, s) = (self.reg(dst), self.reg(src));
        let (to, from) = (self.k.ty(dst), self.k.ty(src));
        use Scalar::*;
        if from == to {
            return self.line(format!("mov.{} {d}, {s};", bits_ty(to)));
        }
        match (from, to) {
            (F16 | Bf16, F32) => self.line(format!("cvt.f32.{} {d}, {s};", half_name(from))),
            (F16 | Bf16, F64) => {
                let t = self.tmp(Class::F32);
                self.line(format!("cvt.f32.{} {t}, {s};", half_name(from)))?;
                self.line(format!("cvt.f64.f32 {d}, {t};"))
            }
            (F32 | F64, F16 | Bf16) => self.line(format!(
                "cvt.rn.{}.{} {d}, {s};",
                half_name(to),
                ptx_ty(from)
            )),
            (F16 | Bf16, _) | (_, F16 | Bf16) => Err(fmt::Error),
            (Bool, F32) => self.line(format!("selp.f32 {d}, 0f3F800000, 0f00000000, {s};")),
            (Bool, F64) => self.line(format!(
                "selp.f64 {d}, 0d3FF0000000000000, 0d0000000000000000, {s};"
            )),
            (Bool, _) => self.line(format!("selp.{} {d}, 1, 0, {s};", ptx_ty(to))),
            (_, Bool) => self.line(format!("setp.ne.{} {d}, {s}, 0;", ptx_ty(from))),
            (F32, F64) => self.line(format!("cvt.f64.f32 {d}, {s};")),
            (F64, F32) => self.line(format!("cvt.rn.f32.f64 {d}, {s};")),
            (F32 | F64, _) => {
                self.line(format!(
                    "cvt.rzi.{}.{} {d}, {s};",
                    exact_int_ty(to),
                    ptx_ty(from)
                ))?;
                // `cvt` gives 0 for NaN only for some widths (the H200 gave `MIN` for `f32` to
                // 64-bit and for every `f64` conversion); Rust's `as` always gives 0.
                let nan = self.tmp(Class::Pred);
                self.line(format!("setp.nan.{} {nan}, {s}, {s};", ptx_ty(from)))?;
                self.line(format!("selp.{} {d}, 0, {d}, {nan};", bits_ty(to)))
            }
            (_, F32 | F64) => {
                self.line(format!("cvt.rn.{}.{} {d}, {s};", ptx_ty(to), ptx_ty(from)))
            }
            _ if to.is_wide_int() => {
                if from.is_wide_int() {
                    self.line(format!("mov.b64 {d}, {s};"))
                } else if from.is_signed() {
                    self.line(format!("cvt.s64.s32 {d}, {s};"))
                } else {
                    self.line(format!("cvt.u64.u32 {d}, {s};"))
                }
            }
            _ => {
                if from.is_wide_int() {
                    self.line(format!("cvt.u32.u64 {d}, {s};"))?;
                } else {
                    self.line(format!("mov.b32 {d}, {s};"))?;
                }
                self.normalize(&d, to)
            }
        }
    }

    fn copy_in(&mut self, chan: ChannelId, src: Value, len: Value, bulk: Value) -> fmt::Result {
        let ring = self.ring(chan, true)?;
        let c = self.k.channel(chan).clone();
        let whole = self.whole.contains(&(len, bulk));
        let (src, len, bulk) = (self.reg(src), self.reg(len), self.reg(bulk));
        // The checker allows bulk copies of scalar payloads only.
        let Some(esize) = c.ty.elem.scalar().map(Scalar::size) else {
            return Err(fmt::Error);
        };
        writeln!(self.body, "    // copy_in {chan}: bulk copy of the 16-byte-aligned part, the rest by the role's threads")?;
        let split = self.bulk_split(&len, &bulk)?;
        let dst = self.shared_addr(c.data_offset, &ring.slot, c.slot_stride)?;
        let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
        if c.generic_writes {
            self.line("fence.proxy.async.shared::cta;")?;
        }
        let skip = self.label("bulk_done");
        self.line(format!("@!{} bra {skip};", split.go))?;
        self.line(format!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{full}], {};",
            split.bulk
        ))?;
        self.line(format!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{src}], {}, [{full}];",
            split.bulk
        ))?;
        self.place_label(&skip)?;
        if whole {
            // This version of the loop runs only when the bulk part covers the copy.
            return Ok(());
        }
        // The tail (and everything, for an unaligned source): ordinary loads and stores, which
        // the warps' arrivals at `send` publish.
        self.copy_tail(&split, esize, &src, &dst, true, "tail")
    }

    /// `copy_to`: the held slot's first `len` elements to `dst` in global memory. One thread of
    /// the role copies the 16-byte-aligned part (`bulk` bytes) with one `cp.async.bulk` (a bulk
    /// group, which the slot's release waits to have been read); the role's threads copy the
    /// rest.
    fn copy_out(&mut self, chan: ChannelId, dst: Value, len: Value, bulk: Value) -> fmt::Result {
        let ring = self.ring(chan, false)?;
        let c = self.k.channel(chan).clone();
        let whole = self.whole.contains(&(len, bulk));
        let (dst, len, bulk) = (self.reg(dst), self.reg(len), self.reg(bulk));
        // The checker allows bulk copies of scalar payloads only.
        let Some(esize) = c.ty.elem.scalar().map(Scalar::size) else {
            return Err(fmt::Error);
        };
        writeln!(
            self.body,
            "    // copy_out {chan}: bulk copy of the 16-byte-aligned part, the rest by the role's threads"
        )?;
        let split = self.bulk_split(&len, &bulk)?;
        let src = self.shared_addr(c.data_offset, &ring.held, c.slot_stride)?;
        let skip = self.label("bulk_out_done");
        self.line(format!("@!{} bra {skip};", split.go))?;
        self.line(format!(
            "cp.async.bulk.global.shared::cta.bulk_group [{dst}], [{src}], {};",
            split.bulk
        ))?;
        self.line("cp.async.bulk.commit_group;")?;
        self.place_label(&skip)?;
        if whole {
            return Ok(());
        }
        self.copy_tail(&split, esize, &dst, &src, false, "tail_out")
    }

    /// The registers of a copy of `len` elements whose 16-byte-aligned part, `bulk` bytes (the
    /// IR computes them, see [`Inst::CopyIn`]), one bulk copy moves, and whether this thread
    /// issues it. The issuing thread is the one `elect.sync` picked in the role's first warp at
    /// the role's start ([`RoleCtx::bulk_issuer`]): told so, ptxas issues the copy once, where a
    /// lane test (`lane == 0`) made it wrap the copy in a loop over the lanes that pass the test
    /// (`ELECT` ... `BRA.U.ANY`; 20 ns per item of a 16 KiB copy on the H200,
    /// docs/benchmarks.md). It is the same thread for every copy of the role, so its
    /// `cp.async.bulk.wait_group` covers all of them.
    fn bulk_split(&mut self, len: &str, bulk: &str) -> Result<BulkSplit, fmt::Error> {
        let issuer = self.role()?.bulk_issuer.clone().ok_or(fmt::Error)?;
        let len32 = self.tmp(Class::B32);
        self.line(format!("cvt.u32.u64 {len32}, {len};"))?;
        let bulk32 = self.tmp(Class::B32);
        self.line(format!("cvt.u32.u64 {bulk32}, {bulk};"))?;
        let go = self.tmp(Class::Pred);
        self.line(format!("setp.ne.u32 {go}, {bulk32}, 0;"))?;
        self.line(format!("and.pred {go}, {go}, {issuer};"))?;
        Ok(BulkSplit {
            len32,
            bulk: bulk32,
            go,
        })
    }

    /// The elements after the bulk part, copied by the role's threads with ordinary loads and
    /// stores: from global memory into the slot (`into_slot`), or out of it. A copy that the
    /// bulk part covers whole skips the loop on a test that is the same in every thread, so
    /// that ptxas's convergence region for the loop stays off that path.
    fn copy_tail(
        &mut self,
        split: &BulkSplit,
        esize: u32,
        global: &str,
        slot: &str,
        into_slot: bool,
        label: &str,
    ) -> fmt::Result {
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let (bulk, len32) = (&split.bulk, &split.len32);
        let i = self.tmp(Class::B32);
        let shift = esize.trailing_zeros();
        self.line(format!("shr.u32 {i}, {bulk}, {shift};"))?;
        let (head, end) = (self.label(label), self.label(&format!("{label}_end")));
        let whole = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u32 {whole}, {i}, {len32};"))?;
        self.line(format!("@{whole} bra.uni {end};"))?;
        self.line(format!("add.u32 {i}, {i}, {rtid};"))?;
        self.place_label(&head)?;
        let p = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u32 {p}, {i}, {len32};"))?;
        self.line(format!("@{p} bra {end};"))?;
        let gaddr = self.tmp(Class::B64);
        self.line(format!("mad.wide.u32 {gaddr}, {i}, {esize}, {global};"))?;
        let saddr = self.tmp(Class::B32);
        self.line(format!("mad.lo.u32 {saddr}, {i}, {esize}, {slot};"))?;
        let v = self.tmp(if esize == 8 { Class::B64 } else { Class::B32 });
        let mt = match esize {
            1 => "u8",
            2 => "u16",
            8 => "b64",
            _ => "b32",
        };
        if into_slot {
            self.line(format!("ld.global.{mt} {v}, [{gaddr}];"))?;
            self.line(format!("st.shared.{mt} [{saddr}], {v};"))?;
        } else {
            self.line(format!("ld.shared.{mt} {v}, [{saddr}];"))?;
            self.line(format!("st.global.{mt} [{gaddr}], {v};"))?;
        }
        self.line(format!("add.u32 {i}, {i}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.place_label(&end)
    }

    /// Address of element `i` (a `.u64` register) of `base`.
    fn elem_addr(
        &mut self,
        space: Space,
        base: &str,
        i: &str,
        size: u32,
    ) -> Result<String, fmt::Error> {
        match space {
            Space::Global | Space::Local | Space::Const => {
                let a = self.tmp(Class::B64);
                self.line(format!("mad.lo.u64 {a}, {i}, {size}, {base};"))?;
                Ok(a)
            }
            Space::Shared => {
                let i32 = self.tmp(Class::B32);
                self.line(format!("cvt.u32.u64 {i32}, {i};"))?;
                let a = self.tmp(Class::B32);
                self.line(format!("mad.lo.u32 {a}, {i32}, {size}, {base};"))?;
                Ok(a)
            }
        }
    }

    fn par_for(&mut self, p: &ParFor) -> fmt::Result {
        if let Some(r) = &p.reduce {
            return self.par_reduce(p, r);
        }
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let len = self.reg(p.len);
        // A lane loop keeps one item per thread per step, so that its warps' lanes meet.
        let vectorizable =
            !p.lanes && p.sources.iter().all(|s| s.elem.size() == 4) && straight_line(&p.body);
        writeln!(
            self.body,
            "    // {} over {} source(s)",
            if p.lanes { "lane loop" } else { "par_for" },
            p.sources.len()
        )?;
        // A loop over a constant count that every thread covers in one step (a channel slot):
        // no alignment test, no loop.
        let const_len = self.constants.get(&p.len).copied();
        if let (Some(n), false) = (const_len, p.lanes) {
            let shared = p.sources.iter().all(|s| s.space == Space::Shared);
            if n <= u64::from(threads) {
                return self.par_one_pass(p, None);
            }
            // Slots (and their field arrays) start 16-byte aligned: whole groups of four.
            if vectorizable && shared && n % 4 == 0 && n / 4 <= u64::from(threads) {
                return self.par_one_pass(p, Some(1));
            }
            // A slot that every thread covers in the same few whole steps: straight-line code,
            // every load of the steps issued before the first use, instead of a loop whose
            // unrolled part never runs and whose single steps wait for one load at a time.
            let steps = n / 4 / u64::from(threads.max(1));
            if vectorizable
                && shared
                && n % 4 == 0
                && (n / 4) % u64::from(threads.max(1)) == 0
                && steps <= u64::from(UNROLL)
            {
                return self.par_one_pass(p, Some(steps as u32));
            }
        }
        let start = self.tmp(Class::B64);
        let scalar_entry = self.label("par_scalar");
        let done = self.label("par_done");
        // A thread that fails in a lane loop exits: its warp's later warp operations then wait
        // only for the lanes still running (they wait for non-exited threads), instead of for a
        // lane that left the loop.
        let exit = if p.lanes {
            let exit = self.label("lane_exit");
            self.stubs.push_str(&format!("{exit}:\n    exit;\n"));
            exit
        } else {
            done.clone()
        };
        let outer_exit = self.par_exit.replace(exit);
        if vectorizable {
            // Runtime check: every base 16-byte aligned, else everything takes the scalar loop.
            let mut misaligned = None::<String>;
            for s in &p.sources {
                let b = self.reg(s.base);
                let low = match s.space {
                    Space::Global | Space::Local | Space::Const => {
                        let l = self.tmp(Class::B64);
                        self.line(format!("and.b64 {l}, {b}, 15;"))?;
                        let l32 = self.tmp(Class::B32);
                        self.line(format!("cvt.u32.u64 {l32}, {l};"))?;
                        l32
                    }
                    Space::Shared => {
                        let l = self.tmp(Class::B32);
                        self.line(format!("and.b32 {l}, {b}, 15;"))?;
                        l
                    }
                };
                misaligned = Some(match misaligned {
                    None => low,
                    Some(m) => {
                        self.line(format!("or.b32 {m}, {m}, {low};"))?;
                        m
                    }
                });
            }
            let m = misaligned.unwrap_or_default();
            let pm = self.tmp(Class::Pred);
            self.line(format!("setp.ne.u32 {pm}, {m}, 0;"))?;
            self.line(format!("mov.u64 {start}, 0;"))?;
            self.line(format!("@{pm} bra {scalar_entry};"))?;
            let n4 = self.tmp(Class::B64);
            self.line(format!("shr.u64 {n4}, {len}, 2;"))?;
            let g = self.tmp(Class::B64);
            self.line(format!("cvt.u64.u32 {g}, {rtid};"))?;
            // Unrolled by UNROLL: every load of the UNROLL groups is issued before the first use,
            // so that each thread keeps several 16-byte accesses in flight. (Eight groups, then
            // four, was measured on the H200 on 2026-11-29 and was slower: docs/benchmarks.md.)
            let (head, single) = (self.label("par_vec4"), self.label("par_vec1"));
            self.place_label(&head)?;
            let last = self.tmp(Class::B64);
            self.line(format!("add.u64 {last}, {g}, {};", (UNROLL - 1) * threads))?;
            let pc = self.tmp(Class::Pred);
            self.line(format!("setp.ge.u64 {pc}, {last}, {n4};"))?;
            self.line(format!("@{pc} bra {single};"))?;
            self.vector_groups(p, &g, threads, UNROLL)?;
            self.line(format!("add.u64 {g}, {g}, {};", UNROLL * threads))?;
            self.line(format!("bra {head};"))?;
            // The remaining groups, one at a time.
            self.place_label(&single)?;
            let end = self.label("par_vec_end");
            let pc = self.tmp(Class::Pred);
            self.line(format!("setp.ge.u64 {pc}, {g}, {n4};"))?;
            self.line(format!("@{pc} bra {end};"))?;
            self.vector_groups(p, &g, threads, 1)?;
            self.line(format!("add.u64 {g}, {g}, {threads};"))?;
            self.line(format!("bra {single};"))?;
            self.place_label(&end)?;
            self.line(format!("shl.b64 {start}, {n4}, 2;"))?;
        } else {
            self.line(format!("mov.u64 {start}, 0;"))?;
        }
        // Scalar loop: from `start` (the vector loop's end) to `len`.
        self.place_label(&scalar_entry)?;
        let i = self.tmp(Class::B64);
        let rt64 = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {rt64}, {rtid};"))?;
        self.line(format!("add.u64 {i}, {start}, {rt64};"))?;
        let head = self.label("par_loop");
        self.place_label(&head)?;
        let pc = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u64 {pc}, {i}, {len};"))?;
        self.line(format!("@{pc} bra {done};"))?;
        self.scalar_iteration(p, &i)?;
        self.line(format!("add.u64 {i}, {i}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// Iteration `i` of a parallel loop, one element: the sources' loads, the index, the body,
    /// then the stores of the elements it writes.
    fn scalar_iteration(&mut self, p: &ParFor, i: &str) -> fmt::Result {
        let mut addrs = Vec::new();
        for s in &p.sources {
            let b = self.reg(s.base);
            let a = self.elem_addr(s.space, &b, i, s.elem.size())?;
            if s.read {
                self.load(s.elem_value, s.space, &a)?;
            }
            addrs.push(a);
        }
        if let Some(ix) = p.index {
            let r = self.reg(ix);
            self.line(format!("mov.u64 {r}, {i};"))?;
        }
        self.block(&p.body)?;
        for (k, s) in p.sources.iter().enumerate() {
            if s.write {
                let e = self.reg(s.elem_value);
                self.store(&e, s.elem, s.space, &addrs[k])?;
            }
        }
        Ok(())
    }

    /// A parallel loop that each thread covers in one straight-line pass: thread `t` takes
    /// element `t` (`groups` is `None`), or `groups` groups of four elements, `t`, `t + T`, ....
    /// With one element or one group per thread, a thread past the loop's end skips it; with
    /// more groups, the caller has checked that they are a whole multiple of the threads.
    fn par_one_pass(&mut self, p: &ParFor, groups: Option<u32>) -> fmt::Result {
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let done = self.label("par_done");
        let outer_exit = self.par_exit.replace(done.clone());
        let len = self.reg(p.len);
        let i = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {i}, {rtid};"))?;
        match groups {
            None => {
                let past = self.tmp(Class::Pred);
                self.line(format!("setp.ge.u64 {past}, {i}, {len};"))?;
                self.line(format!("@{past} bra {done};"))?;
                self.scalar_iteration(p, &i)?;
            }
            Some(1) => {
                let past = self.tmp(Class::Pred);
                let count = self.tmp(Class::B64);
                self.line(format!("shr.u64 {count}, {len}, 2;"))?;
                self.line(format!("setp.ge.u64 {past}, {i}, {count};"))?;
                self.line(format!("@{past} bra {done};"))?;
                self.vector_groups(p, &i, threads, 1)?;
            }
            Some(steps) => self.vector_groups(p, &i, threads, steps)?,
        }
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// One step of the vector loop over `count` groups of four elements: groups `g`,
    /// `g + threads`, ...; all loads first, then the body four times per group, then the stores.
    fn vector_groups(&mut self, p: &ParFor, g: &str, threads: u32, count: u32) -> fmt::Result {
        let mut groups = vec![g.to_string()];
        for u in 1..count {
            let gu = self.tmp(Class::B64);
            self.line(format!("add.u64 {gu}, {g}, {};", u * threads))?;
            groups.push(gu);
        }
        // addrs[u][k], loaded[u][k][j], outs[u][k][j]
        let mut addrs = Vec::new();
        let mut loaded = Vec::new();
        for gu in &groups {
            let mut group_addrs = Vec::new();
            let mut group_loaded = Vec::new();
            for s in &p.sources {
                let b = self.reg(s.base);
                let a = self.elem_addr(s.space, &b, gu, 16)?;
                let class = Class::of(s.elem);
                let regs: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
                if s.read {
                    self.line(format!(
                        "ld.{}.v4.{} {{{}}}, [{a}];",
                        space_name(s.space),
                        mem_ty(s.elem),
                        regs.join(", ")
                    ))?;
                }
                group_addrs.push(a);
                group_loaded.push(regs);
            }
            addrs.push(group_addrs);
            loaded.push(group_loaded);
        }
        let mut outs = Vec::new();
        for (u, gu) in groups.iter().enumerate() {
            let mut group_outs = Vec::new();
            for s in &p.sources {
                let class = Class::of(s.elem);
                group_outs.push(if s.write {
                    (0..4).map(|_| self.tmp(class)).collect()
                } else {
                    Vec::new()
                });
            }
            for j in 0..4 {
                for (k, s) in p.sources.iter().enumerate() {
                    if s.read {
                        let e = self.reg(s.elem_value);
                        self.line(format!("mov.{} {e}, {};", bits_ty(s.elem), loaded[u][k][j]))?;
                    }
                }
                if let Some(ix) = p.index {
                    let r = self.reg(ix);
                    self.line(format!("mad.lo.u64 {r}, {gu}, 4, {j};"))?;
                }
                self.block(&p.body)?;
                for (k, s) in p.sources.iter().enumerate() {
                    if s.write {
                        let e = self.reg(s.elem_value);
                        let out: &Vec<String> = &group_outs[k];
                        self.line(format!("mov.{} {}, {e};", bits_ty(s.elem), out[j]))?;
                    }
                }
            }
            outs.push(group_outs);
        }
        for u in 0..groups.len() {
            for (k, s) in p.sources.iter().enumerate() {
                if s.write {
                    self.line(format!(
                        "st.{}.v4.{} [{}], {{{}}};",
                        space_name(s.space),
                        mem_ty(s.elem),
                        addrs[u][k],
                        outs[u][k].join(", ")
                    ))?;
                }
            }
        }
        Ok(())
    }

    /// Writes the module: header, register declarations, then the body.
    pub fn finish(self, out: &mut impl Write) -> fmt::Result {
        let k = self.k;
        writeln!(out, "//")?;
        writeln!(
            out,
            "// Generated by gpu-async from the kernel `{}`: do not edit.",
            k.name
        )?;
        writeln!(out, "//")?;
        writeln!(out, ".version {PTX_VERSION}")?;
        let target = match k.registers {
            Some(_) => PTX_TARGET_BUDGETS,
            None => PTX_TARGET,
        };
        writeln!(out, ".target {target}")?;
        writeln!(out, ".address_size 64")?;
        writeln!(out)?;
        writeln!(out, ".extern .shared .align 128 .b8 gpu_async_smem[];")?;
        for (i, t) in k.const_tables.iter().enumerate() {
            // The module's `static` table, in constant memory.
            writeln!(out, "// static {}", t.name)?;
            let bytes: Vec<String> = t.bytes.iter().map(u8::to_string).collect();
            writeln!(
                out,
                ".const .align 8 .b8 gpu_async_const_{i}[{}] = {{{}}};",
                t.bytes.len(),
                bytes.join(", ")
            )?;
        }
        writeln!(out)?;
        writeln!(out, ".visible .entry {}(", k.name)?;
        let mut params = Vec::new();
        let mut index = 0;
        for p in &k.params {
            match &p.kind {
                ParamKind::Scalar(v) => {
                    // Narrow integers and `bool` travel as 32-bit parameters (the host widens
                    // them, sign-extending the signed ones).
                    let ty = match k.ty(*v) {
                        Scalar::Bool => "u32",
                        s => ptx_ty(s),
                    };
                    params.push(format!("    .param .{ty} {}_param_{index}", k.name));
                    index += 1;
                }
                ParamKind::Slice { .. } => {
                    params.push(format!("    .param .u64 {}_param_{index}", k.name));
                    params.push(format!("    .param .u64 {}_param_{}", k.name, index + 1));
                    index += 2;
                }
            }
        }
        for ty in ["u64", "u32", "u64", "u64"] {
            params.push(format!("    .param .{ty} {}_param_{index}", k.name));
            index += 1;
        }
        writeln!(out, "{}", params.join(",\n"))?;
        writeln!(out, ")")?;
        writeln!(out, ".reqntid {}, 1, 1", 32 * k.warps)?;
        if let Some(b) = &k.registers {
            // The registers each thread holds at the entry, which the roles' `setmaxnreg`s
            // redistribute (without it ptxas ignores them).
            writeln!(out, ".maxnreg {}", b.entry)?;
        } else if let Some(blocks) = k.min_blocks_per_sm {
            // The blocks an SM must hold: ptxas allocates registers so that they fit.
            writeln!(out, ".minnctapersm {blocks}")?;
        }
        writeln!(out, "{{")?;
        for class in [
            Class::Pred,
            Class::B16,
            Class::B32,
            Class::B64,
            Class::F32,
            Class::F64,
        ] {
            if let Some(n) = self.counts.get(&class) {
                writeln!(out, "    .reg {} {}<{n}>;", class.decl(), class.prefix())?;
            }
        }
        if k.local_bytes > 0 {
            // Local arrays indexed at run time: each thread's own memory (ptxas reports it as
            // the stack frame).
            writeln!(
                out,
                "    .local .align 16 .b8 gpu_async_local[{}];",
                k.local_bytes.div_ceil(16) * 16
            )?;
        }
        writeln!(out)?;
        out.write_str(&self.body)?;
        writeln!(out, "}}")
    }
}

fn cmp_name(op: BinOp, ty: Scalar) -> &'static str {
    let float = ty.is_float();
    let unsigned = ty.is_int() && !ty.is_signed();
    match op {
        BinOp::Eq => "eq",
        // Rust's `!=` is true when either side is NaN: the unordered form.
        BinOp::Ne => {
            if float {
                "neu"
            } else {
                "ne"
            }
        }
        BinOp::Lt => {
            if unsigned {
                "lo"
            } else {
                "lt"
            }
        }
        BinOp::Le => {
            if unsigned {
                "ls"
            } else {
                "le"
            }
        }
        BinOp::Gt => {
            if unsigned {
                "hi"
            } else {
                "gt"
            }
        }
        BinOp::Ge => {
            if unsigned {
                "hs"
            } else {
                "ge"
            }
        }
        _ => "eq",
    }
}

/// A body without control flow, which the vector loop can repeat four times.
fn straight_line(b: &Block) -> bool {
    b.0.iter().all(|i| {
        !matches!(
            i,
            Inst::If { .. }
                | Inst::Loop { .. }
                | Inst::Break(_)
                | Inst::Continue(_)
                | Inst::ParFor(_)
        )
    })
}
