//! Per-row values of an accumulator (`Rows<M>`): each thread holds the values of its two rows
//! (`ir::fragment_place`'s `h`), made by a reduction of the accumulator's rows or a splat,
//! changed by `apply` (the body once per row the thread holds), read by the elements of their
//! row (`rows[i]` in `apply_at`), and stored by one lane of the four that hold a row.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{BinOp, Inst, Value};
use crate::tir::{self, Expr, LocalId};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// `acc.row_max()` (`max`) or `acc.row_sum()`: the thread's two rows' values.
    pub(super) fn row_reduce(&mut self, acc: &Expr, max: bool) -> Val {
        let Val::Acc(values) = self.expr(acc) else {
            return Val::Unit;
        };
        let dst = [
            self.new_value(Scalar::F32, None),
            self.new_value(Scalar::F32, None),
        ];
        self.emit(Inst::RowReduce {
            dst,
            acc: values,
            max,
        });
        Val::Rows(dst.to_vec())
    }

    /// `rows[i]` in the body of `acc.apply_at(..)`: the value of the element's row.
    pub(super) fn row_of(&mut self, rows: &Expr) -> Val {
        match (self.expr(rows), self.apply_row_half) {
            (Val::Rows(values), Some(h)) => values.get(h).map_or(Val::Unit, |v| Val::Scalar(*v)),
            _ => Val::Unit,
        }
    }

    /// `Rows::<M>::splat(v)`: both of the thread's rows `v`.
    pub(super) fn rows_new(&mut self, ty: &Ty, value: &Expr, span: Span) -> Val {
        let Ty::Rows { m } = *ty else {
            return Val::Unit;
        };
        let v = self.scalar(value);
        // Rows are laid out as the role's accumulators of `m` rows are.
        if !self.mma_role(m, span) {
            return Val::Unit;
        }
        let values = (0..2)
            .map(|_| {
                let dst = self.new_value(Scalar::F32, None);
                self.emit(Inst::Copy { dst, src: v });
                dst
            })
            .collect();
        Val::Rows(values)
    }

    /// `rows.apply(|x| body)` / `rows.apply_at(|i, x| body)`: the body once for each of the
    /// thread's two rows, `i` bound to the row, `x` to its value, the result back into its
    /// register; other rows read as `other[i]` give that row's value.
    pub(super) fn rows_apply(
        &mut self,
        rows: &Expr,
        (row, value): (Option<LocalId>, Option<LocalId>),
        body: &tir::Block,
        span: Span,
    ) -> Val {
        let Val::Rows(values) = self.expr(rows) else {
            return Val::Unit;
        };
        let first_row = row.map(|_| {
            let (warp_rows, lane_row, _) = self.fragment_origin();
            self.binary(BinOp::Add, warp_rows, lane_row)
        });
        for (h, &register) in values.iter().enumerate() {
            let row_at = first_row
                .zip(row)
                .map(|(first_row, row)| (row, first_row, 8 * h as u64));
            self.apply_to_register(register, (row_at, None, h), value, body, span);
        }
        Val::Unit
    }

    /// `rows.store(out, row)`: the thread's row `r` (of the accumulator) to `out[row + r]` when
    /// that is inside `out`, by the first of the four lanes that hold the row.
    pub(super) fn rows_store(&mut self, rows: &Expr, out: &Expr, row: &Expr) -> Val {
        let Val::Rows(values) = self.expr(rows) else {
            return Val::Unit;
        };
        let Val::Slice { ptr, len, mem, .. } = self.expr(out) else {
            return Val::Unit;
        };
        let row = self.scalar(row);
        self.access(mem);
        let (warp_rows, lane_row, lane_col) = self.fragment_origin();
        let zero = self.usize_const(0);
        // Lane 4 r of the warp holds column 0 of its rows.
        let owner = self.binary(BinOp::Eq, lane_col, zero);
        let r = self.binary(BinOp::Add, row, warp_rows);
        let first = self.binary(BinOp::Add, r, lane_row);
        let rows_left = self.left_from(len, first, zero);
        let four = self.usize_const(4);
        let bytes = self.binary(BinOp::Mul, first, four);
        let addr = self.binary(BinOp::Add, ptr, bytes);
        let values: [Value; 2] = [values[0], values[1]];
        self.emit(Inst::RowsStore {
            values,
            addr,
            rows_left,
            owner,
        });
        Val::Unit
    }
}
