//! Data-parallel loops: `for_each` (and `for_each_lane`) over `par_iter` sources, zipped and
//! enumerated, and the reductions `sum`, `min`, `max` and `reduce`, optionally over `map`.
//!
//! Each becomes a [`ParFor`] whose sources are loaded before the body and stored after it as
//! the body read and wrote them. A loop in role code that writes is followed by a role barrier,
//! which `roles` keeps only where the writes may overlap or another access of the role touches
//! the same memory.

use proc_macro2::Span;

use super::values::{MemKey, ParCtx, Val};
use super::warps::LANE_COUNT_MESSAGE;
use super::Lowerer;
use crate::ir::{self, ArrayAccess, BinOp, Imm, Inst, ParFor, ParSource, SiteKind, Space, Value};
use crate::tir::{self, Expr, ExprKind, ParBinding};
use crate::types::{ChanElem, ParShape, Scalar, Ty};

/// A shape of zipped parallel sources, mirroring the closure's pattern.
pub(super) enum Leaf {
    Source(usize),
    /// An element of a struct slot: one source per field.
    Struct(Vec<usize>),
    Index,
    /// The item of `(a..b).into_par_iter()`: `a` plus the index.
    RangeItem,
    Pair(Box<Leaf>, Box<Leaf>),
}

/// What a chain of parallel sources lowers to, besides the sources themselves: the index, and
/// for `(a..b).into_par_iter()` the range's start and length.
#[derive(Default)]
pub(super) struct ParHead {
    pub(super) index: Option<Value>,
    pub(super) range: Option<(Value, Value)>,
    /// The item of a range loop, `start + index`, computed at the top of the body.
    pub(super) item: Option<Value>,
    /// A constant the index is below: the end of `0..N` with a literal `N`, or the length of a
    /// slot or shared array among the sources.
    pub(super) bound: Option<u64>,
    /// The range starts at a literal 0: the item is the index.
    pub(super) from_zero: bool,
}

