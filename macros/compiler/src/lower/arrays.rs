//! Local arrays and `static` tables: arrays in registers (indexed by constants, or at run time
//! through a chain of selects) or, for a local indexed at run time, in the thread's local
//! memory; tables in constant memory, read as constants where the index is one. Arrays are
//! values, so binding or passing one copies it into the layout its local wants.
//!
//! They have layouts of their own (registers, local and constant memory), apart from the slices
//! and slots of `places`.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Inst, Space, Value};
use crate::target::LOCAL_LIMIT;
use crate::tir::{Expr, ExprKind, Lit, LocalId};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// `(a, b, ..)`, or a struct value: its scalars, with array fields flattened.
    pub(super) fn tuple_lit(&mut self, elems: &[Expr]) -> Val {
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

    /// `[value; n]`
    pub(super) fn array_repeat(&mut self, value: &Expr, n: u32) -> Val {
        let v = self.scalar(value);
        Val::Array(vec![v; n as usize])
    }

    /// `[a, b, c]`
    pub(super) fn array_list(&mut self, items: &[Expr]) -> Val {
        Val::Array(items.iter().map(|x| self.scalar(x)).collect())
    }

    /// The constant value of an index expression, if it is one.
    pub(super) fn const_index(index: &Expr) -> Option<u64> {
        match index.kind {
            ExprKind::Lit(Lit::Int(v)) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Gives a local array value the layout its local wants: registers, or local memory for a
    /// local indexed at run time; always a copy, since arrays are values.
    pub(super) fn materialize(&mut self, local: LocalId, v: Val) -> Val {
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
            // An array of no elements takes one element's place, so that its address is inside
            // the local memory (every index of it is out of bounds).
            let end = u64::from(offset) + u64::from(size) * values.len().max(1) as u64;
            if end > u64::from(LOCAL_LIMIT) {
                if !self.local_reported {
                    self.local_reported = true;
                    let name = &self.func().local(local).name;
                    let span = self.func().local(local).span;
                    self.diags.error(span, format!("the arrays indexed at run time need {end} B of local memory per thread with `{name}`, past the {LOCAL_LIMIT} B a thread can have: index fewer arrays at run time, or put the data in a slice"));
                }
                return Val::Array(values);
            }
            self.local_bytes = end as u32;
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

    /// The address of constant element `k` of a local-memory array at `base`.
    pub(super) fn local_elem_addr(&mut self, base: Value, elem: Scalar, k: u32) -> Value {
        let off = self.usize_const(u64::from(k * elem.size()));
        self.binary(BinOp::Add, base, off)
    }

    /// Loads constant element `k` of a local-memory array at `base`.
    pub(super) fn local_elem_load(&mut self, base: Value, elem: Scalar, k: u32) -> Value {
        let a = self.local_elem_addr(base, elem, k);
        self.load(elem, Space::Local, a)
    }

    /// The address of element `i` of a local-memory array, after its bounds check.
    pub(super) fn local_index_addr(
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
    pub(super) fn array_read(
        &mut self,
        b: &Val,
        index: &Expr,
        i: Value,
        span: Span,
    ) -> Option<Value> {
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
    pub(super) fn table_values(&mut self, t: u32) -> Vec<Value> {
        let table = self.prog.statics[t as usize].clone();
        table
            .values
            .iter()
            .map(|&lit| self.lit_value(lit, table.elem))
            .collect()
    }
}
