//! `acc.apply(|v| body)` and `acc.apply_at(|row, col, v| body)`: the closure's body written once
//! per accumulator value the thread holds (`N / 2` of them), each time with `v` bound to the
//! value, and `row`, `col` to its place in the accumulator; its result goes back into the
//! value's register.

use proc_macro2::Span;

use super::values::Val;
use super::Lowerer;
use crate::ir::{fragment_place, BinOp, Inst, Value};
use crate::tir::{self, Expr, LocalId};

/// A parameter of an `apply` closure and the value it is bound to, where the closure names it:
/// a base value plus a constant.
pub(super) type ParamValue = Option<(LocalId, Value, u64)>;

impl Lowerer<'_> {
    /// Each of the thread's accumulator values becomes the body's value for it.
    pub(super) fn accumulator_apply(
        &mut self,
        acc: &Expr,
        (row, col, value): (Option<LocalId>, Option<LocalId>, Option<LocalId>),
        body: &tir::Block,
        span: Span,
    ) -> Val {
        let Val::Acc(values) = self.expr(acc) else {
            return Val::Unit;
        };
        // The thread's first row and column, only where the body names them.
        let origin = (row.is_some() || col.is_some()).then(|| {
            let (warp_rows, lane_row, lane_col) = self.fragment_origin();
            (self.binary(BinOp::Add, warp_rows, lane_row), lane_col)
        });
        for (k, &register) in values.iter().enumerate() {
            let (h, col_offset) = fragment_place(k);
            let row_at = origin
                .zip(row)
                .map(|((first_row, _), row)| (row, first_row, 8 * h as u64));
            let col_at = origin
                .zip(col)
                .map(|((_, first_col), col)| (col, first_col, col_offset));
            self.apply_to_register(register, (row_at, col_at, h), value, body, span);
        }
        Val::Unit
    }

    /// One run of an `apply` closure's body for `register`, the thread's value in row `half`
    /// of its two: the row and column parameters (where named) bound to their values (with
    /// `half`, by which the body reads rows, `rows[i]`), the value parameter to the register,
    /// and the body's result back into the register.
    pub(super) fn apply_to_register(
        &mut self,
        register: Value,
        (row, col, half): (ParamValue, ParamValue, usize),
        value: Option<LocalId>,
        body: &tir::Block,
        span: Span,
    ) {
        self.apply_depth += 1;
        let outer_half = std::mem::replace(&mut self.apply_row_half, row.map(|_| half));
        for (local, base, offset) in row.into_iter().chain(col) {
            let at = self.plus_const(base, offset);
            self.bind(local, Val::Scalar(at), span);
        }
        if let Some(value) = value {
            self.bind(value, Val::Scalar(register), span);
        }
        if let Val::Scalar(new) = self.scoped_block(body, None) {
            self.emit(Inst::Copy {
                dst: register,
                src: new,
            });
        }
        self.apply_row_half = outer_half;
        self.apply_depth -= 1;
    }

    /// `base + by` (`base` itself when `by` is 0).
    pub(super) fn plus_const(&mut self, base: Value, by: u64) -> Value {
        if by == 0 {
            return base;
        }
        let by = self.usize_const(by);
        self.binary(BinOp::Add, base, by)
    }
}
