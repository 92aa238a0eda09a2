//! Per-role timelines of a launch: what each role of each traced block was doing, and when.
//!
//! A [`Trace`] holds, for every traced block, one row per role, each a sequence of [`Span`]s: a
//! wait for a full slot (a `recv`), a wait for a free slot (a `reserve`), a barrier wait, a bulk
//! copy, an mma, and the role's whole run. On the GPU the times are `%globaltimer` nanoseconds
//! and each block knows the SM it ran on; on the simulator they are scheduler steps (one tick per
//! step), so a stalled role or a deadlock shows in the same picture without a GPU.
//!
//! A trace comes from a traced launch: every kernel's module has `launch_traced` (and
//! `launch_traced_on`) next to `launch`, which take [`TraceOptions`] (which blocks, how many
//! events per role) and return a [`TracedLaunch`], a future of [`Traced`]: the launch's outcome
//! and its trace. A launch that fails (a deadlock, a panic, a watchdog stop) still has the trace
//! up to its failure: on the simulator a deadlock shows every role waiting until the end; on the
//! GPU the waits the watchdog stopped end where the role left. `docs/tracing.md` says how to
//! read the pictures.
//!
//! A trace is shown three ways: [`Trace::chrome_json`] (the Chrome trace-event format, which
//! Perfetto and `chrome://tracing` open: one process per block, one thread per role),
//! [`Trace::svg`] (a self-contained picture drawn here, no browser needed), and
//! [`Trace::summary`] (per role: busy, waiting for a full slot, waiting for a free slot, in
//! copies, the same numbers as text through `Display`); [`Trace::save`] writes the first two
//! to a directory.

mod chrome;
mod decode;
mod events;
mod options;
mod svg;

use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::launch::{Traced, TracedLaunch};
pub(crate) use decode::decode;
pub(crate) use events::{site_label, timeline, Labels, RawEvent, RawRole};
pub(crate) use options::Plan;
pub use options::{TraceBlocks, TraceOptions};

/// The clock of a trace's times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `%globaltimer` nanoseconds of the GPU.
    Nanoseconds,
    /// The simulator's scheduler steps, one tick each.
    Steps,
}

impl Clock {
    /// The unit, for labels.
    pub fn unit(self) -> &'static str {
        match self {
            Clock::Nanoseconds => "ns",
            Clock::Steps => "steps",
        }
    }
}

/// What a role was doing during a [`Span`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    /// The role's whole run, from its first instruction to its end.
    Run,
    /// Waiting for a full slot: a `recv().await` (or `select!`) whose item had not arrived.
    WaitFull,
    /// Waiting for a free slot: a `reserve().await` (or a close) whose ring was full.
    WaitFree,
    /// Waiting at a barrier between roles or a one-shot value.
    WaitBarrier,
    /// A bulk copy issued and in flight (`copy_from`, `copy_to`).
    Copy,
    /// A tensor-core mma issued and in flight (no kernel construct issues one yet, so no trace
    /// has these spans).
    Mma,
}

impl Activity {
    /// The name shown in pictures and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Activity::Run => "run",
            Activity::WaitFull => "waiting for a full slot",
            Activity::WaitFree => "waiting for a free slot",
            Activity::WaitBarrier => "waiting at a barrier",
            Activity::Copy => "in a bulk copy",
            Activity::Mma => "in an mma",
        }
    }

    /// Whether the role does nothing else meanwhile.
    pub fn is_wait(self) -> bool {
        matches!(
            self,
            Activity::WaitFull | Activity::WaitFree | Activity::WaitBarrier
        )
    }
}

/// One stretch of one role's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// What the role did.
    pub activity: Activity,
    /// When it started, in the trace's [`Clock`].
    pub start: u64,
    /// When it ended (at least `start`).
    pub end: u64,
    /// What it concerned, in the user's words: the channel and the source line of the await.
    pub label: String,
}

/// One role of one traced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleTimeline {
    /// The role's name (its async fn).
    pub role: String,
    /// Its spans, ordered by start.
    pub spans: Vec<Span>,
    /// Events that did not fit in the trace buffer and were dropped.
    pub dropped: u64,
}

/// One traced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockTimeline {
    /// The block's index in the grid.
    pub block: u32,
    /// The SM it ran on (GPU only).
    pub sm: Option<u32>,
    /// One timeline per role, in `join!` order.
    pub roles: Vec<RoleTimeline>,
}

/// The per-role timelines of one launch (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The kernel's path, `module::kernel`.
    pub kernel: &'static str,
    /// The unit of the times.
    pub clock: Clock,
    /// The traced blocks.
    pub blocks: Vec<BlockTimeline>,
}

