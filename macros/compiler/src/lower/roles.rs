//! One role: an `on_warps(range, call)` (or `on_warpgroups`) of the kernel's `join!`, lowered into an [`ir::Role`].
//!
//! The role's warp range is checked against the kernel's warps and the other roles, the ends it
//! is handed are claimed for it, its function is inlined, and the role barriers its parallel
//! loops asked for are kept only where the writes may overlap or another access of the role
//! touches the same memory; those its shared arrays need are placed (`shared_sync`). A role of several warps may not make its warps meet inside a
//! `join!` branch or choose a `select!` arm.

use super::values::Val;
use super::Lowerer;
use crate::ir::{self, Block, ChannelId, Inst, RoleId};
use crate::target::MAX_WARPS;
use crate::tir::{Expr, ExprKind};

impl Lowerer<'_> {
    /// Lowers one `on_warps(range, call)` of `join!` into a role.
    pub(super) fn role(&mut self, e: &Expr, index: usize, warps: u32) -> Option<ir::Role> {
        let ExprKind::OnWarps {
            start,
            end,
            group,
            range,
            call,
        } = &e.kind
        else {
            return None;
        };
        let (start, end, group) = (*start, *end, *group);
        // The range as the user wrote it: in warps, or in warpgroups with the warps it covers.
        let written = if group == 1 {
            format!("the warp range {start}..{end}")
        } else {
            format!(
                "the warpgroup range {}..{} (warps {start}..{end})",
                start / group,
                end / group
            )
        };
        if start >= end {
            self.diags.error_at(
                range,
                format!("{written} is empty: a role needs at least one warp"),
            );
            return None;
        }
        if end > warps {
            let message = if end > MAX_WARPS {
                format!("{written} is past the kernel's {warps} warps, and a block has at most {MAX_WARPS} warps (1024 threads): give the role a range within `0..{}`", warps / group)
            } else if group == 1 {
                format!("{written} is past the kernel's {warps} warps: raise `#[kernel(warps = {end})]` or move the role")
            } else {
                format!("{written} is past the kernel's {warps} warps: raise `#[kernel(warpgroups = {})]` or move the role", end / group)
            };
            self.diags.error_at(range, message);
            return None;
        }
        if let Some((other, a, b)) = self
            .warp_owners
            .iter()
            .find(|(_, a, b)| start < *b && *a < end)
        {
            self.diags.error_at(
                range,
                format!(
                    "{written} overlaps role `{other}` on warps {a}..{b}: each warp runs one role"
                ),
            );
            return None;
        }
        let ExprKind::Call(fid, args) = &call.kind else {
            return None;
        };
        let role_id = RoleId(index as u32);
        self.role = Some(role_id);
        self.role_span = call.span;
        self.warp_owners
            .push((self.prog.function(*fid).name.clone(), start, end));
        self.accesses.clear();
        self.reserves.clear();
        self.barrier_requests.clear();
        self.store_requests.clear();
        self.role_stores.clear();
        self.ended.clear();
        self.closed_rx.clear();
        self.mma_groups.clear();
        self.role_receivers.clear();
        let name = self.prog.function(*fid).name.clone();
        let mut body = self.sub_block(|l| {
            let mut vals: Vec<Val> = args.iter().map(|a| l.expr(a)).collect();
            for v in vals.iter_mut() {
                match v {
                    Val::Sender(c) => l.claim(*c, true, role_id),
                    Val::Receiver(c, sub) => {
                        // In the role, a receiver is which of the role's receivers of its
                        // channel it is.
                        let nth = l.claim_receiver(*c, *sub, role_id);
                        *v = Val::Receiver(*c, nth);
                    }
                    Val::Barrier(b) => {
                        let takers = &mut l.barriers[*b as usize].0;
                        if !takers.contains(&role_id) {
                            takers.push(role_id);
                        }
                    }
                    Val::OneshotTx(k) => {
                        let end = &mut l.oneshots[*k as usize].sender;
                        l.ownership_conflict |= end.is_some_and(|r| r != role_id);
                        *end = Some(role_id);
                    }
                    Val::OneshotRx(k) => {
                        let end = &mut l.oneshots[*k as usize].receiver;
                        l.ownership_conflict |= end.is_some_and(|r| r != role_id);
                        *end = Some(role_id);
                    }
                    _ => {}
                }
            }
            l.inline_call(*fid, vals, call.span);
        });
        self.prune_barriers(&mut body);
        super::shared_sync::place_barriers(&mut body, end - start);
        if end - start > 1 {
            self.check_join_branches(&body, &name, end - start);
            // Each warp would choose its own arm: the warps of one role could take items of two
            // channels, and their parallel loops would split two different slots.
            for span in std::mem::take(&mut self.selects) {
                self.diags.error(span, format!("`select!` in role `{name}`, which runs on {} warps: each warp would choose an arm on its own, and the warps could take items of different channels; give the role one warp (`on_warps({start}..{})`), or receive from one channel at a time", end - start, start + 1));
            }
        }
        self.joins.clear();
        self.selects.clear();
        self.role = None;
        Some(ir::Role {
            name,
            first_warp: start,
            end_warp: end,
            body,
        })
    }

    /// In a role of several warps, each warp runs a `join!`'s branches on its own schedule, so a
    /// branch cannot make the role's warps meet (a role barrier after a parallel loop whose
    /// results other threads read, a reduction over the role's threads, a role-code atomic).
    fn check_join_branches(&mut self, body: &Block, role: &str, warps: u32) {
        let mut meets = Vec::new();
        crate::ir::for_each_inst(body, &mut |i| {
            if let Inst::Join { branches } = i {
                let mut meet = false;
                for b in branches {
                    crate::ir::for_each_inst(b, &mut |i| {
                        meet |= i.meets_role_threads();
                    });
                }
                meets.push(meet);
            }
        });
        for (meet, span) in meets.into_iter().zip(self.joins.clone()) {
            if meet {
                self.diags.error(span, format!("a branch of this `join!` makes the {warps} warps of role `{role}` meet (a reduction over the role's threads, a parallel loop whose results other threads read next, an atomic in role code, which the role's first thread runs for all, or an mma, which a warpgroup's warps issue together); the warps of a role run `join!` branches each on its own schedule, so they cannot meet inside one: move that code out of the `join!`, or give the role one warp"));
            }
        }
    }

    /// Records which role holds an end. A second role taking the same end is a use after move,
    /// which rustc reports on the shadow code; the kernel is then not emitted.
    fn claim(&mut self, c: ChannelId, sender: bool, role: RoleId) {
        let ch = &mut self.channels[c.0 as usize];
        if sender {
            if ch.producer.is_some() {
                self.ownership_conflict = true;
            }
            ch.producer = Some(role);
        } else {
            ch.consumers.push(role);
        }
    }

    /// Records that the current role takes subscription `sub` of channel `c` (0 for the
    /// channel's own receiver); returns which of the role's receivers of `c` it is. A role may
    /// take several receivers of a broadcast (`rx.subscribe()`), each with a ring position of
    /// its own; one receiver given twice is a use after move, which rustc reports on the shadow
    /// code.
    fn claim_receiver(&mut self, c: ChannelId, sub: u32, role: RoleId) -> u32 {
        let taken = self.role_receivers.entry(c).or_default();
        if taken.contains(&sub) || !self.claimed.insert((c, sub)) {
            self.ownership_conflict = true;
            return 0;
        }
        taken.push(sub);
        let nth = taken.len() as u32 - 1;
        self.claim(c, false, role);
        nth
    }

    /// Removes the barrier placeholders whose loop writes memory no other access of the role
    /// touches and whose iterations cannot overlap.
    fn prune_barriers(&mut self, body: &mut Block) {
        let decisions: Vec<bool> = self
            .barrier_requests
            .iter()
            .enumerate()
            .map(|(k, writes)| {
                writes.iter().any(|(key, tiles)| {
                    let all = self.accesses.get(key).copied().unwrap_or(0);
                    if self.store_requests.contains(&k) {
                        all > self.role_stores.get(key).copied().unwrap_or(0)
                    } else {
                        !tiles || all > 1
                    }
                })
            })
            .collect();
        let mut it = decisions.into_iter();
        prune(body, &mut it);
        fn prune(block: &mut Block, decisions: &mut impl Iterator<Item = bool>) {
            block.0.retain_mut(|inst| {
                match inst {
                    Inst::If { then, else_, .. } => {
                        prune(then, decisions);
                        prune(else_, decisions);
                    }
                    Inst::Loop { body, .. } => prune(body, decisions),
                    Inst::Join { branches } => {
                        for b in branches {
                            prune(b, decisions);
                        }
                    }
                    Inst::RoleBarrier { .. } => return decisions.next().unwrap_or(true),
                    _ => {}
                }
                true
            });
        }
    }
}
