//! Block-shared arrays: their making in the kernel body, the addresses of their elements (after
//! the bounds checks), reads, writes by index in parallel loops, and the marks
//! ([`Inst::ArrayAccess`]) that `shared_sync` turns into role barriers.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{self, ArrayAccess, BinOp, Imm, Inst, SiteKind, Space, Value};
use crate::tir::{self, Expr, ExprKind};
use crate::types::{ArrayTy, Scalar, Ty};

impl Lowerer<'_> {
    /// `shared_array::<..>()`: a new array named `name`. A 2D array whose rows are a multiple of
    /// 128 bytes gets one element of padding per row, so that a warp reading a column reads 32
    /// different banks.
    pub(super) fn shared_array_new(&mut self, a: &ArrayTy, name: String) -> Val {
        let rows = a.rows.unwrap_or(1);
        let row_bytes = a.cols * a.elem.size();
        let row_stride = if a.rows.is_some() && rows > 1 && row_bytes % 128 == 0 {
            a.cols + 1
        } else {
            a.cols
        };
        self.shared_arrays.push(ir::SharedArray {
            name,
            elem: a.elem,
            atomic: a.atomic,
            rows,
            cols: a.cols,
            row_stride,
            offset: 0,
        });
        Val::SharedArray(self.shared_arrays.len() as u32 - 1)
    }

    /// The shared address of array `array`'s first element.
    pub(super) fn array_addr(&mut self, array: u32) -> Value {
        let dst = self.new_value(Scalar::U32, None);
        self.emit(Inst::ArrayAddr { dst, array });
        dst
    }

    /// Marks an access of `array` here, for the role's barrier placement.
    pub(super) fn array_access(&mut self, array: u32, access: ArrayAccess, span: Span) {
        let name = self.shared_arrays[array as usize].name.clone();
        let site = self.site(
            SiteKind::Wait,
            format!("the role barrier before this access of shared array `{name}`"),
            span,
        );
        self.emit(Inst::ArrayAccess {
            array,
            access,
            site,
        });
    }

    /// `b[i]` of a shared array (`b` as lowered, `index` as written): a row of a 2D array, an
    /// atomic element, or an element's value. `None` when `b` is not a shared array.
    pub(super) fn shared_array_index(
        &mut self,
        b: &Val,
        index: &Expr,
        i: Value,
        span: Span,
    ) -> Option<Val> {
        let (array, row) = match *b {
            Val::SharedArray(k) => (k, None),
            Val::SharedRow { array, row } => (array, Some(row)),
            _ => return None,
        };
        let a = self.shared_arrays[array as usize].clone();
        if row.is_none() && a.rows > 1 {
            self.check_index(index, i, a.rows, span);
            return Some(Val::SharedRow { array, row: i });
        }
        let addr = self.array_elem_addr(array, row, index, i, span);
        if a.atomic {
            return Some(Val::SharedAtomicRef { addr, array });
        }
        self.array_access(array, ArrayAccess::Read, span);
        Some(Val::Scalar(self.load(a.elem, Space::Shared, addr)))
    }

    /// `b[i] = f(old)` of a shared array's element, in a parallel loop (the checker saw to it).
    pub(super) fn shared_array_store(
        &mut self,
        b: Val,
        index: &Expr,
        i: Value,
        span: Span,
        reads_old: bool,
        f: impl FnOnce(&mut Self, Value) -> Value,
    ) {
        let (array, row) = match b {
            Val::SharedArray(k) => (k, None),
            Val::SharedRow { array, row } => (array, Some(row)),
            _ => return,
        };
        let elem = self.shared_arrays[array as usize].elem;
        let addr = self.array_elem_addr(array, row, index, i, span);
        self.array_access(array, ArrayAccess::Write, span);
        let old = if reads_old {
            self.load(elem, Space::Shared, addr)
        } else {
            self.konst(elem, Imm::Int(0))
        };
        let value = f(self, old);
        self.emit(Inst::Store {
            space: Space::Shared,
            addr,
            value,
        });
    }

    /// The address of element `i` (`index` as written) of `array`, or of row `row`'s, after the
    /// bounds check.
    fn array_elem_addr(
        &mut self,
        array: u32,
        row: Option<Value>,
        index: &Expr,
        i: Value,
        span: Span,
    ) -> Value {
        let a = self.shared_arrays[array as usize].clone();
        self.check_index(index, i, a.cols, span);
        let flat = match row {
            Some(r) => {
                let stride = self.usize_const(u64::from(a.row_stride));
                let start = self.binary(BinOp::Mul, r, stride);
                self.binary(BinOp::Add, start, i)
            }
            None => i,
        };
        let flat32 = self.new_value(Scalar::U32, None);
        self.emit(Inst::Cast {
            dst: flat32,
            src: flat,
        });
        let size = self.konst(Scalar::U32, Imm::Int(u64::from(a.elem.size())));
        let off = self.binary(BinOp::Mul, flat32, size);
        let base = self.array_addr(array);
        self.binary(BinOp::Add, base, off)
    }

    /// A device panic when `i` is not below `n`, unless `index` is below `n` by its form: a
    /// cast of a byte into 256 elements or more (`bins[*b as usize]`), `x % K` with `K <= n`,
    /// or the loop's index `i` (or `i / K`) when it is below a constant `N` with `N <= n`
    /// (`(N - 1) / K < n`).
    fn check_index(&mut self, index: &Expr, i: Value, n: u32, span: Span) {
        let n64 = u64::from(n);
        let below = match &index.kind {
            ExprKind::Cast(inner, _) => match inner.ty {
                Ty::Scalar(Scalar::U8) => 256 <= n64,
                Ty::Scalar(Scalar::U16) => 65536 <= n64,
                _ => false,
            },
            ExprKind::Local(id) => {
                let item = self.frame().locals.get(id).cloned();
                matches!((item, self.par_bound), (Some(Val::Scalar(v)), Some((bound_item, end))) if v == bound_item && end <= n64)
            }
            ExprKind::Binary(tir::BinOp::Rem, _, k) => {
                matches!(k.kind, ExprKind::Lit(tir::Lit::Int(k)) if k >= 1 && k <= u128::from(n))
            }
            ExprKind::Binary(tir::BinOp::Div, x, k) => match (&x.kind, &k.kind) {
                (ExprKind::Local(id), ExprKind::Lit(tir::Lit::Int(k))) if *k >= 1 => {
                    let item = self.frame().locals.get(id).cloned();
                    match (item, self.par_bound) {
                        (Some(Val::Scalar(v)), Some((bound_item, end))) if v == bound_item => {
                            end == 0 || u128::from(end - 1) / k < u128::from(n)
                        }
                        _ => false,
                    }
                }
                _ => false,
            },
            _ => false,
        };
        if below && index.ty.scalar().is_some_and(|s| !s.is_signed()) {
            return;
        }
        let n = self.usize_const(u64::from(n));
        let oob = self.binary(BinOp::Ge, i, n);
        self.panic_if(oob, "index out of bounds", span);
    }
}
