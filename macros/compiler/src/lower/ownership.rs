//! Ownership, followed statically: which locals own something whose drop has an effect (a
//! sender closes its channel, a receiver closes it from the other side unless its role has seen
//! the end, a received slot is released, a reserved slot must be sent), when they are moved,
//! and the drops at the end of each scope.
//!
//! A move must happen at the level its local was made at, so that every path drops the same
//! things; the lowering reports a move inside a branch or loop instead of following it per path.
//!
//! A received slot's ring position is the receiving ring's held register while it is the only
//! slot of its channel the role holds; a slot kept in a mutable local (which may be reassigned),
//! in an `Option`, or held while the role receives another slot of the channel has a register of
//! its own ([`SlotRef`]).

use proc_macro2::Span;

use super::values::{SlotRef, Val};
use super::Lowerer;
use crate::ir::{Block, ChannelId, Inst, SiteKind, Value};
use crate::tir::{Expr, ExprKind, LocalId};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// A local's value.
    pub(super) fn local_value(&mut self, id: LocalId) -> Val {
        if self.frame().moved.contains(&id) {
            // rustc reports the use after move; keep lowering.
        }
        self.frame().locals.get(&id).cloned().unwrap_or(Val::Unit)
    }

    /// Binds `local` to `v`: scalars, tuples and `block_tiles` iterators get registers of their
    /// own, arrays the layout their local wants; a slot kept in a mutable local or in an
    /// `Option` gets a register for its ring position; a channel end or slot is owned by the
    /// current scope.
    pub(super) fn bind(&mut self, local: LocalId, v: Val, span: Span) {
        let v = self.materialize(local, v);
        let v = match v {
            Val::Tuple(values) => Val::Tuple(
                values
                    .iter()
                    .map(|x| {
                        let c = self.new_value(self.values[x.0 as usize].ty, None);
                        self.emit(Inst::Copy { dst: c, src: *x });
                        c
                    })
                    .collect(),
            ),
            Val::Scalar(s) => {
                let ty = self.values[s.0 as usize].ty;
                let name = self.func().local(local).name.clone();
                let copy = self.new_value(ty, Some(&name));
                self.emit(Inst::Copy { dst: copy, src: s });
                Val::Scalar(copy)
            }
            Val::Tiles {
                next,
                step,
                len,
                tile,
            } => {
                // A BlockTiles local is mutable state: give it its own registers.
                let fresh = [next, step, len, tile].map(|v| {
                    let c = self.new_value(Scalar::Usize, None);
                    self.emit(Inst::Copy { dst: c, src: v });
                    c
                });
                Val::Tiles {
                    next: fresh[0],
                    step: fresh[1],
                    len: fresh[2],
                    tile: fresh[3],
                }
            }
            Val::RecvSlot(slot) if self.func().local(local).mutable => {
                let name = self.func().local(local).name.clone();
                Val::RecvSlot(self.own_position(slot, &name))
            }
            Val::OptRecvSlot { slot, some } => {
                let name = self.func().local(local).name.clone();
                let slot = self.own_position(slot, &name);
                let flag = self.new_value(Scalar::Bool, None);
                self.emit(Inst::Copy {
                    dst: flag,
                    src: some,
                });
                Val::OptRecvSlot { slot, some: flag }
            }
            other => other,
        };
        let owned = matches!(
            v,
            Val::Sender(_)
                | Val::Receiver(..)
                | Val::RecvSlot(_)
                | Val::SendSlot(_)
                | Val::OptRecvSlot { .. }
                | Val::PendingMma(_)
        );
        self.frame().locals.insert(local, v);
        if owned {
            self.own(local, span);
        }
    }

    /// `slot` with its ring position in a register of its own (named `name`).
    fn own_position(&mut self, slot: SlotRef, name: &str) -> SlotRef {
        let dst = self.new_value(Scalar::U32, Some(&format!("{name}.slot")));
        self.position_into(dst, slot);
        SlotRef {
            chan: slot.chan,
            rx: slot.rx,
            at: Some(dst),
        }
    }

    /// `dst` = the ring position of `slot`.
    fn position_into(&mut self, dst: Value, slot: SlotRef) {
        match slot.at {
            Some(src) => self.emit(Inst::Copy { dst, src }),
            None => self.emit(Inst::HeldSlot {
                dst,
                chan: slot.chan,
                rx: slot.rx,
            }),
        }
    }

    /// Whether the current role holds a slot of receiver `(chan, rx)` at the ring's held
    /// register: a local of a frame being inlined, not moved. A `recv` of the receiver then
    /// takes its slot into a register of its own, leaving the held one to that slot.
    pub(super) fn holds_implicit_slot(&self, chan: ChannelId, rx: u32) -> bool {
        self.held_slots(chan, rx).1
    }

    /// How many slots of receiver `(chan, rx)` the current role may hold (its live locals that
    /// hold a received slot or the `Option` of one), and whether one of them is at the ring's
    /// held register.
    fn held_slots(&self, chan: ChannelId, rx: u32) -> (u32, bool) {
        let (mut n, mut implicit) = (0, false);
        for f in &self.frames {
            for (id, _) in f.scopes.iter().flat_map(|s| &s.owned) {
                if f.moved.contains(id) {
                    continue;
                }
                let slot = match f.locals.get(id) {
                    Some(Val::RecvSlot(s)) | Some(Val::OptRecvSlot { slot: s, .. }) => s,
                    _ => continue,
                };
                if slot.chan == chan && slot.rx == rx {
                    n += 1;
                    implicit |= slot.at.is_none();
                }
            }
        }
        (n, implicit)
    }

    /// A receive of receiver `(chan, rx)` that holds `taking` of its slots at once, while the
    /// role holds so many that the ring has fewer left, would wait forever (the sender needs
    /// one of them back): an error at the receive.
    pub(super) fn check_held(&mut self, chan: ChannelId, rx: u32, taking: u32, span: Span) {
        let (held, _) = self.held_slots(chan, rx);
        let depth = self.channels[chan.0 as usize].ty.depth;
        if held + taking > depth {
            let name = self.channels[chan.0 as usize].name.clone();
            self.diags.error(span, format!("this receive waits while the role holds {held} slot{} of channel `{name}`, whose ring has {depth}: the sender needs one of them back before it can send, so it would wait forever; make the ring deeper (`channel::<_, {}>()`) or release a slot first", if held == 1 { "" } else { "s" }, held + taking));
        }
    }

    /// The current scope owns `local`, made at the current `cond_depth`, and drops it at its end.
    fn own(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let frame = self.frame();
        frame.decl_depth.insert(local, depth);
        frame.moved.remove(&local);
        if let Some(s) = frame.scopes.last_mut() {
            s.owned.push((local, span));
        }
    }

    /// `local` is moved: its scope does not drop it. A move at another `cond_depth` than the
    /// local's own is an error.
    pub(super) fn mark_moved(&mut self, local: LocalId, span: Span) {
        let depth = self.cond_depth;
        let decl = self.frame().decl_depth.get(&local).copied().unwrap_or(0);
        if decl != depth {
            let name = self.func().local(local).name.clone();
            self.diags.error(span, format!("`{name}` is moved (sent, dropped or passed on) inside a branch or loop it was not created in; this is not supported yet: move it on every path at the same level"));
        }
        self.frame().moved.insert(local);
    }

    /// `drop(x)` of a local: its drop, here instead of at the end of its scope.
    pub(super) fn drop_expr(&mut self, v: &Expr, span: Span) -> Val {
        if let ExprKind::Local(id) = v.kind {
            self.drop_local(id, v.span);
            self.mark_moved(id, span);
        }
        Val::Unit
    }

    /// Emits the drops of scope `index` (not popping it).
    pub(super) fn exit_scope_drops(&mut self, index: usize) {
        let owned: Vec<(LocalId, Span)> = self
            .frame()
            .scopes
            .get(index)
            .map(|s| s.owned.clone())
            .unwrap_or_default();
        for (local, span) in owned.into_iter().rev() {
            self.drop_local(local, span);
        }
    }

    /// The drop of `local`, unless it was moved: a sender closes its channel, a receiver closes
    /// it from the receiving side (unless its role has seen the end), a received slot is
    /// released, and a reserved slot dropped without `send` is an error.
    fn drop_local(&mut self, local: LocalId, span: Span) {
        if self.frame().moved.contains(&local) {
            return;
        }
        match self.frame().locals.get(&local).cloned() {
            // Reported once per slot, not once per path that drops it.
            Some(Val::SendSlot(_)) if self.frame().unsent_reported.insert(local) => {
                let name = self.func().local(local).name.clone();
                self.diags.error(span, format!("the reserved slot `{name}` is dropped without being sent: call `{name}.send()` on every path"));
            }
            Some(Val::SendSlot(_)) => {}
            Some(v) => self.drop_value(&v, span),
            None => {}
        }
    }

    /// The drop of value `v` (a sender, a receiver, a received slot or its `Option`).
    pub(super) fn drop_value(&mut self, v: &Val, span: Span) {
        match *v {
            // Dropped unawaited, an issued mma is waited for all the same: its tiles' slots
            // and its accumulator are free again after the drop, in Rust's borrows as here.
            Val::PendingMma(group) => self.mma_wait_for(group),
            Val::Sender(c) => {
                let name = self.channels[c.0 as usize].name.clone();
                let site = self.site(
                    SiteKind::Wait,
                    format!("closing channel `{name}` (dropping its sender waits for a free slot)"),
                    span,
                );
                self.emit(Inst::Close { chan: c, site });
            }
            Val::Receiver(c, k) => self.close_receiver(c, k),
            Val::RecvSlot(slot) => self.emit(Inst::Release {
                chan: slot.chan,
                slot: slot.at,
                rx: slot.rx,
            }),
            Val::OptRecvSlot { slot, some } => {
                let release = self.sub_block(|l| {
                    l.emit(Inst::Release {
                        chan: slot.chan,
                        slot: slot.at,
                        rx: slot.rx,
                    })
                });
                self.emit(Inst::If {
                    cond: some,
                    then: release,
                    else_: Block::default(),
                });
            }
            _ => {}
        }
    }

    /// The receiver of `chan` is dropped, or closed: unless the role has seen the channel's end
    /// for sure, or closed it already with `close()`, the channel is closed from the receiving
    /// side, which makes it closable. (A receiver dropped on several paths, `return`s and the
    /// end of its scope, is closed on each; one of them runs.)
    pub(super) fn close_receiver(&mut self, chan: ChannelId, rx: u32) {
        let key = (chan, rx);
        if self.dead || self.ended.contains(&key) || self.closed_rx.contains(&key) {
            return;
        }
        self.closing.insert(chan);
        self.emit(Inst::CloseRecv { chan, rx });
    }

    /// `place = value` of a local holding a received slot or its `Option`: the new value is
    /// taken (a local it comes from is moved), the old one dropped (released), and the local's
    /// registers take the new one.
    pub(super) fn assign_slot(&mut self, id: LocalId, value: &Expr, span: Span) {
        let new = self.expr(value);
        if let ExprKind::Local(from) = value.kind {
            self.mark_moved(from, value.span);
        }
        let old = self.frame().locals.get(&id).cloned();
        if !self.frame().moved.contains(&id) {
            if let Some(old) = &old {
                self.drop_value(old, span);
            }
        }
        match (old, new) {
            (Some(Val::RecvSlot(SlotRef { at: Some(dst), .. })), Val::RecvSlot(slot)) => {
                self.position_into(dst, slot);
            }
            (
                Some(Val::OptRecvSlot {
                    slot: SlotRef { at: Some(dst), .. },
                    some: flag,
                }),
                Val::OptRecvSlot { slot, some },
            ) => {
                self.position_into(dst, slot);
                self.emit(Inst::Copy {
                    dst: flag,
                    src: some,
                });
            }
            _ => {}
        }
        self.frame().moved.remove(&id);
    }

    /// `opt.take()` of a local holding the `Option` of a receive: a copy of it (its ring
    /// position in a register of its own), and `None` left in the local.
    pub(super) fn slot_take(&mut self, opt: &Expr) -> Val {
        let ExprKind::Local(id) = opt.kind else {
            return Val::Unit;
        };
        let Some(Val::OptRecvSlot { slot, some }) = self.frame().locals.get(&id).cloned() else {
            return Val::Unit;
        };
        let name = self.func().local(id).name.clone();
        let taken = self.own_position(slot, &name);
        let flag = self.new_value(Scalar::Bool, None);
        self.emit(Inst::Copy {
            dst: flag,
            src: some,
        });
        self.emit(Inst::Const {
            dst: some,
            imm: crate::ir::Imm::Bool(false),
        });
        Val::OptRecvSlot {
            slot: taken,
            some: flag,
        }
    }

    /// Whether `slot` was moved (sent or dropped) before this use, which rustc reports as a use
    /// after move: the lowering only notes the conflict, so as not to report it twice.
    pub(super) fn check_not_moved(&mut self, slot: &Expr) -> bool {
        let moved = matches!(slot.kind, ExprKind::Local(id) if self.frame().moved.contains(&id));
        self.ownership_conflict |= moved;
        moved
    }

    /// A slot read here must not be used after a move, nor filled by a `copy_from` or a tile
    /// `load` still in flight.
    pub(super) fn check_not_copied(&mut self, slot: &Expr, span: Span) {
        if self.check_not_moved(slot) {
            return;
        }
        if let ExprKind::Local(id) = slot.kind {
            if self.frame().copied.contains(&id) {
                let name = self.func().local(id).name.clone();
                self.diags.error(span, format!("`{name}` was filled by a bulk copy (`copy_from` or `load`), whose bytes are still in flight: send it, and read the data on the receiving side"));
            }
        }
    }
}
