//! Phase 3, lower: a checked kernel to the role/channel IR.
//!
//! The kernel body's channels become shared-memory rings and each `on_warps` call becomes a
//! role; helper fns are inlined into the roles that call them. Ownership is followed statically:
//! a sender dropped at the end of its scope closes its channel, a received slot dropped releases
//! it, `break` and `continue` drop what they leave. A data-parallel loop that writes memory which
//! the role touches elsewhere (or which may overlap between iterations) is followed by a role
//! barrier; writes through `block_tiles` ranges never overlap, so they need none.
//!
//! This module holds the entry, [`lower_kernel`], the `Lowerer` and the helpers every other
//! module emits code with. `kernel` and `roles` lower the kernel body and its roles; `expr`
//! dispatches each expression to its topic module (`operators`, `places`, `arrays`, `stores`,
//! `atomics`, `calls`, `channels`, `concurrent`, `shared`, `parallel`, `tiles`, `warps`,
//! `math`); `control` and `loops` lower statements and control flow, `options` the `Option`s
//! of receives and reserves taken apart, `ownership` the moves and drops; `values` holds the
//! state types they share.

mod acc_apply;
mod arrays;
mod atomics;
mod calls;
mod channels;
mod concurrent;
mod control;
mod expr;
mod kernel;
mod layout;
mod loops;
mod math;
mod matrices;
mod mma;
mod mma_stages;
mod operators;
mod options;
mod ownership;
mod parallel;
mod places;
mod protocol;
mod roles;
mod rows;
mod scans;
mod shared;
mod shared_arrays;
mod shared_sync;
mod splits;
mod stores;
mod tile_stores;
mod tiles;
mod values;
mod warps;

use std::collections::{HashMap, HashSet};

use proc_macro2::Span;

use crate::diag::Diagnostics;
use crate::ir::{
    BinOp, Block, Channel, ChannelId, Imm, Inst, Kernel, LoopId, RoleId, Site, SiteId, SiteKind,
    Space, UnOp, Value, ValueInfo, MAX_BLOCK_NESTING, MAX_KERNEL_INSTS, PAR_INST_COST,
    PAR_LOOP_COST, WAIT_COST,
};
use crate::tir::{self, FnId, Program};
use crate::types::Scalar;

use values::{Frame, MemKey, Oneshot, ParCtx};

/// The message of `unwrap()` on `None`, as Rust's.
const UNWRAP_NONE: &str = "called `Option::unwrap()` on a `None` value";

