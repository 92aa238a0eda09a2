//! The kernel as a whole: its parameters, the body's statements outside the roles (the
//! channels, barriers and one-shot values it makes, the `join!` of its roles), and, once every
//! role is lowered, the checks that need all of them and the block's shared-memory layout.
//!
//! Role code is lowered by `roles` and the expression modules; this module is what runs before
//! and after it.

use proc_macro2::Span;

use super::values::{Frame, MemKey, Oneshot, Val};
use super::{layout, math, protocol, Lowerer};
use crate::diag::Diagnostics;
use crate::ir::{self, Channel, ChannelId, Inst, ParFor, Space, Value};
use crate::tir::{self, Expr, ExprKind, LetPattern, LocalId, Stmt};
use crate::types::{ChanTy, Scalar, Ty};

impl Lowerer<'_> {
    /// The kernel's parameters, bound in `frame`: a scalar or an enum is one register, a struct
    /// one parameter per field, a slice or atomic slice its pointer and length. `None` for a parameter of any
    /// other type.
    pub(super) fn kernel_params(
        &mut self,
        f: &tir::Function,
        frame: &mut Frame,
    ) -> Option<Vec<ir::Param>> {
        let mut params = Vec::new();
        for (index, &local) in f.params.iter().enumerate() {
            let decl = f.local(local);
            let (kind, val) = match decl.ty {
                Ty::Scalar(s) => {
                    let v = self.new_value(s, Some(&decl.name));
                    (ir::ParamKind::Scalar(v), Val::Scalar(v))
                }
                Ty::Enum(..) => {
                    let v = self.new_value(Scalar::U32, Some(&decl.name));
                    (ir::ParamKind::Scalar(v), Val::Scalar(v))
                }
                Ty::Struct(sid, _) => {
                    // One kernel parameter per field.
                    let fields = self.prog.structs[sid as usize].fields.clone();
                    let values: Vec<Value> = fields
                        .iter()
                        .map(|(field, s)| {
                            self.new_value(*s, Some(&format!("{}.{field}", decl.name)))
                        })
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
                    let ptr = self.new_value(Scalar::Usize, Some(&format!("{}.ptr", decl.name)));
                    let len = self.new_value(Scalar::Usize, Some(&format!("{}.len", decl.name)));
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
                            space: Space::Global,
                        },
                    )
                }
                Ty::Matrix(elem, mutable) => {
                    let v = |l: &mut Self, part: &str| {
                        l.new_value(Scalar::Usize, Some(&format!("{}.{part}", decl.name)))
                    };
                    let (ptr, rows, cols) = (v(self, "ptr"), v(self, "rows"), v(self, "cols"));
                    (
                        ir::ParamKind::Matrix {
                            elem,
                            mutable,
                            ptr,
                            rows,
                            cols,
                            boxes: Vec::new(),
                        },
                        Val::Matrix {
                            param: params.len() as u32,
                            elem,
                            rows,
                            cols,
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
        Some(params)
    }

    /// The kernel body's statements: barriers, one-shot values and channels are made here,
    /// each role of an awaited `join!` is lowered into a role, and any other statement into the
    /// prologue. Returns the roles, and whether one of them failed.
    pub(super) fn kernel_body(&mut self, f: &tir::Function, warps: u32) -> (Vec<ir::Role>, bool) {
        let mut roles = Vec::new();
        let mut role_failed = false;
        for stmt in &f.body.stmts {
            match stmt {
                Stmt::Let(LetPattern::Local(id), e)
                    if matches!(e.kind, ExprKind::SharedArrayNew(_)) =>
                {
                    if let ExprKind::SharedArrayNew(a) = &e.kind {
                        let v = self.shared_array_new(a, f.local(*id).name.clone());
                        self.frame().locals.insert(*id, v);
                    }
                }
                Stmt::Let(LetPattern::Local(id), e) if matches!(e.kind, ExprKind::BarrierNew) => {
                    self.barriers.push((Vec::new(), f.local(*id).name.clone()));
                    let b = Val::Barrier(self.barriers.len() as u32 - 1);
                    self.frame().locals.insert(*id, b);
                }
                Stmt::Let(LetPattern::Pair(tx, rx), e)
                    if matches!(e.kind, ExprKind::OneshotNew(_)) =>
                {
                    let ExprKind::OneshotNew(s) = e.kind else {
                        continue;
                    };
                    self.shared_cells.push(s);
                    let name = format!("{}/{}", f.local(*tx).name, f.local(*rx).name);
                    self.oneshots.push(Oneshot {
                        cell: self.shared_cells.len() as u32 - 1,
                        name,
                        sender: None,
                        receiver: None,
                        span: e.span,
                    });
                    let k = self.oneshots.len() as u32 - 1;
                    let frame = self.frame();
                    frame.locals.insert(*tx, Val::OneshotTx(k));
                    frame.locals.insert(*rx, Val::OneshotRx(k));
                }
                Stmt::Let(
                    LetPattern::Pair(tx, rx),
                    Expr {
                        kind: ExprKind::Channel(ty),
                        span,
                        ..
                    },
                ) => {
                    let c = self.new_channel(ty.clone(), f, *tx, *rx, *span);
                    let frame = self.frame();
                    frame.locals.insert(*tx, Val::Sender(c));
                    frame.locals.insert(*rx, Val::Receiver(c, 0));
                }
                Stmt::Expr(Expr {
                    kind: ExprKind::Await(inner),
                    ..
                }) => {
                    if let ExprKind::Join(role_exprs) = &inner.kind {
                        for r in role_exprs {
                            match self.role(r, roles.len(), warps) {
                                Some(role) => roles.push(role),
                                None => role_failed = true,
                            }
                        }
                    }
                }
                other => self.stmt(other),
            }
        }
        (roles, role_failed)
    }

    /// A new channel of type `ty`, named after its locals `tx` and `rx`; its ends are claimed by
    /// the roles they are passed to.
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
            closable: false,
            open_offset: 0,
            debt_offset: None,
        });
        self.channel_spans.push(span);
        id
    }

    /// The checks over all roles: every warp runs a role, every channel has a sending and a
    /// receiving role, and no cycle of waits between roles can block.
    pub(super) fn check_roles(
        &mut self,
        f: &tir::Function,
        roles: &[ir::Role],
        warps: u32,
        role_failed: bool,
    ) {
        // After a role failed, idle warps and unowned channel ends are consequences, not news.
        if !role_failed && !f.idle_warps {
            check_warp_coverage(roles, warps, f.span, self.diags);
        }
        for (i, c) in self.channels.iter().enumerate().filter(|_| !role_failed) {
            let span = self.channel_spans[i];
            if c.producer.is_none() {
                self.diags.error(
                    span,
                    format!(
                        "channel `{}` has no sending role: pass its sender to a role in `join!`",
                        c.name
                    ),
                );
            }
            if c.consumers.is_empty() {
                self.diags.error(
                    span,
                    format!(
                        "channel `{}` has no receiving role: pass its receiver to a role in `join!`",
                        c.name
                    ),
                );
            }
        }
        if !role_failed && !self.ownership_conflict {
            protocol::check_wait_cycles(roles, &self.channels, &self.sites, self.diags);
        }
    }

    /// Lays out the block's shared memory (`layout::lay_out`): the channels, the roles'
    /// barriers and reduction scratch, and the cells of the shared values, barriers and
    /// one-shot values. Returns the total bytes, each role's barrier, its scratch offset, and
    /// where the cells start.
    pub(super) fn lay_out_shared(
        &mut self,
        roles: &[ir::Role],
    ) -> (u32, Vec<Option<ir::RoleBarrier>>, Vec<Option<u32>>, u32) {
        // Roles of several warps whose code has a role barrier get one (an mbarrier, or
        // `bar.sync 0` for a kernel's only role).
        let role_needs_barrier: Vec<bool> = roles.iter().map(needs_role_barrier).collect();
        // Roles of several warps that reduce get 8 bytes per warp for the warps' totals.
        let role_scratch: Vec<u32> = roles.iter().map(reduce_scratch_bytes).collect();
        // A closable channel received by several warps needs debt words.
        let warps = |r: &ir::RoleId| {
            roles
                .get(r.0 as usize)
                .map_or(0, |r| r.end_warp - r.first_warp)
        };
        let receiving_warps: Vec<u32> = self
            .channels
            .iter()
            .map(|c| c.consumers.iter().map(warps).sum())
            .collect();
        layout::lay_out(
            &mut self.channels,
            &receiving_warps,
            &mut self.shared_arrays,
            &role_needs_barrier,
            &role_scratch,
            self.shared_cells.len() as u32
                + self.barriers.len() as u32
                + self.oneshots.len() as u32,
            &self.channel_spans,
            self.diags,
        )
    }

    /// Every one-shot value has a sending and a receiving role (unless a role failed).
    pub(super) fn check_oneshot_ends(&mut self, role_failed: bool) {
        for o in &self.oneshots {
            if !role_failed && (o.sender.is_none() || o.receiver.is_none()) {
                let which = if o.sender.is_none() {
                    "sender"
                } else {
                    "receiver"
                };
                self.diags.error(
                    o.span,
                    format!("the one-shot value `{}` has no {which} role: pass that end to a role in `join!`", o.name),
                );
            }
        }
    }

    /// The kernel's mbarriers in shared memory: those between roles, then one per one-shot
    /// value, in the 8-byte cells after the shared values.
    pub(super) fn kernel_barriers(
        &self,
        roles: &[ir::Role],
        cells_offset: u32,
    ) -> Vec<ir::KernelBarrier> {
        // The barriers between roles take the 8-byte cells after the shared values: each expects
        // one arrival per warp of the roles that take it.
        let barriers: Vec<ir::KernelBarrier> = self
            .barriers
            .iter()
            .enumerate()
            .map(|(k, (takers, name))| ir::KernelBarrier {
                name: name.clone(),
                offset: cells_offset + 8 * (self.shared_cells.len() + k) as u32,
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
        for (k, o) in self.oneshots.iter().enumerate() {
            let warps = o.sender.map_or(1, |r| {
                roles[r.0 as usize].end_warp - roles[r.0 as usize].first_warp
            });
            barriers.push(ir::KernelBarrier {
                name: o.name.clone(),
                offset: cells_offset
                    + 8 * (self.shared_cells.len() + self.barriers.len() + k) as u32,
                arrivals: warps,
                roles: o.sender.into_iter().collect(),
                receiver: o.receiver,
            });
        }
        barriers
    }

    /// The bytes of the `static` tables the kernel reads, in its table numbering.
    pub(super) fn const_table_data(&self) -> Vec<ir::ConstTable> {
        self.const_tables
            .iter()
            .map(|&t| {
                let table = &self.prog.statics[t as usize];
                ir::ConstTable {
                    name: table.name.clone(),
                    bytes: table
                        .values
                        .iter()
                        .flat_map(|v| math::lit_bytes(*v, table.elem))
                        .collect(),
                }
            })
            .collect()
    }
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

/// Whether role `r` needs an mbarrier of its own: it has several warps and a role barrier (or a
/// reduction, or a role-code atomic, which meet at one).
fn needs_role_barrier(r: &ir::Role) -> bool {
    let mut found = false;
    ir::for_each_inst(&r.body, &mut |i| {
        found |= matches!(
            i,
            Inst::RoleBarrier { .. }
                | Inst::ParFor(ParFor {
                    reduce: Some(_),
                    ..
                })
        ) || matches!(i, Inst::Atomic { once: Some(_), .. })
    });
    found && r.end_warp - r.first_warp > 1
}

/// Whether `i` is a role-code atomic whose result the role's first thread hands to the others.
fn shares_atomic_result(i: &Inst) -> bool {
    matches!(
        i,
        Inst::Atomic {
            dst: Some(_),
            once: Some(_),
            ..
        }
    )
}

/// The shared bytes role `r` needs for its warps' partial results: 8 per warp when it has
/// several warps and a reduction, 16 per warp when one of them is a scan (a double buffer, so
/// that a round's totals are written while the previous round's may still be read), at least 8
/// for a role-code atomic's result, else none.
fn reduce_scratch_bytes(r: &ir::Role) -> u32 {
    let (mut reduces, mut scans, mut atomics) = (false, false, false);
    ir::for_each_inst(&r.body, &mut |i| {
        if let Inst::ParFor(ParFor {
            reduce: Some(red), ..
        }) = i
        {
            reduces = true;
            scans |= red.scan.is_some();
        }
        atomics |= shares_atomic_result(i);
    });
    let warps = r.end_warp - r.first_warp;
    match (reduces, scans, atomics) {
        _ if warps <= 1 => 0,
        (_, true, _) => 16 * warps,
        (true, _, _) => 8 * warps,
        (_, _, true) => 8,
        _ => 0,
    }
}
