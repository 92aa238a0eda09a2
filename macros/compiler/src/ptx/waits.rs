//! Blocking waits on an mbarrier's phase, with their watchdog: a first test inline, then a
//! slow loop that reads the abort word and the clock every 16th iteration; and the out-of-line
//! failure stubs (a panic, a wait the watchdog stopped) that write the launch's failure record.

use gpu_async_wire::{record, FailureKind};
use std::fmt::Write;

use super::error::WriteResult;
use super::types::Class;
use super::Writer;
use crate::ir::SiteId;

/// The failure record's kind word of a device panic.
pub(super) const FAILURE_PANIC: u32 = FailureKind::Panic.code();
/// The failure record's kind word of a wait stopped by the watchdog.
pub(super) const FAILURE_TIMEOUT: u32 = FailureKind::Watchdog.code();

/// The address of word `word` of the failure record whose address is in `record`.
fn record_word(record: &str, word: usize) -> String {
    match record::offset(word) {
        0 => format!("[{record}]"),
        offset => format!("[{record}+{offset}]"),
    }
}

impl Writer<'_> {
    /// Waits for the phase `parity` of `barrier` to complete. The decision is made warp-uniform
    /// with `vote`, so that a warp leaves the loop together. While the phase is not complete, the
    /// loop watches the abort word (another thread panicked, the host cancelled) and, when the
    /// watchdog is on, the time spent in this wait; either way the warp leaves through the role's
    /// abort exit, so that no wait outlives a failure.
    pub(super) fn wait(&mut self, barrier: &str, parity: &str, site: SiteId) -> WriteResult {
        self.wait_then_load(barrier, parity, site, None).map(|_| ())
    }

    /// [`Writer::wait`], then, for `load = Some((offset, index))`, the `u32` at shared address
    /// `offset + 4 index` (a word the other side wrote before it completed the phase: a
    /// receiver's state word) into a new register, which is returned. Outside `join!` branches,
    /// the first test, which passes whenever the phase is already complete, issues the load
    /// right after its `try_wait`, predicated on the lane's result, and before the `vote`, so
    /// that the load's latency overlaps the `vote` and the branch instead of following them;
    /// when the warp's test fails, the value is not used and the slow loop loads again after its
    /// own successful test. In a `join!` branch, whose wait yields, the address is computed and
    /// the word loaded after the wait (an address computed before the yield made `join_cost`'s
    /// `join!` 16% slower).
    pub(super) fn wait_then_load(
        &mut self,
        barrier: &str,
        parity: &str,
        site: SiteId,
        load: Option<(u32, &str)>,
    ) -> WriteResult<Option<String>> {
        self.trace_wait(site)?;
        if self.join.is_some() {
            // In a `join!` branch: test without blocking, and let the warp run another branch
            // while the phase is incomplete.
            let done = self.label("waited");
            let p = self.tmp(Class::Pred);
            self.yield_point(site, &mut |w: &mut Self| {
                w.line(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {done};"))
            })?;
            self.place_label(&done)?;
            self.trace_wait_end(site)?;
            self.note_progress()?;
            let Some((offset, index)) = load else {
                return Ok(None);
            };
            return self.load_shared_word(offset, index).map(Some);
        }
        let load = match load {
            Some((offset, index)) => {
                let addr = self.shared_addr(offset, index, 4)?;
                Some((self.tmp(Class::B32), addr))
            }
            None => None,
        };
        let l = self.label("wait");
        let done = self.label("waited");
        let timeout = self.label("timeout");
        let p = self.tmp(Class::Pred);
        let deadline = self.tmp(Class::B64);
        let spins = self.tmp(Class::B32);
        // With a load, the slow loop's successful test goes to `slow_done`, which loads and
        // falls into `done`; the first test has loaded already.
        let slow_done = match load {
            Some(_) => self.label("waited_slow"),
            None => done.clone(),
        };
        let test = |w: &mut Self, first: bool| {
            w.line(format!(
                "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
            ))?;
            if let (true, Some((dst, addr))) = (first, &load) {
                // Predicated on this lane's result: the load waits for the `try_wait` to have
                // seen the phase complete. Unpredicated, it was issued before that on the H200
                // and read a stale state word (an end-of-stream marker read as an item).
                w.line(format!("@{p} ld.shared.u32 {dst}, [{addr}];"))?;
            }
            w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
            w.line(format!(
                "@{p} bra {};",
                if first { &done } else { &slow_done }
            ))
        };
        // The first test is out of the loop, so that a wait that finds its phase complete (the
        // common case in a streaming pipeline) costs three instructions (four with a load).
        test(self, true)?;
        let word = self.slow_wait_start(&deadline, &spins)?;
        self.place_label(&l)?;
        test(self, false)?;
        self.slow_wait_tail(&l, &timeout, &deadline, &spins, &word, true)?;
        if let Some((dst, addr)) = &load {
            // `slow_wait_tail` ends with a branch back to `l`: nothing falls into this label.
            self.place_label(&slow_done)?;
            self.line(format!("ld.shared.u32 {dst}, [{addr}];"))?;
        }
        self.place_label(&done)?;
        self.trace_wait_end(site)?;
        self.stub(&timeout, FAILURE_TIMEOUT, site, &self.abort_label.clone())?;
        Ok(load.map(|(dst, _)| dst))
    }

    /// Waits, as [`Writer::wait`] does, for the phase `parity` of `barrier` (an `empty` barrier
    /// of a channel that its receivers can close), or until the channel's open word at shared
    /// address `open` is 0: `result` (a predicate) is true when the phase completed, false when
    /// the channel closed. The first test is the same three instructions as a plain wait's and
    /// reads nothing else; the open word is read where the warp would wait: after the first
    /// test fails, after the slow loop's test passes (a phase completed by the receivers'
    /// close), and with the abort word on every 16th slow iteration (`docs/design.md`,
    /// "Closing from the receiving side"). With `debts` (the channel's debt words and the
    /// index of the slot waited on), the same places pay the debt of closed receivers on the
    /// phase waited for.
    pub(super) fn wait_or_closed(
        &mut self,
        (barrier, parity): (&str, &str),
        site: SiteId,
        open: &str,
        debts: Option<(u32, &str)>,
        result: &str,
    ) -> WriteResult {
        self.trace_wait(site)?;
        let done = self.label("waited");
        let closed = self.label("closed");
        let p = result;
        if self.join.is_some() {
            // In a `join!` branch: the test does not block, so the word is read at each test
            // that fails.
            self.yield_point(site, &mut |w: &mut Self| {
                w.line(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {done};"))?;
                w.closed_test(open, &closed)?;
                if let Some((offset, slot)) = debts {
                    let debt = w.debt_word(offset, slot, parity)?;
                    w.pay_debt(&debt, barrier)?;
                }
                Ok(())
            })?;
        } else {
            let l = self.label("wait");
            let slow_done = self.label("waited_slow");
            let timeout = self.label("timeout");
            let deadline = self.tmp(Class::B64);
            let spins = self.tmp(Class::B32);
            let test = |w: &mut Self, target: &str| {
                w.line(format!(
                    "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{barrier}], {parity};"
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {target};"))
            };
            test(self, &done)?;
            self.closed_test(open, &closed)?;
            let debt = match debts {
                Some((offset, slot)) => {
                    let debt = self.debt_word(offset, slot, parity)?;
                    self.pay_debt(&debt, barrier)?;
                    Some(debt)
                }
                None => None,
            };
            let word = self.slow_wait_start(&deadline, &spins)?;
            self.place_label(&l)?;
            test(self, &slow_done)?;
            self.slow_wait_tail_or_closed(
                &l,
                (&timeout, &deadline, &spins, &word),
                true,
                Some((open, &closed, debt.as_deref().map(|d| (d, barrier)))),
            )?;
            // A phase the slow loop saw complete may be the receivers' close.
            self.place_label(&slow_done)?;
            self.closed_test(open, &closed)?;
            self.line(format!("bra {done};"))?;
            self.stub(&timeout, FAILURE_TIMEOUT, site, &self.abort_label.clone())?;
        }
        self.place_label(&closed)?;
        let zero = self.tmp(Class::B32);
        self.line(format!("mov.u32 {zero}, 0;"))?;
        self.line(format!("setp.ne.u32 {p}, {zero}, 0;"))?;
        self.place_label(&done)?;
        self.trace_wait_end(site)?;
        self.note_progress()
    }
}

/// What a wait on a closable channel tests besides its barrier: the open word's address, the
/// label to go to when it is 0, and the debt word and barrier of the phase waited on.
pub(super) type ClosedTest<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>);

impl Writer<'_> {
    /// The shared address of the debt word of slot `slot` (an index register or constant) for
    /// the phases of parity `parity`, in the debt words at `offset`.
    fn debt_word(&mut self, offset: u32, slot: &str, parity: &str) -> WriteResult<String> {
        let smem = self.smem.clone();
        let (base, addr) = (self.tmp(Class::B32), self.tmp(Class::B32));
        self.line(format!("add.u32 {base}, {smem}, {offset};"))?;
        self.line(format!("mad.lo.u32 {base}, {slot}, 8, {base};"))?;
        self.line(format!("mad.lo.u32 {addr}, {parity}, 4, {base};"))?;
        Ok(addr)
    }

    /// Takes the debt at `debt` (the count of closed receiving warps that owe the phase of
    /// `barrier` in progress) and arrives for them, once for the role (its first warp to take
    /// it), dropping them from the later phases.
    fn pay_debt(&mut self, debt: &str, barrier: &str) -> WriteResult {
        let lane0 = self.role()?.lane0.clone();
        let (n, some) = (self.tmp(Class::B32), self.tmp(Class::Pred));
        self.line(format!("mov.u32 {n}, 0;"))?;
        self.line(format!("@{lane0} atom.shared.exch.b32 {n}, [{debt}], 0;"))?;
        self.line(format!("setp.ne.u32 {some}, {n}, 0;"))?;
        self.line(format!(
            "@{some} mbarrier.arrive_drop.release.cta.shared::cta.b64 _, [{barrier}], {n};"
        ))
    }

    /// Goes to `label` when the open word at shared address `open` is 0 on some lane (decided
    /// for the warp as one).
    fn closed_test(&mut self, open: &str, label: &str) -> WriteResult {
        let (w, c) = (self.tmp(Class::B32), self.tmp(Class::Pred));
        self.line(format!("ld.volatile.shared.u32 {w}, [{open}];"))?;
        self.line(format!("setp.eq.u32 {c}, {w}, 0;"))?;
        self.line(format!("vote.sync.any.pred {c}, {c}, -1;"))?;
        self.line(format!("@{c} bra {label};"))
    }

    /// The start of a blocking wait's slow loop: the watchdog's deadline and the spin count at 0,
    /// and the register the abort word is read into, set to a value that is not this launch's id
    /// (the first poll reads the word, the next one tests it: no read before a wait has spun 16
    /// times); returns that register.
    pub(super) fn slow_wait_start(&mut self, deadline: &str, spins: &str) -> WriteResult<String> {
        let launch_id = self.launch_id.clone();
        let word = self.tmp(Class::B32);
        self.line(format!("mov.u64 {deadline}, 0;"))?;
        self.line(format!("mov.u32 {spins}, 0;"))?;
        self.line(format!("not.b32 {word}, {launch_id};"))?;
        Ok(word)
    }

    /// The rest of a blocking wait's loop at `l`, after its test: every 16th iteration, the
    /// abort word and, when the watchdog is on, the time spent (going to `timeout` when it is
    /// past the bound); then back to `l`.
    ///
    /// `read_ahead`: a wait that `try_wait` suspends tests the word read at the previous poll and
    /// then reads it again, so that no spin waits for the load. A polling loop (a `select!`, a
    /// `join!`'s rounds) whose tests do not block spins on the issue slots that the other roles'
    /// warps need: it reads the word and waits for it (about 1 µs every 16 spins), which is its
    /// back-off. (On the H200, reading ahead in `select!` made `join_cost` 2x slower, 164 to 322
    /// ns per item.)
    pub(super) fn slow_wait_tail(
        &mut self,
        l: &str,
        timeout: &str,
        deadline: &str,
        spins: &str,
        word: &str,
        read_ahead: bool,
    ) -> WriteResult {
        self.slow_wait_tail_or_closed(l, (timeout, deadline, spins, word), read_ahead, None)
    }

    /// [`Writer::slow_wait_tail`], which also, with `closed = Some((open, label, debt))`, goes
    /// to `label` on every 16th iteration when the channel's open word at shared address `open`
    /// is 0 (every receiver has closed it), and otherwise pays the debt at `debt` (its word and
    /// the barrier waited on).
    pub(super) fn slow_wait_tail_or_closed(
        &mut self,
        l: &str,
        (timeout, deadline, spins, word): (&str, &str, &str, &str),
        read_ahead: bool,
        closed: Option<ClosedTest<'_>>,
    ) -> WriteResult {
        let (abort, launch_id, abort_label) = (
            self.abort.clone(),
            self.launch_id.clone(),
            self.abort_label.clone(),
        );
        let hit = self.tmp(Class::Pred);
        // Every warp of every block waits here at times: reading the one abort word on every slow
        // iteration would make it a hot spot of the L2, and a short wait should not pay a global
        // load's latency. So the word and the watchdog's clock are read on every 16th slow
        // iteration, the first time after 16 (`try_wait` suspends between them), and each read
        // is tested at the next poll, so that no iteration waits for the load.
        let skip = self.label("poll_skip");
        let low = self.tmp(Class::B32);
        let quiet = self.tmp(Class::Pred);
        self.line(format!("add.u32 {spins}, {spins}, 1;"))?;
        self.line(format!("and.b32 {low}, {spins}, 15;"))?;
        self.line(format!("setp.ne.u32 {quiet}, {low}, 0;"))?;
        self.line(format!("@{quiet} bra {l};"))?;
        self.raise_deferred()?;
        if !read_ahead {
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        // With `read_ahead`, `word` was read at the previous poll (or set when the slow loop
        // began): testing it does not wait for a load.
        match closed {
            None => {
                self.line(format!("setp.eq.u32 {hit}, {word}, {launch_id};"))?;
                self.line(format!("vote.sync.any.pred {hit}, {hit}, -1;"))?;
                self.line(format!("@{hit} bra {abort_label};"))?;
            }
            Some((open, label, debt)) => {
                // The channel's open word too, tested with the abort word on one branch (a
                // branch of its own made ptxas spill around the loop), and told apart out of
                // line.
                let (w, gone, either) = (
                    self.tmp(Class::B32),
                    self.tmp(Class::Pred),
                    self.tmp(Class::Pred),
                );
                let stop = self.label("stop");
                self.line(format!("ld.volatile.shared.u32 {w}, [{open}];"))?;
                self.line(format!("setp.eq.u32 {hit}, {word}, {launch_id};"))?;
                self.line(format!("setp.eq.u32 {gone}, {w}, 0;"))?;
                self.line(format!("or.pred {either}, {hit}, {gone};"))?;
                self.line(format!("vote.sync.any.pred {either}, {either}, -1;"))?;
                self.line(format!("@{either} bra {stop};"))?;
                let aborted = self.tmp(Class::Pred);
                self.stubs.push_str(&format!(
                    "{stop}:\n    vote.sync.any.pred {aborted}, {hit}, -1;\n    @{aborted} bra {abort_label};\n    bra {label};\n"
                ));
                if let Some((debt, barrier)) = debt {
                    self.pay_debt(debt, barrier)?;
                }
            }
        }
        if read_ahead {
            self.line(format!("ld.volatile.global.u32 {word}, [{abort}];"))?;
        }
        self.place_label(&skip)?;
        let (watchdog, on) = (self.watchdog.clone(), self.watchdog_on.clone());
        self.line(format!("@!{on} bra {l};"))?;
        let now = self.tmp(Class::B64);
        let first = self.tmp(Class::Pred);
        let late = self.tmp(Class::Pred);
        self.line(format!("mov.u64 {now}, %globaltimer;"))?;
        self.line(format!("setp.eq.u64 {first}, {deadline}, 0;"))?;
        self.line(format!("@{first} add.u64 {deadline}, {now}, {watchdog};"))?;
        self.line(format!("setp.gt.u64 {late}, {now}, {deadline};"))?;
        self.line(format!("vote.sync.any.pred {late}, {late}, -1;"))?;
        self.line(format!("@{late} bra {timeout};"))?;
        self.line(format!("bra {l};"))
    }

    /// Out-of-line code at `label`: the first failing thread of this launch writes the failure
    /// record (`kind`, `site`, block, thread, role), then every thread goes on to `cont`.
    pub(super) fn stub(&mut self, label: &str, kind: u32, site: SiteId, cont: &str) -> WriteResult {
        self.stub_at(label, kind, &site.0.to_string(), cont)
    }

    /// [`Writer::stub`] with the site as an operand (an immediate or a register).
    pub(super) fn stub_at(
        &mut self,
        label: &str,
        kind: u32,
        site: &str,
        cont: &str,
    ) -> WriteResult {
        let role = self.role.as_ref().map_or(u32::MAX, |r| r.index as u32);
        let prev = self.tmp(Class::B32);
        let dup = self.tmp(Class::Pred);
        let block = self.tmp(Class::B32);
        let (abort, launch_id, record, tid) =
            (&self.abort, &self.launch_id, &self.record, &self.tid);
        let at = |word| record_word(record, word);
        let out = &mut self.stubs;
        writeln!(out, "{label}:")?;
        writeln!(
            out,
            "    atom.global.exch.b32 {prev}, [{abort}], {launch_id};"
        )?;
        writeln!(out, "    setp.eq.u32 {dup}, {prev}, {launch_id};")?;
        writeln!(out, "    @{dup} bra {cont};")?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {kind};",
            at(record::KIND)
        )?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {site};",
            at(record::SITE)
        )?;
        writeln!(out, "    mov.u32 {block}, %ctaid.x;")?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {block};",
            at(record::BLOCK)
        )?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {tid};",
            at(record::THREAD)
        )?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {role};",
            at(record::ROLE)
        )?;
        writeln!(out, "    fence.sc.sys;")?;
        writeln!(
            out,
            "    st.volatile.global.u32 {}, {launch_id};",
            at(record::LAUNCH_ID)
        )?;
        writeln!(out, "    bra {cont};")?;
        Ok(())
    }
}
