//! Warp operations in a `for_each_lane` body must be reached by every lane of the warp: a
//! `shfl.sync` or `vote.sync` that some lanes skip is undefined on the GPU (it may hang). This
//! pass finds the warp operations whose reaching could differ between lanes and reports them.
//! The same analysis checks role code's element writes (`out[i] = v`), which the role's first
//! thread does alone: their index and value must be the same on every thread of the role, and
//! so must the conditions they are under ([`check_role_writes`]).
//!
//! A value is *uniform* when it is the same on every lane of a warp: literals, values captured
//! from role code (role code is uniform), `lane.warp()`, the results of `sum`, `min`, `max`,
//! `all`, `any` and `ballot`, and anything computed from uniform values only. The items, the
//! lane's `id()`, shuffles, atomics (in role code: atomic loads) and shared values are
//! *varying*, and so is a local assigned
//! a varying value or assigned under a varying condition. A warp operation may sit under an
//! `if`, `match`, `while`, `for` or `&&`/`||` only when their conditions are uniform, and in a
//! loop only when no `break`/`continue` of it depends on a varying condition. Locals start
//! uniform and become varying until nothing changes (a fixpoint over the body), then the body
//! is walked once more to report.

use std::collections::HashSet;

use proc_macro2::Span;

use crate::diag::Diagnostics;
use crate::tir::{AtomicOp, BinOp, Block, Expr, ExprKind, MatchArm, Stmt, WarpOp};
use crate::types::Ty;

/// Checks a `for_each_lane` body whose own locals are those numbered `first_local` and up;
/// `items` are the item bindings (varying from the start).
pub(crate) fn check_lane_body(
    body: &Block,
    first_local: u32,
    items: &[u32],
    diags: &mut Diagnostics,
) {
    let mut u = Uniformity {
        role_code: false,
        first_local,
        varying: items.iter().copied().collect(),
        varying_loops: HashSet::new(),
        changed: false,
        exit_varying: false,
        varying_labels: Vec::new(),
        errors: None,
    };
    loop {
        u.changed = false;
        u.varying_labels.clear();
        u.block(body, false);
        if !u.changed {
            break;
        }
    }
    u.errors = Some(Vec::new());
    u.block(body, false);
    for (span, op) in u.errors.unwrap_or_default() {
        let Some(op) = op else {
            continue;
        };
        diags.error(
            span,
            format!(
                "`lane.{}` may be reached by some lanes of the warp and not others: it is under a condition (or after a `break`/`continue`) that can differ between lanes. Every lane must reach each warp operation: compute it before the condition, or make the condition uniform (from captured values, `lane.warp()`, or `lane.any`/`all`/`ballot`/`sum` results)",
                op.name()
            ),
        );
    }
}

/// Checks the element writes of role code in `body` (a function's): the role's first thread
/// stores the value, so the index, the value and the conditions the write is under must be the
/// same on every thread of the role. In role code only shared values (`cell.get()`, which another
/// role may write meanwhile) and atomic loads differ between threads, and what is computed from
/// them.
pub(crate) fn check_role_writes(body: &Block, diags: &mut Diagnostics) {
    let mut u = Uniformity {
        role_code: true,
        first_local: 0,
        varying: HashSet::new(),
        varying_loops: HashSet::new(),
        changed: false,
        exit_varying: false,
        varying_labels: Vec::new(),
        errors: None,
    };
    loop {
        u.changed = false;
        u.varying_labels.clear();
        u.block(body, false);
        if !u.changed {
            break;
        }
    }
    u.errors = Some(Vec::new());
    u.block(body, false);
    let mut seen = HashSet::new();
    for (span, op) in u.errors.unwrap_or_default() {
        if op.is_some() || !seen.insert(format!("{span:?}")) {
            continue;
        }
        diags.error(
            span,
            "this element is written from role code by the role's first thread alone, so its index and value must be the same on every thread of the role, and so must the conditions around the write; a shared value (`cell.get()`) can differ between threads while another role writes it: read it after a wait that orders it, or write the element in a parallel loop",
        );
    }
}

struct Uniformity {
    /// Whether the body is role code (else a lane body).
    role_code: bool,
    first_local: u32,
    /// Locals of the body known to differ between lanes.
    varying: HashSet<u32>,
    /// Loops (by their body's address) left or continued under a varying condition.
    varying_loops: HashSet<usize>,
    changed: bool,
    /// An unlabeled `break` or `continue` was met under a varying condition in the current
    /// loop.
    exit_varying: bool,
    /// Labels of loops a labeled `break`/`continue` under a varying condition targets.
    varying_labels: Vec<String>,
    /// `Some` on the reporting walk: warp operations (`Some(op)`) and role-code element writes
    /// (`None`) under a varying condition, or (writes) of a varying index or value.
    errors: Option<Vec<(Span, Option<WarpOp>)>>,
}

