//! From recorded events to spans: what both backends record for one role of one block (its run,
//! and the starts and ends of its waits and copies, as the wire's [`TraceEvent`]s), paired into
//! the [`Span`]s of a [`RoleTimeline`], with labels from the kernel's sites.

use gpu_async_wire::trace::{TraceEvent, NO_SITE};

use super::{Activity, RoleTimeline, Span};
use crate::spec::KernelSpec;

/// One recorded event: when, what, and its argument (a wait's site; for a copy, the site of the
/// wait that took its slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawEvent {
    pub(crate) time: u64,
    pub(crate) event: TraceEvent,
    pub(crate) arg: u32,
}

/// What one role of one block recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRole {
    pub(crate) role: String,
    pub(crate) start: u64,
    /// `None` when the role did not reach its end (a deadlock, a thread that exited).
    pub(crate) end: Option<u64>,
    /// The events kept, in the order they were recorded.
    pub(crate) events: Vec<RawEvent>,
    /// Events past the capacity.
    pub(crate) dropped: u64,
}

/// What the spans of a role are called: a wait's site, or a copy and its slot's site.
pub(crate) trait Labels {
    /// The label of the wait or copy slot whose argument is `arg`.
    fn site(&self, arg: u32) -> String;
}

/// The labels of a compiled kernel: its sites' messages and source lines.
impl Labels for KernelSpec {
    fn site(&self, arg: u32) -> String {
        site_label(self, arg)
    }
}

/// Site `index` of `spec` as a label: what is waited for and where,
/// ``"`recv()` on channel `tx/rx` (src/k.rs:12)"``.
pub(crate) fn site_label(spec: &KernelSpec, index: u32) -> String {
    match spec.sites.get(index as usize) {
        Some(site) => format!("{} ({}:{})", site.message, site.file, site.line),
        None if index == NO_SITE => String::new(),
        None => format!("site {index}"),
    }
}

/// The label of a copy whose slot was taken at `slot` (a label, empty when unknown).
fn copy_label(event: TraceEvent, slot: &str) -> String {
    let what = match event {
        TraceEvent::CopyIn => "`copy_from` into the slot of",
        _ => "`copy_to` out of the slot of",
    };
    if slot.is_empty() {
        what.split(' ').next().unwrap_or_default().to_string()
    } else {
        format!("{what} {slot}")
    }
}

/// The activity a starting event begins.
fn activity(event: TraceEvent) -> Option<Activity> {
    match event {
        TraceEvent::WaitFull => Some(Activity::WaitFull),
        TraceEvent::WaitFree => Some(Activity::WaitFree),
        TraceEvent::WaitBarrier => Some(Activity::WaitBarrier),
        TraceEvent::CopyIn | TraceEvent::CopyOut => Some(Activity::Copy),
        TraceEvent::WaitEnd | TraceEvent::CopyInEnd | TraceEvent::CopyOutEnd => None,
    }
}

