//! A traced launch on the simulator: for each traced block, what each role does at each scheduler
//! step, recorded as the GPU records it (the wire's events), in logical time: step `k` of the
//! block runs from tick `k` to tick `k + 1`.
//!
//! A role's run starts at its first step and ends after its last. A wait starts after the step
//! whose await found its channel (or barrier, one-shot, close) not ready, and ends at the step
//! in which that await completed; a role stepped again whose await is still not ready keeps
//! waiting. An await the step no longer polls (the other branch of a `select!` won) ends at that
//! step. A bulk copy, which the simulator does at once, spans its step. When the block stops (a
//! deadlock, a panic, a watchdog stop), the roles that had not finished run, and their open
//! waits last, until one tick after the block's last step: a deadlock shows as every role
//! waiting to the end.
//!
//! Labels name the kernel's sites as the GPU's trace does (the site at the await's source line
//! whose message names the channel); an await that has no site says what it waits on.

use std::panic::Location;
use std::sync::{Arc, Mutex, PoisonError};

use gpu_async_wire::trace::TraceEvent;

use super::{BlockState, Wait, WaitKind};
use crate::spec::SiteKind;
use crate::trace::{site_label, timeline, BlockTimeline, Labels, Plan, RawEvent, RawRole};

/// What a traced simulator launch records, and where its blocks' timelines go.
#[derive(Clone)]
pub(crate) struct SimTracing {
    pub(crate) plan: Plan,
    pub(crate) sink: Arc<Mutex<Vec<BlockTimeline>>>,
}

impl SimTracing {
    /// The recorder of block `block`, when it is traced.
    pub(super) fn block(&self, block: u32) -> Option<SimTrace> {
        self.plan.traces(block).then(|| SimTrace {
            capacity: u64::from(self.plan.capacity),
            step: 0,
            steps: 0,
            roles: Vec::new(),
            keys: Vec::new(),
        })
    }

    /// Adds the timeline of a block that ran.
    pub(super) fn keep(&self, block: BlockTimeline) {
        self.sink
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(block);
    }
}

/// What an event's argument stands for: an await (its kind, channel and place), or the slot of a
/// copy (into a slot of the channel: its `reserve`; out of one: its `recv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Wait(WaitKind, usize, Option<&'static Location<'static>>),
    Copy { into: bool, channel: usize },
}

/// The recorder of one traced block.
pub(crate) struct SimTrace {
    capacity: u64,
    /// The step running (or the last one).
    step: u64,
    /// Steps so far.
    steps: u64,
    roles: Vec<RoleTrace>,
    /// What each argument stands for.
    keys: Vec<Key>,
}

#[derive(Default)]
struct RoleTrace {
    start: Option<u64>,
    end: Option<u64>,
    events: Vec<RawEvent>,
    count: u64,
    /// The open waits: their key, and the last step that found them not ready.
    open: Vec<(u32, u64)>,
}

impl SimTrace {
    /// The block registered `roles` roles.
    pub(super) fn roles(&mut self, roles: usize) {
        self.roles = (0..roles).map(|_| RoleTrace::default()).collect();
    }

    fn key(&mut self, key: Key) -> u32 {
        match self.keys.iter().position(|k| *k == key) {
            Some(i) => i as u32,
            None => {
                self.keys.push(key);
                self.keys.len() as u32 - 1
            }
        }
    }

    fn record(&mut self, role: usize, time: u64, event: TraceEvent, arg: u32) {
        let capacity = self.capacity;
        if let Some(r) = self.roles.get_mut(role) {
            if r.count < capacity {
                r.events.push(RawEvent { time, event, arg });
            }
            r.count += 1;
        }
    }

    /// Role `role` starts a step.
    pub(super) fn enter(&mut self, role: usize) {
        self.step = self.steps;
        self.steps += 1;
        if let Some(r) = self.roles.get_mut(role) {
            r.start.get_or_insert(self.step);
        }
    }

    /// Role `role`'s await of `kind` on `channel` at `at` is not ready in this step.
    pub(super) fn wait(
        &mut self,
        role: usize,
        kind: WaitKind,
        channel: usize,
        at: Option<&'static Location<'static>>,
    ) {
        let key = self.key(Key::Wait(kind, channel, at));
        let step = self.step;
        let Some(r) = self.roles.get_mut(role) else {
            return;
        };
        if let Some(open) = r.open.iter_mut().find(|(k, _)| *k == key) {
            open.1 = step;
            return;
        }
        r.open.push((key, step));
        let event = match kind {
            WaitKind::Recv => TraceEvent::WaitFull,
            WaitKind::Reserve | WaitKind::Close => TraceEvent::WaitFree,
            WaitKind::Barrier | WaitKind::Oneshot => TraceEvent::WaitBarrier,
        };
        self.record(role, step + 1, event, key);
    }

    /// Role `role`'s await of `kind` on `channel` at `at` completed in this step.
    pub(super) fn done(
        &mut self,
        role: usize,
        kind: WaitKind,
        channel: usize,
        at: &'static Location<'static>,
    ) {
        let wanted = Key::Wait(kind, channel, Some(at));
        let Some(key) = self.keys.iter().position(|k| *k == wanted) else {
            return;
        };
        let key = key as u32;
        let Some(r) = self.roles.get_mut(role) else {
            return;
        };
        if let Some(i) = r.open.iter().position(|(k, _)| *k == key) {
            r.open.remove(i);
            let step = self.step;
            self.record(role, step, TraceEvent::WaitEnd, key);
        }
    }

