//! Scans (a [`ParReduce`] with a [`crate::ir::ParScanOut`]): rounds of `4 T` items; in each,
//! thread `t` folds items `4t .. 4t + 4` of the round, the lanes of each warp scan their totals
//! with `shfl.sync.up` (Hillis–Steele), the warps' totals go through the role's scratch in shared
//! memory (a double buffer: one role barrier per round), and each thread stores its four results.
//! A round whose four items per thread are all in range, with 4-byte sources 16-byte aligned,
//! loads and stores them as one 16-byte access per source.

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::parallel::straight_line;
use super::types::{bits_ty, mem_ty, space_name, Class};
use super::Writer;
use crate::ir::{ParFor, ParReduce, ParScanOut, ShuffleMode, Space};

impl Writer<'_> {
    /// `into = combine(lhs, rhs)` with the scan's combining block.
    fn scan_combine(&mut self, r: &ParReduce, lhs: &str, rhs: &str, into: &str) -> WriteResult {
        let bt = bits_ty(self.k.ty(r.acc));
        let (l, rr, out) = (self.reg(r.lhs), self.reg(r.rhs), self.reg(r.out));
        self.line(format!("mov.{bt} {l}, {lhs};"))?;
        self.line(format!("mov.{bt} {rr}, {rhs};"))?;
        self.block(&r.combine)?;
        self.line(format!("mov.{bt} {into}, {out};"))
    }

    /// `value` of the lane `operand` away (`up`: below, keeping its own below lane 0; `idx`:
    /// that lane), for 32- and 64-bit values.
    fn scan_shuffle(
        &mut self,
        class: Class,
        mode: ShuffleMode,
        value: &str,
        operand: u32,
    ) -> WriteResult<String> {
        let (name, clamp) = match mode {
            ShuffleMode::Up => ("up", 0),
            _ => ("idx", 31),
        };
        let d = self.tmp(class);
        if matches!(class, Class::B64 | Class::F64) {
            let (lo, hi, lo2, hi2) = (
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::B32),
                self.tmp(Class::B32),
            );
            self.line(format!("mov.b64 {{{lo}, {hi}}}, {value};"))?;
            self.line(format!(
                "shfl.sync.{name}.b32 {lo2}, {lo}, {operand}, {clamp}, -1;"
            ))?;
            self.line(format!(
                "shfl.sync.{name}.b32 {hi2}, {hi}, {operand}, {clamp}, -1;"
            ))?;
            self.line(format!("mov.b64 {d}, {{{lo2}, {hi2}}};"))?;
        } else {
            let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
            self.line(format!("mov.b32 {x}, {value};"))?;
            self.line(format!(
                "shfl.sync.{name}.b32 {y}, {x}, {operand}, {clamp}, -1;"
            ))?;
            self.line(format!("mov.b32 {d}, {y};"))?;
        }
        Ok(d)
    }

    /// A scan: see the module's description and [`ParScanOut`] for the order.
    pub(super) fn par_scan(&mut self, p: &ParFor, r: &ParReduce, sc: &ParScanOut) -> WriteResult {
        let (threads, warps, rtid, index) = {
            let c = self.role()?;
            (c.threads, c.warps, c.rtid.clone(), c.index)
        };
        let ty = self.k.ty(r.acc);
        let (bt, class) = (bits_ty(ty), Class::of(ty));
        let len = self.reg(p.len);
        let (carry, identity, init) = (self.reg(r.acc), self.reg(r.identity), self.reg(sc.init));
        writeln!(self.body, "    // scan over {} source(s)", p.sources.len())?;
        self.line(format!("mov.{bt} {carry}, {init};"))?;
        let lane = self.tmp(Class::B32);
        self.line(format!("and.b32 {lane}, {rtid}, 31;"))?;
        let scratch = if warps > 1 {
            let Some(offset) = self.k.reduce_scratch.get(index).copied().flatten() else {
                return Err(WriteError::inconsistent(
                    format!("the scan scratch of role {index}, of {warps} warps"),
                    "none",
                ));
            };
            let (wid, buf) = (self.tmp(Class::B32), self.tmp(Class::B32));
            self.line(format!("shr.u32 {wid}, {rtid}, 5;"))?;
            let smem = self.smem.clone();
            self.line(format!("add.u32 {buf}, {smem}, {offset};"))?;
            Some((wid, buf))
        } else {
            None
        };
        // 4-byte sources whose bases are 16-byte aligned take whole groups in one access each.
        let vector = p.sources.iter().all(|s| s.elem.size() == 4)
            && !p.sources.is_empty()
            && straight_line(&p.body);
        let aligned = if vector {
            let m = self.tmp(Class::Pred);
            self.line(format!("setp.eq.u32 {m}, 0, 0;"))?;
            for s in &p.sources {
                let b = self.reg(s.base);
                let low = self.tmp(Class::B32);
                if s.space == Space::Shared {
                    self.line(format!("and.b32 {low}, {b}, 15;"))?;
                } else {
                    let l = self.tmp(Class::B64);
                    self.line(format!("and.b64 {l}, {b}, 15;"))?;
                    self.line(format!("cvt.u32.u64 {low}, {l};"))?;
                }
                let q = self.tmp(Class::Pred);
                self.line(format!("setp.eq.u32 {q}, {low}, 0;"))?;
                self.line(format!("and.pred {m}, {m}, {q};"))?;
            }
            Some(m)
        } else {
            None
        };
        let (head, done) = (self.label("scan_round"), self.label("scan_done"));
        let outer_exit = self.par_exit.replace(done.clone());
        let (round, i0) = (self.tmp(Class::B64), self.tmp(Class::B64));
        self.line(format!("mov.u64 {round}, 0;"))?;
        let parity = self.tmp(Class::B32);
        self.line(format!("mov.u32 {parity}, 0;"))?;
        self.place_label(&head)?;
        let past = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u64 {past}, {round}, {len};"))?;
        self.line(format!("@{past} bra {done};"))?;
        let rt4 = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {rt4}, {rtid};"))?;
        self.line(format!("mad.lo.u64 {i0}, {rt4}, 4, {round};"))?;
        let items: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
        let after_items = self.label("scan_items");
        let whole = match &aligned {
            Some(m) => {
                // The whole group is in range and every base aligned: one access per source.
                let (w, end) = (self.tmp(Class::Pred), self.tmp(Class::B64));
                self.line(format!("add.u64 {end}, {i0}, 4;"))?;
                self.line(format!("setp.le.u64 {w}, {end}, {len};"))?;
                self.line(format!("and.pred {w}, {w}, {m};"))?;
                let scalar = self.label("scan_scalar");
                self.line(format!("@!{w} bra {scalar};"))?;
                self.scan_vector_items(p, r, &i0, &items)?;
                self.line(format!("bra {after_items};"))?;
                self.place_label(&scalar)?;
                Some(w)
            }
            None => None,
        };
        for (j, item) in items.iter().enumerate() {
            let (ij, inb) = (self.tmp(Class::B64), self.tmp(Class::Pred));
            self.line(format!("add.u64 {ij}, {i0}, {j};"))?;
            self.line(format!("mov.{bt} {item}, {identity};"))?;
            self.line(format!("setp.lt.u64 {inb}, {ij}, {len};"))?;
            let skip = self.label("scan_skip");
            self.line(format!("@!{inb} bra {skip};"))?;
            for s in &p.sources {
                if s.read {
                    let b = self.reg(s.base);
                    let a = self.elem_addr(s.space, &b, &ij, s.elem.size())?;
                    self.load(s.elem_value, s.space, &a)?;
                }
            }
            if let Some(ix) = p.index {
                let reg = self.reg(ix);
                self.line(format!("mov.u64 {reg}, {ij};"))?;
            }
            self.block(&p.body)?;
            let it = self.reg(r.item);
            self.line(format!("mov.{bt} {item}, {it};"))?;
            self.place_label(&skip)?;
        }
        self.place_label(&after_items)?;
        // The thread's inclusive prefixes of its four items.
        let pre: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
        self.line(format!("mov.{bt} {}, {};", pre[0], items[0]))?;
        for j in 1..4 {
            let (a, b, into) = (pre[j - 1].clone(), items[j].clone(), pre[j].clone());
            self.scan_combine(r, &a, &b, &into)?;
        }
        // The warp's inclusive scan of the threads' totals: at distance d, lanes from d on.
        let s = self.tmp(class);
        self.line(format!("mov.{bt} {s}, {};", pre[3]))?;
        for d in [1u32, 2, 4, 8, 16] {
            let from = self.scan_shuffle(class, ShuffleMode::Up, &s, d)?;
            let (sum, take) = (self.tmp(class), self.tmp(Class::Pred));
            self.scan_combine(r, &from, &s, &sum)?;
            self.line(format!("setp.ge.u32 {take}, {lane}, {d};"))?;
            self.line(format!("selp.{bt} {s}, {sum}, {s}, {take};"))?;
        }
        let lane_excl = self.scan_shuffle(class, ShuffleMode::Up, &s, 1)?;
        let first = self.tmp(Class::Pred);
        self.line(format!("setp.eq.u32 {first}, {lane}, 0;"))?;
        self.line(format!(
            "selp.{bt} {lane_excl}, {identity}, {lane_excl}, {first};"
        ))?;
        // The warps before this one, and the round's total, folded from the identity.
        let (before, all) = (self.tmp(class), self.tmp(class));
        self.line(format!("mov.{bt} {before}, {identity};"))?;
        self.line(format!("mov.{bt} {all}, {identity};"))?;
        match &scratch {
            Some((wid, buf)) => {
                let (at, last) = (self.tmp(Class::B32), self.tmp(Class::Pred));
                self.line(format!("mad.lo.u32 {at}, {parity}, {}, {buf};", 8 * warps))?;
                let slot = self.tmp(Class::B32);
                self.line(format!("mad.lo.u32 {slot}, {wid}, 8, {at};"))?;
                self.line(format!("setp.eq.u32 {last}, {lane}, 31;"))?;
                self.line(format!("@{last} st.shared.{bt} [{slot}], {s};"))?;
                self.role_barrier(r.site)?;
                for w in 0..warps {
                    let (t, here) = (self.tmp(class), self.tmp(Class::Pred));
                    self.line(format!("setp.eq.u32 {here}, {wid}, {w};"))?;
                    self.line(format!("selp.{bt} {before}, {all}, {before}, {here};"))?;
                    self.line(format!("ld.shared.{bt} {t}, [{at}+{}];", 8 * w))?;
                    let a = all.clone();
                    self.scan_combine(r, &a, &t, &all)?;
                }
                self.line(format!("xor.b32 {parity}, {parity}, 1;"))?;
            }
            None => {
                let total = self.scan_shuffle(class, ShuffleMode::Idx, &s, 31)?;
                let a = all.clone();
                self.scan_combine(r, &a, &total, &all)?;
            }
        }
        let base = self.tmp(class);
        self.scan_combine(r, &carry.clone(), &before, &base)?;
        let b0 = base.clone();
        self.scan_combine(r, &b0, &lane_excl, &base)?;
        let outs: Vec<String> = (0..4).map(|_| self.tmp(class)).collect();
        for j in 0..4 {
            match (sc.inclusive, j) {
                (true, _) => self.scan_combine(r, &base, &pre[j], &outs[j])?,
                (false, 0) => self.line(format!("mov.{bt} {}, {base};", outs[0]))?,
                (false, _) => self.scan_combine(r, &base, &pre[j - 1], &outs[j])?,
            }
        }
        self.scan_store(p, sc, &i0, &outs, whole.as_deref())?;
        let c0 = carry.clone();
        self.scan_combine(r, &c0, &all, &carry)?;
        self.line(format!("add.u64 {round}, {round}, {};", 4 * threads))?;
        self.line(format!("bra {head};"))?;
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// The items of a whole aligned group at `i0`: one 16-byte load per source, the body four
    /// times, each item into `items`.
    fn scan_vector_items(
        &mut self,
        p: &ParFor,
        r: &ParReduce,
        i0: &str,
        items: &[String],
    ) -> WriteResult {
        let bt = bits_ty(self.k.ty(r.acc));
        let mut loaded = Vec::new();
        for s in &p.sources {
            let regs: Vec<String> = (0..4).map(|_| self.tmp(Class::of(s.elem))).collect();
            if s.read {
                let b = self.reg(s.base);
                let a = self.elem_addr(s.space, &b, i0, 4)?;
                self.line(format!(
                    "ld.{}.v4.{} {{{}}}, [{a}];",
                    space_name(s.space),
                    mem_ty(s.elem),
                    regs.join(", ")
                ))?;
            }
            loaded.push(regs);
        }
        for (j, item) in items.iter().enumerate() {
            for (s, regs) in p.sources.iter().zip(&loaded) {
                if s.read {
                    let e = self.reg(s.elem_value);
                    self.line(format!("mov.{} {e}, {};", bits_ty(s.elem), regs[j]))?;
                }
            }
            if let Some(ix) = p.index {
                let reg = self.reg(ix);
                self.line(format!("add.u64 {reg}, {i0}, {j};"))?;
            }
            self.block(&p.body)?;
            let it = self.reg(r.item);
            self.line(format!("mov.{bt} {item}, {it};"))?;
        }
        Ok(())
    }

    /// The four results at `i0` into the destination: one 16-byte store when the group is whole
    /// and aligned (`whole`), else each one in range.
    fn scan_store(
        &mut self,
        p: &ParFor,
        sc: &ParScanOut,
        i0: &str,
        outs: &[String],
        whole: Option<&str>,
    ) -> WriteResult {
        let Some(d) = p.sources.get(sc.dst) else {
            return Err(WriteError::inconsistent(
                "the scan's destination among the loop's sources",
                format!("source {}", sc.dst),
            ));
        };
        let (space, elem, base) = (d.space, d.elem, self.reg(d.base));
        let stored = self.label("scan_stored");
        if let Some(w) = whole {
            let scalar = self.label("scan_store_scalar");
            self.line(format!("@!{w} bra {scalar};"))?;
            let a = self.elem_addr(space, &base, i0, 4)?;
            self.line(format!(
                "st.{}.v4.{} [{a}], {{{}}};",
                space_name(space),
                mem_ty(elem),
                outs.join(", ")
            ))?;
            self.line(format!("bra {stored};"))?;
            self.place_label(&scalar)?;
        }
        let len = self.reg(p.len);
        for (j, o) in outs.iter().enumerate() {
            let (ij, inb) = (self.tmp(Class::B64), self.tmp(Class::Pred));
            self.line(format!("add.u64 {ij}, {i0}, {j};"))?;
            self.line(format!("setp.lt.u64 {inb}, {ij}, {len};"))?;
            let skip = self.label("scan_store_skip");
            self.line(format!("@!{inb} bra {skip};"))?;
            let a = self.elem_addr(space, &base, &ij, elem.size())?;
            self.store(o, elem, space, &a)?;
            self.place_label(&skip)?;
        }
        self.place_label(&stored)
    }
}
