//! The expression dispatch: each kind of expression goes to the method of its topic module.
//!
//! It is apart from all of them so that it reads as one table of what lowers where.

use super::values::Val;
use super::Lowerer;
use crate::ir::{Imm, Value};
use crate::tir::{Expr, ExprKind};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// Lowers expression `e`.
    pub(super) fn expr(&mut self, e: &Expr) -> Val {
        self.at = e.span;
        match &e.kind {
            // Scalars and operators (`operators`, `math`).
            ExprKind::Lit(lit) => Val::Scalar(self.lit_value(*lit, Self::scalar_ty(&e.ty))),
            ExprKind::Unary(op, a) => self.unary_expr(*op, a),
            ExprKind::Binary(op, a, b) => Val::Scalar(self.binary_expr(*op, a, b, e.span)),
            ExprKind::Cast(a, ty) => self.cast_expr(a, *ty),
            ExprKind::HalfBits(a, ty) => self.half_bits(a, *ty),
            ExprKind::Math(f, args) => self.math_expr(*f, args, &e.ty, e.span),
            ExprKind::OptIsSome(opt, want_some) => self.opt_is_some(opt, *want_some),
            ExprKind::OptUnwrap(opt, default) => self.opt_unwrap(opt, default.as_deref(), e.span),
            ExprKind::Unwrap(opt) => self.unwrap_expr(opt, e.span),
            ExprKind::Panic(cond, message) => self.panic_expr(cond.as_deref(), message, e.span),

            // Locals and calls (`ownership`, `calls`).
            ExprKind::Local(id) => self.local_value(*id),
            ExprKind::Drop(v) => self.drop_expr(v, e.span),
            ExprKind::Call(fid, args) => self.call_expr(*fid, args, e.span),
            ExprKind::Return(value) => self.return_expr(value.as_deref()),

            // Slices, slots, fields and ranges (`places`).
            ExprKind::Deref(a) => self.deref_expr(a),
            ExprKind::Len(a) => self.len_expr(a),
            ExprKind::Index(base, index) => self.index(base, index, e.span),
            ExprKind::MatrixDim(m, cols) => self.matrix_dim(m, *cols),
            ExprKind::AccumulatorZero => self.accumulator_zero(&e.ty, e.span),
            ExprKind::AccumulatorToOperand { acc, elem } => self.accumulator_to_operand(acc, *elem),
            ExprKind::Mma { acc, a, b, b_kn } => self.mma_issue(acc, a, (b, *b_kn), e.span),
            ExprKind::RowReduce { acc, max } => self.row_reduce(acc, *max),
            ExprKind::RowOf { rows, .. } => self.row_of(rows),
            ExprKind::RowsNew { value } => self.rows_new(&e.ty, value, e.span),
            ExprKind::RowsApply {
                rows,
                row,
                value,
                body,
            } => self.rows_apply(rows, (*row, *value), body, e.span),
            ExprKind::RowsStore { rows, out, row } => self.rows_store(rows, out, row),
            ExprKind::AccumulatorApply {
                acc,
                row,
                col,
                value,
                body,
            } => self.accumulator_apply(acc, (*row, *col, *value), body, e.span),
            ExprKind::AccumulatorStore {
                acc,
                out,
                cols,
                row,
                col,
                scale,
            } => self.accumulator_store(acc, (out, cols), (row, col), scale.as_ref()),
            ExprKind::AccumulatorTile { acc, slot, col } => {
                self.accumulator_tile(acc, slot, col, e.span)
            }
            ExprKind::SubSlice(base, range) => self.subslice(base, range, e.span),
            ExprKind::Unchecked(inner) => self.unchecked_expr(inner),
            ExprKind::SplitAt(base, mid) => self.split_at(base, mid, e.span),
            ExprKind::Chunks { base, size, exact } => self.chunks(base, size, *exact, e.span),
            ExprKind::ChunksNext(c) => self.chunks_next(c),
            ExprKind::TupleField(base, index) => self.tuple_field(base, *index),
            ExprKind::StructArray(base, first, len) => self.struct_array(base, *first, *len),
            ExprKind::Range(a, b) => self.range_expr(a, b),
            ExprKind::RangeBound(r, end) => self.range_bound(r, *end),
            // Only a `for` loop's head (`for_inclusive`).
            ExprKind::InclusiveRange(..) => Val::Unit,
            ExprKind::StepBy(..) | ExprKind::Rev(_) => Val::Unit,

            // Arrays, tuples and `static` tables (`arrays`).
            ExprKind::Static(id) => Val::ConstTable(*id),
            ExprKind::TupleLit(elems) => self.tuple_lit(elems),
            ExprKind::ArrayRepeat(value, n) => self.array_repeat(value, *n),
            ExprKind::ArrayList(items) => self.array_list(items),

            // Assignments (`stores`).
            ExprKind::Assign(place, value) => self.assign(place, value),
            ExprKind::CompoundAssign(op, place, value) => {
                self.compound_assign(*op, place, value, e.span)
            }

            // Atomic elements (`atomics`).
            ExprKind::AtomicIndex(base, index) => self.atomic_index(base, index, e.span),
            ExprKind::Atomic(target, op, operands, order) => {
                self.atomic(target, *op, operands, *order, e.span)
            }
            ExprKind::CasIsOk(r, want_ok) => self.cas_is_ok(r, *want_ok),
            ExprKind::CasValue(r) => self.cas_value(r),

            // Channels (`channels`), and `select!` in a role (`concurrent`).
            ExprKind::Await(inner) => self.await_expr(inner, e.span),
            ExprKind::Send(slot) => self.send_expr(slot, e.span),
            ExprKind::RecvClose(rx) => self.recv_close(rx, e.span),
            ExprKind::SlotTake(opt) => self.slot_take(opt),
            ExprKind::Select(arms, else_) => {
                self.select_expr(arms, else_.as_deref(), &e.ty, e.span)
            }
            ExprKind::Channel(_) => {
                self.diags
                    .error(e.span, "channels are created in the kernel body only");
                Val::Unit
            }
            // Another receiver of the same channel: the roles that take one are its consumers.
            ExprKind::Subscribe(rx) => match self.expr(rx) {
                Val::Receiver(c, _) => {
                    let n = self.subscriptions.entry(c).or_insert(0);
                    *n += 1;
                    Val::Receiver(c, *n)
                }
                other => other,
            },
            ExprKind::Reserve(_)
            | ExprKind::Recv(_)
            | ExprKind::MmaStages { .. }
            | ExprKind::CopyFrom(..)
            | ExprKind::TileLoad { .. }
            | ExprKind::TileStore { .. }
            | ExprKind::CopyTo(..)
            | ExprKind::Join(_)
            | ExprKind::JoinFutures(_)
            | ExprKind::OnWarps { .. } => Val::Unit,

            // Shared values, barriers and one-shot values (`shared`).
            ExprKind::SharedNew(s) => self.shared_new(*s),
            ExprKind::SharedArrayNew(a) => self.shared_array_new(a, "array".to_string()),
            ExprKind::SharedGet(cell) => self.shared_get(cell),
            ExprKind::SharedSet(cell, value) => self.shared_set(cell, value, e.span),
            ExprKind::BarrierNew => self.barrier_new(),
            ExprKind::OneshotSend(tx, value) => self.oneshot_send(tx, value),
            ExprKind::BarrierWait(_) | ExprKind::OneshotNew(_) | ExprKind::OneshotRecv(_) => {
                Val::Unit
            }

            // The grid's blocks and their tiles (`tiles`).
            ExprKind::BlockPosition(count) => self.block_position(*count),
            ExprKind::BlockTiles(len, tile) => self.block_tiles(len, tile, e.span),
            ExprKind::TilesNext(t) => self.tiles_next_expr(t),

            // Parallel loops (`parallel`) and warp operations (`warps`).
            ExprKind::ParSource(_) | ExprKind::Zip(..) | ExprKind::Enumerate(_) => Val::Unit,
            ExprKind::ParReduce(iter, red) => {
                let ty = Self::scalar_ty(&e.ty);
                Val::Scalar(self.par_reduce(iter, red, ty, e.span))
            }
            ExprKind::ParScan(scan) => {
                let ty = Self::scalar_ty(&e.ty);
                Val::Scalar(self.par_scan(scan, ty, e.span))
            }
            ExprKind::ParMap(..) => {
                self.diags.error(
                    e.span,
                    "`map` feeds a reduction: end it with `.sum()`, `.min()`, `.max()` or `.reduce(..)`",
                );
                Val::Unit
            }
            ExprKind::ForEach(iter, binding, body, lane) => {
                self.for_each(iter, binding, body, lane.is_some(), e.span);
                Val::Unit
            }
            ExprKind::LanePosition(warp) => self.lane_position(*warp),
            ExprKind::Warp(op, args) => Val::Scalar(self.warp_op(*op, args)),

            // Blocks, branches and loops (`control`, `loops`).
            ExprKind::Block(b) => self.scoped_block(b, None),
            ExprKind::If(cond, then, else_) => self.if_expr(cond, then, else_.as_deref(), &e.ty),
            ExprKind::IfLetSome {
                scrutinee,
                binding,
                then,
                else_,
            } => self.if_let_some(scrutinee, *binding, then, else_.as_deref(), &e.ty),
            ExprKind::Match(scrutinee, arms) => self.match_expr(scrutinee, arms, &e.ty),
            ExprKind::Loop(label, body) => self.loop_expr(label, body, &e.ty),
        }
    }

    /// Lowers `e` to one register (a zero of its type when it is not a scalar).
    pub(super) fn scalar(&mut self, e: &Expr) -> Value {
        match self.expr(e) {
            Val::Scalar(v) => v,
            _ => {
                let ty = e.ty.scalar().unwrap_or(Scalar::I32);
                self.konst(ty, Imm::Int(0))
            }
        }
    }

    /// The register type of a scalar-valued type.
    pub(super) fn scalar_ty(ty: &Ty) -> Scalar {
        match ty {
            Ty::Scalar(s) => *s,
            // An enum without payloads is its `u32` discriminant.
            Ty::Enum(..) => Scalar::U32,
            Ty::ElemRef { elem, .. } => *elem,
            Ty::FloatLit => Scalar::F32,
            _ => Scalar::I32,
        }
    }
}
