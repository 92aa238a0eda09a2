//! The host half of the abort protocol: how a failing kernel stops its launch and tells the host
//! why, without trapping (a trap makes the CUDA context unusable for the rest of the process).
//!
//! # The protocol
//!
//! A kernel whose [`KernelSpec::abort_protocol`] is set takes [`HIDDEN_PARAMS`] parameters after
//! its own, in this order:
//!
//! 1. `abort: .u64`: the device address of the device's *abort word*, a `u32` in device memory,
//!    one per [`Stream`](crate::Stream), zero when the stream is created;
//! 2. `launch_id: .u32`: this launch's id, from a per-stream counter that starts at 1 and is
//!    never 0;
//! 3. `record: .u64`: the device address of this launch's *failure record*, 32 bytes of
//!    page-locked host memory mapped into the device's address space: slot
//!    `launch_id % RECORD_SLOTS` of its stream's *record ring* ([`RECORD_SLOTS`] records, zero at
//!    creation);
//! 4. `watchdog_ns: .u64`: the bound on each single wait, in nanoseconds; 0 turns it off.
//!
//! A thread that fails (a device panic, or a wait that outlived the watchdog) does `atom.exch` of
//! `launch_id` into the abort word; every other thread of the launch polls the word at its waits
//! and stops when it holds its own `launch_id`. The first failing thread of the launch (the one
//! whose exchange returned another value) then writes the record as `u32` words (the layout of
//! `gpu_async_wire::record`, which the compiler writes too): `[1]` the kind
//! (a [`FailureKind`] code), `[2]` the index of the site in [`KernelSpec::sites`],
//! `[3]` the block (`%ctaid.x`), `[4]` the thread (`%tid.x`), `[5]` the index of the role in
//! [`KernelSpec::roles`]; then `fence.sc.sys`, and last `[0] = launch_id`. Words 6 and 7 are
//! reserved. The kernel then ends normally, so the context stays usable.
//!
//! The host reads the launch's slot once it knows the launch has finished (its completion mark, or
//! a later launch's, has completed), when the outcome is taken. When the stream reported no CUDA error and word
//! `[0]` is this launch's id, [`decode_failure`] turns the copy into the launch's error. Nothing
//! copies the record at the kernel's end (that took a host round trip on the launch's stream after
//! every kernel), so the slot must still be the launch's own when it is read: it is, unless
//! [`RECORD_SLOTS`] or more later launches of the same stream were submitted before the read and
//! the one of them that shares the slot failed too. **Failures are therefore reported exactly for
//! up to [`RECORD_SLOTS`] launches in flight (submitted and not yet read) per stream.** Past that,
//! a slot holding a newer id of the same slot ([`overwritten_by`]) is detected, and the launch
//! then reports [`Error::OutcomeUnknown`] rather than a success it
//! cannot vouch for; the one case that is not detected is a later launch failing *while* the
//! record of this one is being read (a torn read), which needs more than [`RECORD_SLOTS`] launches
//! in flight as well.
//!
//! Nothing is reset between launches: a stale abort word or record holds an older launch's id,
//! which no later launch has, so launches in flight together on one device cannot mistake each
//! other's failures. The one exception is when the 32-bit counter wraps (after 2^32 − 1 launches):
//! the stream then drains, the ring is copied aside (the launches of the previous *epoch* read
//! their slots from that copy) and the word and the ring are zeroed, so that an id seen before the
//! wrap cannot be mistaken for a new launch's.
//!
//! The abort word, the ring and the counter are per stream: a failing launch never replaces the id
//! of another running launch in the abort word (launches of one stream run one after another);
//! launches on different streams, which may run at once, never share them.
//!
//! Cancellation ([`Launch::cancel`](crate::Launch::cancel)) writes the launch's id into its
//! stream's abort word from the host (on a high-priority stream of the device used for nothing
//! else); the kernel stops as if another of its threads had failed, without a record, and the
//! launch reports [`Error::Cancelled`](crate::Error::Cancelled). The word holds one id: cancelling
//! a launch queued behind a cancelled running one on the same stream replaces the running one's
//! id, which then runs to its end (it still reports `Cancelled`), and a launch that fails replaces
//! the id of a cancelled launch queued behind it.

use std::time::Duration;

use crate::error::{Error, RoleWait};
use crate::spec::{KernelSpec, HIDDEN_PARAMS};
use gpu_async_wire::record as layout;
use gpu_async_wire::{FailureKind, HiddenParam};

/// Number of `u32` words of the failure record (32 bytes).
pub(crate) const RECORD_WORDS: usize = layout::WORDS;

/// The failure record, as the host reads it.
pub(crate) type Record = [u32; RECORD_WORDS];