    /// Role `role` copied into (`into`) or out of a slot of `channel` in this step.
    pub(super) fn copy(&mut self, role: usize, into: bool, channel: usize) {
        let key = self.key(Key::Copy { into, channel });
        let (start, end) = if into {
            (TraceEvent::CopyIn, TraceEvent::CopyInEnd)
        } else {
            (TraceEvent::CopyOut, TraceEvent::CopyOutEnd)
        };
        let step = self.step;
        self.record(role, step, start, key);
        self.record(role, step + 1, end, key);
    }

    /// Role `role` ends its step (`finished`: its run is over): the waits this step no longer
    /// found not ready have ended.
    pub(super) fn leave(&mut self, role: usize, finished: bool) {
        let step = self.step;
        let Some(r) = self.roles.get_mut(role) else {
            return;
        };
        let (still, ended): (Vec<_>, Vec<_>) = std::mem::take(&mut r.open)
            .into_iter()
            .partition(|&(_, noted)| noted == step && !finished);
        r.open = still;
        if finished {
            r.end = Some(step + 1);
        }
        for (key, _) in ended {
            self.record(role, step, TraceEvent::WaitEnd, key);
        }
    }

    /// The block's timeline, with the labels `block` (the block's state, its channels and the
    /// kernel's sites) gives: every role that ran, those that did not finish until one tick
    /// after the last step.
    pub(super) fn finish(self, block: &BlockState) -> BlockTimeline {
        let labels = SimLabels(self.keys.iter().map(|&k| label(block, k)).collect());
        let roles = self
            .roles
            .into_iter()
            .zip(&block.roles)
            .filter_map(|(r, state)| {
                let start = r.start?;
                let kept = r.events.len() as u64;
                let raw = RawRole {
                    role: state.name.to_string(),
                    start,
                    end: r.end,
                    events: r.events,
                    dropped: r.count - kept,
                };
                // A role that did not finish (the block stopped) runs one tick past the last step:
                // the tick in which nothing could move.
                Some(timeline(raw, &labels, Some(self.steps + 1)))
            })
            .collect();
        BlockTimeline {
            block: block.block,
            sm: None,
            roles,
        }
    }
}

/// The labels of a block's arguments, resolved when it ends.
struct SimLabels(Vec<String>);

impl Labels for SimLabels {
    fn site(&self, arg: u32) -> String {
        self.0.get(arg as usize).cloned().unwrap_or_default()
    }
}

/// What `key` is called: the kernel's site where one is found (as the GPU's trace labels it),
/// else what the simulator knows of the await.
fn label(block: &BlockState, key: Key) -> String {
    let (kind, channel, at) = match key {
        Key::Wait(kind, channel, at) => (kind, channel, at),
        Key::Copy { into, channel } => {
            // The slot's await: the channel's `reserve()` (into) or `recv()`, where it was seen.
            let kind = if into {
                WaitKind::Reserve
            } else {
                WaitKind::Recv
            };
            let seen = block
                .channels
                .get(channel)
                .and_then(|c| c.seen.iter().find(|(k, _)| *k == kind));
            match seen {
                Some(&(kind, at)) => (kind, channel, Some(at)),
                None => return String::new(),
            }
        }
    };
    if let Some(site) = site_of(block, kind, channel, at) {
        if let Some(spec) = block.spec {
            return site_label(spec, site);
        }
    }
    let (what, location) = block.describe(Wait { kind, channel, at });
    format!("{what} ({location})")
}

/// The index of the kernel's wait site of an await of `kind` on `channel` at `at`: the site at
/// its source line whose message names the channel, else the one site at that line, else for a
/// `recv()` the `select!` of its file that names the channel.
fn site_of(
    block: &BlockState,
    kind: WaitKind,
    channel: usize,
    at: Option<&'static Location<'static>>,
) -> Option<u32> {
    let spec = block.spec?;
    let name = block.channel_name(channel);
    let expected = name.as_ref().map(|n| match kind {
        WaitKind::Reserve => format!("`reserve()` on channel `{n}`"),
        WaitKind::Recv => format!("`recv()` on channel `{n}`"),
        WaitKind::Close => format!("closing channel `{n}`"),
        WaitKind::Barrier | WaitKind::Oneshot => String::new(),
    });
    let waits = spec
        .sites
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == SiteKind::Wait);
    let here: Vec<(usize, &str)> = match at {
        Some(at) => waits
            .filter(|(_, s)| s.file == at.file() && s.line == at.line())
            .map(|(i, s)| (i, s.message))
            .collect(),
        // A close has no place of its own: its sites are found by their message.
        None => waits.map(|(i, s)| (i, s.message)).collect(),
    };
    let named = expected
        .filter(|e| !e.is_empty())
        .and_then(|e| here.iter().find(|(_, m)| m.starts_with(&e)));
    let index = match (named, here.as_slice()) {
        (Some(&(i, _)), _) => i,
        (None, [(i, _)]) if at.is_some() => *i,
        // A `recv()` of a `select!` (its site is the macro's, on another line): the select of
        // the file whose channels include this one.
        _ if kind == WaitKind::Recv => {
            let name = format!("`{}`", name?);
            let file = at?.file();
            spec.sites.iter().position(|s| {
                s.kind == SiteKind::Wait
                    && s.file == file
                    && s.message.starts_with("`select!` over channels")
                    && s.message.contains(&name)
            })?
        }
        _ => return None,
    };
    u32::try_from(index).ok()
}
