//! Phase 3, lower: a checked kernel to the role/channel IR.
//!
//! The kernel body's channels become shared-memory rings and each `on_warps` call becomes a
//! role; helper fns are inlined into the roles that call them. Ownership is followed statically:
//! a sender dropped at the end of its scope closes its channel, a received slot dropped releases
//! it, `break` and `continue` drop what they leave. A data-parallel loop that writes memory which
//! the role touches elsewhere (or which may overlap between iterations) is followed by a role
//! barrier; writes through `block_tiles` ranges never overlap, so they need none.

mod layout;
mod math;
mod protocol;

use std::collections::{HashMap, HashSet};

use proc_macro2::Span;

use crate::diag::Diagnostics;
use crate::ir::{
    self, BinOp, Block, Channel, ChannelId, Imm, Inst, Kernel, LoopId, ParFor, ParSource, RoleId,
    ShuffleMode, Site, SiteId, SiteKind, Space, Special, UnOp, Value, ValueInfo, VoteMode,
};
use crate::tir::Program;
use crate::tir::{self, Expr, ExprKind, FnId, LetPattern, Lit, LocalId, ParBinding, Stmt};
use crate::types::{ChanElem, ChanTy, Scalar, Ty};

/// Where a memory access goes, for deciding which parallel loops need a barrier after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MemKey {
    Param(usize),
    Slot(ChannelId),
}

#[derive(Debug, Clone)]
enum Val {
    Unit,
    Scalar(Value),
    Slice {
        ptr: Value,
        len: Value,
        elem: Scalar,
        mem: MemKey,
        tiles: bool,
    },
    Range {
        start: Value,
        end: Value,
        tiles: bool,
    },
    OptRange {
        some: Value,
        start: Value,
        end: Value,
    },
    Tiles {
        next: Value,
        step: Value,
        len: Value,
        tile: Value,
    },
    Sender(ChannelId),
    Receiver(ChannelId),
    SendSlot(ChannelId),
    RecvSlot(ChannelId),
    ElemRef(usize),
    /// An element of a struct slot in a parallel loop: the source of each field.
    StructRef(Vec<usize>),
    /// An element of an atomic slice: its global address.
    AtomicRef(Value),
    /// A local array in registers (indexed by constants only): one value per element.
    Array(Vec<Value>),
    /// A `static` table of the module, in constant memory.
    ConstTable(u32),
    /// A tuple of scalars.
    Tuple(Vec<Value>),
    /// A block-local shared value: its cell.
    SharedCell(u32),
    /// A barrier between roles: its number.
    Barrier(u32),
    /// The sending end of one-shot value `k`.
    OneshotTx(u32),
    /// The receiving end of one-shot value `k`.
    OneshotRx(u32),
    /// A local array in the thread's local memory: its address.
    LocalArray {
        addr: Value,
        elem: Scalar,
        len: u32,
    },
    /// A `compare_exchange` result: whether it stored, and the previous value.
    Cas {
        ok: Value,
        old: Value,
    },
}

impl Val {
    /// The scalars a value is made of: one for a scalar, each element of a tuple.
    fn scalars(&self) -> Vec<Value> {
        match self {
            Val::Scalar(v) => vec![*v],
            Val::Tuple(values) => values.clone(),
            _ => Vec::new(),
        }
    }
}

/// A shape of zipped parallel sources, mirroring the closure's pattern.
enum Leaf {
    Source(usize),
    /// An element of a struct slot: one source per field.
    Struct(Vec<usize>),
    Index,
    Pair(Box<Leaf>, Box<Leaf>),
}

struct Scope {
    /// Locals whose drop has an effect, in declaration order.
    owned: Vec<(LocalId, Span)>,
    /// The loop this scope is the body of.
    lp: Option<LoopScope>,
}

/// A loop, as `break` and `continue` see it.
#[derive(Debug, Clone)]
struct LoopScope {
    id: LoopId,
    label: Option<String>,
    /// Where `break value` puts its value (`loop` expressions).
    result: Option<Value>,
}

impl LoopScope {
    fn new(id: LoopId, label: &Option<String>) -> Option<LoopScope> {
        Some(LoopScope {
            id,
            label: label.clone(),
            result: None,
        })
    }
}

/// One inlined function instance.
struct Frame {
    func: FnId,
    locals: HashMap<LocalId, Val>,
    moved: HashSet<LocalId>,
    copied: HashSet<LocalId>,
    scopes: Vec<Scope>,
    decl_depth: HashMap<LocalId, u32>,
    /// For a function with `return`: the loop its body runs in (left by `return`) and the
    /// value it returns.
    ret: Option<(LoopId, Vec<Value>)>,
}

/// A one-shot value of the kernel being lowered.
struct Oneshot {
    cell: u32,
    name: String,
    sender: Option<RoleId>,
    receiver: Option<RoleId>,
    span: Span,
}

struct ParCtx {
    sources: Vec<ParSource>,
    /// `cond_depth` at the top of the body: a write deeper than this is conditional.
    body_depth: u32,
}

struct Lowerer<'p> {
    prog: &'p Program,
    diags: &'p mut Diagnostics,
    values: Vec<ValueInfo>,
    channels: Vec<Channel>,
    channel_spans: Vec<Span>,
    blocks: Vec<Vec<Inst>>,
    frames: Vec<Frame>,
    loops: u32,
    cond_depth: u32,
    /// Lowering the inside of `get_unchecked`: indexes and sub-slices skip their checks.
    unchecked: bool,
    /// Local memory allocated to arrays so far, in bytes per thread.
    local_bytes: u32,
    /// The `static` tables read so far: module number -> kernel table number.
    const_tables: Vec<u32>,
    /// The block's shared values made so far, by cell number.
    shared_cells: Vec<Scalar>,
    /// The barriers between roles: the roles that take each, and its name.
    barriers: Vec<(Vec<RoleId>, String)>,
    /// The one-shot values: shared cell, name, sending and receiving roles.
    oneshots: Vec<Oneshot>,
    /// The role call being lowered (for errors about its arguments).
    role_span: Span,
    role: Option<RoleId>,
    par: Option<ParCtx>,
    /// Access sites per memory in the current role.
    accesses: HashMap<MemKey, u32>,
    /// For each barrier placeholder, in program order: the memory its loop writes, and whether
    /// the write goes through a `block_tiles` range.
    barrier_requests: Vec<Vec<(MemKey, bool)>>,
    /// The sites the GPU can report.
    sites: Vec<Site>,
    /// The roles placed so far: name and warp range.
    warp_owners: Vec<(String, u32, u32)>,
    /// The `join!`s of futures in the current role, in program order.
    joins: Vec<Span>,
    /// The `select!`s in the current role.
    selects: Vec<Span>,
    /// A channel end was passed to two roles, or a slot used after it was moved: rustc reports
    /// these on the shadow code, so the kernel is not emitted and no error is added here.
    ownership_conflict: bool,
}

/// Lowers kernel `id` of `prog`. Errors go to `diags`; `None` when there were any.
pub fn lower_kernel(prog: &Program, id: FnId, diags: &mut Diagnostics) -> Option<Kernel> {
    let before = diags.len();
    let f = prog.function(id);
    let warps = f.kernel_warps.unwrap_or(1);
    let mut l = Lowerer {
        prog,
        diags,
        values: Vec::new(),
        channels: Vec::new(),
        channel_spans: Vec::new(),
        blocks: vec![Vec::new()],
        frames: Vec::new(),
        loops: 0,
        cond_depth: 0,
        unchecked: false,
        local_bytes: 0,
        const_tables: Vec::new(),
        shared_cells: Vec::new(),
        barriers: Vec::new(),
        oneshots: Vec::new(),
        role_span: Span::call_site(),
        role: None,
        par: None,
        accesses: HashMap::new(),
        barrier_requests: Vec::new(),
        ownership_conflict: false,
        warp_owners: Vec::new(),
        joins: Vec::new(),
        selects: Vec::new(),
        sites: Vec::new(),
    };
    let mut frame = Frame::new(id);
    let mut params = Vec::new();
    for (index, &local) in f.params.iter().enumerate() {
        let decl = f.local(local);
        let (kind, val) = match decl.ty {
            Ty::Scalar(s) => {
                let v = l.new_value(s, Some(&decl.name));
                (ir::ParamKind::Scalar(v), Val::Scalar(v))
            }
            Ty::Enum(..) => {
                let v = l.new_value(Scalar::U32, Some(&decl.name));
                (ir::ParamKind::Scalar(v), Val::Scalar(v))
            }
            Ty::Struct(sid, _) => {
                // One kernel parameter per field.
                let fields = prog.structs[sid as usize].fields.clone();
                let values: Vec<Value> = fields
                    .iter()
                    .map(|(field, s)| l.new_value(*s, Some(&format!("{}.{field}", decl.name))))
                    .collect();
                for ((field, _), v) in fields.iter().zip(&values) {
                    params.push(ir::Param {
                        name: format!("{}.{field}", decl.name),
                        kind: ir::ParamKind::Scalar(*v),
                    });
                }
                frame.locals.insert(local, Val::Tuple(values));
                continue;
            }
            Ty::Slice { .. } | Ty::AtomicSlice(_) => {
                let (elem, mutable) = match decl.ty {
                    Ty::Slice { elem, mutable } => (elem, mutable),
                    Ty::AtomicSlice(s) => (s, true),
                    _ => (Scalar::U32, false),
                };
                let ptr = l.new_value(Scalar::Usize, Some(&format!("{}.ptr", decl.name)));
                let len = l.new_value(Scalar::Usize, Some(&format!("{}.len", decl.name)));
                (
                    ir::ParamKind::Slice {
                        elem,
                        mutable,
                        ptr,
                        len,
                    },
                    Val::Slice {
                        ptr,
                        len,
                        elem,
                        mem: MemKey::Param(index),
                        tiles: false,
                    },
                )
            }
            _ => return None,
        };
        params.push(ir::Param {
            name: decl.name.clone(),
            kind,
        });
        frame.locals.insert(local, val);
    }
    l.frames.push(frame);
    let mut roles = Vec::new();
    let mut role_failed = false;
    for stmt in &f.body.stmts {
        match stmt {
            Stmt::Let(LetPattern::Local(id), e) if matches!(e.kind, ExprKind::BarrierNew) => {
                l.barriers.push((Vec::new(), f.local(*id).name.clone()));
                let b = Val::Barrier(l.barriers.len() as u32 - 1);
                l.frame().locals.insert(*id, b);
            }
            Stmt::Let(LetPattern::Pair(tx, rx), e) if matches!(e.kind, ExprKind::OneshotNew(_)) => {
                let ExprKind::OneshotNew(s) = e.kind else {
                    continue;
                };
                l.shared_cells.push(s);
                let name = format!("{}/{}", f.local(*tx).name, f.local(*rx).name);
                l.oneshots.push(Oneshot {
                    cell: l.shared_cells.len() as u32 - 1,
                    name,
                    sender: None,
                    receiver: None,
                    span: e.span,
                });
                let k = l.oneshots.len() as u32 - 1;
                let frame = l.frame();
                frame.locals.insert(*tx, Val::OneshotTx(k));
                frame.locals.insert(*rx, Val::OneshotRx(k));
            }
            Stmt::Let(LetPattern::Pair(tx, rx), e) => {
                if let ExprKind::Channel(ty) = &e.kind {
                    let c = l.new_channel(ty.clone(), f, *tx, *rx, e.span);
                    let frame = l.frame();
                    frame.locals.insert(*tx, Val::Sender(c));
                    frame.locals.insert(*rx, Val::Receiver(c));
                }
            }
            Stmt::Expr(Expr {
                kind: ExprKind::Await(inner),
                ..
            }) => {
                if let ExprKind::Join(role_exprs) = &inner.kind {
                    for r in role_exprs {
                        match l.role(r, roles.len(), warps) {
                            Some(role) => roles.push(role),
                            None => role_failed = true,
                        }
                    }
                }
            }
            other => l.stmt(other),
        }
    }
    let prologue = Block(l.blocks.pop().unwrap_or_default());
    // After a role failed, idle warps and unowned channel ends are consequences, not news.
    if !role_failed && !f.idle_warps {
        check_warp_coverage(&roles, warps, f.span, l.diags);
    }
    for (i, c) in l.channels.iter().enumerate().filter(|_| !role_failed) {
        let span = l.channel_spans[i];
        if c.producer.is_none() {
            l.diags.error(
                span,
                format!(
                    "channel `{}` has no sending role: pass its sender to a role in `join!`",
                    c.name
                ),
            );
        }
        if c.consumers.is_empty() {
            l.diags.error(
                span,
                format!(
                    "channel `{}` has no receiving role: pass its receiver to a role in `join!`",
                    c.name
                ),
            );
        }
    }
    if !role_failed && !l.ownership_conflict {
        protocol::check_wait_cycles(&roles, &l.channels, &l.sites, l.diags);
    }
    // Roles of several warps whose code has a role barrier get an mbarrier for it.
    let role_needs_barrier: Vec<bool> = roles
        .iter()
        .map(|r| {
            let mut found = false;
            ir::for_each_inst(&r.body, &mut |i| {
                found |= matches!(
                    i,
                    Inst::RoleBarrier { .. }
                        | Inst::ParFor(ParFor {
                            reduce: Some(_),
                            ..
                        })
                )
            });
            found && r.end_warp - r.first_warp > 1
        })
        .collect();
    // Roles of several warps that reduce get 8 bytes per warp for the warps' totals.
    let role_scratch: Vec<u32> = roles
        .iter()
        .map(|r| {
            let mut found = false;
            ir::for_each_inst(&r.body, &mut |i| {
                found |= matches!(
                    i,
                    Inst::ParFor(ParFor {
                        reduce: Some(_),
                        ..
                    })
                )
            });
            let warps = r.end_warp - r.first_warp;
            if found && warps > 1 {
                8 * warps
            } else {
                0
            }
        })
        .collect();
    let (shared_bytes, role_barriers, reduce_scratch, cells_offset) = layout::lay_out(
        &mut l.channels,
        &role_needs_barrier,
        &role_scratch,
        l.shared_cells.len() as u32 + l.barriers.len() as u32 + l.oneshots.len() as u32,
        &l.channel_spans,
        l.diags,
    );
    // The barriers between roles take the 8-byte cells after the shared values: each expects
    // one arrival per warp of the roles that take it.
    let barriers: Vec<ir::KernelBarrier> = l
        .barriers
        .iter()
        .enumerate()
        .map(|(k, (takers, name))| ir::KernelBarrier {
            name: name.clone(),
            offset: cells_offset + 8 * (l.shared_cells.len() + k) as u32,
            arrivals: takers
                .iter()
                .map(|r| roles[r.0 as usize].end_warp - roles[r.0 as usize].first_warp)
                .sum(),
            roles: takers.clone(),
            receiver: None,
        })
        .collect();
    // Each one-shot value's mbarrier follows: one arrival per warp of its sender.
    let mut barriers = barriers;
    for (k, o) in l.oneshots.iter().enumerate() {
        if !role_failed && (o.sender.is_none() || o.receiver.is_none()) {
            let which = if o.sender.is_none() {
                "sender"
            } else {
                "receiver"
            };
            l.diags.error(
                o.span,
                format!("the one-shot value `{}` has no {which} role: pass that end to a role in `join!`", o.name),
            );
        }
        let warps = o.sender.map_or(1, |r| {
            roles[r.0 as usize].end_warp - roles[r.0 as usize].first_warp
        });
        barriers.push(ir::KernelBarrier {
            name: o.name.clone(),
            offset: cells_offset + 8 * (l.shared_cells.len() + l.barriers.len() + k) as u32,
            arrivals: warps,
            roles: o.sender.into_iter().collect(),
            receiver: o.receiver,
        });
    }
    if l.diags.len() > before || l.ownership_conflict {
        return None;
    }
    Some(Kernel {
        name: f.name.clone(),
        warps,
        idle_warps: f.idle_warps,
        params,
        values: l.values,
        channels: l.channels,
        prologue,
        roles,
        shared_bytes,
        role_barriers,
        reduce_scratch,
        sites: l.sites,
        shared_cells: l.shared_cells,
        cells_offset,
        barriers,
        registers: None,
        min_blocks_per_sm: None,
        local_bytes: l.local_bytes,
        const_tables: l
            .const_tables
            .iter()
            .map(|&t| {
                let table = &prog.statics[t as usize];
                ir::ConstTable {
                    name: table.name.clone(),
                    bytes: table
                        .values
                        .iter()
                        .flat_map(|v| math::lit_bytes(*v, table.elem))
                        .collect(),
                }
            })
            .collect(),
    })
}

