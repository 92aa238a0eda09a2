//! Reductions (a parallel loop with a [`ParReduce`]): each thread folds its items, the lanes of
//! each warp combine by a butterfly of shuffles, and the warps' totals meet in shared memory.

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::parallel::straight_line;
use super::types::{bits_ty, mem_ty, space_name, Class};
use super::Writer;
use crate::ir::{ParFor, ParReduce, Space};

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
    /// of four, then the lanes of each warp combine by a butterfly of shuffles, then the warps'
    /// totals go through shared memory and every thread folds them in warp order.
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
            let mut loaded = Vec::new();
            for s in &p.sources {
                let b = self.reg(s.base);
                let a = self.elem_addr(s.space, &b, &i, 4)?;
                let class = Class::of(s.elem);
                let regs: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
                if s.read {
                    self.line(format!(
                        "ld.{}.v4.{} {{{}}}, [{a}];",
                        space_name(s.space),
                        mem_ty(s.elem),
                        regs.join(", ")
                    ))?;
                }
                loaded.push(regs);
            }
            for k in 0..4 {
                for (s, regs) in p.sources.iter().zip(&loaded) {
                    if s.read {
                        let e = self.reg(s.elem_value);
                        self.line(format!("mov.{} {e}, {};", bits_ty(s.elem), regs[k]))?;
                    }
                }
                if let Some(ix) = p.index {
                    let reg = self.reg(ix);
                    self.line(format!("add.u64 {reg}, {i}, {k};"))?;
                }
                self.block(&p.body)?;
                let item = self.reg(r.item);
                let acc_now = acc.clone();
                self.combine(r, &acc_now, &item)?;
            }
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