/// The timeline of one role: its run, then its waits and copies paired (a wait's end with the
/// latest open wait of its site; a copy end with every open copy of its direction), each inside
/// the run: a span still open at the run's end (a wait the role never left) ends there. A role
/// that did not reach its end runs until its last event, or `until` when given (the time the
/// simulator's block stopped). Spans are ordered by start, the run first.
pub(crate) fn timeline(raw: RawRole, labels: &dyn Labels, until: Option<u64>) -> RoleTimeline {
    let last = raw.events.iter().map(|e| e.time).max();
    let end = raw
        .end
        .or(until)
        .unwrap_or_else(|| last.unwrap_or(raw.start))
        .max(raw.start);
    let clamp = |t: u64| t.clamp(raw.start, end);
    let mut spans = vec![Span {
        activity: Activity::Run,
        start: raw.start,
        end,
        label: String::new(),
    }];
    // Open spans: (starting event, argument, start).
    let mut open: Vec<(TraceEvent, u32, u64)> = Vec::new();
    let mut events = raw.events;
    // Stable: events of one time keep their recorded order.
    events.sort_by_key(|e| e.time);
    let close = |spans: &mut Vec<Span>, (event, arg, start): (TraceEvent, u32, u64), at: u64| {
        let Some(activity) = activity(event) else {
            return;
        };
        let site = labels.site(arg);
        let label = match activity {
            Activity::Copy => copy_label(event, &site),
            _ => site,
        };
        spans.push(Span {
            activity,
            start: clamp(start),
            end: clamp(at.max(start)),
            label,
        });
    };
    for e in events {
        match e.event {
            TraceEvent::WaitEnd => {
                let found = open.iter().rposition(|&(event, arg, _)| {
                    arg == e.arg
                        && matches!(
                            event,
                            TraceEvent::WaitFull | TraceEvent::WaitFree | TraceEvent::WaitBarrier
                        )
                });
                if let Some(i) = found {
                    let span = open.remove(i);
                    close(&mut spans, span, e.time);
                }
            }
            TraceEvent::CopyInEnd | TraceEvent::CopyOutEnd => {
                let starts = if e.event == TraceEvent::CopyInEnd {
                    TraceEvent::CopyIn
                } else {
                    TraceEvent::CopyOut
                };
                let (ended, still): (Vec<_>, Vec<_>) =
                    open.into_iter().partition(|&(event, _, _)| event == starts);
                open = still;
                for span in ended {
                    close(&mut spans, span, e.time);
                }
            }
            started => open.push((started, e.arg, e.time)),
        }
    }
    for span in open {
        close(&mut spans, span, end);
    }
    spans[1..].sort_by_key(|s| (s.start, s.end));
    RoleTimeline {
        role: raw.role,
        spans,
        dropped: raw.dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Names;

    impl Labels for Names {
        fn site(&self, arg: u32) -> String {
            match arg {
                NO_SITE => String::new(),
                n => format!("site{n}"),
            }
        }
    }

    fn ev(time: u64, event: TraceEvent, arg: u32) -> RawEvent {
        RawEvent { time, event, arg }
    }

    #[test]
    fn waits_pair_by_site_and_copies_by_direction() {
        let raw = RawRole {
            role: "load".to_string(),
            start: 10,
            end: Some(100),
            events: vec![
                ev(20, TraceEvent::WaitFree, 1),
                ev(30, TraceEvent::WaitEnd, 1),
                ev(31, TraceEvent::CopyIn, 1),
                ev(32, TraceEvent::CopyIn, 1),
                ev(40, TraceEvent::CopyInEnd, NO_SITE),
                // Recorded out of order (the simulator closes a wait of an earlier step).
                ev(60, TraceEvent::WaitEnd, 2),
                ev(50, TraceEvent::WaitFull, 2),
                // Never ended: a deadlock.
                ev(90, TraceEvent::WaitBarrier, 3),
                // An end without a start (the start was not recorded): ignored.
                ev(95, TraceEvent::WaitEnd, 7),
            ],
            dropped: 4,
        };
        let t = timeline(raw, &Names, None);
        let got: Vec<(Activity, u64, u64, &str)> = t
            .spans
            .iter()
            .map(|s| (s.activity, s.start, s.end, s.label.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Activity::Run, 10, 100, ""),
                (Activity::WaitFree, 20, 30, "site1"),
                (Activity::Copy, 31, 40, "`copy_from` into the slot of site1"),
                (Activity::Copy, 32, 40, "`copy_from` into the slot of site1"),
                (Activity::WaitFull, 50, 60, "site2"),
                (Activity::WaitBarrier, 90, 100, "site3"),
            ]
        );
        assert_eq!(t.dropped, 4);
    }

    #[test]
    fn a_role_without_an_end_runs_to_its_last_event_or_the_stop() {
        let raw = RawRole {
            role: "r".to_string(),
            start: 5,
            end: None,
            events: vec![ev(7, TraceEvent::WaitFull, NO_SITE)],
            dropped: 0,
        };
        let t = timeline(raw.clone(), &Names, None);
        assert_eq!((t.spans[0].end, t.spans[1].end), (7, 7));
        let t = timeline(raw, &Names, Some(12));
        assert_eq!(
            (t.spans[0].end, t.spans[1].start, t.spans[1].end),
            (12, 7, 12)
        );
    }
}