fn check_warp_coverage(roles: &[ir::Role], warps: u32, span: Span, diags: &mut Diagnostics) {
    let mut covered = vec![false; warps as usize];
    for r in roles {
        for w in r.first_warp..r.end_warp.min(warps) {
            covered[w as usize] = true;
        }
    }
    let mut w = 0;
    while w < warps {
        if !covered[w as usize] {
            let start = w;
            while w < warps && !covered[w as usize] {
                w += 1;
            }
            diags.error(span, format!("warps {start}..{w} run no role: give them a role in `join!`, lower `warps` in `#[kernel(warps = ..)]`, or say that they are meant to idle with `#[kernel(warps = {warps}, idle_warps)]`"));
        }
        w += 1;
    }
}

impl Frame {
    fn new(func: FnId) -> Frame {
        Frame {
            func,
            locals: HashMap::new(),
            moved: HashSet::new(),
            copied: HashSet::new(),
            scopes: vec![Scope {
                owned: Vec::new(),
                lp: None,
            }],
            decl_depth: HashMap::new(),
            ret: None,
        }
    }
}

impl Lowerer<'_> {
    fn frame(&mut self) -> &mut Frame {
        match self.frames.last_mut() {
            Some(f) => f,
            None => unreachable!("lowering always runs inside a frame"),
        }
    }

    fn func(&self) -> &tir::Function {
        let id = self.frames.last().map_or(FnId(0), |f| f.func);
        self.prog.function(id)
    }

    fn new_value(&mut self, ty: Scalar, name: Option<&str>) -> Value {
        let v = Value(self.values.len() as u32);
        self.values.push(ValueInfo {
            ty,
            name: name.map(str::to_string),
        });
        v
    }

    fn emit(&mut self, inst: Inst) {
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

    fn konst(&mut self, ty: Scalar, imm: Imm) -> Value {
        let dst = self.new_value(ty, None);
        self.emit(Inst::Const { dst, imm });
        dst
    }

    fn usize_const(&mut self, v: u64) -> Value {
        self.konst(Scalar::Usize, Imm::Int(v))
    }

    /// The bytes of a bulk copy between the global address `global` and a slot of channel
    /// `chan` that one `cp.async.bulk` moves: the 16-byte-aligned part of `len` elements, or 0
    /// when `global` is not 16-byte aligned (the role's threads then copy it all). Plain
    /// arithmetic, so that the loop-invariant pass computes it once for an invariant source.
    fn bulk_bytes(&mut self, chan: ChannelId, global: Value, len: Value) -> Value {
        // The checker allows bulk copies of scalar payloads only; the PTX writer refuses others.
        let size = self.channels[chan.0 as usize]
            .ty
            .elem
            .scalar()
            .map_or(0, Scalar::size);
        let size = self.usize_const(u64::from(size));
        let bytes = self.binary(BinOp::Mul, len, size);
        let whole = self.usize_const(!15);
        let whole = self.binary(BinOp::And, bytes, whole);
        let fifteen = self.usize_const(15);
        let low = self.binary(BinOp::And, global, fifteen);
        let zero = self.usize_const(0);
        let aligned = self.binary(BinOp::Eq, low, zero);
        let bulk = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Select {
            dst: bulk,
            cond: aligned,
            if_true: whole,
            if_false: zero,
        });
        bulk
    }

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

    fn not(&mut self, v: Value) -> Value {
        let dst = self.new_value(Scalar::Bool, None);
        self.emit(Inst::Unary {
            dst,
            op: UnOp::Not,
            src: v,
        });
        dst
    }

    fn site(&mut self, kind: SiteKind, message: String, span: Span) -> SiteId {
        self.sites.push(Site {
            kind,
            message,
            span,
        });
        SiteId(self.sites.len() as u32 - 1)
    }

    fn panic_if(&mut self, cond: Value, message: &str, span: Span) {
        let site = self.site(SiteKind::Panic, message.to_string(), span);
        self.emit(Inst::PanicIf { cond, site });
    }

    fn sub_block(&mut self, f: impl FnOnce(&mut Self)) -> Block {
        self.blocks.push(Vec::new());
        f(self);
        Block(self.blocks.pop().unwrap_or_default())
    }

    fn new_loop(&mut self) -> LoopId {
        self.loops += 1;
        LoopId(self.loops - 1)
    }

    fn new_channel(
        &mut self,
        ty: ChanTy,
        f: &tir::Function,
        tx: LocalId,
        rx: LocalId,
        span: Span,
    ) -> ChannelId {
        let id = ChannelId(self.channels.len() as u32);
        self.channels.push(Channel {
            name: format!("{}/{}", f.local(tx).name, f.local(rx).name),
            ty,
            producer: None,
            consumers: Vec::new(),
            slot_stride: 0,
            data_offset: 0,
            full_offset: 0,
            empty_offset: 0,
            state_offset: 0,
            generic_writes: false,
            bulk_reads: false,
        });
        self.channel_spans.push(span);
        id
    }

    fn access(&mut self, key: MemKey) {
        *self.accesses.entry(key).or_insert(0) += 1;
    }

    /// Lowers one `on_warps(range, call)` of `join!` into a role.
    fn role(&mut self, e: &Expr, index: usize, warps: u32) -> Option<ir::Role> {
        let ExprKind::OnWarps {
            start,
            end,
            range,
            call,
        } = &e.kind
        else {
            return None;
        };
        let (start, end) = (*start, *end);
        if start >= end {
            self.diags.error_at(
                range,
                format!("the warp range {start}..{end} is empty: a role needs at least one warp"),
            );
            return None;
        }
        if end > warps {
            self.diags.error_at(range, format!("the warp range {start}..{end} is past the kernel's {warps} warps: raise `#[kernel(warps = {end})]` or move the role"));
            return None;
        }
        if let Some((other, a, b)) = self
            .warp_owners
            .iter()
            .find(|(_, a, b)| start < *b && *a < end)
        {
            self.diags.error_at(range, format!("the warp range {start}..{end} overlaps role `{other}` on warps {a}..{b}: each warp runs one role"));
            return None;
        }
        let ExprKind::Call(fid, args) = &call.kind else {
            return None;
        };
        let role_id = RoleId(index as u32);
        self.role = Some(role_id);
        self.role_span = call.span;
        self.warp_owners
            .push((self.prog.function(*fid).name.clone(), start, end));
        self.accesses.clear();
        self.barrier_requests.clear();
        let name = self.prog.function(*fid).name.clone();
        let mut body = self.sub_block(|l| {
            let vals: Vec<Val> = args.iter().map(|a| l.expr(a)).collect();
            for v in &vals {
                match v {
                    Val::Sender(c) => l.claim(*c, true, role_id),
                    Val::Receiver(c) => l.claim(*c, false, role_id),
                    Val::Barrier(b) => {
                        let takers = &mut l.barriers[*b as usize].0;
                        if !takers.contains(&role_id) {
                            takers.push(role_id);
                        }
                    }
                    Val::OneshotTx(k) => l.oneshots[*k as usize].sender = Some(role_id),
                    Val::OneshotRx(k) => l.oneshots[*k as usize].receiver = Some(role_id),
                    _ => {}
                }
            }
            l.inline_call(*fid, vals, call.span);
        });
        self.prune_barriers(&mut body);
        if end - start > 1 {
            self.check_join_branches(&body, &name, end - start);
            // Each warp would choose its own arm: the warps of one role could take items of two
            // channels, and their parallel loops would split two different slots.
            for span in std::mem::take(&mut self.selects) {
                self.diags.error(span, format!("`select!` in role `{name}`, which runs on {} warps: each warp would choose an arm on its own, and the warps could take items of different channels; give the role one warp (`on_warps({start}..{})`), or receive from one channel at a time", end - start, start + 1));
            }
        }
        self.joins.clear();
        self.selects.clear();
        self.role = None;
        Some(ir::Role {
            name,
            first_warp: start,
            end_warp: end,
            body,
        })
    }

    /// In a role of several warps, each warp runs a `join!`'s branches on its own schedule, so a
    /// branch cannot make the role's warps meet (a role barrier after a parallel loop whose
    /// results other threads read, or a reduction over the role's threads).
    fn check_join_branches(&mut self, body: &Block, role: &str, warps: u32) {
        let mut meets = Vec::new();
        crate::ir::for_each_inst(body, &mut |i| {
            if let Inst::Join { branches } = i {
                let mut meet = false;
                for b in branches {
                    crate::ir::for_each_inst(b, &mut |i| {
                        meet |= i.meets_role_threads();
                    });
                }
                meets.push(meet);
            }
        });
        for (meet, span) in meets.into_iter().zip(self.joins.clone()) {
            if meet {
                self.diags.error(span, format!("a branch of this `join!` makes the {warps} warps of role `{role}` meet (a reduction over the role's threads, or a parallel loop whose results other threads read next); the warps of a role run `join!` branches each on its own schedule, so they cannot meet inside one: move that code out of the `join!`, or give the role one warp"));
            }
        }
    }

    /// Records which role holds an end. A second role taking the same end is a use after move,
    /// which rustc reports on the shadow code; the kernel is then not emitted.
    fn claim(&mut self, c: ChannelId, sender: bool, role: RoleId) {
        let ch = &mut self.channels[c.0 as usize];
        if sender {
            if ch.producer.is_some() {
                self.ownership_conflict = true;
            }
            ch.producer = Some(role);
        } else if ch.consumers.contains(&role) {
            // Two receivers of one channel in one role: legal Rust, so rustc says nothing; the
            // role would wait for every item twice.
            let name = ch.name.clone();
            let span = self.role_span;
            self.diags.error(span, format!("this role takes two receivers of channel `{name}`: each receiving role takes one (`rx.subscribe()` makes a receiver for another role)"));
        } else {
            // Several roles: a broadcast (`rx.subscribe()`); one receiver moved into two roles
            // is a use after move, which rustc reports on the shadow code.
            ch.consumers.push(role);
        }
    }

    /// Removes the barrier placeholders whose loop writes memory no other access of the role
    /// touches and whose iterations cannot overlap.
    fn prune_barriers(&mut self, body: &mut Block) {
        let decisions: Vec<bool> = self
            .barrier_requests
            .iter()
            .map(|writes| {
                writes
                    .iter()
                    .any(|(key, tiles)| !tiles || self.accesses.get(key).copied().unwrap_or(0) > 1)
            })
            .collect();
        let mut it = decisions.into_iter();
        prune(body, &mut it);
        fn prune(block: &mut Block, decisions: &mut impl Iterator<Item = bool>) {
            block.0.retain_mut(|inst| {
                match inst {
                    Inst::If { then, else_, .. } => {
                        prune(then, decisions);
                        prune(else_, decisions);
                    }
                    Inst::Loop { body, .. } => prune(body, decisions),
                    Inst::Join { branches } => {
                        for b in branches {
                            prune(b, decisions);
                        }
                    }
                    Inst::RoleBarrier { .. } => return decisions.next().unwrap_or(true),
                    _ => {}
                }
                true
            });
        }
    }

    /// Inlines a call of `fid` with argument values `args`; returns its result.
    fn inline_call(&mut self, fid: FnId, args: Vec<Val>, span: Span) -> Val {
        if self.frames.len() > 64 {
            self.diags
                .error(span, "helper calls nest too deep (over 64 levels)");
            return Val::Unit;
        }
        let f = self.prog.function(fid);
        let mut frame = Frame::new(fid);
        let args: Vec<Val> = {
            // Array arguments are copies, laid out as the callee's parameter wants them.
            let saved = std::mem::replace(&mut self.frames, vec![Frame::new(fid)]);
            let out = f
                .params
                .iter()
                .zip(args)
                .map(|(&p, v)| self.materialize(p, v))
                .collect();
            self.frames = saved;
            out
        };
        for (&p, v) in f.params.iter().zip(args) {
            let v = match v {
                Val::Scalar(s) => {
                    let ty = self.values[s.0 as usize].ty;
                    let copy = self.new_value(ty, Some(&f.local(p).name));
                    self.emit(Inst::Copy { dst: copy, src: s });
                    Val::Scalar(copy)
                }
                other => other,
            };
            if let Val::Sender(_) = v {
                frame.scopes[0].owned.push((p, f.local(p).span));
            }
            frame.decl_depth.insert(p, self.cond_depth);
            frame.locals.insert(p, v);
        }
        self.frames.push(frame);
        let saved_depth = self.cond_depth;
        let result = if f.has_return {
            // The body runs in a loop that `return` leaves; the normal end drops and leaves too.
            let id = self.new_loop();
            // One result register per scalar of the return type.
            let ret: Vec<Value> = match &f.ret {
                Ty::Scalar(sc) => vec![self.new_value(*sc, None)],
                Ty::Enum(..) => vec![self.new_value(Scalar::U32, None)],
                Ty::Tuple(ts) => ts
                    .iter()
                    .map(|t| self.new_value(Self::scalar_ty(t), None))
                    .collect(),
                Ty::Struct(sid, _) => self.prog.structs[*sid as usize]
                    .fields
                    .clone()
                    .iter()
                    .map(|(_, s)| self.new_value(*s, None))
                    .collect(),
                _ => Vec::new(),
            };
            self.frame().ret = Some((id, ret.clone()));
            let results = ret.clone();
            let body = self.sub_block(|l| {
                let v = l.block_body(&f.body);
                for (r, v) in results.iter().zip(v.scalars()) {
                    l.emit(Inst::Copy { dst: *r, src: v });
                }
                l.exit_scope_drops(0);
                l.emit(Inst::Break(id));
            });
            self.emit(Inst::Loop { id, body });
            match &f.ret {
                Ty::Scalar(_) | Ty::Enum(..) => ret.first().map_or(Val::Unit, |r| Val::Scalar(*r)),
                Ty::Tuple(_) | Ty::Struct(..) => Val::Tuple(ret),
                _ => Val::Unit,
            }
        } else {
            let v = self.block_body(&f.body);
            self.exit_scope_drops(0);
            v
        };
        self.cond_depth = saved_depth;
        self.frames.pop();
        result
    }

    /// `for v in (a..b).step_by(k)` and `for v in (a..b).rev()`: a counted loop over
    /// `n` = the number of items (no overflow near the top of the range), with
    /// `v = a + i * k` or `v = b - 1 - i`.
    /// `for v in a..=b`: the counter stops at `b` without stepping past it (`b` may be the
    /// type's `MAX`), and `continue` finds it already advanced.
    fn for_inclusive(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        iter: &Expr,
        body: &tir::Block,
    ) {
        let ExprKind::InclusiveRange(a, b) = &iter.kind else {
            return;
        };
        let start = self.scalar(a);
        let end = self.scalar(b);
        let ty = self.values[start.0 as usize].ty;
        let i = self.new_value(ty, None);
        self.emit(Inst::Copy { dst: i, src: start });
        let exhausted = self.new_value(Scalar::Bool, None);
        let empty = self.binary(BinOp::Gt, start, end);
        self.emit(Inst::Copy {
            dst: exhausted,
            src: empty,
        });
        let id = self.new_loop();
        self.cond_depth += 1;
        let loop_body = self.sub_block(|l| {
            l.break_if(exhausted, id);
            l.bind(var, Val::Scalar(i), iter.span);
            let last = l.binary(BinOp::Eq, i, end);
            l.emit(Inst::Copy {
                dst: exhausted,
                src: last,
            });
            let one = l.konst(ty, Imm::Int(1));
            let next = l.binary(BinOp::Add, i, one);
            l.emit(Inst::Select {
                dst: i,
                cond: last,
                if_true: i,
                if_false: next,
            });
            l.scoped_block(body, LoopScope::new(id, label));
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
    }

    fn for_stepped(
        &mut self,
        label: &Option<String>,
        var: LocalId,
        iter: &Expr,
        body: &tir::Block,
    ) {
        // `step` is `None` exactly for `.rev()`.
        let (range, step) = match &iter.kind {
            ExprKind::StepBy(r, k) => (r, Some(k)),
            ExprKind::Rev(r) => (r, None),
            _ => return,
        };
        let Val::Range { start, end, .. } = self.expr(range) else {
            return;
        };
        let zero = self.usize_const(0);
        let one = self.usize_const(1);
        let nonempty = self.binary(BinOp::Gt, end, start);
        let span = self.binary(BinOp::Sub, end, start);
        let span = {
            let z = self.new_value(Scalar::Usize, None);
            self.emit(Inst::Copy { dst: z, src: zero });
            let take = self.sub_block(|l| l.emit(Inst::Copy { dst: z, src: span }));
            self.emit(Inst::If {
                cond: nonempty,
                then: take,
                else_: Block::default(),
            });
            z
        };
        let (count, k) = match step {
            Some(k) => {
                let k = self.scalar(k);
                let bad = self.binary(BinOp::Eq, k, zero);
                self.panic_if(bad, "assertion failed: step != 0", iter.span);
                // ceil(span / k) without overflow: (span + k - 1) / k could wrap.
                let q = self.binary(BinOp::Div, span, k);
                let r = self.binary(BinOp::Rem, span, k);
                let extra = self.binary(BinOp::Ne, r, zero);
                let n = self.new_value(Scalar::Usize, None);
                self.emit(Inst::Copy { dst: n, src: q });
                let bump = self.sub_block(|l| {
                    l.emit(Inst::Binary {
                        dst: n,
                        op: BinOp::Add,
                        lhs: n,
                        rhs: one,
                    })
                });
                self.emit(Inst::If {
                    cond: extra,
                    then: bump,
                    else_: Block::default(),
                });
                (n, Some(k))
            }
            None => (span, None),
        };
        let id = self.new_loop();
        self.cond_depth += 1;
        let i = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Copy { dst: i, src: zero });
        let loop_body = self.sub_block(|l| {
            let done = l.binary(BinOp::Ge, i, count);
            l.break_if(done, id);
            let v = match k {
                Some(k) => {
                    let off = l.binary(BinOp::Mul, i, k);
                    l.binary(BinOp::Add, start, off)
                }
                None => {
                    let last = l.binary(BinOp::Sub, end, one);
                    l.binary(BinOp::Sub, last, i)
                }
            };
            l.bind(var, Val::Scalar(v), iter.span);
            l.emit(Inst::Binary {
                dst: i,
                op: BinOp::Add,
                lhs: i,
                rhs: one,
            });
            l.scoped_block(body, LoopScope::new(id, label));
        });
        self.emit(Inst::Loop {
            id,
            body: loop_body,
        });
        self.cond_depth -= 1;
    }

    /// `match` over an integer: the arms are tried in order, each behind a `matched` flag, so
    /// that no arm's code is repeated.
    fn match_expr(&mut self, scrutinee: &Expr, arms: &[tir::MatchArm], ty: &Ty) -> Val {
        let x = self.scalar(scrutinee);
        let int = self.values[x.0 as usize].ty;
        let result = self.result_value(ty);
        let matched = self.konst(Scalar::Bool, Imm::Bool(false));
        self.cond_depth += 1;
        for arm in arms {
            let open = self.not(matched);
            let try_arm = self.sub_block(|l| {
                let mut cond: Option<Value> = None;
                for p in &arm.patterns {
                    let c = match *p {
                        tir::MatchPat::Wild => l.konst(Scalar::Bool, Imm::Bool(true)),
                        tir::MatchPat::Value(v) => {
                            let k = l.konst(int, Imm::Int(v));
                            l.binary(BinOp::Eq, x, k)
                        }
                        tir::MatchPat::Range(lo, hi) => {
                            let (lo, hi) = (l.konst(int, Imm::Int(lo)), l.konst(int, Imm::Int(hi)));
                            let a = l.binary(BinOp::Ge, x, lo);
                            let b = l.binary(BinOp::Le, x, hi);
                            l.binary(BinOp::And, a, b)
                        }
                    };
                    cond = Some(match cond {
                        None => c,
                        Some(prev) => l.binary(BinOp::Or, prev, c),
                    });
                }
                let Some(cond) = cond else {
                    return;
                };
                if let Some(b) = arm.binding {
                    l.frame().locals.insert(b, Val::Scalar(x));
                }
                let take = l.sub_block(|l| {
                    let run = |l: &mut Self| {
                        l.emit(Inst::Const {
                            dst: matched,
                            imm: Imm::Bool(true),
                        });
                        let v = l.expr(&arm.body);
                        l.copy_result(result, v);
                    };
                    match &arm.guard {
                        None => run(l),
                        Some(g) => {
                            let g = l.scalar(g);
                            let guarded = l.sub_block(run);
                            l.emit(Inst::If {
                                cond: g,
                                then: guarded,
                                else_: Block::default(),
                            });
                        }
                    }
                });
                l.emit(Inst::If {
                    cond,
                    then: take,
                    else_: Block::default(),
                });
            });
            self.emit(Inst::If {
                cond: open,
                then: try_arm,
                else_: Block::default(),
            });
        }
        self.cond_depth -= 1;
        result.map_or(Val::Unit, Val::Scalar)
    }

    /// Lowers a function body's statements and tail in the frame's outer scope.
    fn block_body(&mut self, b: &tir::Block) -> Val {
        for s in &b.stmts {
            self.stmt(s);
        }
        match &b.tail {
            Some(t) => self.expr(t),
            None => Val::Unit,
        }
    }

    /// Lowers a nested block in its own scope.
    fn scoped_block(&mut self, b: &tir::Block, lp: Option<LoopScope>) -> Val {
        self.frame().scopes.push(Scope {
            owned: Vec::new(),
            lp,
        });
        let v = self.block_body(b);
        let last = self.frame().scopes.len() - 1;
        self.exit_scope_drops(last);
        self.frame().scopes.pop();
        v
    }

    /// Emits the drops of scope `index` (not popping it).
    fn exit_scope_drops(&mut self, index: usize) {
        let owned: Vec<(LocalId, Span)> = self
            .frame()
            .scopes
            .get(index)
            .map(|s| s.owned.clone())
            .unwrap_or_default();
        for (local, span) in owned.into_iter().rev() {
            self.drop_local(local, span);
        }
    }

    fn drop_local(&mut self, local: LocalId, span: Span) {
        if self.frame().moved.contains(&local) {
            return;
        }
        match self.frame().locals.get(&local).cloned() {
            Some(Val::Sender(c)) => {
                let name = self.channels[c.0 as usize].name.clone();
                let site = self.site(
                    SiteKind::Wait,
                    format!("closing channel `{name}` (dropping its sender waits for a free slot)"),
                    span,
                );
                self.emit(Inst::Close { chan: c, site });
            }
            Some(Val::RecvSlot(c)) => self.emit(Inst::Release { chan: c }),
            Some(Val::SendSlot(_)) => {
                let name = self.func().local(local).name.clone();
                self.diags.error(span, format!("the reserved slot `{name}` is dropped without being sent: call `{name}.send()` on every path"));
            }
            _ => {}
        }
    }

    fn own(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let frame = self.frame();
        frame.decl_depth.insert(local, depth);
        if let Some(s) = frame.scopes.last_mut() {
            s.owned.push((local, span));
        }
    }

    fn mark_moved(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let decl = self.frame().decl_depth.get(&local).copied().unwrap_or(0);
        if decl != depth {
            let name = self.func().local(local).name.clone();
            self.diags.error(span, format!("`{name}` is moved (sent, dropped or passed on) inside a branch or loop it was not created in; this is not supported yet: move it on every path at the same level"));
        }
        self.frame().moved.insert(local);
    }

    fn bind(&mut self, local: LocalId, v: Val, span: Span) {
        let v = self.materialize(local, v);
        let v = match v {
            Val::Tuple(values) => Val::Tuple(
                values
                    .iter()
                    .map(|x| {
                        let c = self.new_value(self.values[x.0 as usize].ty, None);
                        self.emit(Inst::Copy { dst: c, src: *x });
                        c
                    })
                    .collect(),
            ),
            Val::Scalar(s) => {
                let ty = self.values[s.0 as usize].ty;
                let name = self.func().local(local).name.clone();
                let copy = self.new_value(ty, Some(&name));
                self.emit(Inst::Copy { dst: copy, src: s });
                Val::Scalar(copy)
            }
            Val::Tiles {
                next,
                step,
                len,
                tile,
            } => {
                // A BlockTiles local is mutable state: give it its own registers.
                let fresh = [next, step, len, tile].map(|v| {
                    let c = self.new_value(Scalar::Usize, None);
                    self.emit(Inst::Copy { dst: c, src: v });
                    c
                });
                Val::Tiles {
                    next: fresh[0],
                    step: fresh[1],
                    len: fresh[2],
                    tile: fresh[3],
                }
            }
            other => other,
        };
        let owned = matches!(v, Val::Sender(_) | Val::RecvSlot(_) | Val::SendSlot(_));
        self.frame().locals.insert(local, v);
        if owned {
            self.own(local, span);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let(pat, init) => {
                let v = self.expr(init);
                match pat {
                    LetPattern::Local(id) => self.bind(*id, v, init.span),
                    LetPattern::Tuple(ids) => {
                        for (id, x) in ids.iter().zip(v.scalars()) {
                            if let Some(id) = id {
                                self.bind(*id, Val::Scalar(x), init.span);
                            }
                        }
                    }
                    LetPattern::Ignore => {}
                    LetPattern::Pair(..) => {
                        self.diags
                            .error(init.span, "channels are created in the kernel body only");
                    }
                }
            }
            Stmt::Expr(e) => {
                self.expr(e);
            }
            Stmt::For(label, var, iter, body)
                if matches!(iter.kind, ExprKind::StepBy(..) | ExprKind::Rev(_)) =>
            {
                self.for_stepped(label, *var, iter, body);
            }
            Stmt::For(label, var, iter, body)
                if matches!(iter.kind, ExprKind::InclusiveRange(..)) =>
            {
                self.for_inclusive(label, *var, iter, body);
            }
            Stmt::For(label, var, iter, body) => {
                let it = self.expr(iter);
                let id = self.new_loop();
                self.cond_depth += 1;
                match it {
                    Val::Range { start, end, tiles } => {
                        // The counter has the range's type (any integer in a loop head).
                        let ty = self.values[start.0 as usize].ty;
                        let i = self.new_value(ty, None);
                        self.emit(Inst::Copy { dst: i, src: start });
                        let var = *var;
                        let loop_body = self.sub_block(|l| {
                            let done = l.binary(BinOp::Ge, i, end);
                            l.break_if(done, id);
                            let item = if matches!(iter.kind, ExprKind::Range(..)) {
                                Val::Scalar(i)
                            } else {
                                Val::Range {
                                    start: i,
                                    end,
                                    tiles,
                                }
                            };
                            l.bind(var, item, iter.span);
                            let one = l.konst(ty, Imm::Int(1));
                            l.emit(Inst::Binary {
                                dst: i,
                                op: BinOp::Add,
                                lhs: i,
                                rhs: one,
                            });
                            l.scoped_block(body, LoopScope::new(id, label));
                        });
                        self.emit(Inst::Loop {
                            id,
                            body: loop_body,
                        });
                    }
                    Val::Tiles {
                        next,
                        step,
                        len,
                        tile,
                    } => {
                        let (var, state) = (
                            *var,
                            Val::Tiles {
                                next,
                                step,
                                len,
                                tile,
                            },
                        );
                        let loop_body = self.sub_block(|l| {
                            let (some, start, end) = l.tiles_next(&state);
                            let none = l.not(some);
                            l.break_if(none, id);
                            l.bind(
                                var,
                                Val::Range {
                                    start,
                                    end,
                                    tiles: true,
                                },
                                iter.span,
                            );
                            l.scoped_block(body, LoopScope::new(id, label));
                        });
                        self.emit(Inst::Loop {
                            id,
                            body: loop_body,
                        });
                    }
                    _ => {}
                }
                self.cond_depth -= 1;
            }
            Stmt::WhileLet(label, var, scrutinee, body) => {
                let id = self.new_loop();
                self.cond_depth += 1;
                let var = *var;
                let loop_body = self.sub_block(|l| {
                    let v = l.expr(scrutinee);
                    let (some, item) = match v {
                        Val::OptRange { some, start, end } => (
                            some,
                            Val::Range {
                                start,
                                end,
                                tiles: true,
                            },
                        ),
                        Val::Scalar(some) => match &scrutinee.ty {
                            Ty::OptRecvSlot(_) => (some, l.recv_slot_of(scrutinee)),
                            _ => return,
                        },
                        _ => return,
                    };
                    let none = l.not(some);
                    l.break_if(none, id);
                    // The item lives in the loop body's scope: a received slot is released at
                    // the end of each iteration (and by `break`/`continue`).
                    l.frame().scopes.push(Scope {
                        owned: Vec::new(),
                        lp: LoopScope::new(id, label),
                    });
                    l.bind(var, item, scrutinee.span);
                    l.block_body(body);
                    let last = l.frame().scopes.len() - 1;
                    l.exit_scope_drops(last);
                    l.frame().scopes.pop();
                });
                self.emit(Inst::Loop {
                    id,
                    body: loop_body,
                });
                self.cond_depth -= 1;
            }
            Stmt::While(label, cond, body) => {
                let id = self.new_loop();
                self.cond_depth += 1;
                let loop_body = self.sub_block(|l| {
                    if let Val::Scalar(c) = l.expr(cond) {
                        let stop = l.not(c);
                        l.break_if(stop, id);
                    }
                    l.scoped_block(body, LoopScope::new(id, label));
                });
                self.emit(Inst::Loop {
                    id,
                    body: loop_body,
                });
                self.cond_depth -= 1;
            }
            Stmt::Break(label, _, _) | Stmt::Continue(label, _) => {
                let value = match s {
                    Stmt::Break(_, Some(v), _) => Some(self.scalar(v)),
                    _ => None,
                };
                // Drop what the jump leaves: every scope down to the target loop's body scope.
                let scopes = &self.frame().scopes;
                let target = scopes.iter().rposition(|sc| {
                    sc.lp
                        .as_ref()
                        .is_some_and(|lp| label.is_none() || lp.label == *label)
                });
                let Some(target) = target else {
                    return;
                };
                let Some(lp) = scopes[target].lp.clone() else {
                    return;
                };
                if let (Some(v), Some(r)) = (value, lp.result) {
                    self.emit(Inst::Copy { dst: r, src: v });
                }
                let top = self.frame().scopes.len();
                for i in (target..top).rev() {
                    self.exit_scope_drops(i);
                }
                self.emit(if matches!(s, Stmt::Break(..)) {
                    Inst::Break(lp.id)
                } else {
                    Inst::Continue(lp.id)
                });
            }
        }
    }

    /// The slot a `recv().await` just produced.
    fn recv_slot_of(&mut self, scrutinee: &Expr) -> Val {
        match &scrutinee.ty {
            Ty::OptRecvSlot(_) => {
                let chan = self.recv_chan(scrutinee);
                chan.map_or(Val::Unit, Val::RecvSlot)
            }
            _ => Val::Unit,
        }
    }

    fn recv_chan(&mut self, e: &Expr) -> Option<ChannelId> {
        match &e.kind {
            ExprKind::Await(inner) => self.recv_chan(inner),
            ExprKind::Recv(rx) => match self.expr(rx) {
                Val::Receiver(c) => Some(c),
                _ => None,
            },
            _ => None,
        }
    }

    /// `BlockTiles::next`: `(some, start, end)`, advancing the iterator when `some`.
    fn tiles_next(&mut self, tiles: &Val) -> (Value, Value, Value) {
        let Val::Tiles {
            next,
            step,
            len,
            tile,
        } = *tiles
        else {
            let f = self.konst(Scalar::Bool, Imm::Bool(false));
            let z = self.usize_const(0);
            return (f, z, z);
        };
        let start = self.binary(BinOp::Mul, next, tile);
        let some = self.binary(BinOp::Lt, start, len);
        let stop = self.binary(BinOp::Add, start, tile);
        let end = self.binary(BinOp::Min, stop, len);
        let advance = self.sub_block(|l| {
            l.emit(Inst::Binary {
                dst: next,
                op: BinOp::Add,
                lhs: next,
                rhs: step,
            })
        });
        self.emit(Inst::If {
            cond: some,
            then: advance,
            else_: Block::default(),
        });
        (some, start, end)
    }

    fn scalar(&mut self, e: &Expr) -> Value {
        match self.expr(e) {
            Val::Scalar(v) => v,
            _ => {
                let ty = e.ty.scalar().unwrap_or(Scalar::I32);
                self.konst(ty, Imm::Int(0))
            }
        }
    }

    fn scalar_ty(ty: &Ty) -> Scalar {
        match ty {
            Ty::Scalar(s) => *s,
            // An enum without payloads is its `u32` discriminant.
            Ty::Enum(..) => Scalar::U32,
            Ty::ElemRef { elem, .. } => *elem,
            Ty::FloatLit => Scalar::F32,
            _ => Scalar::I32,
        }
    }

    fn expr(&mut self, e: &Expr) -> Val {
        match &e.kind {
            ExprKind::Lit(lit) => {
                let ty = Self::scalar_ty(&e.ty);
                let imm = match (*lit, ty) {
                    (Lit::Bool(b), _) => Imm::Bool(b),
                    (Lit::Float(f), Scalar::F64) => Imm::F64(f),
                    (Lit::Float(f), _) => Imm::F32(f as f32),
                    (Lit::Int(v), Scalar::F64) => Imm::F64(v as i128 as f64),
                    (Lit::Int(v), Scalar::F32) => Imm::F32(v as i128 as f32),
                    (Lit::Int(v), _) => Imm::Int(ty.int_bits(v as i128)),
                };
                Val::Scalar(self.konst(ty, imm))
            }
            ExprKind::Local(id) => {
                if self.frame().moved.contains(id) {
                    // rustc reports the use after move; keep lowering.
                }
                self.frame().locals.get(id).cloned().unwrap_or(Val::Unit)
            }
            ExprKind::Unary(op, a) => {
                let src = self.scalar(a);
                let ty = self.values[src.0 as usize].ty;
                let dst = self.new_value(ty, None);
                let op = match op {
                    tir::UnOp::Neg => UnOp::Neg,
                    tir::UnOp::Not => UnOp::Not,
                };
                self.emit(Inst::Unary { dst, op, src });
                Val::Scalar(dst)
            }
            ExprKind::Binary(op, a, b) => Val::Scalar(self.binary_expr(*op, a, b, e.span)),
            ExprKind::Math(f, args) if matches!(e.ty, Ty::Opt(_)) => {
                let vals: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
                let (some, value) = self.checked(*f, vals[0], vals[1]);
                Val::Tuple(vec![some, value])
            }
            ExprKind::Math(f, args) => {
                let vals: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
                Val::Scalar(self.math(*f, &vals, e.span))
            }
            ExprKind::OptIsSome(opt, want_some) => match self.expr(opt) {
                Val::Tuple(v) if v.len() == 2 && *want_some => Val::Scalar(v[0]),
                Val::Tuple(v) if v.len() == 2 => Val::Scalar(self.not(v[0])),
                _ => Val::Unit,
            },
            ExprKind::OptUnwrap(opt, default) => match self.expr(opt) {
                Val::Tuple(v) if v.len() == 2 => match default {
                    Some(d) => {
                        let d = self.scalar(d);
                        let out = self.new_value(self.values[v[1].0 as usize].ty, None);
                        self.emit(Inst::Select {
                            dst: out,
                            cond: v[0],
                            if_true: v[1],
                            if_false: d,
                        });
                        Val::Scalar(out)
                    }
                    None => {
                        let none = self.not(v[0]);
                        self.panic_if(none, "called `Option::unwrap()` on a `None` value", e.span);
                        Val::Scalar(v[1])
                    }
                },
                _ => Val::Unit,
            },

            ExprKind::Cast(a, ty) => {
                let src = self.scalar(a);
                let dst = self.new_value(*ty, None);
                self.emit(Inst::Cast { dst, src });
                Val::Scalar(dst)
            }
            ExprKind::Deref(a) => match self.expr(a) {
                Val::ElemRef(k) => match self.par.as_mut().and_then(|p| p.sources.get_mut(k)) {
                    Some(src) => {
                        src.read = true;
                        Val::Scalar(src.elem_value)
                    }
                    None => Val::Unit,
                },
                Val::StructRef(ks) => {
                    // `*p`: a copy of every field, as a struct value.
                    let mut fields = Vec::new();
                    for k in ks {
                        let Some(src) = self.par.as_mut().and_then(|p| p.sources.get_mut(k)) else {
                            return Val::Unit;
                        };
                        src.read = true;
                        let (ty, v) = (src.elem, src.elem_value);
                        let copy = self.new_value(ty, None);
                        self.emit(Inst::Copy { dst: copy, src: v });
                        fields.push(copy);
                    }
                    Val::Tuple(fields)
                }
                other => other,
            },
            ExprKind::Len(a) => match self.expr(a) {
                Val::Slice { len, .. } => Val::Scalar(len),
                _ => Val::Unit,
            },
            ExprKind::Index(base, index) => self.index(base, index, e.span),
            ExprKind::SubSlice(base, range) => {
                let (b, r) = (self.expr(base), self.expr(range));
                self.subslice_val(b, r, e.span)
            }
            ExprKind::RangeBound(r, end) => match self.expr(r) {
                Val::Range {
                    start, end: stop, ..
                } => Val::Scalar(if *end { stop } else { start }),
                _ => Val::Unit,
            },
            // Only a `for` loop's head (`for_inclusive`).
            ExprKind::InclusiveRange(..) => Val::Unit,
            ExprKind::Range(a, b) => {
                let start = self.scalar(a);
                let end = self.scalar(b);
                Val::Range {
                    start,
                    end,
                    tiles: false,
                }
            }
            ExprKind::Call(fid, args) => {
                let f = self.prog.function(*fid);
                if f.is_async {
                    // A future that is not awaited does nothing.
                    return Val::Unit;
                }
                let vals = self.call_args(args);
                self.inline_call(*fid, vals, e.span)
            }
            ExprKind::Await(inner) => self.await_expr(inner, e.span),
            ExprKind::Channel(_) => {
                self.diags
                    .error(e.span, "channels are created in the kernel body only");
                Val::Unit
            }
            ExprKind::Reserve(_)
            | ExprKind::Recv(_)
            | ExprKind::CopyFrom(..)
            | ExprKind::CopyTo(..)
            | ExprKind::Join(_)
            | ExprKind::JoinFutures(_)
            | ExprKind::OnWarps { .. } => Val::Unit,
            ExprKind::Select(arms, else_) => {
                self.select_expr(arms, else_.as_deref(), &e.ty, e.span)
            }
            ExprKind::Send(slot) => {
                if let ExprKind::Local(id) = slot.kind {
                    if let Some(Val::SendSlot(c)) = self.frame().locals.get(&id).cloned() {
                        self.emit(Inst::Send { chan: c });
                        self.mark_moved(id, e.span);
                    }
                }
                Val::Unit
            }
            ExprKind::Drop(v) => {
                if let ExprKind::Local(id) = v.kind {
                    self.drop_local(id, v.span);
                    self.mark_moved(id, e.span);
                }
                Val::Unit
            }
            ExprKind::AtomicIndex(base, index) => {
                let b = self.expr(base);
                let i = self.scalar(index);
                match b {
                    Val::Slice {
                        ptr,
                        len,
                        elem,
                        mem,
                        ..
                    } => {
                        self.access(mem);
                        let oob = self.binary(BinOp::Ge, i, len);
                        self.panic_if(oob, "index out of bounds", e.span);
                        let size = self.usize_const(u64::from(elem.size()));
                        let off = self.binary(BinOp::Mul, i, size);
                        Val::AtomicRef(self.binary(BinOp::Add, ptr, off))
                    }
                    _ => Val::Unit,
                }
            }
            ExprKind::Atomic(target, op, operands, order) => {
                let Val::AtomicRef(addr) = self.expr(target) else {
                    return Val::Unit;
                };
                let values: Vec<Value> = operands.iter().map(|o| self.scalar(o)).collect();
                if self.par.is_none() {
                    self.diags.error(e.span, "an atomic operation in role code would run once per thread of the role: call it inside a `par_iter` closure, where each iteration runs once");
                }
                let elem = match &target.ty {
                    Ty::AtomicRef(s) => *s,
                    _ => Scalar::U32,
                };
                let dst = (*op != tir::AtomicOp::Store).then(|| self.new_value(elem, None));
                self.emit(Inst::Atomic {
                    dst,
                    op: *op,
                    addr,
                    operands: values.clone(),
                    order: *order,
                });
                match (op, dst) {
                    (tir::AtomicOp::CompareExchange, Some(old)) => {
                        let ok = self.binary(BinOp::Eq, old, values[0]);
                        Val::Cas { ok, old }
                    }
                    (_, Some(v)) => Val::Scalar(v),
                    _ => Val::Unit,
                }
            }
            ExprKind::CasIsOk(r, want_ok) => match self.expr(r) {
                Val::Cas { ok, .. } if *want_ok => Val::Scalar(ok),
                Val::Cas { ok, .. } => Val::Scalar(self.not(ok)),
                _ => Val::Unit,
            },
            ExprKind::CasValue(r) => match self.expr(r) {
                Val::Cas { old, .. } => Val::Scalar(old),
                _ => Val::Unit,
            },
            ExprKind::Unchecked(inner) => {
                // The operands are checked as usual; only the access itself is not.
                let (base, index) = match &inner.kind {
                    ExprKind::Index(b, i) | ExprKind::SubSlice(b, i) => (&**b, &**i),
                    _ => return self.expr(inner),
                };
                let b = self.expr(base);
                let i = self.expr(index);
                let outer = std::mem::replace(&mut self.unchecked, true);
                let out = self.unchecked_access(inner, b, i);
                self.unchecked = outer;
                out
            }
            ExprKind::Static(id) => Val::ConstTable(*id),
            ExprKind::TupleLit(elems) => {
                // A struct's array fields are flattened into its components.
                let mut out = Vec::new();
                for x in elems {
                    match self.expr(x) {
                        Val::Array(values) => out.extend(values),
                        Val::LocalArray { addr, elem, len } => {
                            for k in 0..len {
                                out.push(self.local_elem_load(addr, elem, k));
                            }
                        }
                        Val::ConstTable(t) => out.extend(self.table_values(t)),
                        Val::Scalar(v) => out.push(v),
                        _ => {}
                    }
                }
                Val::Tuple(out)
            }
            ExprKind::StructArray(base, first, len) => {
                let range = *first as usize..(*first + *len) as usize;
                match self.expr(base) {
                    // The struct's own registers: an element write goes to the struct.
                    Val::Tuple(values) => {
                        Val::Array(values.get(range).unwrap_or_default().to_vec())
                    }
                    Val::StructRef(ks) => {
                        let mut regs = Vec::new();
                        for k in ks.get(range).unwrap_or_default() {
                            if let Some(src) = self.par.as_mut().and_then(|p| p.sources.get_mut(*k))
                            {
                                src.read = true;
                                regs.push(src.elem_value);
                            }
                        }
                        Val::Array(regs)
                    }
                    _ => Val::Unit,
                }
            }
            ExprKind::TupleField(base, index) => match self.expr(base) {
                Val::Tuple(values) => values
                    .get(*index as usize)
                    .map_or(Val::Unit, |v| Val::Scalar(*v)),
                Val::StructRef(sources) => sources
                    .get(*index as usize)
                    .map_or(Val::Unit, |k| Val::ElemRef(*k)),
                _ => Val::Unit,
            },
            ExprKind::ArrayRepeat(value, n) => {
                let v = self.scalar(value);
                Val::Array(vec![v; *n as usize])
            }
            ExprKind::ArrayList(items) => {
                Val::Array(items.iter().map(|x| self.scalar(x)).collect())
            }
            ExprKind::Panic(cond, message) => {
                let fails = match cond {
                    Some(c) => {
                        let c = self.scalar(c);
                        self.not(c)
                    }
                    None => self.konst(Scalar::Bool, Imm::Bool(true)),
                };
                self.panic_if(fails, message, e.span);
                Val::Unit
            }
            ExprKind::HalfBits(a, ty) => {
                let src = self.scalar(a);
                let dst = self.new_value(*ty, None);
                self.emit(Inst::Bitcast { dst, src });
                Val::Scalar(dst)
            }
            ExprKind::BarrierNew => {
                self.barriers.push((Vec::new(), "barrier".to_string()));
                Val::Barrier(self.barriers.len() as u32 - 1)
            }
            ExprKind::BarrierWait(_) | ExprKind::OneshotNew(_) | ExprKind::OneshotRecv(_) => {
                Val::Unit
            }
            // Another receiver of the same channel: the roles that take one are its consumers.
            ExprKind::Subscribe(rx) => self.expr(rx),
            ExprKind::OneshotSend(tx, value) => {
                let v = self.scalar(value);
                if let Val::OneshotTx(k) = self.expr(tx) {
                    let cell = self.oneshots[k as usize].cell;
                    self.emit(Inst::StoreCell { cell, value: v });
                    self.emit(Inst::OneshotSignal { oneshot: k });
                }
                Val::Unit
            }
            ExprKind::SharedNew(s) => {
                self.shared_cells.push(*s);
                Val::SharedCell(self.shared_cells.len() as u32 - 1)
            }
            ExprKind::SharedGet(cell) => match self.expr(cell) {
                Val::SharedCell(k) => {
                    let dst = self.new_value(self.shared_cells[k as usize], None);
                    self.emit(Inst::LoadCell { dst, cell: k });
                    Val::Scalar(dst)
                }
                _ => Val::Unit,
            },
            ExprKind::SharedSet(cell, value) => {
                let v = self.scalar(value);
                if let Val::SharedCell(k) = self.expr(cell) {
                    if self.role.is_none() {
                        self.diags.error(
                            e.span,
                            "`set` on a shared value is role code: call it inside a role",
                        );
                    }
                    self.emit(Inst::StoreCell { cell: k, value: v });
                    // The role reads its own write: its threads meet after it.
                    let site = self.site(
                        SiteKind::Wait,
                        "the role barrier after `set` on a shared value".to_string(),
                        e.span,
                    );
                    self.emit(Inst::RoleBarrier { site });
                }
                Val::Unit
            }
            ExprKind::BlockPosition(count) => {
                let dst = self.new_value(Scalar::Usize, None);
                self.emit(Inst::Special {
                    dst,
                    reg: if *count {
                        Special::GridDim
                    } else {
                        Special::BlockIdx
                    },
                });
                Val::Scalar(dst)
            }
            ExprKind::BlockTiles(len, tile) => {
                let len = self.scalar(len);
                let tile = self.scalar(tile);
                let zero = self.usize_const(0);
                let bad = self.binary(BinOp::Eq, tile, zero);
                self.panic_if(bad, "block_tiles: the tile size must not be zero", e.span);
                let next = self.new_value(Scalar::Usize, None);
                self.emit(Inst::Special {
                    dst: next,
                    reg: Special::BlockIdx,
                });
                let step = self.new_value(Scalar::Usize, None);
                self.emit(Inst::Special {
                    dst: step,
                    reg: Special::GridDim,
                });
                Val::Tiles {
                    next,
                    step,
                    len,
                    tile,
                }
            }
            ExprKind::TilesNext(t) => {
                let tiles = self.expr(t);
                let (some, start, end) = self.tiles_next(&tiles);
                Val::OptRange { some, start, end }
            }
            ExprKind::Unwrap(opt) => match self.expr(opt) {
                Val::OptRange { some, start, end } => {
                    let none = self.not(some);
                    self.panic_if(none, "called `Option::unwrap()` on a `None` value", e.span);
                    Val::Range {
                        start,
                        end,
                        tiles: true,
                    }
                }
                // `rx.recv().await.unwrap()`: the wait was emitted; `some` says it got a slot.
                Val::Scalar(some) if matches!(opt.ty, Ty::OptRecvSlot(_)) => {
                    let none = self.not(some);
                    self.panic_if(none, "called `Option::unwrap()` on a `None` value", e.span);
                    self.recv_slot_of(opt)
                }
                _ => Val::Unit,
            },
            ExprKind::ParSource(_) | ExprKind::Zip(..) | ExprKind::Enumerate(_) => Val::Unit,
            ExprKind::ParReduce(iter, red) => {
                let ty = Self::scalar_ty(&e.ty);
                Val::Scalar(self.par_reduce(iter, red, ty, e.span))
            }
            ExprKind::ParMap(..) => {
                self.diags.error(
                    e.span,
                    "`map` feeds a reduction: end it with `.sum()`, `.min()`, `.max()` or `.reduce(..)`",
                );
                Val::Unit
            }
            ExprKind::ForEach(iter, binding, body, lane) => {
                self.for_each(iter, binding, body, lane.is_some(), e.span);
                Val::Unit
            }
            ExprKind::LanePosition(warp) => {
                let dst = self.new_value(Scalar::U32, None);
                let reg = if *warp {
                    Special::RoleWarp
                } else {
                    Special::LaneId
                };
                self.emit(Inst::Special { dst, reg });
                Val::Scalar(dst)
            }
            ExprKind::Warp(op, args) => Val::Scalar(self.warp_op(*op, args)),
            ExprKind::Block(b) => self.scoped_block(b, None),
            ExprKind::Loop(label, body) => {
                let id = self.new_loop();
                let result = match e.ty {
                    Ty::Scalar(sc) => Some(self.new_value(sc, None)),
                    Ty::Enum(..) => Some(self.new_value(Scalar::U32, None)),
                    _ => None,
                };
                self.cond_depth += 1;
                let lp = Some(LoopScope {
                    id,
                    label: label.clone(),
                    result,
                });
                let loop_body = self.sub_block(|l| {
                    l.scoped_block(body, lp);
                });
                self.emit(Inst::Loop {
                    id,
                    body: loop_body,
                });
                self.cond_depth -= 1;
                result.map_or(Val::Unit, Val::Scalar)
            }
            ExprKind::Match(scrutinee, arms) => self.match_expr(scrutinee, arms, &e.ty),
            ExprKind::Return(value) => {
                let v = value.as_deref().map(|v| self.expr(v));
                let Some((id, result)) = self.frame().ret.clone() else {
                    return Val::Unit;
                };
                if let Some(v) = v {
                    for (r, v) in result.iter().zip(v.scalars()) {
                        self.emit(Inst::Copy { dst: *r, src: v });
                    }
                }
                let top = self.frame().scopes.len();
                for i in (0..top).rev() {
                    self.exit_scope_drops(i);
                }
                self.emit(Inst::Break(id));
                Val::Unit
            }
            ExprKind::StepBy(..) | ExprKind::Rev(_) => Val::Unit,
            ExprKind::If(cond, then, else_) => self.if_expr(cond, then, else_.as_deref(), &e.ty),
            ExprKind::Assign(place, value)
                if matches!(value.ty, Ty::Array(..))
                    && matches!(place.kind, ExprKind::StructArray(..)) =>
            {
                // `s.v = array` of a struct's array field: into its components.
                let v = self.expr(value);
                self.mark_struct_field_written(place);
                let src = match v {
                    Val::Array(values) => values,
                    Val::LocalArray { addr, elem, len } => (0..len)
                        .map(|k| self.local_elem_load(addr, elem, k))
                        .collect(),
                    Val::ConstTable(t) => self.table_values(t),
                    _ => Vec::new(),
                };
                // Read the sources before writing: `s.v = t.v` may overlap nothing, but a
                // copy keeps `s.v = [s.v[1], s.v[0]]` right.
                let src: Vec<Value> = src
                    .iter()
                    .map(|x| {
                        let c = self.new_value(self.values[x.0 as usize].ty, None);
                        self.emit(Inst::Copy { dst: c, src: *x });
                        c
                    })
                    .collect();
                if let Val::Array(dst) = self.expr(place) {
                    for (d, s) in dst.iter().zip(src) {
                        self.emit(Inst::Copy { dst: *d, src: s });
                    }
                }
                Val::Unit
            }
            ExprKind::Assign(place, value) if matches!(value.ty, Ty::Array(..)) => {
                // `a = b` of arrays: element by element into `a`'s layout.
                let v = self.expr(value);
                if let ExprKind::Local(id) = place.kind {
                    let fresh = self.materialize(id, v);
                    let old = self.frame().locals.get(&id).cloned();
                    match (old, fresh) {
                        (Some(Val::Array(dst)), Val::Array(src)) => {
                            for (d, s) in dst.iter().zip(src) {
                                self.emit(Inst::Copy { dst: *d, src: s });
                            }
                        }
                        (
                            Some(Val::LocalArray { addr, elem, len }),
                            Val::LocalArray { addr: from, .. },
                        ) => {
                            for k in 0..len {
                                let v = self.local_elem_load(from, elem, k);
                                let a = self.local_elem_addr(addr, elem, k);
                                self.emit(Inst::Store {
                                    space: Space::Local,
                                    addr: a,
                                    value: v,
                                });
                            }
                        }
                        _ => {}
                    }
                }
                Val::Unit
            }
            ExprKind::Assign(place, value) if matches!(&place.kind, ExprKind::Deref(r) if matches!(r.ty, Ty::StructRef { .. })) =>
            {
                // `*p = value` of a struct slot's element: every field.
                let v = self.expr(value);
                let ExprKind::Deref(r) = &place.kind else {
                    return Val::Unit;
                };
                if let (Val::StructRef(ks), Val::Tuple(values)) = (self.expr(r), v) {
                    for (k, value) in ks.into_iter().zip(values) {
                        let Some(dst) = self.par.as_ref().and_then(|p| p.sources.get(k)) else {
                            continue;
                        };
                        let dst = dst.elem_value;
                        self.element_written(k, false);
                        self.emit(Inst::Copy { dst, src: value });
                    }
                }
                Val::Unit
            }
            ExprKind::Assign(place, value) => {
                let v = self.scalar(value);
                self.store_place(place, false, |_, _| v);
                Val::Unit
            }
            ExprKind::CompoundAssign(op, place, value) => {
                let v = self.scalar(value);
                let op = bin_op(*op);
                let span = e.span;
                self.store_place(place, true, |l, old| l.arithmetic(op, old, v, span));
                Val::Unit
            }
        }
    }

    fn call_args(&mut self, args: &[Expr]) -> Vec<Val> {
        let mut vals = Vec::new();
        for a in args {
            let v = self.expr(a);
            if let (Val::Sender(_) | Val::Receiver(_), ExprKind::Local(id)) = (&v, &a.kind) {
                self.mark_moved(*id, a.span);
            }
            vals.push(v);
        }
        vals
    }

    /// Assigns to a local or a parallel element: `dst = f(old value)`.
    /// `reads_old`: `f` uses the old value (compound assignment), so an element must be loaded.
    /// Element `k` of the current parallel loop is written (and read, with `reads_old`). The
    /// element is stored after the body whatever path the body took, so a write under a
    /// condition (or in a loop) loads the element first: where the write does not happen, the
    /// store puts the same value back.
    fn element_written(&mut self, k: usize, reads_old: bool) {
        let depth = self.cond_depth;
        if let Some(p) = self.par.as_mut() {
            let conditional = depth > p.body_depth;
            if let Some(s) = p.sources.get_mut(k) {
                s.write = true;
                s.read |= reads_old || conditional;
            }
        }
    }

    /// Before a write into an array field of a struct slot's element (`p.v[i] = x`,
    /// `p.v = ..`): the field's sources are written back after the body.
    fn mark_struct_field_written(&mut self, e: &Expr) {
        let ExprKind::StructArray(base, first, len) = &e.kind else {
            return;
        };
        if !matches!(base.ty, Ty::StructRef { .. }) {
            return;
        }
        if let Val::StructRef(ks) = self.expr(base) {
            let range = *first as usize..(*first + *len) as usize;
            for k in ks.get(range).unwrap_or_default() {
                if let Some(src) = self.par.as_mut().and_then(|p| p.sources.get_mut(*k)) {
                    src.write = true;
                    src.read = true;
                }
            }
        }
    }

    fn store_place(
        &mut self,
        place: &Expr,
        reads_old: bool,
        f: impl FnOnce(&mut Self, Value) -> Value,
    ) {
        match &place.kind {
            ExprKind::Local(id) => {
                if let Some(Val::Scalar(reg)) = self.frame().locals.get(id).cloned() {
                    let v = f(self, reg);
                    self.emit(Inst::Copy { dst: reg, src: v });
                }
            }
            ExprKind::TupleField(base, index) => {
                if let ExprKind::Local(id) = base.kind {
                    if let Some(Val::Tuple(values)) = self.frame().locals.get(&id).cloned() {
                        if let Some(&reg) = values.get(*index as usize) {
                            let v = f(self, reg);
                            self.emit(Inst::Copy { dst: reg, src: v });
                        }
                    }
                }
            }
            ExprKind::Index(base, index) => {
                self.mark_struct_field_written(base);
                let b = self.expr(base);
                let i = self.scalar(index);
                match b {
                    Val::Array(values) => {
                        if let Some(k) = Self::const_index(index) {
                            if let Some(&reg) = values.get(k as usize) {
                                let v = f(self, reg);
                                self.emit(Inst::Copy { dst: reg, src: v });
                            }
                        } else {
                            // A run-time index into a register array: each element selects.
                            let n = self.usize_const(values.len() as u64);
                            let oob = self.binary(BinOp::Ge, i, n);
                            self.panic_if(oob, "index out of bounds", place.span);
                            let old =
                                self.array_read(&Val::Array(values.clone()), index, i, place.span);
                            if let Some(old) = old {
                                let v = f(self, old);
                                for (k, reg) in values.iter().enumerate() {
                                    let kv = self.usize_const(k as u64);
                                    let hit = self.binary(BinOp::Eq, i, kv);
                                    self.emit(Inst::Select {
                                        dst: *reg,
                                        cond: hit,
                                        if_true: v,
                                        if_false: *reg,
                                    });
                                }
                            }
                        }
                    }
                    Val::LocalArray { addr, elem, len } => {
                        let a = self.local_index_addr(addr, elem, len, i, place.span);
                        let old = if reads_old {
                            self.load(elem, Space::Local, a)
                        } else {
                            self.konst(elem, Imm::Int(0))
                        };
                        let v = f(self, old);
                        self.emit(Inst::Store {
                            space: Space::Local,
                            addr: a,
                            value: v,
                        });
                    }
                    _ => {}
                }
            }
            ExprKind::Deref(inner) => {
                if let Val::ElemRef(k) = self.expr(inner) {
                    let reg = self
                        .par
                        .as_ref()
                        .and_then(|p| p.sources.get(k))
                        .map(|s| s.elem_value);
                    if let Some(reg) = reg {
                        let v = f(self, reg);
                        self.emit(Inst::Copy { dst: reg, src: v });
                        self.element_written(k, reads_old);
                    }
                }
            }
            _ => {}
        }
    }

    fn binary_expr(&mut self, op: tir::BinOp, a: &Expr, b: &Expr, span: Span) -> Value {
        match op {
            tir::BinOp::LogicAnd | tir::BinOp::LogicOr => {
                // Short-circuit: the right side runs only when it decides the result.
                let lhs = self.scalar(a);
                let result = self.new_value(Scalar::Bool, None);
                self.emit(Inst::Copy {
                    dst: result,
                    src: lhs,
                });
                let rhs_block = self.sub_block(|l| {
                    let rhs = l.scalar(b);
                    l.emit(Inst::Copy {
                        dst: result,
                        src: rhs,
                    });
                });
                let cond = if op == tir::BinOp::LogicAnd {
                    lhs
                } else {
                    self.not(lhs)
                };
                self.emit(Inst::If {
                    cond,
                    then: rhs_block,
                    else_: Block::default(),
                });
                result
            }
            _ => {
                let lhs = self.scalar(a);
                let rhs = self.scalar(b);
                self.arithmetic(bin_op(op), lhs, rhs, span)
            }
        }
    }

    /// `lhs op rhs` of an operator or a compound assignment: integer `/` and `%` check their
    /// divisor (zero, and `MIN / -1`) and panic as Rust does; float `%` is the exact `fmod`.
    fn arithmetic(&mut self, op: BinOp, lhs: Value, rhs: Value, span: Span) -> Value {
        if matches!(op, BinOp::Div | BinOp::Rem) && self.values[lhs.0 as usize].ty.is_int() {
            let ty = self.values[rhs.0 as usize].ty;
            let zero = self.konst(ty, Imm::Int(0));
            let is_zero = self.binary(BinOp::Eq, rhs, zero);
            let div = op == BinOp::Div;
            self.panic_if(
                is_zero,
                if div {
                    "attempt to divide by zero"
                } else {
                    "attempt to calculate the remainder with a divisor of zero"
                },
                span,
            );
            // `MIN / -1` overflows, and Rust panics on it in every build.
            if let Some((min, _)) = ty.int_range().filter(|_| ty.is_signed()) {
                let minus_one = self.konst(ty, Imm::Int(ty.int_bits(-1)));
                let min = self.konst(ty, Imm::Int(ty.int_bits(min)));
                let by_minus_one = self.binary(BinOp::Eq, rhs, minus_one);
                let is_min = self.binary(BinOp::Eq, lhs, min);
                let overflow = self.binary(BinOp::And, by_minus_one, is_min);
                self.panic_if(
                    overflow,
                    if div {
                        "attempt to divide with overflow"
                    } else {
                        "attempt to calculate the remainder with overflow"
                    },
                    span,
                );
            }
        }
        if op == BinOp::Rem {
            return self.rem_op(lhs, rhs);
        }
        self.binary(op, lhs, rhs)
    }

    fn index(&mut self, base: &Expr, index: &Expr, span: Span) -> Val {
        let b = self.expr(base);
        let i = self.scalar(index);
        if let Some(v) = self.array_read(&b, index, i, span) {
            return Val::Scalar(v);
        }
        self.index_val(base, b, i, span)
    }

    /// The constant value of an index expression, if it is one.
    fn const_index(index: &Expr) -> Option<u64> {
        match index.kind {
            ExprKind::Lit(Lit::Int(v)) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Gives a local array value the layout its local wants: registers, or local memory for a
    /// local indexed at run time; always a copy, since arrays are values.
    fn materialize(&mut self, local: LocalId, v: Val) -> Val {
        let dynamic = self.func().local(local).dynamic_index;
        let elem = match &self.func().local(local).ty {
            Ty::Array(s, _) => *s,
            _ => return v,
        };
        let values = match v {
            Val::Array(values) => values,
            Val::ConstTable(t) => self.table_values(t),
            Val::LocalArray { addr, elem, len } => (0..len)
                .map(|k| self.local_elem_load(addr, elem, k))
                .collect(),
            other => return other,
        };
        if dynamic {
            let size = elem.size();
            let offset = self.local_bytes.div_ceil(8) * 8;
            self.local_bytes = offset + size * values.len() as u32;
            let addr = self.new_value(Scalar::Usize, None);
            self.emit(Inst::LocalAddr { dst: addr, offset });
            for (k, v) in values.iter().enumerate() {
                let a = self.local_elem_addr(addr, elem, k as u32);
                self.emit(Inst::Store {
                    space: Space::Local,
                    addr: a,
                    value: *v,
                });
            }
            Val::LocalArray {
                addr,
                elem,
                len: values.len() as u32,
            }
        } else {
            Val::Array(
                values
                    .iter()
                    .map(|v| {
                        let ty = self.values[v.0 as usize].ty;
                        let c = self.new_value(ty, None);
                        self.emit(Inst::Copy { dst: c, src: *v });
                        c
                    })
                    .collect(),
            )
        }
    }

    fn local_elem_addr(&mut self, base: Value, elem: Scalar, k: u32) -> Value {
        let off = self.usize_const(u64::from(k * elem.size()));
        self.binary(BinOp::Add, base, off)
    }

    fn local_elem_load(&mut self, base: Value, elem: Scalar, k: u32) -> Value {
        let a = self.local_elem_addr(base, elem, k);
        self.load(elem, Space::Local, a)
    }

    /// The address of element `i` of a local-memory array, after its bounds check.
    fn local_index_addr(
        &mut self,
        addr: Value,
        elem: Scalar,
        len: u32,
        i: Value,
        span: Span,
    ) -> Value {
        if !self.unchecked {
            let n = self.usize_const(u64::from(len));
            let oob = self.binary(BinOp::Ge, i, n);
            self.panic_if(oob, "index out of bounds", span);
        }
        let size = self.usize_const(u64::from(elem.size()));
        let off = self.binary(BinOp::Mul, i, size);
        self.binary(BinOp::Add, addr, off)
    }

    /// `a[i]` of a local array; `None` when `b` is not one.
    fn array_read(&mut self, b: &Val, index: &Expr, i: Value, span: Span) -> Option<Value> {
        match b {
            Val::Array(values) => {
                if let Some(k) = Self::const_index(index) {
                    return values.get(k as usize).copied();
                }
                // A run-time index into a register array (a parameter, say): a select chain.
                let n = self.usize_const(values.len() as u64);
                let oob = self.binary(BinOp::Ge, i, n);
                self.panic_if(oob, "index out of bounds", span);
                let first = *values.first()?;
                let r = self.new_value(self.values[first.0 as usize].ty, None);
                self.emit(Inst::Copy { dst: r, src: first });
                for (k, v) in values.iter().enumerate().skip(1) {
                    let kv = self.usize_const(k as u64);
                    let hit = self.binary(BinOp::Eq, i, kv);
                    self.emit(Inst::Select {
                        dst: r,
                        cond: hit,
                        if_true: *v,
                        if_false: r,
                    });
                }
                Some(r)
            }
            Val::LocalArray { addr, elem, len } => {
                let (addr, elem, len) = (*addr, *elem, *len);
                let a = self.local_index_addr(addr, elem, len, i, span);
                Some(self.load(elem, Space::Local, a))
            }
            Val::ConstTable(t) => {
                let t = *t;
                let table = &self.prog.statics[t as usize];
                let (elem, len) = (table.elem, table.values.len() as u32);
                if let Some(k) = Self::const_index(index) {
                    // A constant index reads the value itself.
                    let lit = *table.values.get(k as usize)?;
                    return Some(self.lit_value(lit, elem));
                }
                let number = match self.const_tables.iter().position(|&x| x == t) {
                    Some(n) => n,
                    None => {
                        self.const_tables.push(t);
                        self.const_tables.len() - 1
                    }
                };
                let base = self.new_value(Scalar::Usize, None);
                self.emit(Inst::ConstAddr {
                    dst: base,
                    table: number as u32,
                });
                let a = self.local_index_addr(base, elem, len, i, span);
                Some(self.load(elem, Space::Const, a))
            }
            _ => None,
        }
    }

    /// The elements of a `static` table as constants.
    fn table_values(&mut self, t: u32) -> Vec<Value> {
        let table = self.prog.statics[t as usize].clone();
        table
            .values
            .iter()
            .map(|&lit| self.lit_value(lit, table.elem))
            .collect()
    }

    /// A literal of type `ty` as a constant value.
    fn lit_value(&mut self, lit: Lit, ty: Scalar) -> Value {
        let imm = match (lit, ty) {
            (Lit::Bool(b), _) => Imm::Bool(b),
            (Lit::Float(f), Scalar::F64) => Imm::F64(f),
            (Lit::Float(f), _) => Imm::F32(f as f32),
            (Lit::Int(v), Scalar::F64) => Imm::F64(v as i128 as f64),
            (Lit::Int(v), Scalar::F32) => Imm::F32(v as i128 as f32),
            (Lit::Int(v), _) => Imm::Int(ty.int_bits(v as i128)),
        };
        self.konst(ty, imm)
    }

    /// `get_unchecked`: the operands are lowered (and checked) as usual; the access is not.
    fn unchecked_access(&mut self, inner: &Expr, b: Val, i: Val) -> Val {
        match (&inner.kind, i) {
            (ExprKind::Index(base, _), Val::Scalar(i)) => self.index_val(base, b, i, inner.span),
            (ExprKind::SubSlice(..), r) => self.subslice_val(b, r, inner.span),
            _ => Val::Unit,
        }
    }

    fn subslice_val(&mut self, b: Val, r: Val, span: Span) -> Val {
        match (b, r) {
            (
                Val::Slice {
                    ptr,
                    len,
                    elem,
                    mem,
                    ..
                },
                Val::Range { start, end, tiles },
            ) => {
                if !self.unchecked {
                    let bad_order = self.binary(BinOp::Gt, start, end);
                    self.panic_if(bad_order, "slice index starts after it ends", span);
                    let past = self.binary(BinOp::Gt, end, len);
                    self.panic_if(past, "slice range past the end of the slice", span);
                }
                let size = self.usize_const(u64::from(elem.size()));
                let off = self.binary(BinOp::Mul, start, size);
                let p = self.binary(BinOp::Add, ptr, off);
                let n = self.binary(BinOp::Sub, end, start);
                Val::Slice {
                    ptr: p,
                    len: n,
                    elem,
                    mem,
                    tiles,
                }
            }
            _ => Val::Unit,
        }
    }

    fn index_val(&mut self, base: &Expr, b: Val, i: Value, span: Span) -> Val {
        match b {
            Val::Slice {
                ptr,
                len,
                elem,
                mem,
                ..
            } => {
                self.access(mem);
                if !self.unchecked {
                    let oob = self.binary(BinOp::Ge, i, len);
                    self.panic_if(oob, "index out of bounds", span);
                }
                let size = self.usize_const(u64::from(elem.size()));
                let off = self.binary(BinOp::Mul, i, size);
                let addr = self.binary(BinOp::Add, ptr, off);
                Val::Scalar(self.load(elem, Space::Global, addr))
            }
            Val::SendSlot(c) | Val::RecvSlot(c) => {
                self.check_not_copied(base, span);
                self.access(MemKey::Slot(c));
                let send = matches!(b, Val::SendSlot(_));
                let ty = self.channels[c.0 as usize].ty.clone();
                let Some(elem) = ty.elem.scalar() else {
                    return Val::Unit;
                };
                let n = self.usize_const(u64::from(ty.len));
                let oob = self.binary(BinOp::Ge, i, n);
                self.panic_if(oob, "index out of bounds", span);
                let base_addr = self.new_value(Scalar::U32, None);
                self.emit(Inst::SlotAddr {
                    dst: base_addr,
                    chan: c,
                    send,
                });
                let i32v = self.new_value(Scalar::U32, None);
                self.emit(Inst::Cast { dst: i32v, src: i });
                let size = self.konst(Scalar::U32, Imm::Int(u64::from(elem.size())));
                let off = self.binary(BinOp::Mul, i32v, size);
                let addr = self.binary(BinOp::Add, base_addr, off);
                Val::Scalar(self.load(elem, Space::Shared, addr))
            }
            _ => Val::Unit,
        }
    }

    fn load(&mut self, elem: Scalar, space: Space, addr: Value) -> Value {
        let dst = self.new_value(elem, None);
        self.emit(Inst::Load { dst, space, addr });
        dst
    }

    fn check_not_copied(&mut self, slot: &Expr, span: Span) {
        if let ExprKind::Local(id) = slot.kind {
            if self.frame().moved.contains(&id) {
                // Used after `send` or `drop`: rustc reports the use after move.
                self.ownership_conflict = true;
            } else if self.frame().copied.contains(&id) {
                let name = self.func().local(id).name.clone();
                self.diags.error(span, format!("`{name}` was filled by `copy_from`, whose bytes are still in flight: send it, and read the data on the receiving side"));
            }
        }
    }

    fn await_expr(&mut self, inner: &Expr, span: Span) -> Val {
        match &inner.kind {
            ExprKind::JoinFutures(branches) => self.join_futures(branches, span),
            ExprKind::Call(fid, args) => {
                let vals = self.call_args(args);
                self.inline_call(*fid, vals, span)
            }
            ExprKind::OneshotRecv(rx) => {
                let Val::OneshotRx(k) = self.expr(rx) else {
                    return Val::Unit;
                };
                let (cell, name) = {
                    let o = &self.oneshots[k as usize];
                    (o.cell, o.name.clone())
                };
                let site = self.site(
                    SiteKind::Wait,
                    format!("`recv()` on one-shot value `{name}`"),
                    span,
                );
                self.emit(Inst::OneshotWait { oneshot: k, site });
                let dst = self.new_value(self.shared_cells[cell as usize], None);
                self.emit(Inst::LoadCell { dst, cell });
                Val::Scalar(dst)
            }
            ExprKind::BarrierWait(b) => {
                if let Val::Barrier(k) = self.expr(b) {
                    let name = self.barriers[k as usize].1.clone();
                    let site = self.site(
                        SiteKind::Wait,
                        format!("`wait()` on barrier `{name}`"),
                        span,
                    );
                    if self.role.is_none() {
                        self.diags.error(
                            span,
                            "`wait()` on a barrier is role code: await it in a role",
                        );
                    }
                    self.emit(Inst::BarrierWait { barrier: k, site });
                }
                Val::Unit
            }
            ExprKind::Reserve(tx) => match self.expr(tx) {
                Val::Sender(c) => {
                    let name = self.channels[c.0 as usize].name.clone();
                    let site = self.site(
                        SiteKind::Wait,
                        format!("`reserve()` on channel `{name}`"),
                        span,
                    );
                    self.emit(Inst::Reserve { chan: c, site });
                    Val::SendSlot(c)
                }
                _ => Val::Unit,
            },
            ExprKind::Recv(rx) => match self.expr(rx) {
                Val::Receiver(c) => {
                    let some = self.new_value(Scalar::Bool, None);
                    let name = self.channels[c.0 as usize].name.clone();
                    let site = self.site(
                        SiteKind::Wait,
                        format!("`recv()` on channel `{name}`"),
                        span,
                    );
                    self.emit(Inst::Recv {
                        chan: c,
                        some,
                        site,
                    });
                    Val::Scalar(some)
                }
                _ => Val::Unit,
            },
            ExprKind::CopyTo(slot, dst) => {
                let (s, v) = (self.expr(slot), self.expr(dst));
                if let (Val::RecvSlot(c), Val::Slice { ptr, len, mem, .. }) = (s, v) {
                    let n = self.channels[c.0 as usize].ty.len;
                    let cap = self.usize_const(u64::from(n));
                    let too_long = self.binary(BinOp::Gt, len, cap);
                    let message =
                        format!("copy_to: the destination is longer than the slot's {n} elements");
                    self.panic_if(too_long, &message, inner.span);
                    let bulk = self.bulk_bytes(c, ptr, len);
                    self.emit(Inst::CopyOut {
                        chan: c,
                        dst: ptr,
                        len,
                        bulk,
                    });
                    self.channels[c.0 as usize].bulk_reads = true;
                    self.access(MemKey::Slot(c));
                    self.access(mem);
                }
                Val::Unit
            }
            ExprKind::CopyFrom(slot, src) => {
                self.check_not_copied(slot, inner.span);
                let (s, v) = (self.expr(slot), self.expr(src));
                if let (Val::SendSlot(c), Val::Slice { ptr, len, .. }) = (s, v) {
                    let n = self.channels[c.0 as usize].ty.len;
                    let cap = self.usize_const(u64::from(n));
                    let too_long = self.binary(BinOp::Gt, len, cap);
                    let message =
                        format!("copy_from: the source is longer than the slot's {n} elements");
                    self.panic_if(too_long, &message, inner.span);
                    let bulk = self.bulk_bytes(c, ptr, len);
                    self.emit(Inst::CopyIn {
                        chan: c,
                        src: ptr,
                        len,
                        bulk,
                    });
                    self.access(MemKey::Slot(c));
                    if let ExprKind::Local(id) = slot.kind {
                        self.frame().copied.insert(id);
                    }
                }
                Val::Unit
            }
            _ => Val::Unit,
        }
    }

    fn if_expr(&mut self, cond: &Expr, then: &tir::Block, else_: Option<&Expr>, ty: &Ty) -> Val {
        let c = self.scalar(cond);
        let result = self.result_value(ty);
        self.cond_depth += 1;
        let then_block = self.sub_block(|l| {
            let v = l.scoped_block(then, None);
            l.copy_result(result, v);
        });
        let else_block = self.sub_block(|l| {
            if let Some(e) = else_ {
                let v = l.expr(e);
                l.copy_result(result, v);
            }
        });
        self.cond_depth -= 1;
        // A value chosen between two arms of plain arithmetic is computed without a branch:
        // both arms, then a select (a parallel body stays branch-free and keeps its vector loop).
        let pure = |b: &Block| {
            b.0.iter().all(|i| {
                matches!(
                    i,
                    Inst::Const { .. }
                        | Inst::Copy { .. }
                        | Inst::Unary { .. }
                        | Inst::Binary { .. }
                        | Inst::Fma { .. }
                        | Inst::Cast { .. }
                        | Inst::Bitcast { .. }
                        | Inst::Select { .. }
                )
            })
        };
        if let (Some(r), true) = (result, pure(&then_block) && pure(&else_block)) {
            let ty = self.values[r.0 as usize].ty;
            for inst in then_block.0 {
                self.emit(inst);
            }
            let from_then = self.new_value(ty, None);
            self.emit(Inst::Copy {
                dst: from_then,
                src: r,
            });
            for inst in else_block.0 {
                self.emit(inst);
            }
            self.emit(Inst::Select {
                dst: r,
                cond: c,
                if_true: from_then,
                if_false: r,
            });
            return Val::Scalar(r);
        }
        self.emit(Inst::If {
            cond: c,
            then: then_block,
            else_: else_block,
        });
        result.map_or(Val::Unit, Val::Scalar)
    }

    /// The register a branching expression (`if`, `match`, `select!`) leaves its value in: one
    /// for a scalar or an enum (its `u32` discriminant), none for other types.
    fn result_value(&mut self, ty: &Ty) -> Option<Value> {
        match ty {
            Ty::Scalar(sc) => Some(self.new_value(*sc, None)),
            Ty::Enum(..) => Some(self.new_value(Scalar::U32, None)),
            _ => None,
        }
    }

    /// An arm's value `v` into the expression's `result` register (when both are scalars).
    fn copy_result(&mut self, result: Option<Value>, v: Val) {
        if let (Some(r), Val::Scalar(v)) = (result, v) {
            self.emit(Inst::Copy { dst: r, src: v });
        }
    }

    /// `join!(a, b, ..).await` in role code: each branch's code in its own block of a `Join`;
    /// the branches' values are copied to registers the join's value is made of.
    fn join_futures(&mut self, branches: &[Expr], span: Span) -> Val {
        let mut blocks = Vec::new();
        let mut values = Vec::new();
        let mut any_value = false;
        for b in branches {
            let mut out = Vec::new();
            let block = self.sub_block(|l| {
                let v = match &b.kind {
                    ExprKind::Block(body) => l.scoped_block(body, None),
                    ExprKind::Await(inner) => l.await_expr(inner, b.span),
                    _ => l.expr(b),
                };
                for x in v.scalars() {
                    let ty = l.values[x.0 as usize].ty;
                    let c = l.new_value(ty, None);
                    l.emit(Inst::Copy { dst: c, src: x });
                    out.push(c);
                }
            });
            any_value |= !out.is_empty();
            values.extend(out);
            blocks.push(block);
        }
        self.joins.push(span);
        self.emit(Inst::Join { branches: blocks });
        if any_value {
            Val::Tuple(values)
        } else {
            Val::Unit
        }
    }

    /// `select! { Some(x) = rx.recv() => .., .. else => .. }`: a loop that waits for the first
    /// enabled channel with a full slot (`SelectRecv`) and disables a channel that has closed,
    /// until an item comes or every channel is disabled; then the chosen arm, with the slot
    /// bound and released at the arm's end, or the `else` arm (a device panic without one).
    fn select_expr(
        &mut self,
        arms: &[tir::SelectArm],
        else_: Option<&Expr>,
        ty: &Ty,
        span: Span,
    ) -> Val {
        let mut chans = Vec::new();
        for a in arms {
            match self.recv_chan(&a.recv) {
                Some(c) => chans.push(c),
                None => return Val::Unit,
            }
        }
        let n = chans.len() as u32;
        if n == 0 || n > 32 {
            return Val::Unit;
        }
        let names: Vec<String> = chans
            .iter()
            .map(|c| format!("`{}`", self.channels[c.0 as usize].name))
            .collect();
        let site = self.site(
            SiteKind::Wait,
            format!("`select!` over channels {}", names.join(", ")),
            span,
        );
        self.selects.push(span);
        let all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let enabled = self.new_value(Scalar::U32, None);
        self.emit(Inst::Const {
            dst: enabled,
            imm: Imm::Int(u64::from(all)),
        });
        let chosen = self.new_value(Scalar::U32, None);
        let some = self.new_value(Scalar::Bool, None);
        let id = self.new_loop();
        self.cond_depth += 1;
        let body = self.sub_block(|l| {
            let zero = l.konst(Scalar::U32, Imm::Int(0));
            let none_left = l.binary(BinOp::Eq, enabled, zero);
            let out = l.sub_block(|l| {
                l.emit(Inst::Const {
                    dst: chosen,
                    imm: Imm::Int(u64::from(n)),
                });
                l.emit(Inst::Break(id));
            });
            l.emit(Inst::If {
                cond: none_left,
                then: out,
                else_: Block::default(),
            });
            l.emit(Inst::SelectRecv {
                chans: chans.clone(),
                enabled,
                chosen,
                some,
                site,
            });
            // A closed channel disables its arm.
            let closed = l.not(some);
            let disable = l.sub_block(|l| {
                let one = l.konst(Scalar::U32, Imm::Int(1));
                let bit = l.binary(BinOp::Shl, one, chosen);
                let keep = l.new_value(Scalar::U32, None);
                l.emit(Inst::Unary {
                    dst: keep,
                    op: UnOp::Not,
                    src: bit,
                });
                let left = l.binary(BinOp::And, enabled, keep);
                l.emit(Inst::Copy {
                    dst: enabled,
                    src: left,
                });
                l.emit(Inst::Continue(id));
            });
            l.emit(Inst::If {
                cond: closed,
                then: disable,
                else_: Block::default(),
            });
            l.emit(Inst::Break(id));
        });
        self.emit(Inst::Loop { id, body });
        let result = self.result_value(ty);
        for (k, arm) in arms.iter().enumerate() {
            let key = self.konst(Scalar::U32, Imm::Int(k as u64));
            let this = self.binary(BinOp::Eq, chosen, key);
            let take = self.sub_block(|l| {
                l.frame().scopes.push(Scope {
                    owned: Vec::new(),
                    lp: None,
                });
                l.bind(arm.binding, Val::RecvSlot(chans[k]), arm.recv.span);
                let v = l.expr(&arm.body);
                l.copy_result(result, v);
                let last = l.frame().scopes.len() - 1;
                l.exit_scope_drops(last);
                l.frame().scopes.pop();
            });
            self.emit(Inst::If {
                cond: this,
                then: take,
                else_: Block::default(),
            });
        }
        let key = self.konst(Scalar::U32, Imm::Int(u64::from(n)));
        let disabled = self.binary(BinOp::Eq, chosen, key);
        match else_ {
            Some(e) => {
                let take = self.sub_block(|l| {
                    let v = l.expr(e);
                    l.copy_result(result, v);
                });
                self.emit(Inst::If {
                    cond: disabled,
                    then: take,
                    else_: Block::default(),
                });
            }
            None => self.panic_if(disabled, tir::SELECT_DISABLED, span),
        }
        self.cond_depth -= 1;
        result.map_or(Val::Unit, Val::Scalar)
    }

    /// Flattens a chain of `par_iter`/`zip`/`enumerate` into sources.
    fn par_sources(
        &mut self,
        e: &Expr,
        sources: &mut Vec<(ParSource, Value, MemKey, bool)>,
        index: &mut Option<Value>,
    ) -> Leaf {
        match &e.kind {
            ExprKind::ParSource(base) => {
                let mutable = matches!(
                    e.ty,
                    Ty::ParIter(
                        crate::types::ParShape::Source { mutable: true, .. }
                            | crate::types::ParShape::Structs { mutable: true, .. }
                    )
                );
                let v = self.expr(base);
                // One part per source: the slot of a struct payload is one array per field.
                let parts = match v {
                    Val::Slice {
                        ptr,
                        len,
                        elem,
                        mem,
                        tiles,
                    } => vec![(Space::Global, ptr, len, elem, mem, tiles)],
                    Val::SendSlot(c) | Val::RecvSlot(c) => {
                        self.check_not_copied(base, e.span);
                        let send = matches!(v, Val::SendSlot(_));
                        let addr = self.new_value(Scalar::U32, None);
                        self.emit(Inst::SlotAddr {
                            dst: addr,
                            chan: c,
                            send,
                        });
                        let ty = self.channels[c.0 as usize].ty.clone();
                        if mutable {
                            self.channels[c.0 as usize].generic_writes = true;
                        }
                        let len = self.usize_const(u64::from(ty.len));
                        let slot = MemKey::Slot(c);
                        match &ty.elem {
                            ChanElem::Scalar(elem) => {
                                vec![(Space::Shared, addr, len, *elem, slot, true)]
                            }
                            ChanElem::Struct { fields, .. } => {
                                let offsets = ty.field_offsets();
                                let mut parts = Vec::new();
                                for (f, off) in fields.iter().zip(offsets) {
                                    let off = self.konst(Scalar::U32, Imm::Int(off));
                                    let field = self.binary(BinOp::Add, addr, off);
                                    parts.push((Space::Shared, field, len, *f, slot, true));
                                }
                                parts
                            }
                        }
                    }
                    _ => return Leaf::Index,
                };
                let is_struct = matches!(e.ty, Ty::ParIter(crate::types::ParShape::Structs { .. }));
                let mut ks = Vec::new();
                for (space, addr, len, elem, key, tiles) in parts {
                    let elem_value = self.new_value(elem, None);
                    ks.push(sources.len());
                    sources.push((
                        ParSource {
                            space,
                            base: addr,
                            elem,
                            elem_value,
                            read: false,
                            write: false,
                        },
                        len,
                        key,
                        tiles,
                    ));
                }
                match (is_struct, ks.as_slice()) {
                    (false, [k]) => Leaf::Source(*k),
                    _ => Leaf::Struct(ks),
                }
            }
            ExprKind::Zip(a, b) => {
                let a = self.par_sources(a, sources, index);
                let b = self.par_sources(b, sources, index);
                Leaf::Pair(Box::new(a), Box::new(b))
            }
            ExprKind::Enumerate(a) => {
                let i = self.new_value(Scalar::Usize, Some("index"));
                *index = Some(i);
                let a = self.par_sources(a, sources, index);
                Leaf::Pair(Box::new(Leaf::Index), Box::new(a))
            }
            _ => Leaf::Index,
        }
    }

    fn bind_par(&mut self, binding: &ParBinding, leaf: &Leaf, index: Option<Value>) {
        match (binding, leaf) {
            (ParBinding::Local(id), Leaf::Source(k)) => {
                self.frame().locals.insert(*id, Val::ElemRef(*k));
            }
            (ParBinding::Local(id), Leaf::Struct(ks)) => {
                self.frame().locals.insert(*id, Val::StructRef(ks.clone()));
            }
            (ParBinding::Local(id), Leaf::Index) => {
                if let Some(i) = index {
                    self.frame().locals.insert(*id, Val::Scalar(i));
                }
            }
            (ParBinding::Pair(a, b), Leaf::Pair(la, lb)) => {
                self.bind_par(a, la, index);
                self.bind_par(b, lb, index);
            }
            _ => {}
        }
    }

    fn for_each(
        &mut self,
        iter: &Expr,
        binding: &ParBinding,
        body: &tir::Block,
        lanes: bool,
        span: Span,
    ) {
        let mut sources = Vec::new();
        let mut index = None;
        let leaf = self.par_sources(iter, &mut sources, &mut index);
        if sources.is_empty() {
            return;
        }
        let mut len = sources[0].1;
        for s in &sources[1..] {
            len = self.binary(BinOp::Min, len, s.1);
        }
        self.bind_par(binding, &leaf, index);
        if lanes {
            let mask = self.usize_const(31);
            let rem = self.binary(BinOp::And, len, mask);
            let zero = self.usize_const(0);
            let partial = self.binary(BinOp::Ne, rem, zero);
            self.panic_if(partial, LANE_COUNT_MESSAGE, span);
        }
        let outer = self.par.replace(ParCtx {
            sources: sources.iter().map(|s| s.0.clone()).collect(),
            body_depth: self.cond_depth + 1,
        });
        if outer.is_some() {
            self.diags.error(span, "parallel loops cannot nest");
        }
        self.cond_depth += 1;
        let body_block = self.sub_block(|l| {
            l.scoped_block(body, None);
        });
        self.cond_depth -= 1;
        let ctx = std::mem::replace(&mut self.par, outer);
        let par_sources = ctx.map(|c| c.sources).unwrap_or_default();
        let mut writes = Vec::new();
        for (s, (_, _, key, tiles)) in par_sources.iter().zip(&sources) {
            self.access(*key);
            if s.write {
                writes.push((*key, *tiles));
            }
        }
        self.emit(Inst::ParFor(ParFor {
            len,
            index,
            sources: par_sources,
            body: body_block,
            reduce: None,
            lanes,
        }));
        if !writes.is_empty() && self.role.is_some() {
            self.barrier_requests.push(writes);
            let site = self.site(
                SiteKind::Wait,
                "the role barrier after this parallel loop".to_string(),
                span,
            );
            self.emit(Inst::RoleBarrier { site });
        }
    }
}

impl Lowerer<'_> {
    /// `iter.sum()` / `min()` / `max()` / `reduce(..)`, optionally over `iter.map(..)`: a
    /// [`ParFor`] whose body produces the item and whose [`ir::ParReduce`] combines them.
    fn par_reduce(&mut self, iter: &Expr, red: &tir::Reduction, ty: Scalar, span: Span) -> Value {
        let (inner, map) = match &iter.kind {
            ExprKind::ParMap(inner, binding, body) => (&**inner, Some((binding, body))),
            _ => (iter, None),
        };
        // The identity first, outside the loop.
        let identity = match red {
            tir::Reduction::Sum if ty.is_float() => self.fconst(ty, 0.0),
            tir::Reduction::Sum => self.konst(ty, Imm::Int(0)),
            tir::Reduction::Min | tir::Reduction::Max if ty.is_float() => self.fconst(ty, f64::NAN),
            tir::Reduction::Min | tir::Reduction::Max => {
                let (lo, hi) = ty.int_range().unwrap_or((0, 0));
                let v = if matches!(red, tir::Reduction::Min) {
                    hi
                } else {
                    lo
                };
                self.konst(ty, Imm::Int(ty.int_bits(v)))
            }
            tir::Reduction::Custom { identity, .. } => self.scalar(identity),
        };
        let mut sources = Vec::new();
        let mut index = None;
        let leaf = self.par_sources(inner, &mut sources, &mut index);
        let Some(first) = sources.first() else {
            return identity;
        };
        let mut len = first.1;
        for s in &sources[1..] {
            len = self.binary(BinOp::Min, len, s.1);
        }
        if let Some((binding, _)) = map {
            self.bind_par(binding, &leaf, index);
        }
        let outer = self.par.replace(ParCtx {
            sources: sources.iter().map(|s| s.0.clone()).collect(),
            body_depth: self.cond_depth + 1,
        });
        if outer.is_some() {
            self.diags.error(span, "parallel loops cannot nest");
        }
        self.cond_depth += 1;
        let mut item = None;
        let body = self.sub_block(|l| {
            item = Some(match map {
                Some((_, body)) => match l.scoped_block(body, None) {
                    Val::Scalar(v) => v,
                    _ => l.konst(ty, Imm::Int(0)),
                },
                None => match l.par.as_mut().and_then(|p| p.sources.first_mut()) {
                    Some(src) => {
                        src.read = true;
                        src.elem_value
                    }
                    None => l.konst(ty, Imm::Int(0)),
                },
            });
        });
        let ctx = std::mem::replace(&mut self.par, outer);
        let par_sources = ctx.map(|c| c.sources).unwrap_or_default();
        for (s, (_, _, key, _)) in par_sources.iter().zip(&sources) {
            self.access(*key);
            if s.write {
                self.diags.error(
                    span,
                    "a reduction cannot write elements: use `for_each` for that",
                );
            }
        }
        let acc = self.new_value(ty, Some("acc"));
        let lhs = self.new_value(ty, None);
        let rhs = self.new_value(ty, None);
        let mut out = None;
        let combine = self.sub_block(|l| {
            out = Some(match red {
                tir::Reduction::Sum => l.binary(BinOp::Add, lhs, rhs),
                tir::Reduction::Min => l.binary(BinOp::Min, lhs, rhs),
                tir::Reduction::Max => l.binary(BinOp::Max, lhs, rhs),
                tir::Reduction::Custom {
                    lhs: a, rhs: b, op, ..
                } => {
                    l.frame().locals.insert(*a, Val::Scalar(lhs));
                    l.frame().locals.insert(*b, Val::Scalar(rhs));
                    match l.scoped_block(op, None) {
                        Val::Scalar(v) => v,
                        _ => lhs,
                    }
                }
            });
        });
        self.cond_depth -= 1;
        let mut loops = false;
        ir::for_each_inst(&combine, &mut |i| {
            loops |= matches!(i, Inst::Loop { .. });
        });
        if loops {
            self.diags.error(span, "the `reduce` closure must not loop (it runs at each step of the reduction's tree; float `%`, `powi` and the bit counts are loops too): compute the loop in `map` instead");
        }
        let (Some(item), Some(out)) = (item, out) else {
            return identity;
        };
        let site = self.site(
            SiteKind::Wait,
            "the role barrier of this reduction".to_string(),
            span,
        );
        self.emit(Inst::ParFor(ParFor {
            len,
            index,
            sources: par_sources,
            body,
            reduce: Some(ir::ParReduce {
                item,
                identity,
                acc,
                lhs,
                rhs,
                out,
                combine,
                site,
            }),
            lanes: false,
        }));
        acc
    }
}

/// The panic of a lane loop whose item count is not a multiple of 32 (the simulator's is the
/// same text).
const LANE_COUNT_MESSAGE: &str =
    "`for_each_lane` needs a multiple of 32 items, so that every lane of a warp takes part";

impl Lowerer<'_> {
    /// A warp operation of a lane loop: one shuffle or vote, or for `sum`/`min`/`max` the
    /// reductions' butterfly (partners at distance 16, 8, 4, 2, 1, the lower lane's value on the
    /// left), so that the result has the same bits on every lane and on the simulator.
    fn warp_op(&mut self, op: tir::WarpOp, args: &[Expr]) -> Value {
        use tir::WarpOp as W;
        let values: Vec<Value> = args.iter().map(|a| self.scalar(a)).collect();
        let Some(&value) = values.first() else {
            return self.konst(Scalar::U32, Imm::Int(0));
        };
        let ty = self.values[value.0 as usize].ty;
        let shuffle = |l: &mut Self, mode: ShuffleMode, value: Value, operand: Value| {
            let dst = l.new_value(ty, None);
            l.emit(Inst::Shuffle {
                dst,
                mode,
                value,
                operand,
            });
            dst
        };
        let vote = |l: &mut Self, mode: VoteMode, out: Scalar| {
            let dst = l.new_value(out, None);
            l.emit(Inst::Vote {
                dst,
                mode,
                pred: value,
            });
            dst
        };
        let operand = values.get(1).copied();
        match (op, operand) {
            (W::Shuffle, Some(o)) => shuffle(self, ShuffleMode::Idx, value, o),
            (W::ShuffleXor, Some(o)) => shuffle(self, ShuffleMode::Xor, value, o),
            (W::ShuffleUp, Some(o)) => shuffle(self, ShuffleMode::Up, value, o),
            (W::ShuffleDown, Some(o)) => shuffle(self, ShuffleMode::Down, value, o),
            (W::Ballot, _) => vote(self, VoteMode::Ballot, Scalar::U32),
            (W::All, _) => vote(self, VoteMode::All, Scalar::Bool),
            (W::Any, _) => vote(self, VoteMode::Any, Scalar::Bool),
            (W::Sum | W::Min | W::Max, _) => {
                let combine = match op {
                    W::Sum => BinOp::Add,
                    W::Min => BinOp::Min,
                    _ => BinOp::Max,
                };
                let lane = self.new_value(Scalar::U32, None);
                self.emit(Inst::Special {
                    dst: lane,
                    reg: Special::LaneId,
                });
                let zero = self.konst(Scalar::U32, Imm::Int(0));
                let mut acc = value;
                for k in [16u64, 8, 4, 2, 1] {
                    let distance = self.konst(Scalar::U32, Imm::Int(k));
                    let partner = shuffle(self, ShuffleMode::Xor, acc, distance);
                    let bit = self.binary(BinOp::And, lane, distance);
                    let lower = self.binary(BinOp::Eq, bit, zero);
                    let (left, right) = (self.new_value(ty, None), self.new_value(ty, None));
                    self.emit(Inst::Select {
                        dst: left,
                        cond: lower,
                        if_true: acc,
                        if_false: partner,
                    });
                    self.emit(Inst::Select {
                        dst: right,
                        cond: lower,
                        if_true: partner,
                        if_false: acc,
                    });
                    acc = self.binary(combine, left, right);
                }
                acc
            }
            // The checker gives shuffles their operand.
            (W::Shuffle | W::ShuffleXor | W::ShuffleUp | W::ShuffleDown, None) => value,
        }
    }
}

fn bin_op(op: tir::BinOp) -> BinOp {
    match op {
        tir::BinOp::Add => BinOp::Add,
        tir::BinOp::Sub => BinOp::Sub,
        tir::BinOp::Mul => BinOp::Mul,
        tir::BinOp::Div => BinOp::Div,
        tir::BinOp::Rem => BinOp::Rem,
        tir::BinOp::And | tir::BinOp::LogicAnd => BinOp::And,
        tir::BinOp::Or | tir::BinOp::LogicOr => BinOp::Or,
        tir::BinOp::Xor => BinOp::Xor,
        tir::BinOp::Shl => BinOp::Shl,
        tir::BinOp::Shr => BinOp::Shr,
        tir::BinOp::Eq => BinOp::Eq,
        tir::BinOp::Ne => BinOp::Ne,
        tir::BinOp::Lt => BinOp::Lt,
        tir::BinOp::Le => BinOp::Le,
        tir::BinOp::Gt => BinOp::Gt,
        tir::BinOp::Ge => BinOp::Ge,
    }
}
