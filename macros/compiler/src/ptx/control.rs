//! Control flow: `if`/`else`, panics, and loops. A role loop watches the abort word every 16th
//! iteration, and is written unrolled with constant ring slots or in two versions (with and
//! without its bulk copies' tails) when [`super::unroll`] finds it can be.

use std::fmt::Write;

use super::bulk::not_scalar_payload;
use super::channels::no_ring;
use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::unroll::whole_copies;
use super::waits::FAILURE_PANIC;
use super::Writer;
use crate::ir::{Block, ChannelId, LoopId, SiteId, Value};
use crate::types::Scalar;

impl Writer<'_> {
    /// Panics (the failure record, then the way out) when `cond` holds.
    pub(super) fn panic_if(&mut self, cond: Value, site: SiteId) -> WriteResult {
        if self.never_true.contains(&cond) {
            return Ok(());
        }
        let c = self.reg(cond);
        let message = self.k.sites[site.0 as usize].message.clone();
        writeln!(self.body, "    // panics: {message}")?;
        let label = self.label("panic");
        self.line(format!("@{c} bra {label};"))?;
        // A thread that fails inside a parallel loop leaves the loop (its warp may not
        // leave a warp-wide barrier); elsewhere the whole role stops.
        let cont = self
            .par_exit
            .clone()
            .unwrap_or_else(|| self.abort_label.clone());
        match self.panic_site(&label, site.0)? {
            Some(at) => {
                let record = self.label("panic_record");
                self.stub_at(&record, FAILURE_PANIC, &at, &cont)
            }
            None => self.stub(&label, FAILURE_PANIC, site, &cont),
        }
    }

    /// `if cond { then } else { else_ }`.
    pub(super) fn if_else(&mut self, cond: Value, then: &Block, else_: &Block) -> WriteResult {
        let c = self.reg(cond);
        // Without an `else`, a branch over the `then` block alone.
        if else_.0.is_empty() {
            let l_end = self.label("endif");
            self.line(format!("@!{c} bra {l_end};"))?;
            self.block(then)?;
            return self.place_label(&l_end);
        }
        let (l_else, l_end) = (self.label("else"), self.label("endif"));
        self.line(format!("@!{c} bra {l_else};"))?;
        self.block(then)?;
        self.line(format!("bra {l_end};"))?;
        self.place_label(&l_else)?;
        self.block(else_)?;
        self.place_label(&l_end)
    }

    /// A loop: in role code, watched for the abort word, unrolled when [`Writer::unroll_plan`]
    /// says so, and in two versions when [`whole_copies`] finds copies to test once.
    pub(super) fn loop_(&mut self, id: LoopId, body: &Block) -> WriteResult {
        let head = format!("$loop_{}", id.0);
        // A role loop watches the abort word (a cancelled or failed launch stops even in
        // a loop without awaits) every 16th iteration (of an unrolled loop: every 16th
        // round of its copies): every warp of every block runs
        // these loops, and one word read by all of them on every iteration would be a hot
        // spot of the L2. Loops inside parallel bodies run per thread and are not watched.
        // The word is read 16 iterations before it is tested, so that the loop never
        // stalls on the load: a global load's ~1 µs every 32 items was measured on the
        // H200 at up to 22 ns per item of a bulk-copy handoff. It is not read before the
        // loop (its register starts as the complement of the launch id, so the first
        // test never fires): a loop of a few iterations, as in a grid of one block per few
        // tiles, reads nothing, where a read before every such loop (196,608 per launch
        // of the pipeline example at 2^28) cost 0.2% of its bandwidth on the H200.
        let watched = self.role.is_some() && self.par_exit.is_none();
        let count = if watched {
            let (c, word) = (self.tmp(Class::B32), self.tmp(Class::B32));
            let launch_id = self.launch_id.clone();
            self.line(format!("mov.u32 {c}, 0;"))?;
            self.line(format!("not.b32 {word}, {launch_id};"))?;
            Some((c, word))
        } else {
            None
        };
        let top = watched && self.loop_depth == 0 && self.unroll.is_none() && self.join.is_none();
        let whole = if top {
            whole_copies(id, body)
        } else {
            Vec::new()
        };
        if whole.is_empty() {
            let next = format!("$loop_next_{}", id.0);
            self.loop_version(id, body, top, (&head, &next), count.as_ref())?;
        } else {
            // Two versions of the loop: without the copies' tails when every one of
            // them is whole (tested here, once), and as written otherwise.
            let tails = format!("$loop_{}_tails", id.0);
            let mut all_whole: Option<String> = None;
            for &(len, bulk, chan) in &whole {
                // The checker allows bulk copies of scalar payloads only.
                let elem = &self.k.channel(chan).ty.elem;
                let esize = elem
                    .scalar()
                    .map(Scalar::size)
                    .ok_or_else(|| not_scalar_payload(chan, elem))?;
                let (len, bulk) = (self.reg(len), self.reg(bulk));
                let covered = self.tmp(Class::B64);
                self.line(format!(
                    "shr.u64 {covered}, {bulk}, {};",
                    esize.trailing_zeros()
                ))?;
                let p = self.tmp(Class::Pred);
                self.line(format!("setp.ge.u64 {p}, {covered}, {len};"))?;
                match &all_whole {
                    Some(w) => self.line(format!("and.pred {w}, {w}, {p};"))?,
                    None => all_whole = Some(p),
                }
            }
            let all_whole = all_whole.ok_or_else(|| {
                WriteError::inconsistent("a bulk copy to test before the loop", "none")
            })?;
            self.line(format!("@!{all_whole} bra {tails};"))?;
            let touched = self.role()?.touched.clone();
            self.whole = whole.iter().map(|&(len, bulk, _)| (len, bulk)).collect();
            writeln!(
                self.body,
                "    // the loop's version whose bulk copies have no tail"
            )?;
            let next = format!("$loop_next_{}", id.0);
            self.loop_version(id, body, top, (&head, &next), count.as_ref())?;
            self.whole.clear();
            self.role
                .as_mut()
                .ok_or_else(WriteError::outside_role)?
                .touched = touched;
            writeln!(
                self.body,
                "    // the loop's version with the copies' tails"
            )?;
            let next = format!("$loop_next_{}_tails", id.0);
            self.loop_version(id, body, top, (&tails, &next), count.as_ref())?;
        }
        self.place_label(&format!("$loop_end_{}", id.0))
    }

    /// One version of a role loop: its head, its body (unrolled when [`Writer::unroll_plan`]
    /// says so and `top`), the abort-word watch of [`Inst::Loop`] at its `next` label, and the
    /// branch back to its head.
    ///
    /// [`Inst::Loop`]: crate::ir::Inst::Loop
    fn loop_version(
        &mut self,
        id: LoopId,
        body: &Block,
        top: bool,
        (head, next): (&str, &str),
        count: Option<&(String, String)>,
    ) -> WriteResult {
        self.place_label(head)?;
        let plan = if top {
            self.unroll_plan(id, body)
        } else {
            None
        };
        self.loop_depth += 1;
        match plan {
            Some((factor, unrolled)) => {
                writeln!(
                    self.body,
                    "    // {factor} copies of the loop body: ring slots are constants"
                )?;
                self.unroll = Some(unrolled);
                for _ in 0..factor {
                    self.block(body)?;
                }
                self.unroll = None;
            }
            None => self.block(body)?,
        }
        self.loop_depth -= 1;
        self.place_label(next)?;
        if let Some((c, word)) = count {
            let abort = self.abort.clone();
            let (launch_id, abort_label) = (self.launch_id.clone(), self.abort_label.clone());
            let (low, quiet, hit) = (
                self.tmp(Class::B32),
                self.tmp(Class::Pred),
                self.tmp(Class::Pred),
            );
            self.line(format!("add.u32 {c}, {c}, 1;"))?;
            self.line(format!("and.b32 {low}, {c}, 15;"))?;
            self.line(format!("setp.ne.u32 {quiet}, {low}, 0;"))?;
            self.line(format!("@{quiet} bra {head};"))?;
            self.raise_deferred()?;
            self.line(format!("setp.eq.u32 {hit}, {word}, {launch_id};"))?;
            self.line(format!("vote.sync.any.pred {hit}, {hit}, -1;"))?;
            self.line(format!("@{hit} bra {abort_label};"))?;
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        self.line(format!("bra {head};"))?;
        Ok(())
    }

    /// `break` out of loop `id`.
    pub(super) fn break_(&mut self, id: LoopId) -> WriteResult {
        // Leaving an unrolled loop: the code after it reads the ring registers.
        let leaving = match &self.unroll {
            Some(u) if u.id == id => {
                let mut movs: Vec<((ChannelId, u32), u32, Option<u32>)> = u
                    .slots
                    .iter()
                    .map(|(key, &slot)| (*key, slot, u.held.get(key).copied()))
                    .collect();
                movs.sort_by_key(|(key, ..)| (key.0 .0, key.1));
                movs
            }
            _ => Vec::new(),
        };
        for (key, slot, held) in leaving {
            let ring = self
                .role()?
                .rings
                .get(&key)
                .cloned()
                .ok_or_else(|| no_ring(key))?;
            self.line(format!("mov.u32 {}, {slot};", ring.slot))?;
            if let Some(held) = held {
                self.line(format!("mov.u32 {}, {held};", ring.held))?;
            }
        }
        self.line(format!("bra $loop_end_{};", id.0))
    }

    /// `continue` in loop `id`: to its abort-word watch, then its head.
    pub(super) fn continue_(&mut self, id: LoopId) -> WriteResult {
        self.line(format!("bra $loop_next_{};", id.0))
    }
}