/// Number of failure records in a stream's ring: launch `k` of a stream writes slot
/// `k % RECORD_SLOTS`. A power of two dividing 2^32, so the slots follow each other across a wrap
/// of the launch-id counter too.
pub(crate) const RECORD_SLOTS: u32 = 4096;

/// The ring slot of launch `launch_id`.
pub(crate) fn record_slot(launch_id: u32) -> usize {
    // Lossless: the value is below `RECORD_SLOTS`.
    (launch_id % RECORD_SLOTS) as usize
}

/// The id of a later launch whose failure overwrote the slot of launch `launch_id`, if `record`
/// (a copy of that slot, taken after the launch finished) holds one: an id of the same slot
/// greater than `launch_id` (ids only grow within an epoch). `None` when the slot holds this
/// launch's id, an older one, or nothing: then it tells this launch's outcome exactly.
pub(crate) fn overwritten_by(launch_id: u32, record: &Record) -> Option<u32> {
    let id = record[0];
    (id > launch_id && id % RECORD_SLOTS == launch_id % RECORD_SLOTS).then_some(id)
}

/// The watchdog bound of a new device.
pub(crate) const DEFAULT_WATCHDOG: Duration = Duration::from_secs(5);

/// The id after `last` (0 before the first launch): 1, 2, ..., `u32::MAX`, then 1 again, never
/// 0. The flag says the counter wrapped, so ids of earlier launches come back.
pub(crate) fn next_launch_id(last: u32) -> (u32, bool) {
    match last.checked_add(1) {
        Some(id) => (id, false),
        None => (1, true),
    }
}

/// The watchdog parameter of a launch: the bound in nanoseconds, 0 when off. A bound of zero or
/// below a nanosecond becomes 1 ns (0 would mean off); one past `u64::MAX` ns (584 years)
/// saturates.
pub(crate) fn watchdog_ns(bound: Option<Duration>) -> u64 {
    match bound {
        None => 0,
        Some(bound) => u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX).max(1),
    }
}

/// The hidden parameters' 8-byte slots, in the kernel's order (see the module docs); a `.u32`
/// parameter holds its value in the slot's first 4 bytes.
pub(crate) fn hidden_params(
    abort_word: u64,
    launch_id: u32,
    record: u64,
    watchdog_ns: u64,
) -> [u64; HIDDEN_PARAMS] {
    let mut id_slot = [0u8; 8];
    id_slot[..4].copy_from_slice(&launch_id.to_ne_bytes());
    HiddenParam::ALL.map(|p| match p {
        HiddenParam::AbortWord => abort_word,
        HiddenParam::LaunchId => u64::from_ne_bytes(id_slot),
        HiddenParam::Record => record,
        HiddenParam::WatchdogNs => watchdog_ns,
    })
}