impl Uniformity {
    fn make_varying(&mut self, local: u32) {
        if local >= self.first_local && self.varying.insert(local) {
            self.changed = true;
        }
    }

    /// Whether `e`'s value is the same on every lane.
    fn uniform(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Static(_) | ExprKind::BlockPosition(_) => true,
            ExprKind::Local(id) => id.0 < self.first_local || !self.varying.contains(&id.0),
            ExprKind::LanePosition(warp) => *warp,
            ExprKind::Warp(op, _) => op.is_uniform(),
            ExprKind::SharedGet(_) => false,
            // A read-modify-write in role code runs once for the role, which hands every thread
            // its result; a load is each thread's own, and in a lane body every atomic is.
            ExprKind::Atomic(_, op, ..) => self.role_code && *op != AtomicOp::Load,
            // Another lane may write the element: shared arrays are varying, as shared values.
            ExprKind::Index(base, _)
                if matches!(
                    base.ty,
                    Ty::SharedArray(_) | Ty::SharedArrayRef(..) | Ty::SharedRow(..)
                ) =>
            {
                false
            }
            ExprKind::Block(b) => self.block_uniform(b),
            ExprKind::If(c, then, else_) => {
                self.uniform(c)
                    && self.block_uniform(then)
                    && else_.as_ref().is_none_or(|e| self.uniform(e))
            }
            ExprKind::Match(s, arms) => {
                self.uniform(s)
                    && arms.iter().all(|a| {
                        a.guard.as_ref().is_none_or(|g| self.uniform(g)) && self.uniform(&a.body)
                    })
            }
            ExprKind::Loop(..) => false,
            _ => children(e).iter().all(|c| self.uniform(c)),
        }
    }

    fn block_uniform(&self, b: &Block) -> bool {
        b.tail.as_ref().is_none_or(|t| self.uniform(t))
    }

    fn block(&mut self, b: &Block, varying_ctx: bool) {
        for s in &b.stmts {
            self.stmt(s, varying_ctx);
        }
        if let Some(t) = &b.tail {
            self.expr(t, varying_ctx);
        }
    }

    /// Walks a loop's body (and its condition, through `head`): the loop is varying when its
    /// context or condition is, or when a `break`/`continue` in it depends on a varying
    /// condition.
    fn loop_body(
        &mut self,
        label: &Option<String>,
        body: &Block,
        varying_ctx: bool,
        head: impl Fn(&mut Self, bool),
    ) {
        let key = body as *const Block as usize;
        let ctx = varying_ctx || self.varying_loops.contains(&key);
        let outer = std::mem::replace(&mut self.exit_varying, false);
        head(self, ctx);
        self.block(body, ctx);
        let labeled = label
            .as_ref()
            .and_then(|l| self.varying_labels.iter().position(|v| v == l));
        if let Some(i) = labeled {
            self.varying_labels.remove(i);
        }
        if (self.exit_varying || labeled.is_some()) && self.varying_loops.insert(key) {
            self.changed = true;
        }
        // An unlabeled exit leaves only this loop.
        self.exit_varying = outer;
    }

    fn stmt(&mut self, s: &Stmt, varying_ctx: bool) {
        match s {
            Stmt::Let(pat, init) => {
                self.expr(init, varying_ctx);
                if varying_ctx || !self.uniform(init) {
                    for id in pat_locals(pat) {
                        self.make_varying(id);
                    }
                }
            }
            Stmt::Expr(e) => self.expr(e, varying_ctx),
            Stmt::LetElse(var, init, else_) => {
                self.expr(init, varying_ctx);
                let ctx = varying_ctx || !self.uniform(init);
                self.block(else_, ctx);
                if ctx {
                    self.make_varying(var.0);
                }
            }
            Stmt::For(label, var, iter, body) | Stmt::WhileLet(label, var, iter, body) => {
                self.expr(iter, varying_ctx);
                let iter_varying = !self.uniform(iter);
                self.loop_body(label, body, varying_ctx || iter_varying, |u, ctx| {
                    if ctx {
                        u.make_varying(var.0);
                    }
                });
            }
            Stmt::While(label, cond, body) => {
                // A varying condition decides how often each lane runs the body.
                let cond_varying = !self.uniform(cond);
                self.loop_body(label, body, varying_ctx || cond_varying, |u, ctx| {
                    u.expr(cond, ctx)
                });
            }
            Stmt::Break(label, value, _) => {
                if let Some(v) = value {
                    self.expr(v, varying_ctx);
                }
                if varying_ctx {
                    self.varying_exit(label);
                }
            }
            Stmt::Continue(label, _) => {
                if varying_ctx {
                    self.varying_exit(label);
                }
            }
        }
    }

    /// A `break`/`continue` under a varying condition: of the innermost loop, or of the loop
    /// with `label`.
    fn varying_exit(&mut self, label: &Option<String>) {
        match label {
            Some(l) => {
                if !self.varying_labels.contains(l) {
                    self.varying_labels.push(l.clone());
                }
            }
            None => self.exit_varying = true,
        }
    }

    fn expr(&mut self, e: &Expr, varying_ctx: bool) {
        match &e.kind {
            ExprKind::Warp(op, args) => {
                for a in args {
                    self.expr(a, varying_ctx);
                }
                if varying_ctx {
                    if let Some(errors) = self.errors.as_mut() {
                        errors.push((e.span, Some(*op)));
                    }
                }
            }
            ExprKind::If(c, then, else_) => {
                self.expr(c, varying_ctx);
                let ctx = varying_ctx || !self.uniform(c);
                self.block(then, ctx);
                if let Some(else_) = else_ {
                    self.expr(else_, ctx);
                }
            }
            ExprKind::Match(s, arms) => {
                self.expr(s, varying_ctx);
                let mut ctx = varying_ctx || !self.uniform(s);
                for MatchArm {
                    binding,
                    guard,
                    body,
                    ..
                } in arms
                {
                    if let Some(b) = binding {
                        if ctx {
                            self.make_varying(b.0);
                        }
                    }
                    if let Some(g) = guard {
                        self.expr(g, ctx);
                        // A varying guard decides which later arm runs on each lane.
                        ctx |= !self.uniform(g);
                    }
                    self.expr(body, ctx);
                }
            }
            ExprKind::Binary(BinOp::LogicAnd | BinOp::LogicOr, l, r) => {
                self.expr(l, varying_ctx);
                let ctx = varying_ctx || !self.uniform(l);
                self.expr(r, ctx);
            }
            ExprKind::Assign(place, value) | ExprKind::CompoundAssign(_, place, value) => {
                self.expr(value, varying_ctx);
                self.expr(place, varying_ctx);
                if let ExprKind::Index(base, index) = &place.kind {
                    let element = matches!(
                        base.ty,
                        crate::types::Ty::Slice { .. } | crate::types::Ty::SendSlot(_)
                    );
                    if element && (varying_ctx || !self.uniform(value) || !self.uniform(index)) {
                        if let Some(errors) = self.errors.as_mut() {
                            errors.push((place.span, None));
                        }
                    }
                }
                if varying_ctx || !self.uniform(value) {
                    if let Some(id) = place_local(place) {
                        self.make_varying(id);
                    }
                }
            }
            ExprKind::IfLetSome {
                scrutinee,
                binding,
                then,
                else_,
            } => {
                self.expr(scrutinee, varying_ctx);
                let ctx = varying_ctx || !self.uniform(scrutinee);
                if let (Some(b), true) = (binding, ctx) {
                    self.make_varying(b.0);
                }
                self.block(then, ctx);
                if let Some(else_) = else_ {
                    self.expr(else_, ctx);
                }
            }
            ExprKind::Block(b) => self.block(b, varying_ctx),
            ExprKind::Loop(label, body) => self.loop_body(label, body, varying_ctx, |_, _| {}),
            _ => {
                for c in children(e) {
                    self.expr(c, varying_ctx);
                }
            }
        }
    }
}

