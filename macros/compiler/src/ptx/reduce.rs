//! Reductions (a parallel loop with a [`ParReduce`]): each thread folds its items, the lanes of
//! each warp combine by a butterfly of shuffles, and the warps' totals meet in shared memory.
//! With 4-byte sources 16-byte aligned and a short body, the thread's loop takes [`UNROLL`]
//! groups of four per iteration, every 16-byte load issued before the first item is folded;
//! then single groups, then the elements of a group that is not whole.

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::parallel::{straight_line, UNROLL};
use super::types::{bits_ty, mem_ty, space_name, Class};
use super::Writer;
use crate::ir::{ParFor, ParReduce, Space};

/// Most IR instructions (nested ones included) of a reduction's body and combination for which
/// its vector loop takes [`UNROLL`] groups per iteration. A longer body is arithmetic that the
/// other warps' issue already overlaps with a group's load, and each instruction of it would be
/// written `4 UNROLL` more times: `softmax`'s exponential (about 60 instructions) would double
/// the kernel's code for loads from shared memory.
const MAX_UNROLLED_ITEM: usize = 24;

/// Whether the body and the combination of a reduction are short enough to be unrolled
/// ([`MAX_UNROLLED_ITEM`]).
fn short_item(p: &ParFor, r: &ParReduce) -> bool {
    let mut n = 0;
    crate::ir::for_each_inst(&p.body, &mut |_| n += 1);
    crate::ir::for_each_inst(&r.combine, &mut |_| n += 1);
    n <= MAX_UNROLLED_ITEM
}

