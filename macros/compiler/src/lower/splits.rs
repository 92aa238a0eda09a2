//! Parts of a slice: `split_at` / `split_at_mut`, and the chunks of `chunks` / `chunks_mut` /
//! `chunks_exact` / `chunks_exact_mut` handed out by `next()` in the kernel body. The kernel
//! body runs once, in order, so the lowering counts the chunks taken: the `k`-th `next()` is chunk
//! `k`, whichever role's arguments it is written in.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Space, Value};
use crate::tir::{Expr, ExprKind};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `s.split_at(mid)` (or `_mut`): the two parts, after the check that `mid` is at most the
    /// length.
    pub(super) fn split_at(&mut self, base: &Expr, mid: &Expr, span: Span) -> Val {
        let b = self.expr(base);
        let m = self.scalar(mid);
        let Val::Slice {
            ptr,
            len,
            elem,
            mem,
            space,
            ..
        } = b
        else {
            return Val::Unit;
        };
        let past = self.binary(BinOp::Gt, m, len);
        self.panic_if(past, "mid > len", span);
        let second = self.offset(ptr, m, elem, space);
        let rest = self.binary(BinOp::Sub, len, m);
        let part = |ptr, len| Val::Slice {
            ptr,
            len,
            elem,
            mem,
            tiles: false,
            space,
        };
        Val::SlicePair(Box::new(part(ptr, m)), Box::new(part(second, rest)))
    }

    /// `s.chunks(n)` (and the other three): the chunks, none taken yet.
    pub(super) fn chunks(&mut self, base: &Expr, size: &Expr, exact: bool, span: Span) -> Val {
        let slice = self.expr(base);
        let size = self.scalar(size);
        let zero = self.usize_const(0);
        let bad = self.binary(BinOp::Eq, size, zero);
        self.panic_if(bad, "chunk size must be non-zero", span);
        Val::Chunks {
            slice: Box::new(slice),
            size,
            exact,
            taken: 0,
        }
    }

    /// `chunks.next()` of a chunks local: chunk `k` for the `k`-th call (`None` past the end; a
    /// last chunk shorter than the size is `None` for `chunks_exact`).
    pub(super) fn chunks_next(&mut self, chunks: &Expr) -> Val {
        let ExprKind::Local(id) = chunks.kind else {
            return Val::Unit;
        };
        let Some(Val::Chunks {
            slice,
            size,
            exact,
            taken,
        }) = self.frame().locals.get(&id).cloned()
        else {
            return Val::Unit;
        };
        let Val::Slice {
            ptr,
            len,
            elem,
            mem,
            space,
            ..
        } = *slice
        else {
            return Val::Unit;
        };
        let k = self.usize_const(u64::from(taken));
        let start = self.binary(BinOp::Mul, k, size);
        let (some, n) = if exact {
            let end = self.binary(BinOp::Add, start, size);
            (self.binary(BinOp::Le, end, len), size)
        } else {
            let some = self.binary(BinOp::Lt, start, len);
            let left = self.binary(BinOp::Sub, len, start);
            (some, self.binary(BinOp::Min, size, left))
        };
        let p = self.offset(ptr, start, elem, space);
        self.frame().locals.insert(
            id,
            Val::Chunks {
                slice: Box::new(Val::Slice {
                    ptr,
                    len,
                    elem,
                    mem,
                    tiles: false,
                    space,
                }),
                size,
                exact,
                taken: taken + 1,
            },
        );
        Val::OptSlice {
            some,
            slice: Box::new(Val::Slice {
                ptr: p,
                len: n,
                elem,
                mem,
                tiles: false,
                space,
            }),
        }
    }

    /// The address of element `i` (a `usize`) of a slice at `ptr` in `space`.
    fn offset(&mut self, ptr: Value, i: Value, elem: Scalar, space: Space) -> Value {
        match space {
            Space::Shared => {
                let i32v = self.new_value(Scalar::U32, None);
                self.emit(crate::ir::Inst::Cast { dst: i32v, src: i });
                let size = self.konst(Scalar::U32, crate::ir::Imm::Int(u64::from(elem.size())));
                let off = self.binary(BinOp::Mul, i32v, size);
                self.binary(BinOp::Add, ptr, off)
            }
            _ => {
                let size = self.usize_const(u64::from(elem.size()));
                let off = self.binary(BinOp::Mul, i, size);
                self.binary(BinOp::Add, ptr, off)
            }
        }
    }
}
