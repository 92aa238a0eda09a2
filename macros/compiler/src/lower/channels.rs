//! Channels in role code: the awaited operations (`reserve`, `recv`, and the bulk copies
//! `copy_from` and `copy_to` between global memory and a slot), `send`, and the slot a
//! `recv().await` produced. Each wait gets a site, so that the GPU can report where it hung.
//!
//! The channels are made by `kernel` and their ends handed out by `roles`; this module holds
//! what role code does with an end.

use proc_macro2::Span;

use super::values::{SlotRef, Val};
use super::{Lowerer, UNWRAP_NONE};
use crate::ir::{BinOp, ChannelId, Imm, Inst, RecvEnd, SiteKind, Space, Value};
use crate::tir::{Expr, ExprKind};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `inner.await`: a helper call, a `join!` of futures, or a wait on a channel, one-shot
    /// value or barrier.
    pub(super) fn await_expr(&mut self, inner: &Expr, span: Span) -> Val {
        match &inner.kind {
            ExprKind::JoinFutures(branches) => self.join_futures(branches, span),
            ExprKind::Call(fid, args) => {
                let vals = self.call_args(args);
                self.inline_call(*fid, vals, span)
            }
            ExprKind::OneshotRecv(rx) => self.oneshot_recv(rx, span),
            ExprKind::BarrierWait(b) => self.barrier_wait(b, span),
            ExprKind::Reserve(tx) => self.reserve(tx, span),
            ExprKind::Recv(rx) => self.recv(rx, span, None),
            ExprKind::CopyTo(slot, dst) => self.copy_to(slot, dst, inner.span),
            ExprKind::CopyFrom(slot, src) => self.copy_from(slot, src, inner.span),
            ExprKind::TileLoad {
                slot,
                matrix,
                row,
                col,
            } => self.tile_load(slot, matrix, (row, col), inner.span),
            ExprKind::TileStore {
                slot,
                matrix,
                row,
                col,
                rows,
            } => self.tile_store(slot, matrix, (row, col), rows.as_deref(), inner.span),
            ExprKind::Mma { acc, a, b, b_kn } => {
                if let Val::PendingMma(group) = self.mma_issue(acc, a, (b, *b_kn), inner.span) {
                    self.mma_wait_for(group);
                }
                Val::Unit
            }
            ExprKind::MmaStages {
                acc,
                rx,
                count,
                b_kn,
            } => self.mma_stages(acc, rx, count, *b_kn, inner.span),
            ExprKind::Local(id) => self.await_local(*id, inner.span),
            _ => Val::Unit,
        }
    }

    /// `tx.reserve().await`: a free slot to fill, or `None` on a channel whose receivers have
    /// all closed (only a closable channel's reserve says which).
    fn reserve(&mut self, tx: &Expr, span: Span) -> Val {
        match self.expr(tx) {
            Val::Sender(c) => {
                let name = self.channels[c.0 as usize].name.clone();
                let site = self.site(
                    SiteKind::Wait,
                    format!("`reserve()` on channel `{name}`"),
                    span,
                );
                let some = self
                    .closable
                    .contains(&c)
                    .then(|| self.new_value(Scalar::Bool, None));
                *self.reserves.entry(c).or_insert(0) += 1;
                self.emit(Inst::Reserve {
                    chan: c,
                    site,
                    some,
                });
                Val::OptSendSlot { chan: c, some }
            }
            _ => Val::Unit,
        }
    }

    /// `rx.recv().await`: whether an item came, and its slot. The slot's ring position goes to
    /// the ring's held register, or to a register of its own when the role holds another slot
    /// of the channel there. After the role closed its receiver, the answer is `None`.
    ///
    /// With `unwrap` (the span of `.unwrap()` on the awaited receive): the slot alone, the
    /// stream's end being a panic there that the role raises later ([`RecvEnd::Fail`]).
    pub(super) fn recv(&mut self, rx: &Expr, span: Span, unwrap: Option<Span>) -> Val {
        match self.expr(rx) {
            Val::Receiver(c, rx) if self.closed_rx.contains(&(c, rx)) => {
                let slot = SlotRef {
                    chan: c,
                    rx,
                    at: None,
                };
                match unwrap {
                    Some(at) => {
                        let none = self.konst(Scalar::Bool, Imm::Bool(true));
                        self.panic_if(none, UNWRAP_NONE, at);
                        Val::RecvSlot(slot)
                    }
                    None => {
                        let some = self.konst(Scalar::Bool, Imm::Bool(false));
                        Val::OptRecvSlot { slot, some }
                    }
                }
            }
            Val::Receiver(c, rx) => {
                let name = self.channels[c.0 as usize].name.clone();
                let site = self.site(
                    SiteKind::Wait,
                    format!("`recv()` on channel `{name}`"),
                    span,
                );
                let end = match unwrap {
                    Some(at) => {
                        RecvEnd::Fail(self.site(SiteKind::Panic, UNWRAP_NONE.to_string(), at))
                    }
                    None => RecvEnd::Answer(self.new_value(Scalar::Bool, None)),
                };
                self.check_held(c, rx, 1, span);
                let at = self
                    .holds_implicit_slot(c, rx)
                    .then(|| self.new_value(Scalar::U32, None));
                self.emit(Inst::Recv {
                    chan: c,
                    end,
                    site,
                    slot: at,
                    rx,
                });
                let slot = SlotRef { chan: c, rx, at };
                match end {
                    RecvEnd::Answer(some) => Val::OptRecvSlot { slot, some },
                    RecvEnd::Fail(_) => Val::RecvSlot(slot),
                }
            }
            _ => Val::Unit,
        }
    }

    /// `rx.close()`: the receiver stops receiving; at the level the receiver was made at.
    pub(super) fn recv_close(&mut self, rx: &Expr, span: Span) -> Val {
        if let ExprKind::Local(id) = rx.kind {
            let depth = self.cond_depth;
            if self.frame().decl_depth.get(&id).copied().unwrap_or(0) != depth {
                let name = self.func().local(id).name.clone();
                self.diags.error(span, format!("`{name}.close()` inside a branch or loop `{name}` was not made in is not supported yet: close it at the level it was made at (or drop it there)"));
                return Val::Unit;
            }
        }
        if let Val::Receiver(c, k) = self.expr(rx) {
            self.close_receiver(c, k);
            // From here on `recv` answers `None`, and dropping the receiver does nothing.
            self.closed_rx.insert((c, k));
        }
        Val::Unit
    }

    /// `slot.send()` of a reserved slot, which moves it.
    pub(super) fn send_expr(&mut self, slot: &Expr, span: Span) -> Val {
        if let ExprKind::Local(id) = slot.kind {
            if let Some(Val::SendSlot(c)) = self.frame().locals.get(&id).cloned() {
                self.emit(Inst::Send { chan: c });
                self.mark_moved(id, span);
            }
        }
        Val::Unit
    }

    /// The channel of a `rx.recv()` (awaited or not), and which of the role's receivers of it.
    pub(super) fn recv_chan(&mut self, e: &Expr) -> Option<(ChannelId, u32)> {
        match &e.kind {
            ExprKind::Await(inner) => self.recv_chan(inner),
            ExprKind::Recv(rx) => match self.expr(rx) {
                Val::Receiver(c, k) => Some((c, k)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether an `Option` value holds its item, and the item: of a receive, a reserve,
    /// `tiles.next()` or a `checked_*` method. `None` for `some` where it always does (the
    /// reserve of a channel nothing closes from the receiving side). An `Option` held in a
    /// local is moved.
    pub(super) fn option_parts(&mut self, e: &Expr) -> Option<(Option<Value>, Val)> {
        let v = self.expr(e);
        if let (ExprKind::Local(id), Val::OptRecvSlot { .. }) = (&e.kind, &v) {
            self.mark_moved(*id, e.span);
        }
        Some(match v {
            Val::OptRecvSlot { slot, some } => (Some(some), Val::RecvSlot(slot)),
            Val::OptSendSlot { chan, some } => (some, Val::SendSlot(chan)),
            Val::OptRange { some, start, end } => (
                Some(some),
                Val::Range {
                    start,
                    end,
                    tiles: true,
                },
            ),
            Val::Tuple(v) if v.len() == 2 => (Some(v[0]), Val::Scalar(v[1])),
            Val::OptSlice { some, slice } => (Some(some), *slice),
            _ => return None,
        })
    }

    /// `slot.copy_to(dst).await` of a received slot.
    fn copy_to(&mut self, slot: &Expr, dst: &Expr, span: Span) -> Val {
        let (s, v) = (self.expr(slot), self.expr(dst));
        self.global_only(&v, dst, "copy_to");
        if let (
            Val::RecvSlot(SlotRef { chan: c, rx, at }),
            Val::Slice {
                ptr,
                len,
                mem,
                space: Space::Global,
                ..
            },
        ) = (s, v)
        {
            let n = self.channels[c.0 as usize].ty.len;
            let cap = self.usize_const(u64::from(n));
            let too_long = self.binary(BinOp::Gt, len, cap);
            let message =
                format!("copy_to: the destination is longer than the slot's {n} elements");
            self.panic_if(too_long, &message, span);
            let bulk = self.bulk_bytes(c, ptr, len);
            self.emit(Inst::CopyOut {
                chan: c,
                dst: ptr,
                len,
                bulk,
                slot: at,
                rx,
            });
            self.channels[c.0 as usize].bulk_reads = true;
            let key = self.slot_key(c);
            self.access(key);
            self.access(mem);
        }
        Val::Unit
    }

    /// `slot.copy_from(src).await` of a reserved slot.
    fn copy_from(&mut self, slot: &Expr, src: &Expr, span: Span) -> Val {
        self.check_not_copied(slot, span);
        let (s, v) = (self.expr(slot), self.expr(src));
        self.global_only(&v, src, "copy_from");
        if let (
            Val::SendSlot(c),
            Val::Slice {
                ptr,
                len,
                space: Space::Global,
                ..
            },
        ) = (s, v)
        {
            let n = self.channels[c.0 as usize].ty.len;
            let cap = self.usize_const(u64::from(n));
            let too_long = self.binary(BinOp::Gt, len, cap);
            let message = format!("copy_from: the source is longer than the slot's {n} elements");
            self.panic_if(too_long, &message, span);
            let bulk = self.bulk_bytes(c, ptr, len);
            self.emit(Inst::CopyIn {
                chan: c,
                src: ptr,
                len,
                bulk,
            });
            let key = self.slot_key(c);
            self.access(key);
            if let ExprKind::Local(id) = slot.kind {
                self.frame().copied.insert(id);
            }
        }
        Val::Unit
    }

    /// A bulk copy's other side is global memory: a slice of a slot is reported.
    fn global_only(&mut self, v: &Val, e: &Expr, what: &str) {
        if let Val::Slice {
            space: Space::Shared,
            ..
        } = v
        {
            self.diags.error(e.span, format!("`{what}` copies between a slot and global memory; this slice is part of a channel slot: copy it element by element in a parallel loop"));
        }
    }

    /// The bytes of a bulk copy between the global address `global` and a slot of channel
    /// `chan` that one `cp.async.bulk` moves: the 16-byte-aligned part of `len` elements, or 0
    /// when `global` is not 16-byte aligned (the role's threads then copy it all). Plain
    /// arithmetic, so that the loop-invariant pass computes it once for an invariant source.
    fn bulk_bytes(&mut self, chan: ChannelId, global: Value, len: Value) -> Value {
        // The checker allows bulk copies of scalar payloads only; the PTX writer refuses others.
        let size = self.channels[chan.0 as usize]
            .ty
            .elem
            .scalar()
            .map_or(0, Scalar::size);
        let size = self.usize_const(u64::from(size));
        let bytes = self.binary(BinOp::Mul, len, size);
        let whole = self.usize_const(!15);
        let whole = self.binary(BinOp::And, bytes, whole);
        let fifteen = self.usize_const(15);
        let low = self.binary(BinOp::And, global, fifteen);
        let zero = self.usize_const(0);
        let aligned = self.binary(BinOp::Eq, low, zero);
        let bulk = self.new_value(Scalar::Usize, None);
        self.emit(Inst::Select {
            dst: bulk,
            cond: aligned,
            if_true: whole,
            if_false: zero,
        });
        bulk
    }
}
