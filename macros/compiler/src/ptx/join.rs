//! `join!` and `select!` in role code: a `join!` is a state machine in which each branch's
//! waits yield to the next branch instead of blocking ([`JoinCtx`]); a `select!` polls its
//! channels without blocking, alone or as a yielding wait of a `join!` branch.

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::waits::FAILURE_TIMEOUT;
use super::Writer;
use crate::ir::{Block, ChannelId, SiteId, Value};

/// The `join!` being written: a state machine with one state per warp. Each branch's state
/// register says where the warp goes on with it (0: its start, `k`: resume point `k`,
/// [`BRANCH_DONE`]: it has ended). A wait that finds its phase incomplete saves its resume point
/// and jumps to the next branch's dispatch; after the last branch, the round's tail ends the join
/// when every branch has ended, and otherwise watches the abort word and the watchdog as a
/// blocking wait does.
pub(super) struct JoinCtx {
    /// The join's number, in its labels.
    id: u32,
    /// The branch being written.
    branch: usize,
    /// Each branch's state register.
    states: Vec<String>,
    /// Each branch's resume points: state number and label.
    resumes: Vec<Vec<(u32, String)>>,
    /// Set (to 1) when a wait of a branch passes; the round's tail clears it.
    progress: String,
    /// The site of the wait that yielded last, for the watchdog's report.
    site: String,
}

/// The state of a `join!` branch that has ended.
const BRANCH_DONE: u32 = u32::MAX;

impl JoinCtx {
    fn dispatch_label(&self, branch: usize) -> String {
        if branch < self.states.len() {
            format!("$join{}_dispatch_{branch}", self.id)
        } else {
            format!("$join{}_round", self.id)
        }
    }
}

