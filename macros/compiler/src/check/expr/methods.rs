//! Method calls: the receiver is checked, then the call goes to the methods of the receiver's
//! type, which live with their topic (`channels`, `math`, `parallel`, ...). What no type has is
//! reported here.

use proc_macro2::Span;

use super::{err, Checker};
use crate::tir::Expr;
use crate::types::Ty;

impl Checker<'_> {
    /// `receiver.method(args)`: the receiver is checked first, then the method is looked up by
    /// the receiver's type.
    pub(super) fn method_call(&mut self, m: &mut syn::ExprMethodCall, span: Span) -> Expr {
        let name = m.method.to_string();
        let awaited = std::mem::take(&mut self.await_base);
        let receiver = self.expr(&mut m.receiver, None);
        if receiver.ty == Ty::Error {
            // Check the arguments for their own mistakes, but not closures, whose parameters'
            // types would come from the receiver (no cascade of errors).
            for a in m.args.iter_mut() {
                if !matches!(a, syn::Expr::Closure(_)) {
                    self.expr(a, None);
                }
            }
            return err(span);
        }
        let name = name.as_str();
        match &receiver.ty {
            Ty::Slice { .. }
                if matches!(
                    name,
                    "split_at"
                        | "split_at_mut"
                        | "chunks"
                        | "chunks_mut"
                        | "chunks_exact"
                        | "chunks_exact_mut"
                ) =>
            {
                self.split_method(name, receiver, m, span)
            }
            Ty::Chunks { .. } | Ty::OptSlice { .. } => self.chunks_method(name, receiver, m, span),
            Ty::Slice { .. } | Ty::Array(..) => self.slice_method(name, receiver, m, span),
            Ty::Scalar(_) | Ty::ElemRef { .. } | Ty::IntLit | Ty::FloatLit => {
                self.number_method(name, receiver, m, span)
            }
            Ty::Opt(_) => self.option_method(name, receiver, m, span),
            Ty::AtomicSlice(_) | Ty::AtomicRef(_) | Ty::CasResult(_) => {
                self.atomic_method(name, receiver, m, span)
            }
            Ty::Receiver(_)
            | Ty::Sender(_)
            | Ty::SendSlot(_)
            | Ty::RecvSlot(_)
            | Ty::OptRecvSlot(_)
            | Ty::OptSendSlot(_) => self.channel_method(name, receiver, m, span),
            Ty::OneshotSender(_)
            | Ty::OneshotReceiver(_)
            | Ty::Barrier
            | Ty::BarrierRef
            | Ty::Shared(_)
            | Ty::SharedRef(_) => self.sync_method(name, receiver, m, span),
            Ty::Range | Ty::OptRange | Ty::Tiles => self.range_method(name, receiver, m, span),
            Ty::SharedArray(_) | Ty::SharedArrayRef(..) => {
                self.shared_array_method(name, receiver, m, span)
            }
            Ty::ParIter(_) => self.par_iter_method(name, receiver, m, span),
            Ty::Matrix(..) => self.matrix_method(name, receiver, m, span),
            Ty::Accumulator { .. } => self.accumulator_method(name, receiver, m, span),
            Ty::Rows { .. } => self.rows_method(name, receiver, m, span),
            Ty::TilePart { .. } => self.tile_part_method(name, receiver, m, span),
            Ty::Lane => self.lane_method(name, m, awaited, span),
            _ => self.unknown_method(name, &receiver.ty, m, span),
        }
    }

    /// Whether the method call has `n` arguments; reports it if not.
    pub(super) fn want_args(&mut self, m: &syn::ExprMethodCall, n: usize) -> bool {
        let name = &m.method;
        if m.args.len() != n {
            self.diags.error(
                m.method.span(),
                format!(
                    "`{name}` takes {n} argument{}",
                    if n == 1 { "" } else { "s" }
                ),
            );
            false
        } else {
            true
        }
    }

    /// A method no receiver type has: raw pointers and `overflowing_*` are named with what to
    /// write instead.
    pub(super) fn unknown_method(
        &mut self,
        name: &str,
        rty: &Ty,
        m: &syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        match (name, rty) {
            ("as_ptr" | "as_mut_ptr" | "as_ptr_range" | "as_mut_ptr_range", _) => {
                self.diags.error(m.method.span(), "raw pointers are not in the kernel language: index the slice (the index is checked), or use `get_unchecked` in an `unsafe` block");
                err(span)
            }
            (_, Ty::Scalar(s) | Ty::ElemRef { elem: s, .. })
                if s.is_int() && name.starts_with("overflowing_") =>
            {
                let op = name.split_once('_').map_or("", |(_, op)| op);
                self.diags.error(
                    m.method.span(),
                    format!("`{name}` returns a tuple with an overflow flag, which the kernel language does not have: use `checked_{op}`, `wrapping_{op}` or `saturating_{op}`"),
                );
                err(span)
            }
            _ => {
                self.diags.error(
                    m.method.span(),
                    format!("`{name}` is not a method the kernel language knows on `{rty}`"),
                );
                err(span)
            }
        }
    }
}
