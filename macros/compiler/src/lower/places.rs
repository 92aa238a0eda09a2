//! Reads of places: elements of slices and channel slots (with their bounds checks), sub-slices,
//! `get_unchecked`, elements of a parallel loop's sources (`*p`, a struct slot's fields),
//! tuple fields, and ranges with their bounds.
//!
//! Writes to these places are in `stores`, local arrays and `static` tables in `arrays`.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, ChannelId, Imm, Inst, Space, Value};
use crate::tir::{self, Expr, ExprKind};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `base[index]`: an element of a local array, a `static` table, a slice or a slot.
    pub(super) fn index(&mut self, base: &Expr, index: &Expr, span: Span) -> Val {
        match &base.ty {
            crate::types::Ty::TileRow(..) => return self.tile_element(base, index, span),
            crate::types::Ty::RecvSlot(c) | crate::types::Ty::SendSlot(c)
                if c.elem.tile().is_some() =>
            {
                self.tile_row_alone(span);
                return Val::Unit;
            }
            _ => {}
        }
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
        match self.element_addr(base, &b, i, span) {
            Some((space, addr, elem)) => Val::Scalar(self.load(elem, space, addr)),
            None => Val::Unit,
        }
    }

    /// The place of element `i` of slice or slot `b` (which `base` lowered to), after its bounds
    /// check: its memory, address and type.
    pub(super) fn element_addr(
        &mut self,
        base: &Expr,
        b: &Val,
        i: Value,
        span: Span,
    ) -> Option<(Space, Value, Scalar)> {
        match *b {
            Val::Slice {
                ptr,
                len,
                elem,
                mem,
                space: Space::Global,
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
                Some((Space::Global, addr, elem))
            }
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
                let addr = self.shared_offset(ptr, i, elem);
                Some((Space::Shared, addr, elem))
            }
            Val::SendSlot(_) | Val::RecvSlot(_) => {
                self.check_not_copied(base, span);
                let (c, _) = self.slot_parts(b)?;
                let key = self.slot_key(c);
                self.access(key);
                let ty = self.channels[c.0 as usize].ty.clone();
                let elem = ty.elem.scalar()?;
                let n = self.usize_const(u64::from(ty.len));
                let oob = self.binary(BinOp::Ge, i, n);
                self.panic_if(oob, "index out of bounds", span);
                let (_, base_addr) = self.slot_addr(b)?;
                let addr = self.shared_offset(base_addr, i, elem);
                Some((Space::Shared, addr, elem))
            }
            _ => None,
        }
    }

    /// `base + i * size(elem)` of a shared address, `i` a `usize` index.
    fn shared_offset(&mut self, base: Value, i: Value, elem: Scalar) -> Value {
        let i32v = self.new_value(Scalar::U32, None);
        self.emit(Inst::Cast { dst: i32v, src: i });
        let size = self.konst(Scalar::U32, Imm::Int(u64::from(elem.size())));
        let off = self.binary(BinOp::Mul, i32v, size);
        self.binary(BinOp::Add, base, off)
    }

    /// The channel of a reserved or received slot, and its ring position (a received slot's own
    /// register, where it has one).
    pub(super) fn slot_parts(&self, v: &Val) -> Option<(ChannelId, Option<Value>)> {
        match *v {
            Val::SendSlot(c) => Some((c, None)),
            Val::RecvSlot(r) => Some((r.chan, r.at)),
            _ => None,
        }
    }

    /// The shared address of a reserved or received slot's data, and its channel.
    pub(super) fn slot_addr(&mut self, v: &Val) -> Option<(ChannelId, Value)> {
        let (chan, slot) = self.slot_parts(v)?;
        let rx = match v {
            Val::RecvSlot(r) => r.rx,
            _ => 0,
        };
        let dst = self.new_value(Scalar::U32, None);
        self.emit(Inst::SlotAddr {
            dst,
            chan,
            send: matches!(v, Val::SendSlot(_)),
            slot,
            rx,
        });
        Some((chan, dst))
    }

    /// `base[range]`: a sub-slice.
    pub(super) fn subslice(&mut self, base: &Expr, range: &Expr, span: Span) -> Val {
        let b = self.expr(base);
        // The whole slot (`&slot[..]`, `&slot[0..N]`): its slice, with the slot's constant
        // length, which parallel loops over it use as they do for the slot itself.
        let whole = match (&b, &range.kind) {
            (Val::SendSlot(_) | Val::RecvSlot(_), ExprKind::Range(a, z)) => {
                matches!(a.kind, ExprKind::Lit(tir::Lit::Int(0)))
                    && matches!(z.kind, ExprKind::Lit(tir::Lit::Int(n)) if self.slot_parts(&b).is_some_and(|(c, _)| u128::from(self.channels[c.0 as usize].ty.len) == n))
            }
            _ => false,
        };
        let r = if whole { Val::Unit } else { self.expr(range) };
        let b = match b {
            // `&slot[a..b]`: the slot as a slice of shared memory, then its range.
            Val::SendSlot(_) | Val::RecvSlot(_) => {
                self.check_not_copied(base, span);
                let Some((c, ptr)) = self.slot_addr(&b) else {
                    return Val::Unit;
                };
                let ty = self.channels[c.0 as usize].ty.clone();
                let Some(elem) = ty.elem.scalar() else {
                    return Val::Unit;
                };
                let len = self.usize_const(u64::from(ty.len));
                let slice = Val::Slice {
                    ptr,
                    len,
                    elem,
                    mem: self.slot_key(c),
                    tiles: true,
                    space: Space::Shared,
                };
                if whole {
                    return slice;
                }
                slice
            }
            other => other,
        };
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
                    tiles: slice_tiles,
                    space,
                },
                Val::Range { start, end, tiles },
            ) => {
                if !self.unchecked {
                    let bad_order = self.binary(BinOp::Gt, start, end);
                    self.panic_if(bad_order, "slice index starts after it ends", span);
                    let past = self.binary(BinOp::Gt, end, len);
                    self.panic_if(past, "slice range past the end of the slice", span);
                }
                let p = match space {
                    Space::Shared => self.shared_offset(ptr, start, elem),
                    _ => {
                        let size = self.usize_const(u64::from(elem.size()));
                        let off = self.binary(BinOp::Mul, start, size);
                        self.binary(BinOp::Add, ptr, off)
                    }
                };
                let n = self.binary(BinOp::Sub, end, start);
                Val::Slice {
                    ptr: p,
                    len: n,
                    elem,
                    mem,
                    // A slot's slices are written only before the slot is sent and read only
                    // while it is held: like tiles, they never overlap between iterations.
                    tiles: if space == Space::Shared {
                        slice_tiles
                    } else {
                        tiles
                    },
                    space,
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
        if matches!(
            base.ty,
            crate::types::Ty::SendSlot(_) | crate::types::Ty::RecvSlot(_)
        ) {
            // A tile of a pair taken as a value (`let t = stage.0;`): it is used in place.
            self.diags.error(base.span, "a tile of a pair is used in place, as `stage.0.load(a, [row, col]).await` or `stage.0[r][c]`: it is not a value of its own");
            return Val::Unit;
        }
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