impl Lowerer<'_> {
    /// Flattens a chain of `par_iter`/`zip`/`enumerate` into sources.
    pub(super) fn par_sources(
        &mut self,
        e: &Expr,
        sources: &mut Vec<(ParSource, Value, MemKey, bool)>,
        head: &mut ParHead,
    ) -> Leaf {
        match &e.kind {
            ExprKind::ParSource(base) if matches!(e.ty, Ty::ParIter(ParShape::Indices)) => {
                let from_zero = matches!(&base.kind, ExprKind::Range(a, _) if matches!(a.kind, ExprKind::Lit(tir::Lit::Int(0))));
                if let (true, ExprKind::Range(_, b)) = (from_zero, &base.kind) {
                    if let Some(n) = literal_value(b) {
                        head.bound = Some(head.bound.map_or(n, |b| b.min(n)));
                    }
                }
                head.from_zero = from_zero;
                if let Val::Range { start, end, .. } = self.expr(base) {
                    let literal_end = match &base.kind {
                        ExprKind::Range(_, b) if from_zero => literal_value(b),
                        _ => None,
                    };
                    let len = if let Some(n) = literal_end {
                        self.usize_const(n)
                    } else if from_zero {
                        end
                    } else {
                        // An empty range when `end < start`, as Rust's.
                        let diff = self.binary(BinOp::Sub, end, start);
                        let zero = self.usize_const(0);
                        let backwards = self.binary(BinOp::Lt, end, start);
                        let len = self.new_value(Scalar::Usize, None);
                        self.emit(Inst::Select {
                            dst: len,
                            cond: backwards,
                            if_true: zero,
                            if_false: diff,
                        });
                        len
                    };
                    head.range = Some((start, len));
                    if head.index.is_none() {
                        head.index = Some(self.new_value(Scalar::Usize, Some("index")));
                    }
                    if !from_zero && head.item.is_none() {
                        head.item = Some(self.new_value(Scalar::Usize, None));
                    }
                }
                Leaf::RangeItem
            }
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
                        space,
                    } => {
                        if let (true, MemKey::Slot(c, _)) = (mutable, mem) {
                            self.channels[c.0 as usize].generic_writes = true;
                        }
                        vec![(space, ptr, len, elem, mem, tiles)]
                    }
                    Val::SendSlot(_) | Val::RecvSlot(_) => {
                        self.check_not_copied(base, e.span);
                        let Some((c, addr)) = self.slot_addr(&v) else {
                            return Leaf::Index;
                        };
                        let ty = self.channels[c.0 as usize].ty.clone();
                        if mutable {
                            self.channels[c.0 as usize].generic_writes = true;
                        }
                        let len = self.usize_const(u64::from(ty.len));
                        let slot = self.slot_key(c);
                        match &ty.elem {
                            ChanElem::Scalar(elem) => {
                                vec![(Space::Shared, addr, len, *elem, slot, true)]
                            }
                            // The checker rejects a tile as a parallel loop's source.
                            ChanElem::Tile { .. } | ChanElem::Tiles(_) => return Leaf::Index,
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
                    Val::SharedArray(k) => {
                        let a = self.shared_arrays[k as usize].clone();
                        let addr = self.array_addr(k);
                        let len = self.usize_const(u64::from(a.cols));
                        vec![(Space::Shared, addr, len, a.elem, MemKey::Array(k), true)]
                    }
                    _ => return Leaf::Index,
                };
                if let Some((c, _)) = self.slot_parts(&v) {
                    let n = u64::from(self.channels[c.0 as usize].ty.len);
                    head.bound = Some(head.bound.map_or(n, |b| b.min(n)));
                }
                if let Val::SharedArray(k) = v {
                    let n = u64::from(self.shared_arrays[k as usize].cols);
                    head.bound = Some(head.bound.map_or(n, |b| b.min(n)));
                }
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
                let a = self.par_sources(a, sources, head);
                let b = self.par_sources(b, sources, head);
                Leaf::Pair(Box::new(a), Box::new(b))
            }
            ExprKind::Enumerate(a) => {
                let i = match head.index {
                    Some(i) => i,
                    None => self.new_value(Scalar::Usize, Some("index")),
                };
                head.index = Some(i);
                let a = self.par_sources(a, sources, head);
                Leaf::Pair(Box::new(Leaf::Index), Box::new(a))
            }
            _ => Leaf::Index,
        }
    }

    /// Binds a closure's pattern to the sources (or the index) of the matching `Leaf`.
    pub(super) fn bind_par(&mut self, binding: &ParBinding, leaf: &Leaf, head: &mut ParHead) {
        let index = head.index;
        match (binding, leaf) {
            (ParBinding::Local(id), Leaf::RangeItem) => {
                let item = match (head.item, head.from_zero) {
                    (Some(v), _) => Some(v),
                    (None, true) => index,
                    (None, false) => Some(self.new_value(Scalar::Usize, None)),
                };
                head.item = item;
                if let Some(item) = item {
                    self.frame().locals.insert(*id, Val::Scalar(item));
                }
            }
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
                self.bind_par(a, la, head);
                self.bind_par(b, lb, head);
            }
            _ => {}
        }
    }

    /// The iteration count of zipped sources (and a range): the shortest.
    pub(super) fn par_len(
        &mut self,
        sources: &[(ParSource, Value, MemKey, bool)],
        head: &ParHead,
    ) -> Option<Value> {
        let mut lens = sources.iter().map(|s| s.1).chain(head.range.map(|r| r.1));
        let first = lens.next()?;
        let rest: Vec<Value> = lens.collect();
        Some(
            rest.into_iter()
                .fold(first, |len, l| self.binary(BinOp::Min, len, l)),
        )
    }

    /// The top of a loop body over a range: its item, `start + index`, and what is known of it.
    pub(super) fn range_item(&mut self, head: &ParHead) {
        self.par_bound = head
            .item
            .or(head.index.filter(|_| head.from_zero))
            .zip(head.bound);
        if let (false, Some(item), Some(i), Some((start, _))) =
            (head.from_zero, head.item, head.index, head.range)
        {
            self.emit(Inst::Binary {
                dst: item,
                op: BinOp::Add,
                lhs: start,
                rhs: i,
            });
        }
    }

    /// After a loop's body: each source's access, counted; the shared arrays' marks emitted
    /// (before the loop, which the caller emits next). Returns the writes of other memory, its
    /// sources' and the body's by index.
    pub(super) fn source_accesses(
        &mut self,
        par_sources: &[ParSource],
        sources: &[(ParSource, Value, MemKey, bool)],
        span: Span,
    ) -> Vec<(MemKey, bool)> {
        let mut writes = Vec::new();
        for (s, (_, _, key, tiles)) in par_sources.iter().zip(sources) {
            self.access(*key);
            if let MemKey::Array(k) = key {
                if s.read {
                    self.array_access(*k, ArrayAccess::Read, span);
                }
                if s.write {
                    self.array_access(*k, ArrayAccess::Write, span);
                }
            } else if s.write {
                writes.push((*key, *tiles));
            }
        }
        writes.append(&mut self.par_index_writes);
        writes
    }

    /// `iter.for_each(..)`, or (`lanes`) `iter.for_each_lane(..)`: a `ParFor` over the shortest
    /// source, then a role barrier when it writes in role code.
    pub(super) fn for_each(
        &mut self,
        iter: &Expr,
        binding: &ParBinding,
        body: &tir::Block,
        lanes: bool,
        span: Span,
    ) {
        let mut sources = Vec::new();
        let mut head = ParHead::default();
        let leaf = self.par_sources(iter, &mut sources, &mut head);
        let Some(len) = self.par_len(&sources, &head) else {
            return;
        };
        self.bind_par(binding, &leaf, &mut head);
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
        // A body that is one atomic expression (`|b| bins[*b].fetch_add(1, ..)`) discards
        // its value, as a statement does.
        let statement;
        let body = match &body.tail {
            Some(t) if matches!(t.kind, ExprKind::Atomic(..)) => {
                let mut stmts = body.stmts.clone();
                stmts.push(tir::Stmt::Expr((**t).clone()));
                statement = tir::Block { stmts, tail: None };
                &statement
            }
            _ => body,
        };
        let body_block = self.sub_block(|l| {
            l.range_item(&head);
            l.scoped_block(body, None);
        });
        self.cond_depth -= 1;
        let ctx = std::mem::replace(&mut self.par, outer);
        let par_sources = ctx.map(|c| c.sources).unwrap_or_default();
        let writes = self.source_accesses(&par_sources, &sources, span);
        self.emit(Inst::ParFor(ParFor {
            len,
            index: head.index,
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

    /// The identity of reduction `red` over `ty`s, computed here (before the loop).
    pub(super) fn reduction_identity(&mut self, red: &tir::Reduction, ty: Scalar) -> Value {
        match red {
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
        }
    }

    /// A reduction's or a scan's accumulator, the operands of its combining code, that code
    /// (which must not loop: it runs at every step of the tree), and its result.
    pub(super) fn combine_block(
        &mut self,
        red: &tir::Reduction,
        ty: Scalar,
        span: Span,
    ) -> (Value, Value, Value, ir::Block, Option<Value>) {
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
        let mut loops = false;
        ir::for_each_inst(&combine, &mut |i| {
            loops |= matches!(i, Inst::Loop { .. });
        });
        if loops {
            self.diags.error(span, "the `reduce` closure must not loop (it runs at each step of the reduction's tree; float `%`, `powi` and the bit counts are loops too): compute the loop in `map` instead");
        }
        (acc, lhs, rhs, combine, out)
    }

    /// `iter.sum()` / `min()` / `max()` / `reduce(..)`, optionally over `iter.map(..)`: a
    /// [`ParFor`] whose body produces the item and whose [`ir::ParReduce`] combines them.
    pub(super) fn par_reduce(
        &mut self,
        iter: &Expr,
        red: &tir::Reduction,
        ty: Scalar,
        span: Span,
    ) -> Value {
        let (inner, map) = match &iter.kind {
            ExprKind::ParMap(inner, binding, body) => (&**inner, Some((binding, body))),
            _ => (iter, None),
        };
        // The identity first, outside the loop.
        let identity = self.reduction_identity(red, ty);
        let mut sources = Vec::new();
        let mut head = ParHead::default();
        let leaf = self.par_sources(inner, &mut sources, &mut head);
        let Some(len) = self.par_len(&sources, &head) else {
            return identity;
        };
        if let Some((binding, _)) = map {
            self.bind_par(binding, &leaf, &mut head);
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
            l.range_item(&head);
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
                    None => match head.item.or(head.index) {
                        Some(i) => i,
                        None => l.konst(ty, Imm::Int(0)),
                    },
                },
            });
        });
        let ctx = std::mem::replace(&mut self.par, outer);
        let par_sources = ctx.map(|c| c.sources).unwrap_or_default();
        if par_sources.iter().any(|s| s.write) {
            self.diags.error(
                span,
                "a reduction cannot write elements: use `for_each` for that",
            );
        }
        let writes = self.source_accesses(&par_sources, &sources, span);
        let (acc, lhs, rhs, combine, out) = self.combine_block(red, ty, span);
        self.cond_depth -= 1;
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
            index: head.index,
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
                scan: None,
            }),
            lanes: false,
        }));
        if !writes.is_empty() && self.role.is_some() {
            self.barrier_requests.push(writes);
            let site = self.site(
                SiteKind::Wait,
                "the role barrier after this reduction".to_string(),
                span,
            );
            self.emit(Inst::RoleBarrier { site });
        }
        acc
    }
}

/// The value of an expression of integer literals and `+ - * /` (`TILE * TILE`), if it is one.
fn literal_value(e: &Expr) -> Option<u64> {
    match &e.kind {
        ExprKind::Lit(tir::Lit::Int(v)) => u64::try_from(*v).ok(),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (literal_value(a)?, literal_value(b)?);
            match op {
                tir::BinOp::Add => a.checked_add(b),
                tir::BinOp::Sub => a.checked_sub(b),
                tir::BinOp::Mul => a.checked_mul(b),
                tir::BinOp::Div => a.checked_div(b),
                _ => None,
            }
        }
        _ => None,
    }
}
