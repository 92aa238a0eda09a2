//! Methods of the values roles share: channel ends and their slots (`reserve`, `recv`, `send`,
//! `copy_from`, `copy_to`), one-shot values, barriers and shared values.
//!
//! Most are role code: a parallel loop's closure cannot use a channel, send a one-shot value,
//! wait at a barrier or write a shared value.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind, Lit};
use crate::types::{ChanElem, ChanTy, ParShape, Scalar, Ty};

impl Checker<'_> {
    /// A method of a channel end or slot: `subscribe`, `reserve`, `recv`, `close`, `send`,
    /// `copy_from`, `copy_to`, `len`, `par_iter`, and of the `Option` of a receive or reserve
    /// (`unwrap`, `is_some`, `is_none`).
    pub(super) fn channel_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("subscribe", Ty::Receiver(c)) if self.want_args(m, 0) => {
                let c = c.clone();
                if !self.is_kernel() {
                    self.diags.error(m.method.span(), "`subscribe()` makes another receiver in the kernel body, before `join!`; each receiving role takes its own");
                    return err(span);
                }
                mk(
                    ExprKind::Subscribe(Box::new(receiver)),
                    Ty::Receiver(c),
                    span,
                )
            }
            ("len", Ty::RecvSlot(c) | Ty::SendSlot(c))
                if c.elem.tile().is_some() && self.want_args(m, 0) =>
            {
                let c = c.clone();
                self.tile_len(&c, 0, span)
            }
            ("load", Ty::SendSlot(c)) if c.elem.tile().is_some() => {
                let c = c.clone();
                self.local_of(&receiver, "load");
                self.tile_load(&c, 0, receiver, m, span)
            }
            ("store" | "store_rows", Ty::RecvSlot(c)) if c.elem.tile().is_some() => {
                let c = c.clone();
                self.tile_store(&c, receiver, m, span)
            }
            ("load", Ty::SendSlot(c)) if matches!(c.elem, ChanElem::Tiles(_)) => {
                self.diags.error(m.method.span(), format!("a slot of `{}` holds two tiles: load each of them, `slot.0.load(a, [row, col]).await` and `slot.1.load(..)`", c.elem));
                err(span)
            }
            ("len", Ty::RecvSlot(c) | Ty::SendSlot(c)) if self.want_args(m, 0) => mk(
                ExprKind::Lit(Lit::Int(u128::from(c.len))),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            ("reserve", Ty::Sender(c))
                if self.want_args(m, 0) && self.no_channel_ops_in_par(span, "reserve") =>
            {
                self.local_of(&receiver, "reserve");
                mk(
                    ExprKind::Reserve(Box::new(receiver)),
                    Ty::Future(Box::new(Ty::OptSendSlot(c.clone()))),
                    span,
                )
            }
            ("close", Ty::Receiver(_))
                if self.want_args(m, 0) && self.no_channel_ops_in_par(span, "close") =>
            {
                if self.is_kernel() {
                    self.diags.error(m.method.span(), "`close()` is role code: the role that receives closes its receiver (or drops it)");
                    return err(span);
                }
                if let Some(id) = self.local_of(&receiver, "close") {
                    self.closed.push(id);
                }
                mk(ExprKind::RecvClose(Box::new(receiver)), Ty::Unit, span)
            }
            ("recv", Ty::Receiver(c))
                if self.want_args(m, 0) && self.no_channel_ops_in_par(span, "recv") =>
            {
                self.local_of(&receiver, "recv");
                mk(
                    ExprKind::Recv(Box::new(receiver)),
                    Ty::Future(Box::new(Ty::OptRecvSlot(c.clone()))),
                    span,
                )
            }
            ("send", Ty::SendSlot(_))
                if self.want_args(m, 0) && self.no_channel_ops_in_par(span, "send") =>
            {
                self.local_of(&receiver, "send");
                mk(ExprKind::Send(Box::new(receiver)), Ty::Unit, span)
            }
            ("copy_from", Ty::SendSlot(c))
                if self.want_args(m, 1) && self.no_channel_ops_in_par(span, "copy_from") =>
            {
                self.local_of(&receiver, "copy_from");
                let Some(elem) = self.copy_payload_elem(c, "copy_from", m.method.span()) else {
                    return err(span);
                };
                let Some(src) = self.copy_slice_arg(&mut m.args[0], "copy_from", elem, false)
                else {
                    return err(span);
                };
                mk(
                    ExprKind::CopyFrom(Box::new(receiver), Box::new(src)),
                    Ty::Future(Box::new(Ty::Unit)),
                    span,
                )
            }
            ("copy_to", Ty::RecvSlot(c))
                if self.want_args(m, 1) && self.no_channel_ops_in_par(span, "copy_to") =>
            {
                self.local_of(&receiver, "copy_to");
                let Some(elem) = self.copy_payload_elem(c, "copy_to", m.method.span()) else {
                    return err(span);
                };
                let Some(dst) = self.copy_slice_arg(&mut m.args[0], "copy_to", elem, true) else {
                    return err(span);
                };
                mk(
                    ExprKind::CopyTo(Box::new(receiver), Box::new(dst)),
                    Ty::Future(Box::new(Ty::Unit)),
                    span,
                )
            }
            // `rx.recv().await.unwrap()`, `tx.reserve().await.unwrap()` or `next.unwrap()` of a
            // local: the slot, or a device panic where there is none.
            ("unwrap", Ty::OptRecvSlot(c) | Ty::OptSendSlot(c)) if self.want_args(m, 0) => {
                let c = c.clone();
                let awaited = matches!(&receiver.kind, ExprKind::Await(inner) if matches!(inner.kind, ExprKind::Recv(_) | ExprKind::Reserve(_)));
                if !awaited && !matches!(receiver.kind, ExprKind::Local(_)) {
                    self.diags.error(m.method.span(), "`unwrap` takes the slot of `rx.recv().await` or of a local: write `rx.recv().await.unwrap()`, or `while let Some(slot) = rx.recv().await`");
                    return err(span);
                }
                let ty = match rty {
                    Ty::OptSendSlot(_) => Ty::SendSlot(c),
                    _ => Ty::RecvSlot(c),
                };
                mk(ExprKind::Unwrap(Box::new(receiver)), ty, span)
            }
            // `split_at` of a slot: of the slot as a slice (`&slot[..]`).
            ("split_at" | "split_at_mut", Ty::SendSlot(c) | Ty::RecvSlot(c))
                if c.elem.scalar().is_some() =>
            {
                let elem = c.elem.scalar().unwrap_or(Scalar::U32);
                let usize_ty = Ty::Scalar(Scalar::Usize);
                let whole = mk(
                    ExprKind::Range(
                        Box::new(mk(ExprKind::Lit(Lit::Int(0)), usize_ty.clone(), span)),
                        Box::new(mk(
                            ExprKind::Lit(Lit::Int(u128::from(c.len))),
                            usize_ty,
                            span,
                        )),
                    ),
                    Ty::Range,
                    span,
                );
                let mutable = matches!(rty, Ty::SendSlot(_));
                let slice = mk(
                    ExprKind::SubSlice(Box::new(receiver), Box::new(whole)),
                    Ty::Slice { elem, mutable },
                    span,
                );
                self.split_method(name, slice, m, span)
            }
            ("take", Ty::OptRecvSlot(_)) if self.want_args(m, 0) => {
                match self.local_of(&receiver, "take") {
                    Some(id) if !self.locals[id.0 as usize].mutable => {
                        self.diags.error(
                            receiver.span,
                            "`take` leaves `None` in its place: declare it `let mut`",
                        );
                    }
                    Some(_) => {}
                    None => return err(span),
                }
                mk(ExprKind::SlotTake(Box::new(receiver)), rty.clone(), span)
            }
            ("is_some" | "is_none", Ty::OptRecvSlot(_)) if self.want_args(m, 0) => {
                // Of a local, or of a receive whose slot is released at once.
                let awaited = matches!(&receiver.kind, ExprKind::Await(inner) if matches!(inner.kind, ExprKind::Recv(_)));
                if !awaited && !matches!(receiver.kind, ExprKind::Local(_)) {
                    self.diags.error(m.method.span(), format!("`{name}` asks a local or a receive: `rx.recv().await.{name}()`, or `let next = rx.recv().await;` first"));
                    return err(span);
                }
                mk(
                    ExprKind::OptIsSome(Box::new(receiver), name == "is_some"),
                    Ty::Scalar(Scalar::Bool),
                    span,
                )
            }
            ("par_iter" | "par_iter_mut", Ty::SendSlot(c) | Ty::RecvSlot(c))
                if self.want_args(m, 0) =>
            {
                let want_mut = name == "par_iter_mut";
                if want_mut && matches!(rty, Ty::RecvSlot(_)) {
                    self.diags.error(
                        receiver.span,
                        "a received slot is read-only: `par_iter_mut` works on a reserved slot",
                    );
                }
                self.local_of(&receiver, name);
                match &c.elem {
                    ChanElem::Scalar(elem) => self.par_source(receiver, *elem, want_mut, span),
                    ChanElem::Tile { .. } | ChanElem::Tiles(_) => {
                        self.diags.error(m.method.span(), "a tile is stored in the layout the tensor cores read, not as an array: read its elements as `tile[r][c]`, in a parallel loop over `(0..R * C).into_par_iter()` with `r = i / C` and `c = i % C`");
                        err(span)
                    }
                    ChanElem::Struct { id, name, .. } => {
                        let shape = ParShape::Structs {
                            id: *id,
                            name: name.clone(),
                            mutable: want_mut,
                        };
                        if self.par_locals_start.is_some() {
                            return self.par_source(receiver, Scalar::U32, want_mut, span);
                        }
                        mk(
                            ExprKind::ParSource(Box::new(receiver)),
                            Ty::ParIter(shape),
                            span,
                        )
                    }
                }
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// A method of a one-shot end, a barrier or a shared value.
    pub(super) fn sync_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("send", Ty::OneshotSender(s)) if self.want_args(m, 1) => {
                let s = *s;
                if self.par_locals_start.is_some() || self.is_kernel() {
                    self.diags.error(m.method.span(), "`send` of a one-shot value is role code: every iteration of a parallel loop would send");
                    return err(span);
                }
                self.local_of(&receiver, "send");
                let want = Ty::Scalar(s);
                let v = self.expr(&mut m.args[0], Some(&want));
                let mut v = self.auto_deref(v);
                self.expect(&mut v, &want);
                mk(
                    ExprKind::OneshotSend(Box::new(receiver), Box::new(v)),
                    Ty::Unit,
                    span,
                )
            }
            ("recv", Ty::OneshotReceiver(s)) if self.want_args(m, 0) => {
                let s = *s;
                if self.par_locals_start.is_some() || self.is_kernel() {
                    self.diags.error(
                        m.method.span(),
                        "`recv()` of a one-shot value is role code: await it in a role",
                    );
                    return err(span);
                }
                self.local_of(&receiver, "recv");
                mk(
                    ExprKind::OneshotRecv(Box::new(receiver)),
                    Ty::Future(Box::new(Ty::Scalar(s))),
                    span,
                )
            }
            ("wait", Ty::BarrierRef | Ty::Barrier) if self.want_args(m, 0) => {
                if self.par_locals_start.is_some() || self.is_kernel() {
                    self.diags.error(m.method.span(), "`wait()` on a barrier is role code: await it in a role (the kernel body and parallel loops cannot wait)");
                    return err(span);
                }
                mk(
                    ExprKind::BarrierWait(Box::new(receiver)),
                    Ty::Future(Box::new(Ty::Unit)),
                    span,
                )
            }
            ("get", Ty::SharedRef(s) | Ty::Shared(s)) if self.want_args(m, 0) => {
                let s = *s;
                mk(ExprKind::SharedGet(Box::new(receiver)), Ty::Scalar(s), span)
            }
            ("set", Ty::SharedRef(s) | Ty::Shared(s)) if self.want_args(m, 1) => {
                let s = *s;
                if self.par_locals_start.is_some() {
                    self.diags.error(m.method.span(), "`set` on a shared value is role code: every iteration of a parallel loop would write it");
                    return err(span);
                }
                let want = Ty::Scalar(s);
                let v = self.expr(&mut m.args[0], Some(&want));
                let mut v = self.auto_deref(v);
                self.expect(&mut v, &want);
                mk(
                    ExprKind::SharedSet(Box::new(receiver), Box::new(v)),
                    Ty::Unit,
                    span,
                )
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// Whether a channel operation may be used here; reports it inside a parallel loop's
    /// closure.
    pub(super) fn no_channel_ops_in_par(&mut self, span: Span, what: &str) -> bool {
        if self.par_locals_start.is_some() {
            self.diags.error(span, format!("`{what}` inside a `par_iter` closure: channel operations belong to the role, outside the parallel loop"));
            return false;
        }
        true
    }

    /// The scalar of a payload that `copy_from`/`copy_to` move; `None` after reporting a struct
    /// payload (its slot is stored field by field on the GPU, not as the host's array).
    fn copy_payload_elem(&mut self, c: &ChanTy, what: &str, span: Span) -> Option<Scalar> {
        match &c.elem {
            ChanElem::Scalar(s) => Some(*s),
            ChanElem::Tile { .. } | ChanElem::Tiles(_) => {
                self.diags.error(span, format!("`{what}` copies arrays of scalars; a tile is filled with `slot.load(matrix, [row, col])` and read as `tile[r][c]`"));
                None
            }
            ChanElem::Struct { name, .. } => {
                self.diags.error(span, format!("`{what}` copies arrays of scalars; a slot of `{name}` is written with `slot.par_iter_mut()` and read with `slot.par_iter()`"));
                None
            }
        }
    }

    /// The slice of global memory `copy_from` reads (`&[elem]`) or `copy_to` writes
    /// (`&mut [elem]`); `None` after reporting anything else.
    fn copy_slice_arg(
        &mut self,
        arg: &mut syn::Expr,
        method: &str,
        elem: Scalar,
        writes: bool,
    ) -> Option<Expr> {
        let slice = self.expr(arg, None);
        match slice.ty {
            Ty::Slice { elem: e, mutable } if e == elem && (mutable || !writes) => Some(slice),
            Ty::Error => None,
            ref t => {
                let want = if writes { "&mut " } else { "&" };
                self.diags.error(
                    slice.span,
                    format!(
                        "`{method}` takes a `{want}[{elem}]` slice of global memory, found `{t}`"
                    ),
                );
                None
            }
        }
    }
}