/// The state of lowering one kernel: the IR built so far (values, channels, sites, the block
/// being emitted into), the inlined frames, and what the current role has done.
struct Lowerer<'p> {
    prog: &'p Program,
    diags: &'p mut Diagnostics,
    values: Vec<ValueInfo>,
    channels: Vec<Channel>,
    channel_spans: Vec<Span>,
    blocks: Vec<Vec<Inst>>,
    /// The span of the expression being lowered, for an error about nesting.
    at: Span,
    /// Nesting past [`MAX_BLOCK_NESTING`] was reported.
    nesting_reported: bool,
    /// The kernel being lowered.
    kernel: FnId,
    /// Instructions emitted so far, those of parallel loop bodies counting [`PAR_INST_COST`].
    emitted: usize,
    /// More than [`MAX_KERNEL_INSTS`] was reported: the number of errors then, the size error
    /// included. The lowering stops there (the rest of the body is not lowered, and what the
    /// checks at its end would say of the missing code is not reported).
    size_reported: Option<usize>,
    frames: Vec<Frame>,
    loops: u32,
    cond_depth: u32,
    /// Lowering the inside of `get_unchecked`: indexes and sub-slices skip their checks.
    unchecked: bool,
    /// Local memory allocated to arrays so far, in bytes per thread.
    local_bytes: u32,
    /// Local memory past the limit was reported (once per kernel).
    local_reported: bool,
    /// The `static` tables read so far: module number -> kernel table number.
    const_tables: Vec<u32>,
    /// The block's shared values made so far, by cell number.
    shared_cells: Vec<Scalar>,
    /// The block's shared arrays made so far (their offsets set by the layout).
    shared_arrays: Vec<crate::ir::SharedArray>,
    /// The barriers between roles: the roles that take each, and its name.
    barriers: Vec<(Vec<RoleId>, String)>,
    /// The one-shot values: shared cell, name, sending and receiving roles.
    oneshots: Vec<Oneshot>,
    /// The memory the parallel loop being lowered writes by index (`y[i] = v`), with whether
    /// through a `block_tiles` range.
    par_index_writes: Vec<(MemKey, bool)>,
    /// In a parallel loop's body: its index and a constant it is below (see `ParHead::bound`),
    /// for the bounds checks of `tile[i]` and `tile[i / K]`.
    par_bound: Option<(Value, u64)>,
    /// The expression being lowered is an atomic operation whose value is unused.
    result_unused: bool,
    /// Inside the closure of `acc.apply(..)` (nested helpers' bodies included), which is
    /// written once per accumulator value and may not write memory or update atomics.
    apply_depth: u32,
    /// In the body of `acc.apply_at(..)` for one element: which of the thread's two rows it
    /// lies in (`rows[i]` reads that row's value).
    apply_row_half: Option<usize>,
    /// The role call being lowered (for errors about its arguments).
    role_span: Span,
    role: Option<RoleId>,
    par: Option<ParCtx>,
    /// Access sites per memory in the current role.
    accesses: HashMap<MemKey, u32>,
    /// The reserves of each channel lowered so far in the current role (which slot a
    /// [`MemKey::Slot`] is).
    reserves: HashMap<ChannelId, u32>,
    /// For each barrier placeholder, in program order: the memory its loop writes, and whether
    /// the write goes through a `block_tiles` range.
    barrier_requests: Vec<Vec<(MemKey, bool)>>,
    /// The placeholders (by number) that follow an element written from role code, and the
    /// role-code element writes per memory: the role's first thread makes all of them, in
    /// program order, so such a write needs a barrier only where the role touches the memory
    /// otherwise.
    store_requests: HashSet<usize>,
    role_stores: HashMap<MemKey, u32>,
    /// The sites the GPU can report.
    sites: Vec<Site>,
    /// Per matrix parameter (by its number in the kernel's parameters): the tile shapes its
    /// loads use so far, one tensor map each.
    matrix_boxes: HashMap<u32, Vec<gpu_async_wire::TileBox>>,
    /// The roles placed so far: name and warp range.
    warp_owners: Vec<(String, u32, u32)>,
    /// The `join!`s of futures in the current role, in program order.
    joins: Vec<Span>,
    /// The `select!`s in the current role.
    selects: Vec<Span>,
    /// A channel end was passed to two roles, or a slot used after it was moved: rustc reports
    /// these on the shadow code, so the kernel is not emitted and no error is added here.
    ownership_conflict: bool,
    /// The channels a receiver may close before their end (found by an earlier lowering of the
    /// kernel): their `reserve` says whether it got a slot.
    closable: HashSet<ChannelId>,
    /// The channels a receiver closes before their end in this lowering.
    closing: HashSet<ChannelId>,
    /// The receivers (channel, which of the role's) whose end the current role has seen for sure
    /// (it left a `while let` over their receives only at the end): dropping them closes nothing.
    ended: HashSet<(ChannelId, u32)>,
    /// The receivers the current role has closed: `recv` answers `None`.
    closed_rx: HashSet<(ChannelId, u32)>,
    /// The issued mmas (see [`values::Val::PendingMma`]) that may still be running where the
    /// code being lowered is, oldest first; and the number the next one gets.
    mma_groups: Vec<u32>,
    mma_issued: u32,
    /// The current role's receivers: for each channel, the subscriptions it took, in the order
    /// of its arguments (their index is which of the role's receivers of the channel each is).
    role_receivers: HashMap<ChannelId, Vec<u32>>,
    /// Subscriptions made so far per channel (`rx.subscribe()` in the kernel body).
    subscriptions: HashMap<ChannelId, u32>,
    /// The receivers (channel, subscription) the roles took.
    claimed: HashSet<(ChannelId, u32)>,
    /// The code being lowered follows a statement that never ends (a `loop` without `break`,
    /// `return`, a panic): a receiver dropped there closes nothing.
    dead: bool,
}

/// Lowers kernel `id` of `prog`. Errors go to `diags`; `None` when there were any.
///
/// Whether a channel can be closed by its receiver before its end decides how its sender's
/// `reserve` is lowered, and only the receiving role's lowering finds out: the kernel is lowered
/// again, with those channels known, until no new one is found (each round adds one at least,
/// so there are at most as many rounds as channels).
pub fn lower_kernel(prog: &Program, id: FnId, diags: &mut Diagnostics) -> Option<Kernel> {
    let mut closable = HashSet::new();
    loop {
        let mut round = Diagnostics::new();
        let (kernel, closing) = lower_once(prog, id, &mut round, &closable);
        if closing.is_subset(&closable) {
            diags.extend(round);
            return kernel;
        }
        closable.extend(closing);
    }
}