/// The local a place expression writes (`x`, `x.0`, `x[i]`).
fn place_local(e: &Expr) -> Option<u32> {
    match &e.kind {
        ExprKind::Local(id) => Some(id.0),
        ExprKind::TupleField(inner, _) | ExprKind::Index(inner, _) | ExprKind::Deref(inner) => {
            place_local(inner)
        }
        _ => None,
    }
}

fn pat_locals(p: &crate::tir::LetPattern) -> Vec<u32> {
    use crate::tir::LetPattern;
    match p {
        LetPattern::Local(id) => vec![id.0],
        LetPattern::Pair(a, b) => vec![a.0, b.0],
        LetPattern::Tuple(ids) => ids.iter().flatten().map(|id| id.0).collect(),
        LetPattern::Ignore => Vec::new(),
    }
}

/// The sub-expressions of `e` that are not in blocks (blocks are walked by the caller).
pub(crate) fn children(e: &Expr) -> Vec<&Expr> {
    use ExprKind as K;
    match &e.kind {
        K::Lit(_)
        | K::Local(_)
        | K::Channel(_)
        | K::BlockPosition(_)
        | K::SharedNew(_)
        | K::SharedArrayNew(_)
        | K::BarrierNew
        | K::OneshotNew(_)
        | K::Static(_)
        | K::LanePosition(_)
        | K::Return(None)
        | K::Block(_)
        | K::Loop(..)
        | K::ForEach(..)
        | K::ParMap(..) => Vec::new(),
        K::Unary(_, a)
        | K::Cast(a, _)
        | K::Deref(a)
        | K::Len(a)
        | K::RangeBound(a, _)
        | K::Await(a)
        | K::Reserve(a)
        | K::Recv(a)
        | K::Send(a)
        | K::RecvClose(a)
        | K::ChunksNext(a)
        | K::SlotTake(a)
        | K::Drop(a)
        | K::TilesNext(a)
        | K::OptIsSome(a, _)
        | K::OptUnwrap(a, None)
        | K::SharedGet(a)
        | K::BarrierWait(a)
        | K::Subscribe(a)
        | K::OneshotRecv(a)
        | K::HalfBits(a, _)
        | K::Panic(Some(a), _)
        | K::TupleField(a, _)
        | K::StructArray(a, ..)
        | K::ArrayRepeat(a, _)
        | K::Unchecked(a)
        | K::CasIsOk(a, _)
        | K::CasValue(a)
        | K::Unwrap(a)
        | K::ParSource(a)
        | K::Enumerate(a)
        | K::Rev(a)
        | K::Return(Some(a))
        | K::ParReduce(a, _) => vec![a],
        K::Panic(None, _) => Vec::new(),
        K::Binary(_, a, b)
        | K::Index(a, b)
        | K::SubSlice(a, b)
        | K::SplitAt(a, b)
        | K::Chunks {
            base: a, size: b, ..
        }
        | K::Range(a, b)
        | K::InclusiveRange(a, b)
        | K::CopyFrom(a, b)
        | K::CopyTo(a, b)
        | K::BlockTiles(a, b)
        | K::OptUnwrap(a, Some(b))
        | K::SharedSet(a, b)
        | K::OneshotSend(a, b)
        | K::AtomicIndex(a, b)
        | K::Zip(a, b)
        | K::StepBy(a, b)
        | K::Assign(a, b)
        | K::CompoundAssign(_, a, b) => vec![a, b],
        K::Math(_, args)
        | K::Call(_, args)
        | K::TupleLit(args)
        | K::ArrayList(args)
        | K::Join(args)
        | K::JoinFutures(args)
        | K::Warp(_, args) => args.iter().collect(),
        K::Select(arms, else_) => arms
            .iter()
            .flat_map(|a| [&a.recv, &a.body])
            .chain(else_.as_deref())
            .collect(),
        K::Atomic(a, _, args, _) => std::iter::once(&**a).chain(args).collect(),
        K::ParScan(s) => vec![&s.src, &s.dst, &s.init],
        K::OnWarps { call, .. } => vec![call],
        K::TileLoad {
            slot,
            matrix,
            row,
            col,
        } => vec![slot, matrix, row, col],
        K::TileStore {
            slot,
            matrix,
            row,
            col,
            rows,
        } => {
            let mut children: Vec<&Expr> = vec![slot, matrix, row, col];
            children.extend(rows.as_deref());
            children
        }
        K::AccumulatorTile { acc, slot, col } => vec![acc, slot, col],
        K::MatrixDim(m, _) => vec![m],
        K::AccumulatorZero => vec![],
        K::AccumulatorToOperand { acc, .. }
        | K::AccumulatorApply { acc, .. }
        | K::RowReduce { acc, .. } => vec![acc],
        K::RowOf { rows, .. } | K::RowsApply { rows, .. } => vec![rows],
        K::RowsNew { value } => vec![value],
        K::RowsStore { rows, out, row } => vec![rows, out, row],
        K::Mma { acc, a, b, .. } => vec![acc, a, b],
        K::MmaStages { acc, rx, count, .. } => vec![acc, rx, count],
        K::AccumulatorStore {
            acc,
            out,
            cols,
            row,
            col,
            scale,
        } => {
            let mut parts = vec![&**acc, out, cols, row, col];
            if let Some((alpha, beta)) = scale {
                parts.extend([&**alpha, &**beta]);
            }
            parts
        }
        K::If(c, _, else_) => std::iter::once(&**c).chain(else_.as_deref()).collect(),
        K::IfLetSome {
            scrutinee, else_, ..
        } => std::iter::once(&**scrutinee)
            .chain(else_.as_deref())
            .collect(),
        K::Match(s, _) => vec![s],
    }
}
