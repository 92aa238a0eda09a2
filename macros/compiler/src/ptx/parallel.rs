//! Parallel loops (`par_for`, lane loops): iteration `i` spread over the role's threads; with
//! 4-byte elements and 16-byte-aligned bases, groups of four elements per thread as 16-byte
//! accesses, [`UNROLL`] groups per step, and a scalar loop for the tail; loops over a constant
//! count that the threads cover in one pass, without a loop.

use std::collections::HashMap;
use std::fmt::Write;

use super::error::WriteResult;
use super::step_deltas::stepped_def;
use super::types::{bits_ty, mem_ty, space_name, Class};
use super::Writer;
use crate::ir::{Block, Inst, ParFor, Space, Value};

/// Groups of four elements each thread handles per step of an unrolled vector loop.
pub(super) const UNROLL: u32 = 4;

/// The most steps of a loop over indices alone written as straight-line code: each step keeps
/// its loaded values in registers of its own until the step's stores (a 64 x 64 transpose tile
/// on 8 warps, 16 steps, uses 58 registers).
const MAX_INDEX_STEPS: u64 = 16;

impl Writer<'_> {
    pub(super) fn par_for(&mut self, p: &ParFor) -> WriteResult {
        if let Some(r) = &p.reduce {
            return self.par_reduce(p, r);
        }
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let len = self.reg(p.len);
        // A lane loop keeps one item per thread per step, so that its warps' lanes meet.
        // A loop over indices alone (`(0..n).into_par_iter()`) keeps item `i` on thread `i % T`:
        // its body indexes arrays with `i`, and neighbouring threads take neighbouring items.
        let vectorizable = !p.lanes
            && !p.sources.is_empty()
            && p.sources.iter().all(|s| s.elem.size() == 4)
            && straight_line(&p.body);
        writeln!(
            self.body,
            "    // {} over {} source(s)",
            if p.lanes { "lane loop" } else { "par_for" },
            p.sources.len()
        )?;
        // A loop over a constant count that every thread covers in one step (a channel slot):
        // no alignment test, no loop.
        let const_len = self.constants.get(&p.len).copied();
        if let (Some(n), false) = (const_len, p.lanes) {
            let shared = p.sources.iter().all(|s| s.space == Space::Shared);
            if n <= u64::from(threads) {
                return self.par_one_pass(p, None);
            }
            // A loop over a few whole steps of indices alone (a tile of `(0..1024)` over 256
            // threads): straight-line steps, so that ptxas can issue every step's loads first.
            let steps = n / u64::from(threads.max(1));
            if p.sources.is_empty()
                && n % u64::from(threads.max(1)) == 0
                && steps <= MAX_INDEX_STEPS
            {
                return self.par_index_steps(p, steps as u32, threads);
            }
            // Slots (and their field arrays) start 16-byte aligned: whole groups of four.
            if vectorizable && shared && n % 4 == 0 && n / 4 <= u64::from(threads) {
                return self.par_one_pass(p, Some(1));
            }
            // A slot that every thread covers in the same few whole steps: straight-line code,
            // every load of the steps issued before the first use, instead of a loop whose
            // unrolled part never runs and whose single steps wait for one load at a time.
            let steps = n / 4 / u64::from(threads.max(1));
            if vectorizable
                && shared
                && n % 4 == 0
                && (n / 4) % u64::from(threads.max(1)) == 0
                && steps <= u64::from(UNROLL)
            {
                return self.par_one_pass(p, Some(steps as u32));
            }
        }
        let start = self.tmp(Class::B64);
        let scalar_entry = self.label("par_scalar");
        let done = self.label("par_done");
        // A thread that fails in a lane loop exits: its warp's later warp operations then wait
        // only for the lanes still running (they wait for non-exited threads), instead of for a
        // lane that left the loop.
        let exit = if p.lanes {
            let exit = self.label("lane_exit");
            self.stubs.push_str(&format!("{exit}:\n    exit;\n"));
            exit
        } else {
            done.clone()
        };
        let outer_exit = self.par_exit.replace(exit);
        if vectorizable {
            // Runtime check: every base 16-byte aligned, else everything takes the scalar loop.
            let mut misaligned = None::<String>;
            for s in &p.sources {
                let b = self.reg(s.base);
                let low = match s.space {
                    Space::Global | Space::Local | Space::Const => {
                        let l = self.tmp(Class::B64);
                        self.line(format!("and.b64 {l}, {b}, 15;"))?;
                        let l32 = self.tmp(Class::B32);
                        self.line(format!("cvt.u32.u64 {l32}, {l};"))?;
                        l32
                    }
                    Space::Shared => {
                        let l = self.tmp(Class::B32);
                        self.line(format!("and.b32 {l}, {b}, 15;"))?;
                        l
                    }
                };
                misaligned = Some(match misaligned {
                    None => low,
                    Some(m) => {
                        self.line(format!("or.b32 {m}, {m}, {low};"))?;
                        m
                    }
                });
            }
            let m = misaligned.unwrap_or_default();
            let pm = self.tmp(Class::Pred);
            self.line(format!("setp.ne.u32 {pm}, {m}, 0;"))?;
            self.line(format!("mov.u64 {start}, 0;"))?;
            self.line(format!("@{pm} bra {scalar_entry};"))?;
            let n4 = self.tmp(Class::B64);
            self.line(format!("shr.u64 {n4}, {len}, 2;"))?;
            let g = self.tmp(Class::B64);
            self.line(format!("cvt.u64.u32 {g}, {rtid};"))?;
            // Unrolled by UNROLL: every load of the UNROLL groups is issued before the first use,
            // so that each thread keeps several 16-byte accesses in flight. (Eight groups, then
            // four, was measured on the H200 on 2026-11-29 and was slower: docs/benchmarks.md.)
            let (head, single) = (self.label("par_vec4"), self.label("par_vec1"));
            self.place_label(&head)?;
            let last = self.tmp(Class::B64);
            self.line(format!("add.u64 {last}, {g}, {};", (UNROLL - 1) * threads))?;
            let pc = self.tmp(Class::Pred);
            self.line(format!("setp.ge.u64 {pc}, {last}, {n4};"))?;
            self.line(format!("@{pc} bra {single};"))?;
            self.vector_groups(p, &g, threads, UNROLL)?;
            self.line(format!("add.u64 {g}, {g}, {};", UNROLL * threads))?;
            self.line(format!("bra {head};"))?;
            // The remaining groups, one at a time.
            self.place_label(&single)?;
            let end = self.label("par_vec_end");
            let pc = self.tmp(Class::Pred);
            self.line(format!("setp.ge.u64 {pc}, {g}, {n4};"))?;
            self.line(format!("@{pc} bra {end};"))?;
            self.vector_groups(p, &g, threads, 1)?;
            self.line(format!("add.u64 {g}, {g}, {threads};"))?;
            self.line(format!("bra {single};"))?;
            self.place_label(&end)?;
            self.line(format!("shl.b64 {start}, {n4}, 2;"))?;
        } else {
            self.line(format!("mov.u64 {start}, 0;"))?;
        }
        // Scalar loop: from `start` (the vector loop's end) to `len`.
        self.place_label(&scalar_entry)?;
        let i = self.tmp(Class::B64);
        let rt64 = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {rt64}, {rtid};"))?;
        self.line(format!("add.u64 {i}, {start}, {rt64};"))?;
        let head = self.label("par_loop");
        self.place_label(&head)?;
        let pc = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u64 {pc}, {i}, {len};"))?;
        self.line(format!("@{pc} bra {done};"))?;
        self.scalar_iteration(p, &i)?;
        self.line(format!("add.u64 {i}, {i}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// Iteration `i` of a parallel loop, one element: the sources' loads, the index, the body,
    /// then the stores of the elements it writes.
    fn scalar_iteration(&mut self, p: &ParFor, i: &str) -> WriteResult {
        let mut addrs = Vec::new();
        for s in &p.sources {
            let b = self.reg(s.base);
            let a = self.elem_addr(s.space, &b, i, s.elem.size())?;
            if s.read {
                self.load(s.elem_value, s.space, &a)?;
            }
            addrs.push(a);
        }
        if let Some(ix) = p.index {
            let r = self.reg(ix);
            self.line(format!("mov.u64 {r}, {i};"))?;
        }
        self.block(&p.body)?;
        for (k, s) in p.sources.iter().enumerate() {
            if s.write {
                let e = self.reg(s.elem_value);
                self.store(&e, s.elem, s.space, &addrs[k])?;
            }
        }
        Ok(())
    }

    /// A parallel loop that each thread covers in one straight-line pass: thread `t` takes
    /// element `t` (`groups` is `None`), or `groups` groups of four elements, `t`, `t + T`, ....
    /// With one element or one group per thread, a thread past the loop's end skips it; with
    /// more groups, the caller has checked that they are a whole multiple of the threads.
    fn par_one_pass(&mut self, p: &ParFor, groups: Option<u32>) -> WriteResult {
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let done = self.label("par_done");
        let outer_exit = self.par_exit.replace(done.clone());
        let len = self.reg(p.len);
        let i = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {i}, {rtid};"))?;
        match groups {
            None => {
                let past = self.tmp(Class::Pred);
                self.line(format!("setp.ge.u64 {past}, {i}, {len};"))?;
                self.line(format!("@{past} bra {done};"))?;
                self.scalar_iteration(p, &i)?;
            }
            Some(1) => {
                let past = self.tmp(Class::Pred);
                let count = self.tmp(Class::B64);
                self.line(format!("shr.u64 {count}, {len}, 2;"))?;
                self.line(format!("setp.ge.u64 {past}, {i}, {count};"))?;
                self.line(format!("@{past} bra {done};"))?;
                self.vector_groups(p, &i, threads, 1)?;
            }
            Some(steps) => self.vector_groups(p, &i, threads, steps)?,
        }
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// A loop over indices alone that every thread covers in `steps` whole steps: thread `t`
    /// takes items `t`, `t + T`, ..., each step's code one after another, without a loop.
    ///
    /// A body without control flow is written with the steps' instructions interleaved (the
    /// first instruction of every step, then the second, ...), each step in its own registers:
    /// the iterations of a parallel loop are independent, and ptxas keeps the order of a
    /// step's global load and its shared store, so that written one step after another, each
    /// step's load waited for the previous step's store (on the H200, a transpose of 4 steps
    /// had 2 loads in flight, not 4).
    fn par_index_steps(&mut self, p: &ParFor, steps: u32, threads: u32) -> WriteResult {
        let rtid = self.role()?.rtid.clone();
        let done = self.label("par_done");
        let outer_exit = self.par_exit.replace(done.clone());
        let base = self.tmp(Class::B64);
        self.line(format!("cvt.u64.u32 {base}, {rtid};"))?;
        if straight_line(&p.body) && steps > 1 {
            let defined: Vec<Value> = p
                .index
                .into_iter()
                .chain(p.body.0.iter().flat_map(Inst::defs))
                .collect();
            let items = u64::from(steps) * u64::from(threads);
            let deltas = self.step_deltas(&p.body, p.index, (u64::from(threads), items));
            // Step 0's register of each value with a delta.
            let mut firsts: HashMap<Value, String> = HashMap::new();
            let before = std::mem::take(&mut self.body);
            // units[k][j]: step `k`'s text of the body's instruction `j` (unit 0: its index).
            let mut units: Vec<Vec<String>> = Vec::new();
            for k in 0..steps {
                for &v in &defined {
                    self.forget(v);
                }
                let i = self.tmp(Class::B64);
                self.line(format!("add.u64 {i}, {base}, {};", k * threads))?;
                if let Some(ix) = p.index {
                    let r = self.reg(ix);
                    self.line(format!("mov.u64 {r}, {i};"))?;
                }
                let mut step = vec![std::mem::take(&mut self.body)];
                for inst in &p.body.0 {
                    let from_first = match stepped_def(inst)
                        .and_then(|d| Some((d, deltas.get(&d)?)))
                    {
                        Some((dst, &delta)) if k > 0 => match firsts.get(&dst).cloned() {
                            Some(first) => self.write_step_value(dst, &first, delta, k.into())?,
                            None => false,
                        },
                        _ => false,
                    };
                    if !from_first {
                        self.inst(inst)?;
                    }
                    if k == 0 {
                        if let Some(dst) = stepped_def(inst).filter(|d| deltas.contains_key(d)) {
                            let r = self.reg(dst);
                            firsts.insert(dst, r);
                        }
                    }
                    step.push(std::mem::take(&mut self.body));
                }
                units.push(step);
            }
            self.body = before;
            for j in 0..units.first().map_or(0, Vec::len) {
                for step in &units {
                    self.body.push_str(&step[j]);
                }
            }
        } else {
            for k in 0..steps {
                let i = self.tmp(Class::B64);
                self.line(format!("add.u64 {i}, {base}, {};", k * threads))?;
                self.scalar_iteration(p, &i)?;
            }
        }
        self.par_exit = outer_exit;
        self.place_label(&done)
    }

    /// One step of the vector loop over `count` groups of four elements: groups `g`,
    /// `g + threads`, ...; all loads first, then the body four times per group, then the stores.
    fn vector_groups(&mut self, p: &ParFor, g: &str, threads: u32, count: u32) -> WriteResult {
        let mut groups = vec![g.to_string()];
        for u in 1..count {
            let gu = self.tmp(Class::B64);
            self.line(format!("add.u64 {gu}, {g}, {};", u * threads))?;
            groups.push(gu);
        }
        // addrs[u][k], loaded[u][k][j], outs[u][k][j]
        let mut addrs = Vec::new();
        let mut loaded = Vec::new();
        for gu in &groups {
            let mut group_addrs = Vec::new();
            let mut group_loaded = Vec::new();
            for s in &p.sources {
                let b = self.reg(s.base);
                let a = self.elem_addr(s.space, &b, gu, 16)?;
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
                group_addrs.push(a);
                group_loaded.push(regs);
            }
            addrs.push(group_addrs);
            loaded.push(group_loaded);
        }
        let mut outs = Vec::new();
        for (u, gu) in groups.iter().enumerate() {
            let mut group_outs = Vec::new();
            for s in &p.sources {
                let class = Class::of(s.elem);
                group_outs.push(if s.write {
                    (0..4).map(|_| self.tmp(class)).collect()
                } else {
                    Vec::new()
                });
            }
            for j in 0..4 {
                for (k, s) in p.sources.iter().enumerate() {
                    if s.read {
                        let e = self.reg(s.elem_value);
                        self.line(format!("mov.{} {e}, {};", bits_ty(s.elem), loaded[u][k][j]))?;
                    }
                }
                if let Some(ix) = p.index {
                    let r = self.reg(ix);
                    self.line(format!("mad.lo.u64 {r}, {gu}, 4, {j};"))?;
                }
                self.block(&p.body)?;
                for (k, s) in p.sources.iter().enumerate() {
                    if s.write {
                        let e = self.reg(s.elem_value);
                        let out: &Vec<String> = &group_outs[k];
                        self.line(format!("mov.{} {}, {e};", bits_ty(s.elem), out[j]))?;
                    }
                }
            }
            outs.push(group_outs);
        }
        for u in 0..groups.len() {
            for (k, s) in p.sources.iter().enumerate() {
                if s.write {
                    self.line(format!(
                        "st.{}.v4.{} [{}], {{{}}};",
                        space_name(s.space),
                        mem_ty(s.elem),
                        addrs[u][k],
                        outs[u][k].join(", ")
                    ))?;
                }
            }
        }
        Ok(())
    }
}

/// A body without control flow, which the vector loop can repeat four times.
pub(super) fn straight_line(b: &Block) -> bool {
    b.0.iter().all(|i| {
        !matches!(
            i,
            Inst::If { .. }
                | Inst::Loop { .. }
                | Inst::Break(_)
                | Inst::Continue(_)
                | Inst::ParFor(_)
        )
    })
}
