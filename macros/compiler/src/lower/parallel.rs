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
use crate::ir::{self, BinOp, Imm, Inst, ParFor, ParSource, SiteKind, Space, Value};
use crate::tir::{self, Expr, ExprKind, ParBinding};
use crate::types::{ChanElem, Scalar, Ty};

/// A shape of zipped parallel sources, mirroring the closure's pattern.
enum Leaf {
    Source(usize),
    /// An element of a struct slot: one source per field.
    Struct(Vec<usize>),
    Index,
    Pair(Box<Leaf>, Box<Leaf>),
}

impl Lowerer<'_> {
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

    /// Binds a closure's pattern to the sources (or the index) of the matching `Leaf`.
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