/// One lowering of kernel `id`, with the channels in `closable` known to be closable by their
/// receivers; returns the kernel and the channels its receivers close before their end.
fn lower_once(
    prog: &Program,
    id: FnId,
    diags: &mut Diagnostics,
    closable: &HashSet<ChannelId>,
) -> (Option<Kernel>, HashSet<ChannelId>) {
    let before = diags.len();
    let f = prog.function(id);
    let warps = f.kernel_warps.unwrap_or(1);
    let mut l = Lowerer::new(prog, diags);
    l.closable = closable.clone();
    let kernel = l.lower(f, id, warps, before);
    (kernel, l.closing)
}

impl Lowerer<'_> {
    /// The kernel's lowering, once `closable` is set.
    fn lower(&mut self, f: &tir::Function, id: FnId, warps: u32, before: usize) -> Option<Kernel> {
        let l = self;
        l.kernel = id;
        let mut frame = Frame::new(id);
        let mut params = l.kernel_params(f, &mut frame)?;
        l.frames.push(frame);
        let (roles, role_failed) = l.kernel_body(f, warps);
        if let Some(errors) = l.size_reported {
            l.diags.truncate(errors);
            return None;
        }
        let prologue = Block(l.blocks.pop().unwrap_or_default());
        l.matrix_maps(&mut params);
        l.check_roles(f, &roles, warps, role_failed);
        for c in &l.closable {
            l.channels[c.0 as usize].closable = true;
        }
        let (shared_bytes, role_barriers, reduce_scratch, cells_offset) = l.lay_out_shared(&roles);
        l.check_oneshot_ends(role_failed);
        let barriers = l.kernel_barriers(&roles, cells_offset);
        if l.diags.len() > before || l.ownership_conflict || !l.closing.is_subset(&l.closable) {
            return None;
        }
        let const_tables = l.const_table_data();
        Some(Kernel {
            name: f.name.clone(),
            warps,
            idle_warps: f.idle_warps,
            params,
            values: std::mem::take(&mut l.values),
            channels: std::mem::take(&mut l.channels),
            prologue,
            roles,
            shared_bytes,
            role_barriers,
            reduce_scratch,
            sites: std::mem::take(&mut l.sites),
            shared_cells: std::mem::take(&mut l.shared_cells),
            cells_offset,
            shared_arrays: std::mem::take(&mut l.shared_arrays),
            barriers,
            registers: None,
            min_blocks_per_sm: None,
            local_bytes: l.local_bytes,
            const_tables,
        })
    }
}

impl<'p> Lowerer<'p> {
    fn new(prog: &'p Program, diags: &'p mut Diagnostics) -> Lowerer<'p> {
        Lowerer {
            prog,
            diags,
            values: Vec::new(),
            channels: Vec::new(),
            channel_spans: Vec::new(),
            blocks: vec![Vec::new()],
            at: Span::call_site(),
            nesting_reported: false,
            kernel: FnId(0),
            emitted: 0,
            size_reported: None,
            frames: Vec::new(),
            loops: 0,
            cond_depth: 0,
            unchecked: false,
            local_bytes: 0,
            local_reported: false,
            const_tables: Vec::new(),
            shared_cells: Vec::new(),
            shared_arrays: Vec::new(),
            barriers: Vec::new(),
            oneshots: Vec::new(),
            par_index_writes: Vec::new(),
            par_bound: None,
            result_unused: false,
            apply_depth: 0,
            apply_row_half: None,
            role_span: Span::call_site(),
            role: None,
            par: None,
            accesses: HashMap::new(),
            reserves: HashMap::new(),
            barrier_requests: Vec::new(),
            store_requests: HashSet::new(),
            role_stores: HashMap::new(),
            ownership_conflict: false,
            closable: HashSet::new(),
            closing: HashSet::new(),
            ended: HashSet::new(),
            closed_rx: HashSet::new(),
            mma_groups: Vec::new(),
            mma_issued: 0,
            role_receivers: HashMap::new(),
            subscriptions: HashMap::new(),
            claimed: HashSet::new(),
            dead: false,
            warp_owners: Vec::new(),
            matrix_boxes: HashMap::new(),
            joins: Vec::new(),
            selects: Vec::new(),
            sites: Vec::new(),
        }
    }
}