impl Writer<'_> {
    /// A resume point of the `join!` branch being written: `test` branches away when the awaited
    /// thing is ready and falls through when not; then the warp saves this point in the
    /// branch's state and goes on with the next branch.
    pub(super) fn yield_point(
        &mut self,
        site: SiteId,
        test: &mut dyn FnMut(&mut Self) -> WriteResult,
    ) -> WriteResult {
        let Some(j) = self.join.as_mut() else {
            return Err(WriteError::inconsistent(
                "a wait in a join! branch",
                "one outside every join!",
            ));
        };
        let branch = j.branch;
        let point = j.resumes[branch].len() as u32 + 1;
        let label = format!("$join{}_b{branch}_r{point}", j.id);
        j.resumes[branch].push((point, label.clone()));
        let (state, next, site_reg) = (
            j.states[branch].clone(),
            j.dispatch_label(branch + 1),
            j.site.clone(),
        );
        self.place_label(&label)?;
        test(self)?;
        self.line(format!("mov.u32 {state}, {point};"))?;
        self.line(format!("mov.u32 {site_reg}, {};", site.0))?;
        self.line(format!("bra {next};"))
    }

    /// In a `join!` branch: a wait has passed (the round's watchdog restarts).
    pub(super) fn note_progress(&mut self) -> WriteResult {
        match self.join.as_ref().map(|j| j.progress.clone()) {
            Some(progress) => self.line(format!("mov.u32 {progress}, 1;")),
            None => Ok(()),
        }
    }

    /// `join!` in role code: the branches one after the other, each ending in a jump to the
    /// next branch's dispatch, then the dispatches (a chain of compares on the branch's state)
    /// and the round's tail.
    pub(super) fn join(&mut self, branches: &[Block]) -> WriteResult {
        if self.join.is_some() {
            // The verifier rejects a join inside a join.
            return Err(WriteError::inconsistent(
                "a join! outside every join!",
                "one inside a join! branch",
            ));
        }
        let id = self.joins;
        self.joins += 1;
        writeln!(self.body, "    // join of {} branches", branches.len())?;
        let states: Vec<String> = branches.iter().map(|_| self.tmp(Class::B32)).collect();
        for st in &states {
            self.line(format!("mov.u32 {st}, 0;"))?;
        }
        let (progress, site) = (self.tmp(Class::B32), self.tmp(Class::B32));
        let (deadline, spins) = (self.tmp(Class::B64), self.tmp(Class::B32));
        self.line(format!("mov.u32 {progress}, 0;"))?;
        self.line(format!("mov.u32 {site}, 0;"))?;
        let word = self.slow_wait_start(&deadline, &spins)?;
        self.join = Some(JoinCtx {
            id,
            branch: 0,
            states: states.clone(),
            resumes: vec![Vec::new(); branches.len()],
            progress: progress.clone(),
            site: site.clone(),
        });
        let start = |b: usize| format!("$join{id}_start_{b}");
        let mut written = Ok(());
        for (b, block) in branches.iter().enumerate() {
            if let Some(j) = self.join.as_mut() {
                j.branch = b;
            }
            written = written
                .and_then(|_| self.place_label(&start(b)))
                .and_then(|_| self.block(block))
                .and_then(|_| self.line(format!("mov.u32 {}, {BRANCH_DONE};", states[b])));
            let next = self.join.as_ref().map(|j| j.dispatch_label(b + 1));
            written = written.and_then(|_| self.line(format!("bra {};", next.unwrap_or_default())));
        }
        let Some(ctx) = self.join.take() else {
            return Err(WriteError::inconsistent("the join! being written", "none"));
        };
        written?;
        // Dispatch: go on with each branch where it stopped; skip the ended ones.
        for (b, state) in states.iter().enumerate() {
            self.place_label(&ctx.dispatch_label(b))?;
            let p = self.tmp(Class::Pred);
            self.line(format!("setp.eq.u32 {p}, {state}, {BRANCH_DONE};"))?;
            self.line(format!("@{p} bra {};", ctx.dispatch_label(b + 1)))?;
            for (point, label) in &ctx.resumes[b] {
                self.line(format!("setp.eq.u32 {p}, {state}, {point};"))?;
                self.line(format!("@{p} bra {label};"))?;
            }
            self.line(format!("bra {};", start(b)))?;
        }
        // The round's tail: done when every branch has ended; a round in which no wait passed
        // counts as a slow iteration of a blocking wait (abort word, watchdog).
        let end = format!("$join{id}_end");
        let timeout = self.label("timeout");
        self.place_label(&ctx.dispatch_label(states.len()))?;
        let all = self.tmp(Class::Pred);
        for (b, state) in states.iter().enumerate() {
            if b == 0 {
                self.line(format!("setp.eq.u32 {all}, {state}, {BRANCH_DONE};"))?;
            } else {
                self.line(format!(
                    "setp.eq.and.u32 {all}, {state}, {BRANCH_DONE}, {all};"
                ))?;
            }
        }
        self.line(format!("@{all} bra {end};"))?;
        let moved = self.tmp(Class::Pred);
        let first = ctx.dispatch_label(0);
        self.line(format!("setp.ne.u32 {moved}, {progress}, 0;"))?;
        self.line(format!("mov.u32 {progress}, 0;"))?;
        self.line(format!("@{moved} mov.u32 {spins}, 0;"))?;
        self.line(format!("@{moved} mov.u64 {deadline}, 0;"))?;
        self.line(format!("@{moved} bra {first};"))?;
        self.slow_wait_tail(&first, &timeout, &deadline, &spins, &word, false)?;
        self.place_label(&end)?;
        let abort_label = self.abort_label.clone();
        self.stub_at(&timeout, FAILURE_TIMEOUT, &site, &abort_label)
    }

    /// `select!`: tests the enabled channels' next slots in order, and takes the first that is
    /// full (an item, or the end of the stream) as `recv` does. A channel that has closed is
    /// ready at once. Tests do not block (`test_wait`), so that no channel delays the others.
    pub(super) fn select_recv(
        &mut self,
        chans: &[ChannelId],
        enabled: Value,
        chosen: Value,
        some: Value,
        site: SiteId,
    ) -> WriteResult {
        let (en, ch, s) = (self.reg(enabled), self.reg(chosen), self.reg(some));
        let names: Vec<String> = chans.iter().map(|c| c.to_string()).collect();
        writeln!(self.body, "    // select over {}", names.join(", "))?;
        self.trace_wait(site)?;
        let done = self.label("selected");
        let mut rings = Vec::new();
        for &c in chans {
            rings.push((self.ring(c, 0)?, self.k.channel(c).clone()));
        }
        let got: Vec<String> = chans.iter().map(|_| self.label("select_got")).collect();
        let ended: Vec<String> = chans.iter().map(|_| self.label("select_closed")).collect();
        let (bit, on, p) = (
            self.tmp(Class::B32),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        let mut fulls = Vec::new();
        for (ring, c) in &rings {
            fulls.push(self.shared_addr(c.full_offset, &ring.slot, 8)?);
        }
        let mut test = |w: &mut Self| -> WriteResult {
            for (k, (ring, _)) in rings.iter().enumerate() {
                let skip = w.label("select_skip");
                w.line(format!("and.b32 {bit}, {en}, {};", 1u32 << k))?;
                w.line(format!("setp.ne.u32 {on}, {bit}, 0;"))?;
                w.line(format!("@!{on} bra {skip};"))?;
                w.line(format!("@{} bra {};", ring.closed, ended[k]))?;
                w.line(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, [{}], {};",
                    fulls[k], ring.phase
                ))?;
                w.line(format!("vote.sync.all.pred {p}, {p}, -1;"))?;
                w.line(format!("@{p} bra {};", got[k]))?;
                w.place_label(&skip)?;
            }
            Ok(())
        };
        if self.join.is_some() {
            self.yield_point(site, &mut test)?;
        } else {
            let l = self.label("select_wait");
            let timeout = self.label("timeout");
            let (deadline, spins) = (self.tmp(Class::B64), self.tmp(Class::B32));
            let word = self.slow_wait_start(&deadline, &spins)?;
            self.place_label(&l)?;
            test(self)?;
            self.slow_wait_tail(&l, &timeout, &deadline, &spins, &word, false)?;
            let abort_label = self.abort_label.clone();
            self.stub(&timeout, FAILURE_TIMEOUT, site, &abort_label)?;
        }
        for (k, (ring, c)) in rings.iter().enumerate() {
            // A full slot: an item or the end-of-stream marker, taken as `recv` takes it.
            self.place_label(&got[k])?;
            self.take_full_slot((chans[k], 0), ring, c, &s, None)?;
            self.line(format!("mov.u32 {ch}, {k};"))?;
            self.line(format!("bra {done};"))?;
            // A channel that closed before: its `recv` answers `None` at once.
            self.place_label(&ended[k])?;
            self.line(format!("setp.ne.u32 {s}, {ch}, {ch};"))?;
            self.line(format!("mov.u32 {ch}, {k};"))?;
            self.line(format!("bra {done};"))?;
        }
        self.place_label(&done)?;
        self.trace_wait_end(site)?;
        self.note_progress()
    }
}