impl Writer<'_> {
    /// `acc = combine(lhs, rhs)` with the reduction's combining block.
    fn combine(&mut self, r: &ParReduce, lhs: &str, rhs: &str) -> WriteResult {
        let bt = bits_ty(self.k.ty(r.acc));
        let (l, rr, out, acc) = (
            self.reg(r.lhs),
            self.reg(r.rhs),
            self.reg(r.out),
            self.reg(r.acc),
        );
        self.line(format!("mov.{bt} {l}, {lhs};"))?;
        self.line(format!("mov.{bt} {rr}, {rhs};"))?;
        self.block(&r.combine)?;
        self.line(format!("mov.{bt} {acc}, {out};"))
    }

    /// A reduction (see [`ParReduce`] for the order): each thread folds the items of its groups
    /// of four, in increasing order whatever the loop that loads them, then the lanes of each
    /// warp combine by a butterfly of shuffles, then the warps' totals go through shared memory
    /// and every thread folds them in warp order.
    pub(super) fn par_reduce(&mut self, p: &ParFor, r: &ParReduce) -> WriteResult {
        if let Some(sc) = &r.scan {
            return self.par_scan(p, r, sc);
        }
        let (threads, warps, rtid, index) = {
            let c = self.role()?;
            (c.threads, c.warps, c.rtid.clone(), c.index)
        };
        let ty = self.k.ty(r.acc);
        let bt = bits_ty(ty);
        let len = self.reg(p.len);
        let (acc, identity) = (self.reg(r.acc), self.reg(r.identity));
        writeln!(
            self.body,
            "    // reduction over {} source(s)",
            p.sources.len()
        )?;
        self.line(format!("mov.{bt} {acc}, {identity};"))?;
        let done = self.label("red_done");
        // Sources of 4-byte elements, all 16-byte aligned, take whole groups in one load each.
        let misaligned = if p.sources.iter().all(|s| s.elem.size() == 4) && straight_line(&p.body) {
            let m = self.tmp(Class::Pred);
            self.line(format!("setp.ne.u32 {m}, 0, 0;"))?;
            for s in &p.sources {
                let b = self.reg(s.base);
                let low = self.tmp(Class::B32);
                match s.space {
                    Space::Global | Space::Local | Space::Const => {
                        let l = self.tmp(Class::B64);
                        self.line(format!("and.b64 {l}, {b}, 15;"))?;
                        self.line(format!("cvt.u32.u64 {low}, {l};"))?;
                    }
                    Space::Shared => self.line(format!("and.b32 {low}, {b}, 15;"))?,
                }
                let q = self.tmp(Class::Pred);
                self.line(format!("setp.ne.u32 {q}, {low}, 0;"))?;
                self.line(format!("or.pred {m}, {m}, {q};"))?;
            }
            Some(m)
        } else {
            None
        };
        let outer_exit = self.par_exit.replace(done.clone());
        // Thread t takes the groups g = t, t + T, ...: elements 4g .. 4g + 3, in order.
        let g = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {g}, {rtid};"))?;
        let (head, next) = (self.label("red_group"), self.label("red_next"));
        if let (Some(misaligned), true) = (&misaligned, short_item(p, r)) {
            self.reduce_unrolled(p, r, &g, misaligned, &head)?;
        }
        self.place_label(&head)?;
        let i = self.tmp(Class::B64);
        self.line(format!("shl.b64 {i}, {g}, 2;"))?;
        let pc = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u64 {pc}, {i}, {len};"))?;
        self.line(format!("@{pc} bra {done};"))?;
        let end = self.tmp(Class::B64);
        self.line(format!("add.u64 {end}, {i}, 4;"))?;
        if let Some(misaligned) = &misaligned {
            // A whole group with aligned sources: one 16-byte load per source, the body four
            // times (it has no control flow), in element order.
            let (partial, scalar) = (self.tmp(Class::Pred), self.label("red_scalar"));
            self.line(format!("setp.gt.u64 {partial}, {end}, {len};"))?;
            self.line(format!("or.pred {partial}, {partial}, {misaligned};"))?;
            self.line(format!("@{partial} bra {scalar};"))?;
            self.reduce_vector_groups(p, r, &i, 1)?;
            self.line(format!("bra {next};"))?;
            self.place_label(&scalar)?;
        }
        self.line(format!("min.u64 {end}, {end}, {len};"))?;
        let elem = self.label("red_elem");
        self.place_label(&elem)?;
        for s in &p.sources {
            let b = self.reg(s.base);
            let a = self.elem_addr(s.space, &b, &i, s.elem.size())?;
            if s.read {
                self.load(s.elem_value, s.space, &a)?;
            }
        }
        if let Some(ix) = p.index {
            let reg = self.reg(ix);
            self.line(format!("mov.u64 {reg}, {i};"))?;
        }
        self.block(&p.body)?;
        let item = self.reg(r.item);
        let acc_now = acc.clone();
        self.combine(r, &acc_now, &item)?;
        self.line(format!("add.u64 {i}, {i}, 1;"))?;
        let more = self.tmp(Class::Pred);
        self.line(format!("setp.lt.u64 {more}, {i}, {end};"))?;
        self.line(format!("@{more} bra {elem};"))?;
        self.place_label(&next)?;
        self.line(format!("add.u64 {g}, {g}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.par_exit = outer_exit;
        self.place_label(&done)?;
        let lane = self.reduce_lanes(r, &acc, &rtid)?;
        self.reduce_warps(r, &acc, &lane, &rtid, (warps, index))
    }

    /// The vector loop of a reduction whose sources are 4-byte and aligned (unless `misaligned`):
    /// while the thread's next [`UNROLL`] groups `g`, `g + T`, ... are whole, their 16-byte loads
    /// all issue first, then the body and the combination run on each group's items in element
    /// order, so the thread folds in the order the language defines with [`UNROLL`] loads per
    /// source in flight. The loop's trip count is known only at run time, so ptxas cannot unroll
    /// it itself. It leaves `g` at the first group it did not take, for the loop at `head`.
    fn reduce_unrolled(
        &mut self,
        p: &ParFor,
        r: &ParReduce,
        g: &str,
        misaligned: &str,
        head: &str,
    ) -> WriteResult {
        let threads = self.role()?.threads;
        let len = self.reg(p.len);
        let (n4, top) = (self.tmp(Class::B64), self.label("red_vec4"));
        self.line(format!("@{misaligned} bra {head};"))?;
        self.line(format!("shr.u64 {n4}, {len}, 2;"))?;
        self.place_label(&top)?;
        let (last, pc) = (self.tmp(Class::B64), self.tmp(Class::Pred));
        self.line(format!("add.u64 {last}, {g}, {};", (UNROLL - 1) * threads))?;
        self.line(format!("setp.ge.u64 {pc}, {last}, {n4};"))?;
        self.line(format!("@{pc} bra {head};"))?;
        let first = self.tmp(Class::B64);
        self.line(format!("shl.b64 {first}, {g}, 2;"))?;
        self.reduce_vector_groups(p, r, &first, UNROLL)?;
        self.line(format!("add.u64 {g}, {g}, {};", UNROLL * threads))?;
        self.line(format!("bra {top};"))
    }

    /// `count` whole aligned groups of the thread, the first at element `i`, the others every
    /// `4 T` elements after it: one 16-byte load per source and group, all issued before the
    /// first use (the later groups' at constant offsets from the first's address), then per
    /// group, in order, the body four times (it has no control flow) and the combination of each
    /// item into the accumulator.
    fn reduce_vector_groups(
        &mut self,
        p: &ParFor,
        r: &ParReduce,
        i: &str,
        count: u32,
    ) -> WriteResult {
        let threads = self.role()?.threads;
        let acc = self.reg(r.acc);
        let mut addrs = Vec::new();
        for s in &p.sources {
            let b = self.reg(s.base);
            addrs.push(self.elem_addr(s.space, &b, i, 4)?);
        }
        let mut loaded = Vec::new();
        for u in 0..count {
            let mut group = Vec::new();
            for (s, a) in p.sources.iter().zip(&addrs) {
                let regs: Vec<String> = (0..4).map(|_| self.tmp(Class::of(s.elem))).collect();
                if s.read {
                    let at = match u {
                        0 => a.clone(),
                        _ => format!("{a}+{}", 16 * u * threads),
                    };
                    self.line(format!(
                        "ld.{}.v4.{} {{{}}}, [{at}];",
                        space_name(s.space),
                        mem_ty(s.elem),
                        regs.join(", ")
                    ))?;
                }
                group.push(regs);
            }
            loaded.push(group);
        }
        for (u, group) in (0..count).zip(&loaded) {
            for k in 0..4u32 {
                for (s, regs) in p.sources.iter().zip(group) {
                    if s.read {
                        let e = self.reg(s.elem_value);
                        let v = &regs[k as usize];
                        self.line(format!("mov.{} {e}, {v};", bits_ty(s.elem)))?;
                    }
                }
                if let Some(ix) = p.index {
                    let reg = self.reg(ix);
                    self.line(format!("add.u64 {reg}, {i}, {};", 4 * u * threads + k))?;
                }
                self.block(&p.body)?;
                let item = self.reg(r.item);
                self.combine(r, &acc, &item)?;
            }
        }
        Ok(())
    }

    /// The lanes of each warp combine their accumulators `acc`: partners at distance 16, 8, 4,
    /// 2, 1. Returns the register of the thread's lane.
    fn reduce_lanes(&mut self, r: &ParReduce, acc: &str, rtid: &str) -> WriteResult<String> {
        let ty = self.k.ty(r.acc);
        let bt = bits_ty(ty);
        // The lanes of each warp: partners at distance 16, 8, 4, 2, 1, lower lane on the left.
        let lane = self.tmp(Class::B32);
        self.line(format!("and.b32 {lane}, {rtid}, 31;"))?;
        let class = Class::of(ty);
        for k in [16, 8, 4, 2, 1] {
            let partner = self.tmp(class);
            let wide = matches!(class, Class::B64 | Class::F64);
            if wide {
                let (lo, hi, lo2, hi2) = (
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                    self.tmp(Class::B32),
                );
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {acc};"))?;
                self.line(format!("shfl.sync.bfly.b32 {lo2}, {lo}, {k}, 31, -1;"))?;
                self.line(format!("shfl.sync.bfly.b32 {hi2}, {hi}, {k}, 31, -1;"))?;
                self.line(format!("mov.b64 {partner}, {{{lo2}, {hi2}}};"))?;
            } else {
                let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                self.line(format!("mov.b32 {x}, {acc};"))?;
                self.line(format!("shfl.sync.bfly.b32 {y}, {x}, {k}, 31, -1;"))?;
                self.line(format!("mov.b32 {partner}, {y};"))?;
            }
            let (bit, low) = (self.tmp(Class::B32), self.tmp(Class::Pred));
            self.line(format!("and.b32 {bit}, {lane}, {k};"))?;
            self.line(format!("setp.eq.u32 {low}, {bit}, 0;"))?;
            let (l, rr) = (self.tmp(class), self.tmp(class));
            self.line(format!("selp.{bt} {l}, {acc}, {partner}, {low};"))?;
            self.line(format!("selp.{bt} {rr}, {partner}, {acc}, {low};"))?;
            self.combine(r, &l, &rr)?;
        }
        Ok(lane)
    }

    /// For a role of several warps (`warps`, role `index`), the warps' totals through the role's
    /// reduction scratch in shared memory, folded into `acc` in warp order by every thread.
    fn reduce_warps(
        &mut self,
        r: &ParReduce,
        acc: &str,
        lane: &str,
        rtid: &str,
        (warps, index): (u32, usize),
    ) -> WriteResult {
        let ty = self.k.ty(r.acc);
        let bt = bits_ty(ty);
        let class = Class::of(ty);
        // The warps' totals, folded in warp order by every thread.
        if warps > 1 {
            let Some(offset) = self.k.reduce_scratch.get(index).copied().flatten() else {
                return Err(WriteError::inconsistent(
                    format!("the reduction scratch of role {index}, of {warps} warps"),
                    "none",
                ));
            };
            let smem = self.smem.clone();
            let (wid, slot, is_lane0) = (
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::Pred),
            );
            self.line(format!("shr.u32 {wid}, {rtid}, 5;"))?;
            self.line(format!("mad.lo.u32 {slot}, {wid}, 8, {smem};"))?;
            self.line(format!("setp.eq.u32 {is_lane0}, {lane}, 0;"))?;
            self.line(format!(
                "@{is_lane0} st.shared.{bt} [{slot}+{offset}], {acc};"
            ))?;
            self.role_barrier(r.site)?;
            self.line(format!("ld.shared.{bt} {acc}, [{smem}+{offset}];"))?;
            for w in 1..warps {
                let t = self.tmp(class);
                self.line(format!("ld.shared.{bt} {t}, [{smem}+{}];", offset + 8 * w))?;
                self.combine(r, acc, &t)?;
            }
            // The scratch is reused by the role's next reduction: every warp has read it first.
            self.role_barrier(r.site)?;
        }
        Ok(())
    }
}
