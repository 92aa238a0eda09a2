//! Reads of places: elements of slices and channel slots (with their bounds checks), sub-slices,
//! `get_unchecked`, elements of a parallel loop's sources (`*p`, a struct slot's fields),
//! tuple fields, and ranges with their bounds.
//!
//! Writes to these places are in `stores`, local arrays and `static` tables in `arrays`.

use proc_macro2::Span;

use super::values::{MemKey, Val};
use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, Space, Value};
use crate::tir::{Expr, ExprKind};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `base[index]`: an element of a local array, a `static` table, a slice or a slot.
    pub(super) fn index(&mut self, base: &Expr, index: &Expr, span: Span) -> Val {
        let b = self.expr(base);
        let i = self.scalar(index);
        if let Some(v) = self.array_read(&b, index, i, span) {
            return Val::Scalar(v);
        }
        if let Some(v) = self.shared_array_index(&b, index, i, span) {
            return v;
        }
        self.index_val(base, b, i, span)
    }

    /// Element `i` of slice or slot `b` (which `base` lowered to), after its bounds check.
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

    /// `base[range]`: a sub-slice.
    pub(super) fn subslice(&mut self, base: &Expr, range: &Expr, span: Span) -> Val {
        let (b, r) = (self.expr(base), self.expr(range));
        self.subslice_val(b, r, span)
    }

    /// Range `r` of slice `b`, after its checks.
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

    /// `get_unchecked(..)` of an index or sub-slice `inner`.
    pub(super) fn unchecked_expr(&mut self, inner: &Expr) -> Val {
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

    /// `get_unchecked`: the operands are lowered (and checked) as usual; the access is not.
    fn unchecked_access(&mut self, inner: &Expr, b: Val, i: Val) -> Val {
        match (&inner.kind, i) {
            (ExprKind::Index(base, _), Val::Scalar(i)) => self.index_val(base, b, i, inner.span),
            (ExprKind::SubSlice(..), r) => self.subslice_val(b, r, inner.span),
            _ => Val::Unit,
        }
    }

    /// `s.len()` of a slice.
    pub(super) fn len_expr(&mut self, a: &Expr) -> Val {
        match self.expr(a) {
            Val::Slice { len, .. } => Val::Scalar(len),
            _ => Val::Unit,
        }
    }

    /// `*r`: an element of the parallel loop's sources (each field of a struct slot's element),
    /// read; any other value is itself.
    pub(super) fn deref_expr(&mut self, a: &Expr) -> Val {
        match self.expr(a) {
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
        }
    }

    /// `t.0`, or a scalar field of a struct: its register, or a struct slot element's source.
    pub(super) fn tuple_field(&mut self, base: &Expr, index: u32) -> Val {
        match self.expr(base) {
            Val::Tuple(values) => values
                .get(index as usize)
                .map_or(Val::Unit, |v| Val::Scalar(*v)),
            Val::StructRef(sources) => sources
                .get(index as usize)
                .map_or(Val::Unit, |k| Val::ElemRef(*k)),
            _ => Val::Unit,
        }
    }

    /// An array field of a struct (`len` components from `first`): the struct's registers, or
    /// the sources of a struct slot's element, read.
    pub(super) fn struct_array(&mut self, base: &Expr, first: u32, len: u32) -> Val {
        let range = first as usize..(first + len) as usize;
        match self.expr(base) {
            // The struct's own registers: an element write goes to the struct.
            Val::Tuple(values) => Val::Array(values.get(range).unwrap_or_default().to_vec()),
            Val::StructRef(ks) => {
                let mut regs = Vec::new();
                for k in ks.get(range).unwrap_or_default() {
                    if let Some(src) = self.par.as_mut().and_then(|p| p.sources.get_mut(*k)) {
                        src.read = true;
                        regs.push(src.elem_value);
                    }
                }
                Val::Array(regs)
            }
            _ => Val::Unit,
        }
    }

    /// `a..b`
    pub(super) fn range_expr(&mut self, a: &Expr, b: &Expr) -> Val {
        let start = self.scalar(a);
        let end = self.scalar(b);
        Val::Range {
            start,
            end,
            tiles: false,
        }
    }

    /// `r.start` or (`end`) `r.end`.
    pub(super) fn range_bound(&mut self, r: &Expr, end: bool) -> Val {
        match self.expr(r) {
            Val::Range {
                start, end: stop, ..
            } => Val::Scalar(if end { stop } else { start }),
            _ => Val::Unit,
        }
    }
}
