//! The trace buffer of a launch on the GPU, read back: the regions its roles wrote (see
//! `gpu_async_wire::trace` for the layout), decoded into a [`Trace`].

use gpu_async_wire::trace::{
    region_offset, TraceEvent, HEADER_BLOCK, HEADER_BYTES, HEADER_COUNT, HEADER_END, HEADER_SM,
    HEADER_START, HEADER_TAG, RECORD_ARG, RECORD_BYTES, RECORD_EVENT,
};

use super::events::{timeline, RawEvent, RawRole};
use super::options::Plan;
use super::{BlockTimeline, Clock, Trace};
use crate::spec::KernelSpec;

/// The `u64` at word `at` of `words` (little endian), 0 past the end.
fn word64(words: &[u32], at: usize) -> u64 {
    let lo = words.get(at).copied().unwrap_or(0);
    let hi = words.get(at + 1).copied().unwrap_or(0);
    u64::from(lo) | u64::from(hi) << 32
}

/// The trace in `words`, the buffer of a launch of `spec` laid out by `plan` and tagged `tag`:
/// one block per slot that some role wrote, in block order.
pub(crate) fn decode(spec: &'static KernelSpec, plan: &Plan, tag: u32, words: &[u32]) -> Trace {
    let mut blocks = Vec::new();
    for slot in 0..plan.slots {
        let mut block = None;
        let mut roles = Vec::new();
        for (index, role) in spec.roles.iter().enumerate() {
            let base = region_offset(slot, plan.roles, index as u32, plan.capacity) / 4;
            let Ok(base) = usize::try_from(base) else {
                continue;
            };
            let header = |word: usize| words.get(base + word).copied().unwrap_or(0);
            if tag == 0 || header(HEADER_TAG) != tag {
                continue;
            }
            block.get_or_insert((header(HEADER_BLOCK), header(HEADER_SM)));
            let count = u64::from(header(HEADER_COUNT));
            let kept = count.min(u64::from(plan.capacity)) as usize;
            let first = base + HEADER_BYTES as usize / 4;
            let events = (0..kept)
                .filter_map(|i| {
                    let at = first + i * RECORD_BYTES as usize / 4;
                    let event = TraceEvent::from_code(words.get(at + RECORD_EVENT).copied()?)?;
                    Some(RawEvent {
                        time: word64(words, at),
                        event,
                        arg: words.get(at + RECORD_ARG).copied()?,
                    })
                })
                .collect();
            let end = word64(words, base + HEADER_END);
            let raw = RawRole {
                role: role.name.to_string(),
                start: word64(words, base + HEADER_START),
                end: (end != 0).then_some(end),
                events,
                dropped: count - kept as u64,
            };
            roles.push(timeline(raw, spec, None));
        }
        if let Some((block, sm)) = block {
            blocks.push(BlockTimeline {
                block,
                sm: Some(sm),
                roles,
            });
        }
    }
    Trace {
        kernel: spec.path,
        clock: Clock::Nanoseconds,
        blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{RoleSpec, SiteKind, SiteSpec};
    use crate::trace::{Activity, TraceOptions};
    use gpu_async_wire::trace::region_bytes;

    static SPEC: KernelSpec = KernelSpec {
        entry: "k",
        path: "m::k",
        ptx: "",
        warps: 2,
        shared_bytes: 0,
        params: &[],
        roles: &[
            RoleSpec {
                name: "load",
                first_warp: 0,
                end_warp: 1,
            },
            RoleSpec {
                name: "store",
                first_warp: 1,
                end_warp: 2,
            },
        ],
        sites: &[SiteSpec {
            kind: SiteKind::Wait,
            message: "`recv()` on channel `tx/rx`",
            file: "src/k.rs",
            line: 12,
            column: 5,
        }],
        abort_protocol: true,
    };

    /// Writes what the kernel writes for one role: its header and its records.
    fn write_role(
        words: &mut [u32],
        plan: &Plan,
        (slot, role): (u32, u32),
        header: [u32; 4],
        (start, end): (u64, u64),
        records: &[(u64, TraceEvent, u32)],
    ) {
        let base = (region_offset(slot, plan.roles, role, plan.capacity) / 4) as usize;
        words[base..base + 4].copy_from_slice(&header);
        for (w, t) in [(HEADER_START, start), (HEADER_END, end)] {
            words[base + w] = t as u32;
            words[base + w + 1] = (t >> 32) as u32;
        }
        for (i, &(time, event, arg)) in records.iter().take(plan.capacity as usize).enumerate() {
            let at = base + 8 + 4 * i;
            words[at] = time as u32;
            words[at + 1] = (time >> 32) as u32;
            words[at + RECORD_EVENT] = event.code();
            words[at + RECORD_ARG] = arg;
        }
    }

    #[test]
    fn regions_of_this_launch_become_blocks_and_others_are_skipped() {
        let options = TraceOptions::default().events_per_role(2);
        let plan = Plan::new("m::k", options, 3, 2).unwrap();
        assert_eq!(plan.slots, 1);
        let plan = Plan { slots: 2, ..plan };
        let len = (plan.bytes() / 4) as usize;
        // Whatever an earlier launch left: a stale tag.
        let mut words = vec![0xdead_beef_u32; len];
        let t0 = 1u64 << 40;
        write_role(
            &mut words,
            &plan,
            (0, 0),
            [1, 0, 7, 42],
            (t0, t0 + 900),
            &[(t0 + 100, TraceEvent::WaitFree, 9)],
        );
        write_role(
            &mut words,
            &plan,
            (0, 1),
            // Three events, two kept.
            [3, 0, 7, 42],
            (t0, t0 + 1000),
            &[
                (t0 + 10, TraceEvent::WaitFull, 0),
                (t0 + 500, TraceEvent::WaitEnd, 0),
            ],
        );
        let trace = decode(&SPEC, &plan, 42, &words);
        assert_eq!(trace.clock, Clock::Nanoseconds);
        assert_eq!(trace.blocks.len(), 1, "slot 1 holds another launch's tag");
        let block = &trace.blocks[0];
        assert_eq!((block.block, block.sm), (0, Some(7)));
        let store = &block.roles[1];
        assert_eq!(store.role, "store");
        assert_eq!(store.dropped, 1);
        assert_eq!(store.spans[0].activity, Activity::Run);
        assert_eq!((store.spans[0].start, store.spans[0].end), (t0, t0 + 1000));
        assert_eq!(
            store.spans[1].label,
            "`recv()` on channel `tx/rx` (src/k.rs:12)"
        );
        assert_eq!(
            (store.spans[1].start, store.spans[1].end),
            (t0 + 10, t0 + 500)
        );
        // A site the spec does not have still labels the wait.
        assert_eq!(block.roles[0].spans[1].label, "site 9");
        assert_eq!(block.roles[0].spans[1].end, t0 + 900);
        assert_eq!(region_bytes(2) * 4, plan.bytes());
    }
}
