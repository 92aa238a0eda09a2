//! Assignments: `place = value` and `place op= value` into a local, a tuple field, an element
//! of a local array, an element of the parallel loop's sources, or a whole array or struct
//! element; and the marks that make a parallel loop store the elements its body wrote.
//!
//! Apart from the reads in `places`, since a write must also tell the parallel loop to store the
//! element back.

use proc_macro2::Span;

use super::operators::bin_op;
use super::values::{MemKey, Val};
use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, SiteKind, Space, Value};
use crate::tir::{self, Expr, ExprKind};
use crate::types::Ty;

impl Lowerer<'_> {
    /// `place = value`.
    pub(super) fn assign(&mut self, place: &Expr, value: &Expr) -> Val {
        if let (ExprKind::Local(id), Ty::RecvSlot(_) | Ty::OptRecvSlot(_)) =
            (&place.kind, &place.ty)
        {
            self.assign_slot(*id, value, place.span);
            return Val::Unit;
        }
        if let (
            ExprKind::Local(_),
            Ty::Accumulator { .. } | Ty::Fragment { .. } | Ty::Rows { .. },
        ) = (&place.kind, &place.ty)
        {
            return self.assign_registers(place, value);
        }
        if matches!(value.ty, Ty::Array(..)) && matches!(place.kind, ExprKind::StructArray(..)) {
            self.assign_struct_array(place, value)
        } else if matches!(value.ty, Ty::Array(..)) {
            self.assign_array(place, value)
        } else if matches!(&place.kind, ExprKind::Deref(r) if matches!(r.ty, Ty::StructRef { .. }))
        {
            self.assign_struct_element(place, value)
        } else {
            let v = self.scalar(value);
            self.store_place(place, false, |_, _| v);
            Val::Unit
        }
    }

    /// `s.v = array` of a struct's array field.
    fn assign_struct_array(&mut self, place: &Expr, value: &Expr) -> Val {
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

    /// `a = b` of array locals.
    fn assign_array(&mut self, place: &Expr, value: &Expr) -> Val {
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
                (Some(Val::LocalArray { addr, elem, len }), Val::LocalArray { addr: from, .. }) => {
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

    /// `*p = value` of a struct slot's element.
    fn assign_struct_element(&mut self, place: &Expr, value: &Expr) -> Val {
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

    /// `place op= value`.
    pub(super) fn compound_assign(
        &mut self,
        op: tir::BinOp,
        place: &Expr,
        value: &Expr,
        span: Span,
    ) -> Val {
        let v = self.scalar(value);
        let op = bin_op(op);
        self.store_place(place, true, |l, old| l.arithmetic(op, old, v, span));
        Val::Unit
    }

    /// Assigns to a local or a parallel element: `dst = f(old value)`.
    /// `reads_old`: `f` uses the old value (compound assignment), so an element must be loaded.
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
                    b @ (Val::SharedArray(_) | Val::SharedRow { .. }) => {
                        self.shared_array_store(b, index, i, place.span, reads_old, f)
                    }
                    slice @ Val::Slice { mem, tiles, .. } if self.par.is_some() => {
                        // `y[i] = v` in a parallel loop (the checker saw to it).
                        self.par_index_writes.push((mem, tiles));
                        if let Some((space, addr, elem)) =
                            self.element_addr(base, &slice, i, place.span)
                        {
                            let old = if reads_old {
                                self.load(elem, space, addr)
                            } else {
                                self.konst(elem, Imm::Int(0))
                            };
                            let v = f(self, old);
                            self.emit(Inst::Store {
                                space,
                                addr,
                                value: v,
                            });
                        }
                    }
                    other => self.role_store(base, &other, i, place.span, reads_old, f),
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

    /// `slice[i] = v` (or `op=`) from role code, of a slice of global memory or of a reserved
    /// slot: every thread of the role computes the value (the checker holds it uniform), the
    /// role's first thread stores it, and a role barrier follows where the role touches that
    /// memory elsewhere (others may read it next).
    fn role_store(
        &mut self,
        base: &Expr,
        b: &Val,
        i: Value,
        span: Span,
        reads_old: bool,
        f: impl FnOnce(&mut Self, Value) -> Value,
    ) {
        if self.par.is_some() {
            self.diags.error(span, "a parallel loop's body writes its own elements, through the `&mut` items of `par_iter_mut()`: write `*item = v`");
            return;
        }
        if self.apply_depth > 0 {
            self.diags.error(span, APPLY_WRITES);
            return;
        }
        let key = match *b {
            Val::Slice { mem, .. } => mem,
            Val::SendSlot(c) => self.slot_key(c),
            _ => return,
        };
        let Some((space, addr, elem)) = self.element_addr(base, b, i, span) else {
            return;
        };
        if let MemKey::Slot(c, _) = key {
            self.channels[c.0 as usize].generic_writes = true;
        }
        // A plain assignment does not read the old value: `f` is given the address instead,
        // which it does not use.
        let old = if reads_old {
            self.load(elem, space, addr)
        } else {
            addr
        };
        let value = f(self, old);
        self.emit(Inst::RoleStore { space, addr, value });
        *self.role_stores.entry(key).or_insert(0) += 1;
        if self.role.is_some() {
            self.store_requests.insert(self.barrier_requests.len());
            self.barrier_requests.push(vec![(key, true)]);
            let site = self.site(
                SiteKind::Wait,
                "the role barrier after this element write".to_string(),
                span,
            );
            self.emit(Inst::RoleBarrier { site });
        }
    }

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
}

/// What a memory write or atomic update reached from the closure of `acc.apply(..)` (through a
/// helper it calls) is told.
pub(super) const APPLY_WRITES: &str = "the closure of `apply` runs once per accumulator element, on the thread that holds it, and only computes the element's new value: a helper it calls cannot write memory or update an atomic; store the accumulator after it (`acc.store(..)`), or update memory in a parallel loop";