/// How one role spent its time, summed over the traced blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSummary {
    /// The role's name.
    pub role: String,
    /// The time of its runs.
    pub total: u64,
    /// Of that, not waiting.
    pub busy: u64,
    /// Waiting for a full slot.
    pub waiting_full: u64,
    /// Waiting for a free slot.
    pub waiting_free: u64,
    /// Waiting at barriers.
    pub waiting_barrier: u64,
    /// With a bulk copy in flight (overlaps busy time: a copy runs while the role goes on).
    pub in_copies: u64,
    /// With an mma in flight (overlaps busy time likewise).
    pub in_mma: u64,
    /// Events dropped for want of space.
    pub dropped: u64,
}

impl Trace {
    /// The time from the first span's start to the last span's end.
    pub fn extent(&self) -> (u64, u64) {
        let spans = || {
            self.blocks
                .iter()
                .flat_map(|b| &b.roles)
                .flat_map(|r| &r.spans)
        };
        let start = spans().map(|s| s.start).min().unwrap_or(0);
        let end = spans().map(|s| s.end).max().unwrap_or(start);
        (start, end)
    }

    /// How each role spent its time, summed over the traced blocks, in `join!` order.
    pub fn summary(&self) -> Vec<RoleSummary> {
        let mut out: Vec<RoleSummary> = Vec::new();
        for row in self.blocks.iter().flat_map(|b| &b.roles) {
            let index = match out.iter().position(|s| s.role == row.role) {
                Some(i) => i,
                None => {
                    out.push(RoleSummary {
                        role: row.role.clone(),
                        total: 0,
                        busy: 0,
                        waiting_full: 0,
                        waiting_free: 0,
                        waiting_barrier: 0,
                        in_copies: 0,
                        in_mma: 0,
                        dropped: 0,
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[index];
            s.dropped += row.dropped;
            for span in &row.spans {
                let d = span.end.saturating_sub(span.start);
                match span.activity {
                    Activity::Run => s.total += d,
                    Activity::WaitFull => s.waiting_full += d,
                    Activity::WaitFree => s.waiting_free += d,
                    Activity::WaitBarrier => s.waiting_barrier += d,
                    Activity::Copy => s.in_copies += d,
                    Activity::Mma => s.in_mma += d,
                }
            }
        }
        for s in &mut out {
            s.busy = s
                .total
                .saturating_sub(s.waiting_full + s.waiting_free + s.waiting_barrier);
        }
        out
    }

    /// The trace in the Chrome trace-event format (JSON), which Perfetto
    /// (<https://ui.perfetto.dev>) and `chrome://tracing` open: one process per traced block
    /// (named with its SM on the GPU), one thread per role, one complete event per span.
    pub fn chrome_json(&self) -> String {
        chrome::write(self)
    }

    /// The trace as a self-contained SVG picture: one row per role of each traced block (the
    /// first 16 blocks; the title says when there are more), a bar per span coloured by what the
    /// role did, a time axis, and the per-role summary of every traced block under it.
    pub fn svg(&self) -> String {
        svg::write(self)
    }

    /// Writes [`Trace::chrome_json`] to `dir/trace.json` and [`Trace::svg`] to
    /// `dir/trace.svg`, creating `dir` if needed; returns the two paths.
    pub fn save(&self, dir: impl AsRef<Path>) -> std::io::Result<(PathBuf, PathBuf)> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        let (json, svg) = (dir.join("trace.json"), dir.join("trace.svg"));
        std::fs::write(&json, self.chrome_json())?;
        std::fs::write(&svg, self.svg())?;
        Ok((json, svg))
    }
}

/// A share of `total`, as a percentage with one decimal.
fn percent(part: u64, total: u64) -> String {
    if total == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / total as f64)
    }
}

impl fmt::Display for Trace {
    /// The per-role summary as a table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} traced block(s), times in {}",
            self.kernel,
            self.blocks.len(),
            self.clock.unit()
        )?;
        writeln!(
            f,
            "{:<20} {:>12} {:>8} {:>11} {:>11} {:>9} {:>10}",
            "role", "total", "busy", "wait full", "wait free", "barrier", "in copies"
        )?;
        for s in self.summary() {
            writeln!(
                f,
                "{:<20} {:>12} {:>8} {:>11} {:>11} {:>9} {:>10}{}",
                s.role,
                s.total,
                percent(s.busy, s.total),
                percent(s.waiting_full, s.total),
                percent(s.waiting_free, s.total),
                percent(s.waiting_barrier, s.total),
                percent(s.in_copies, s.total),
                if s.dropped > 0 {
                    format!("  ({} events dropped)", s.dropped)
                } else {
                    String::new()
                }
            )?;
        }
        Ok(())
    }
}

/// `s` with the characters XML and JSON give a meaning escaped, for the writers.
fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests;