impl Lowerer<'_> {
    /// The frame of the function being inlined.
    fn frame(&mut self) -> &mut Frame {
        match self.frames.last_mut() {
            Some(f) => f,
            None => unreachable!("lowering always runs inside a frame"),
        }
    }

    /// The function being inlined.
    fn func(&self) -> &tir::Function {
        let id = self.frames.last().map_or(FnId(0), |f| f.func);
        self.prog.function(id)
    }

    /// A new register of type `ty`.
    fn new_value(&mut self, ty: Scalar, name: Option<&str>) -> Value {
        let v = Value(self.values.len() as u32);
        self.values.push(ValueInfo {
            ty,
            name: name.map(str::to_string),
        });
        v
    }

    /// Appends `inst` to the block being built.
    fn emit(&mut self, inst: Inst) {
        self.emitted += inst.cost(self.par.is_some());
        if self.emitted > MAX_KERNEL_INSTS {
            if self.size_reported.is_none() {
                let name = &self.prog.function(self.kernel).name;
                self.diags.error(
                    self.at,
                    format!("kernel `{name}` compiles to more than {MAX_KERNEL_INSTS} instructions by here (its roles' code with their helpers inlined, each parallel loop counting {PAR_LOOP_COST}, each instruction of its body {PAR_INST_COST}, each wait and bulk copy {WAIT_COST}; `gpu-async-inspect` shows the code): put repeated code in loops instead of writing it out, and large computations in kernels of their own"),
                );
                self.size_reported = Some(self.diags.len());
            }
            return;
        }
        if let Some(b) = self.blocks.last_mut() {
            b.push(inst);
        }
    }

    /// `if cond { break id }`: the exit test of the loops the lowering builds.
    fn break_if(&mut self, cond: Value, id: LoopId) {
        let brk = self.sub_block(|l| l.emit(Inst::Break(id)));
        self.emit(Inst::If {
            cond,
            then: brk,
            else_: Block::default(),
        });
    }

    /// A register holding constant `imm`.
    fn konst(&mut self, ty: Scalar, imm: Imm) -> Value {
        let dst = self.new_value(ty, None);
        self.emit(Inst::Const { dst, imm });
        dst
    }

    fn usize_const(&mut self, v: u64) -> Value {
        self.konst(Scalar::Usize, Imm::Int(v))
    }

    /// `lhs op rhs` into a new register (a `bool` for a comparison).
    fn binary(&mut self, op: BinOp, lhs: Value, rhs: Value) -> Value {
        let ty = if op.is_comparison() {
            Scalar::Bool
        } else {
            self.values[lhs.0 as usize].ty
        };
        let dst = self.new_value(ty, None);
        self.emit(Inst::Binary { dst, op, lhs, rhs });
        dst
    }

    /// `!v` of a `bool`.
    fn not(&mut self, v: Value) -> Value {
        let dst = self.new_value(Scalar::Bool, None);
        self.emit(Inst::Unary {
            dst,
            op: UnOp::Not,
            src: v,
        });
        dst
    }

    /// Loads an `elem` from `addr` in `space`.
    fn load(&mut self, elem: Scalar, space: Space, addr: Value) -> Value {
        let dst = self.new_value(elem, None);
        self.emit(Inst::Load { dst, space, addr });
        dst
    }

    /// A new site the GPU can report: a panic or a wait, with its message.
    fn site(&mut self, kind: SiteKind, message: String, span: Span) -> SiteId {
        self.sites.push(Site {
            kind,
            message,
            span,
        });
        SiteId(self.sites.len() as u32 - 1)
    }

    /// A device panic with `message` when `cond` holds.
    pub(super) fn panic_if(&mut self, cond: Value, message: &str, span: Span) {
        let site = self.site(SiteKind::Panic, message.to_string(), span);
        self.emit(Inst::PanicIf { cond, site });
    }

    /// The block `f` emits, built apart from the current one. Past [`MAX_BLOCK_NESTING`] nested
    /// blocks the kernel is an error (once) and `f` does not run.
    fn sub_block(&mut self, f: impl FnOnce(&mut Self)) -> Block {
        if self.blocks.len() > MAX_BLOCK_NESTING {
            if !self.nesting_reported {
                self.nesting_reported = true;
                self.diags.error(
                    self.at,
                    format!("this code, with the helpers it calls inlined, nests its branches and loops deeper than {MAX_BLOCK_NESTING} levels in the compiled kernel: give inner parts names with `let`, or flatten nested `if`s and `match`es"),
                );
            }
            return Block::default();
        }
        self.blocks.push(Vec::new());
        let before = self.mma_groups.clone();
        f(self);
        self.merge_mma_groups(before);
        Block(self.blocks.pop().unwrap_or_default())
    }

    /// A new loop id.
    fn new_loop(&mut self) -> LoopId {
        self.loops += 1;
        LoopId(self.loops - 1)
    }

    /// The memory of channel `c`'s slot: the one its latest reserve took.
    fn slot_key(&self, c: ChannelId) -> MemKey {
        MemKey::Slot(c, self.reserves.get(&c).copied().unwrap_or(0))
    }

    /// Counts an access of the current role to memory `key`.
    fn access(&mut self, key: MemKey) {
        *self.accesses.entry(key).or_insert(0) += 1;
    }
}