/// The error a launch with id `launch_id` of `spec` failed with, according to a copy of the
/// failure record taken after it finished; `None` when the record is not this launch's (word `[0]`
/// holds another launch's id, or 0). `watchdog` is the bound the launch ran with.
///
/// Indices out of the spec's range do not panic: the site's message and location, or the role's
/// name, become `?`. A kernel without roles reports its body as the role `kernel`.
pub(crate) fn decode_failure(
    spec: &KernelSpec,
    launch_id: u32,
    record: Record,
    watchdog: Option<Duration>,
) -> Option<Error> {
    let word = |w: usize| record[w];
    let (id, kind, site) = (
        word(layout::LAUNCH_ID),
        word(layout::KIND),
        word(layout::SITE),
    );
    let (block, thread, role) = (
        word(layout::BLOCK),
        word(layout::THREAD),
        word(layout::ROLE),
    );
    if launch_id == 0 || id != launch_id {
        return None;
    }
    let site = usize::try_from(site).ok().and_then(|i| spec.sites.get(i));
    let (message, location) = match site {
        Some(site) => (
            site.message.to_string(),
            format!("{}:{}:{}", site.file, site.line, site.column),
        ),
        None => ("?".to_string(), "?".to_string()),
    };
    let role_spec = usize::try_from(role).ok().and_then(|i| spec.roles.get(i));
    let (role_name, warps) = match role_spec {
        Some(role) => (role.name.to_string(), role.first_warp..role.end_warp),
        // A kernel without roles runs its body on every warp.
        None if spec.roles.is_empty() => ("kernel".to_string(), 0..spec.warps),
        // An unknown role: the warp of the reporting thread is all that is known.
        None => {
            let warp = thread / 32;
            ("?".to_string(), warp..warp.saturating_add(1))
        }
    };
    Some(match FailureKind::from_code(kind) {
        Some(FailureKind::Panic) => Error::KernelPanic {
            kernel: spec.path,
            role: role_name,
            block,
            message,
            location,
            thread: Some(thread),
        },
        Some(FailureKind::Watchdog) => {
            let waiting_on = match watchdog {
                Some(bound) => format!("was stopped by the watchdog after {bound:?} in {message}"),
                None => format!("was stopped by the watchdog in {message}"),
            };
            Error::Deadlock {
                kernel: spec.path,
                block,
                waits: vec![RoleWait {
                    role: role_name,
                    warps,
                    waiting_on,
                    location,
                }],
                schedule: None,
            }
        }
        None => Error::KernelPanic {
            kernel: spec.path,
            role: role_name,
            block,
            message: format!(
                "the kernel reported a failure of unknown kind {kind} (site message: {message})"
            ),
            location,
            thread: Some(thread),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND_PANIC: u32 = FailureKind::Panic.code();
    const KIND_WATCHDOG: u32 = FailureKind::Watchdog.code();
    use crate::spec::{RoleSpec, SiteKind, SiteSpec};

    static SPEC: KernelSpec = KernelSpec {
        entry: "k",
        path: "m::k",
        ptx: "",
        warps: 4,
        shared_bytes: 0,
        params: &[],
        roles: &[
            RoleSpec {
                name: "load",
                first_warp: 0,
                end_warp: 1,
            },
            RoleSpec {
                name: "compute",
                first_warp: 1,
                end_warp: 4,
            },
        ],
        sites: &[
            SiteSpec {
                kind: SiteKind::Panic,
                message: "index out of bounds",
                file: "src/k.rs",
                line: 12,
                column: 9,
            },
            SiteSpec {
                kind: SiteKind::Wait,
                message: "rx.recv() on channel `rx`",
                file: "src/k.rs",
                line: 20,
                column: 31,
            },
        ],
        abort_protocol: true,
    };

    static NO_ROLES: KernelSpec = KernelSpec {
        entry: "flat",
        path: "m::flat",
        roles: &[],
        ..SPEC
    };

    #[test]
    fn launch_ids_start_at_one_and_skip_zero() {
        assert_eq!(next_launch_id(0), (1, false));
        assert_eq!(next_launch_id(41), (42, false));
        assert_eq!(next_launch_id(u32::MAX - 1), (u32::MAX, false));
        assert_eq!(next_launch_id(u32::MAX), (1, true));
        let mut id = u32::MAX - 3;
        for _ in 0..8 {
            id = next_launch_id(id).0;
            assert_ne!(id, 0);
        }
    }

    #[test]
    fn watchdog_bound_in_nanoseconds() {
        assert_eq!(watchdog_ns(None), 0);
        assert_eq!(watchdog_ns(Some(Duration::from_millis(50))), 50_000_000);
        assert_eq!(watchdog_ns(Some(Duration::from_secs(5))), 5_000_000_000);
        assert_eq!(watchdog_ns(Some(Duration::ZERO)), 1);
        assert_eq!(watchdog_ns(Some(Duration::MAX)), u64::MAX);
    }

    #[test]
    fn hidden_params_in_protocol_order() {
        let p = hidden_params(0x7000_0000_0100, 0xdead_beef, 0x7fff_0000_0000, 50_000_000);
        assert_eq!(p.len(), HIDDEN_PARAMS);
        assert_eq!(p[0], 0x7000_0000_0100);
        assert_eq!(p[1].to_ne_bytes()[..4], 0xdead_beef_u32.to_ne_bytes());
        assert_eq!(p[1].to_ne_bytes()[4..], [0; 4]);
        assert_eq!(p[2], 0x7fff_0000_0000);
        assert_eq!(p[3], 50_000_000);
    }

    #[test]
    fn a_panic_record_becomes_kernel_panic() {
        let err = decode_failure(&SPEC, 7, [7, KIND_PANIC, 0, 2, 37, 1, 0, 0], None);
        match err {
            Some(Error::KernelPanic {
                kernel,
                role,
                block,
                message,
                location,
                thread,
            }) => {
                assert_eq!(kernel, "m::k");
                assert_eq!(role, "compute");
                assert_eq!(block, 2);
                assert_eq!(message, "index out of bounds");
                assert_eq!(location, "src/k.rs:12:9");
                assert_eq!(thread, Some(37));
            }
            other => panic!("expected KernelPanic, got {other:?}"),
        }
        let shown = decode_failure(&SPEC, 7, [7, KIND_PANIC, 0, 2, 37, 1, 0, 0], None)
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            shown,
            "kernel `m::k` panicked in role `compute` of block 2 (thread 37) at src/k.rs:12:9: \
             index out of bounds"
        );
    }

    #[test]
    fn a_watchdog_record_becomes_deadlock() {
        let bound = Some(Duration::from_millis(50));
        let err = decode_failure(&SPEC, 9, [9, KIND_WATCHDOG, 1, 5, 3, 0, 0, 0], bound);
        match err {
            Some(Error::Deadlock {
                kernel,
                block,
                waits,
                schedule: None,
            }) => {
                assert_eq!(kernel, "m::k");
                assert_eq!(block, 5);
                assert_eq!(
                    waits,
                    vec![RoleWait {
                        role: "load".to_string(),
                        warps: 0..1,
                        waiting_on: "was stopped by the watchdog after 50ms in rx.recv() on \
                                     channel `rx`"
                            .to_string(),
                        location: "src/k.rs:20:31".to_string(),
                    }]
                );
            }
            other => panic!("expected Deadlock, got {other:?}"),
        }
        let off = decode_failure(&SPEC, 9, [9, KIND_WATCHDOG, 1, 5, 3, 0, 0, 0], None);
        assert!(
            matches!(&off, Some(Error::Deadlock { waits, .. })
                if waits[0].waiting_on == "was stopped by the watchdog in rx.recv() on channel `rx`"),
            "{off:?}"
        );
    }

    #[test]
    fn a_record_of_another_launch_is_no_failure() {
        // An older launch's record (and the zeroed record of a new device) are not this one's.
        assert!(decode_failure(&SPEC, 8, [7, KIND_PANIC, 0, 2, 37, 1, 0, 0], None).is_none());
        assert!(decode_failure(&SPEC, 1, [0; RECORD_WORDS], None).is_none());
        // Id 0 is never a launch's, even against a zeroed record.
        assert!(decode_failure(&SPEC, 0, [0, KIND_PANIC, 0, 0, 0, 0, 0, 0], None).is_none());
    }

    #[test]
    fn ring_slots_and_overwritten_records() {
        assert_eq!(record_slot(1), 1);
        assert_eq!(record_slot(RECORD_SLOTS), 0);
        assert_eq!(record_slot(RECORD_SLOTS + 5), 5);
        // The slots follow each other across a wrap: u32::MAX is followed by 1.
        assert_eq!(record_slot(u32::MAX), RECORD_SLOTS as usize - 1);
        let k = 7;
        let with = |id: u32| [id, KIND_PANIC, 0, 0, 0, 0, 0, 0];
        assert_eq!(overwritten_by(k, &with(k)), None);
        assert_eq!(overwritten_by(k, &[0; RECORD_WORDS]), None);
        assert_eq!(overwritten_by(k + RECORD_SLOTS, &with(k)), None);
        assert_eq!(
            overwritten_by(k, &with(k + RECORD_SLOTS)),
            Some(k + RECORD_SLOTS)
        );
        assert_eq!(
            overwritten_by(k, &with(k + 3 * RECORD_SLOTS)),
            Some(k + 3 * RECORD_SLOTS)
        );
        // Another slot's id cannot be in this slot; it is not taken for an overwrite.
        assert_eq!(overwritten_by(k, &with(k + 1)), None);
    }

    #[test]
    fn bad_indices_do_not_panic() {
        let err = decode_failure(&SPEC, 3, [3, KIND_PANIC, 99, 1, 70, 12, 0, 0], None);
        match err {
            Some(Error::KernelPanic {
                role,
                message,
                location,
                thread,
                ..
            }) => {
                assert_eq!(role, "?");
                assert_eq!(message, "?");
                assert_eq!(location, "?");
                assert_eq!(thread, Some(70));
            }
            other => panic!("expected KernelPanic, got {other:?}"),
        }
        let err = decode_failure(
            &SPEC,
            3,
            [3, KIND_WATCHDOG, u32::MAX, 1, u32::MAX, u32::MAX, 0, 0],
            None,
        );
        match err {
            Some(Error::Deadlock { waits, .. }) => {
                assert_eq!(waits[0].role, "?");
                assert_eq!(waits[0].location, "?");
                assert_eq!(waits[0].warps, u32::MAX / 32..u32::MAX / 32 + 1);
            }
            other => panic!("expected Deadlock, got {other:?}"),
        }
        // An unknown kind is still a failure of this launch.
        let err = decode_failure(&SPEC, 3, [3, 77, 0, 1, 2, 0, 0, 0], None);
        assert!(
            matches!(&err, Some(Error::KernelPanic { message, .. }) if message.contains("unknown kind 77")),
            "{err:?}"
        );
    }

    #[test]
    fn a_kernel_without_roles_reports_its_body() {
        let err = decode_failure(&NO_ROLES, 4, [4, KIND_WATCHDOG, 1, 0, 64, 0, 0, 0], None);
        assert!(
            matches!(&err, Some(Error::Deadlock { waits, .. })
                if waits[0].role == "kernel" && waits[0].warps == (0..4)),
            "{err:?}"
        );
        let err = decode_failure(&NO_ROLES, 4, [4, KIND_PANIC, 0, 0, 64, 0, 0, 0], None);
        assert!(
            matches!(&err, Some(Error::KernelPanic { role, .. }) if role == "kernel"),
            "{err:?}"
        );
    }
}
