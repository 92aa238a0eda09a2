//! The planted corpus (`common/planted.rs`): kernels with protocol mistakes that the compiler
//! accepts, run on the simulator, which must explain each failure: the role(s), the await each is
//! stuck on with its source line, and the schedule that replays it.

// `while let Some(x) = rx.recv().await { ...; break; }` receives one item: the kernel language
// has no `if let` yet.
#[allow(dead_code, clippy::never_loop)]
#[path = "common/planted.rs"]
mod planted;

use std::ops::Range;

use gpu_async::{
    block_on, explore, Device, Error, Exhaustive, Grid, Result, RoleWait, Schedule, SCHEDULE_ENV,
};
use planted::planted as k;

const SOURCE: &str = include_str!("common/planted.rs");

/// `common/planted.rs:<line>:` of the line that `// planted: <tag>` marks (the marker ends the
/// line, or stands alone on the line above it).
fn at(tag: &str) -> String {
    let marker = format!("// planted: {tag}");
    let lines: Vec<&str> = SOURCE.lines().collect();
    let Some(i) = lines.iter().position(|l| l.trim_end().ends_with(&marker)) else {
        panic!("no `{marker}` in common/planted.rs");
    };
    let line = if lines[i].trim_start().starts_with("//") {
        i + 2
    } else {
        i + 1
    };
    format!("common/planted.rs:{line}:")
}

/// One role of an expected deadlock: its name, warps, the exact wait, and the tag of its line
/// (`None`: the role has finished).
type Expected<'a> = (&'a str, Range<u32>, &'a str, Option<&'a str>);

fn check_waits(waits: &[RoleWait], expected: &[Expected<'_>]) {
    assert_eq!(waits.len(), expected.len(), "{waits:#?}");
    for (w, (role, warps, waiting_on, tag)) in waits.iter().zip(expected) {
        assert_eq!(w.role, *role, "{w:?}");
        assert_eq!(w.warps, *warps, "{w:?}");
        assert_eq!(w.waiting_on, *waiting_on, "{w:?}");
        match tag {
            Some(tag) => assert!(w.location.contains(&at(tag)), "{w:?}: not at {}", at(tag)),
            None => assert_eq!(w.location, "-", "{w:?}"),
        }
    }
}

/// The schedule printed in a deadlock's message, in the syntax of `SCHEDULE_ENV`.
fn printed_schedule(err: &Error) -> Schedule {
    let message = err.to_string();
    let key = format!("{SCHEDULE_ENV}=");
    let Some(start) = message.find(&key) else {
        panic!("no `{key}` in: {message}");
    };
    let value = &message[start + key.len()..];
    let value = value.split(')').next().unwrap_or(value);
    value
        .parse()
        .unwrap_or_else(|e| panic!("{e} (in: {message})"))
}

/// Checks that `err` is a deadlock of block 0 with `expected`, reported with the device's
/// schedule, and that the printed schedule replays it on a new device.
fn check_deadlock(
    dev: &Device,
    err: &Error,
    expected: &[Expected<'_>],
    launch: impl Fn(&Device) -> Result<()>,
) {
    let Error::Deadlock {
        block,
        waits,
        schedule,
        ..
    } = err
    else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert_eq!(*block, 0);
    check_waits(waits, expected);
    // A replay device reports the choices it made up to the deadlock; the others, their own
    // schedule.
    match dev.simulator_schedule() {
        Some(Schedule::Replay { .. }) => {
            assert!(matches!(schedule, Some(Schedule::Replay { .. })), "{err}")
        }
        own => assert_eq!(schedule, &own, "{err}"),
    }
    let printed = printed_schedule(err);
    assert_eq!(Some(&printed), schedule.as_ref());
    let again = launch(&Device::simulator_with(printed)).unwrap_err();
    assert_eq!(again.to_string(), err.to_string());
}

fn check_panic(err: &Error, role: &str, message: &str, tag: &str) {
    let Error::KernelPanic {
        role: r,
        block,
        message: m,
        location,
        ..
    } = err
    else {
        panic!("expected a kernel panic, got {err:?}");
    };
    assert_eq!((r.as_str(), *block), (role, 0), "{err}");
    assert!(m.contains(message), "{err}");
    assert!(location.contains(&at(tag)), "{err}: not at {}", at(tag));
}

const TILE: usize = k::TILE;

fn one() -> Grid {
    Grid::blocks(1)
}

/// What every deadlocking kernel of the corpus reports, with its launch.
type Case = (
    &'static str,
    fn(&Device) -> Result<()>,
    &'static [Expected<'static>],
);

fn short_count(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::short_count::launch(dev, one(), (3, 4, &mut out)))
}

fn never_closed(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::never_closed::launch(dev, one(), (3, &mut out)))
}

fn close_needs_a_slot(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::close_needs_a_slot::launch(dev, one(), (&mut out,)))
}

fn close_order(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::close_order::launch(dev, one(), (&mut out,)))
}

fn lost_release(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::lost_release::launch(dev, one(), (&mut out,)))
}

fn lost_release_three(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::lost_release_three::launch(dev, one(), (&mut out,)))
}

fn echo_cycle(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::echo_cycle::launch(dev, one(), (false, 3, &mut out)))
}

fn relay_ring(dev: &Device) -> Result<()> {
    let mut out = dev.alloc::<f32>(TILE)?;
    block_on(k::relay_ring::launch(dev, one(), (false, 3, &mut out)))
}

const RECV_ON_TX: &str = "waits for a full slot in `recv()` on channel `tx/rx`";
const CLOSING: &str = "(dropping its sender waits for a free slot)";

const CASES: &[Case] = &[
    (
        "short_count",
        short_count,
        &[
            (
                "produce_then_wait",
                0..1,
                "waits for a full slot in `recv()` on channel `ack_tx/ack_rx`",
                Some("wait-ack"),
            ),
            ("consume_then_ack", 1..2, RECV_ON_TX, Some("wait-item")),
        ],
    ),
    (
        "never_closed",
        never_closed,
        &[
            (
                "produce_until_done",
                0..1,
                "waits for a full slot in `recv()` on channel `done_tx/done_rx`",
                Some("wait-done"),
            ),
            ("drain", 1..2, RECV_ON_TX, Some("drain")),
        ],
    ),
    (
        "close_needs_a_slot",
        close_needs_a_slot,
        &[
            (
                "fill_close_then_b",
                0..1,
                "is closing channel `a_tx/a_rx` (dropping its sender waits for a free slot)",
                Some("close-a"),
            ),
            (
                "b_then_a",
                1..2,
                "waits for a full slot in `recv()` on channel `b_tx/b_rx`",
                Some("recv-b"),
            ),
        ],
    ),
    (
        "close_order",
        close_order,
        &[
            (
                "fill_and_return",
                0..1,
                "is closing channel `data_tx/data_rx` (dropping its sender waits for a free slot)",
                Some("close-data"),
            ),
            (
                "last_then_data",
                1..2,
                "waits for a full slot in `recv()` on channel `last_tx/last_rx`",
                Some("recv-last"),
            ),
        ],
    ),
    (
        "lost_release",
        lost_release,
        &[
            (
                "two_a_then_b",
                0..1,
                "waits for a free slot in `reserve()` on channel `a_tx/a_rx`",
                Some("reserve-a"),
            ),
            (
                "hold_a_wait_b",
                1..2,
                "waits for a full slot in `recv()` on channel `b_tx/b_rx`",
                Some("recv-b-holding"),
            ),
        ],
    ),
    (
        "lost_release_three",
        lost_release_three,
        &[
            (
                "two_a_then_b",
                0..1,
                "waits for a free slot in `reserve()` on channel `a_tx/a_rx`",
                Some("reserve-a"),
            ),
            (
                "relay",
                1..2,
                "waits for a full slot in `recv()` on channel `b_tx/b_rx`",
                Some("relay"),
            ),
            (
                "hold_a_wait_b",
                2..3,
                "waits for a full slot in `recv()` on channel `c_tx/c_rx`",
                Some("recv-b-holding"),
            ),
        ],
    ),
    (
        "echo_cycle",
        echo_cycle,
        &[
            (
                "relay",
                0..1,
                "waits for a full slot in `recv()` on channel `ping_tx/ping_rx`",
                Some("relay"),
            ),
            (
                "starter",
                1..2,
                "waits for a full slot in `recv()` on channel `pong_tx/pong_rx`",
                Some("starter"),
            ),
        ],
    ),
];

fn case(name: &str) -> &'static Case {
    match CASES.iter().find(|c| c.0 == name) {
        Some(c) => c,
        None => panic!("no case {name}"),
    }
}

/// Runs a case on the default simulator and checks its explanation and replay.
fn run_case(name: &str) {
    let (_, launch, expected) = case(name);
    let dev = Device::simulator();
    let err = launch(&dev).unwrap_err();
    check_deadlock(&dev, &err, expected, launch);
}

// Wrong counts.

#[test]
fn a_producer_sending_more_than_the_consumer_stores_panics_past_the_end() {
    let dev = Device::simulator();
    let mut out = dev.alloc::<f32>(3 * TILE).unwrap();
    let err = block_on(k::too_many_items::launch(&dev, one(), (4, &mut out))).unwrap_err();
    check_panic(&err, "store_each", "out of range", "store-past-end");
    // The three items that fit were stored.
    let got = out.download().unwrap();
    assert_eq!(got[2 * TILE], 2.0);
}

#[test]
fn inputs_of_different_lengths_panic_at_the_missing_tile() {
    let dev = Device::simulator();
    let x = dev.upload(&vec![1.0f32; 5 * TILE]).unwrap();
    let mut y = dev.alloc::<f32>(3 * TILE).unwrap();
    let err = block_on(k::mismatched_tiles::launch(&dev, one(), (&x, &mut y))).unwrap_err();
    check_panic(
        &err,
        "update_tiles",
        "`Option::unwrap()` on a `None`",
        "no-tile-left",
    );
}

#[test]
fn a_consumer_expecting_more_than_is_sent_deadlocks() {
    run_case("short_count");
    // With the right count it finishes.
    let dev = Device::simulator();
    let mut out = dev.alloc::<f32>(TILE).unwrap();
    block_on(k::short_count::launch(&dev, one(), (3, 3, &mut out))).unwrap();
    assert_eq!(out.download().unwrap()[0], 3.0);
}

// Consumers that stop early, producers that never close.

/// Runs `launch` on the fixed order, 8 random schedules and every schedule `explore` reaches
/// within its bounds; each run must finish and pass `check`.
fn finishes_on_every_schedule(name: &str, launch: fn(&Device) -> Result<()>) {
    launch(&Device::simulator_with(Schedule::Fixed)).unwrap_or_else(|e| panic!("{name}: {e}"));
    for seed in 0..8 {
        launch(&Device::simulator_with(Schedule::Random { seed }))
            .unwrap_or_else(|e| panic!("{name}, seed {seed}: {e}"));
    }
    let bounds = Exhaustive {
        max_schedules: 60,
        max_preemptions: 2,
    };
    let explored = explore(bounds, launch).unwrap_or_else(|f| panic!("{name}: {f}"));
    assert!(explored.schedules > 1, "{name}: {explored:?}");
}

#[test]
fn a_consumer_that_stops_early_ends_its_producer() {
    // The consumer drops its receiver at the sentinel (tile 2): the producer, which has six
    // tiles more than the ring holds, gets `None` from `reserve` and ends.
    finishes_on_every_schedule("stops_at_sentinel", |dev| {
        let mut xs = vec![1.0f32; 8 * TILE];
        xs[2 * TILE] = -1.0;
        let x = dev.upload(&xs)?;
        let mut out = dev.alloc::<f32>(TILE)?;
        block_on(k::stops_at_sentinel::launch(dev, one(), (&x, &mut out)))?;
        let got = out.download()?;
        assert!(got.iter().all(|&v| v == 2.0), "{got:?}");
        Ok(())
    });
}

#[test]
fn a_consumer_that_takes_too_few_ends_its_producer_s_close() {
    // Three of five items taken: the end-of-stream marker does not fit the ring of two, and
    // the consumer's close leaves the producer's close no one to tell.
    finishes_on_every_schedule("count_mismatch_at_close", |dev| {
        let mut out = dev.alloc::<f32>(TILE)?;
        block_on(k::count_mismatch_at_close::launch(
            dev,
            one(),
            (5, 3, &mut out),
        ))?;
        // Items 0, 1 and 2 (each slot holds its number).
        assert!(out.download()?.iter().all(|&v| v == 3.0));
        Ok(())
    });
}

#[test]
fn a_producer_that_never_closes_leaves_the_consumer_waiting() {
    run_case("never_closed");
}

// Closes take a slot, as on the GPU.

#[test]
fn a_close_waits_for_a_free_slot_as_on_the_gpu() {
    run_case("close_needs_a_slot");
    let message = close_needs_a_slot(&Device::simulator())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains(&format!(
            "role `fill_close_then_b` (warps 0..1) is closing channel `a_tx/a_rx` {CLOSING} at"
        )),
        "{message}"
    );
}

#[test]
fn senders_dropped_at_the_end_of_a_role_close_in_drop_order() {
    run_case("close_order");
}

// Lost releases.

#[test]
fn a_slot_held_across_a_wait_is_a_lost_release() {
    run_case("lost_release");
}

#[test]
fn a_lost_release_closes_a_cycle_of_three_roles() {
    run_case("lost_release_three");
}

// Cycles that depend on run-time values (the compiler's static check cannot decide them).

#[test]
fn a_cycle_of_two_roles_decided_at_run_time() {
    run_case("echo_cycle");
    let dev = Device::simulator();
    let mut out = dev.alloc::<f32>(TILE).unwrap();
    block_on(k::echo_cycle::launch(&dev, one(), (true, 3, &mut out))).unwrap();
}

#[test]
fn a_cycle_of_three_roles_decided_at_run_time() {
    // The two relays are one helper inlined for two channels, so their `recv()` line names
    // both; nothing was sent on either, so the report names each by where it was created.
    let dev = Device::simulator();
    let err = relay_ring(&dev).unwrap_err();
    let Error::Deadlock { waits, .. } = &err else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert_eq!(
        waits[0].waiting_on,
        "waits for a full slot in `recv()` on channel `ca_tx/ca_rx`"
    );
    assert!(waits[0].location.contains(&at("starter")), "{err}");
    for (w, warps) in waits[1..].iter().zip([1..2, 2..3]) {
        assert_eq!((w.role.as_str(), w.warps.clone()), ("relay", warps));
        assert!(
            w.waiting_on
                .starts_with("waits for a full slot in `recv()` on the channel created at ")
                && w.waiting_on.contains("common/planted.rs:"),
            "{w:?}"
        );
        assert!(w.location.contains(&at("relay")), "{w:?}");
    }
    let again = relay_ring(&Device::simulator_with(printed_schedule(&err))).unwrap_err();
    assert_eq!(again.to_string(), err.to_string());
    let mut out = dev.alloc::<f32>(TILE).unwrap();
    block_on(k::relay_ring::launch(&dev, one(), (true, 3, &mut out))).unwrap();
}

// Orders.

fn ticket_race(dev: &Device) -> Result<()> {
    let once = dev.upload(&[0u32])?;
    let mut tickets = dev.upload(&[0u32])?;
    block_on(k::ticket_race::launch(dev, one(), (&once, &mut tickets)))
}

const BOTH_LISTEN: &[Expected<'static>] = &[
    (
        "speaker",
        0..1,
        "waits for a full slot in `recv()` on channel `pong_tx/pong_rx`",
        Some("speaker-listens"),
    ),
    (
        "listener",
        1..2,
        "waits for a full slot in `recv()` on channel `ping_tx/ping_rx`",
        Some("listener-listens"),
    ),
];

#[test]
fn a_cycle_that_appears_only_in_some_orders_is_found_by_exploring() {
    // The fixed order runs `speaker` first: it takes ticket 0 and speaks first, as meant.
    ticket_race(&Device::simulator_with(Schedule::Fixed)).unwrap();
    // The exploration's first schedule is that order too; a later one runs `listener` first.
    let bounds = Exhaustive {
        max_schedules: 20,
        max_preemptions: 1,
    };
    let failure = explore(bounds, ticket_race).unwrap_err();
    assert!(failure.index > 0, "{failure}");
    let Error::Deadlock {
        waits, schedule, ..
    } = &failure.error
    else {
        panic!("expected a deadlock, got {failure}");
    };
    check_waits(waits, BOTH_LISTEN);
    assert_eq!(schedule.as_ref(), Some(&failure.schedule));
    assert!(
        matches!(&failure.schedule, Schedule::Replay { choices } if !choices.is_empty()),
        "{failure}"
    );
    // The reported schedule replays it, printed or as a value.
    let dev = Device::simulator_with(failure.schedule.clone());
    let err = ticket_race(&dev).unwrap_err();
    check_deadlock(&dev, &err, BOTH_LISTEN, ticket_race);
    assert_eq!(err.to_string(), failure.error.to_string());
    // Random schedules find it too, and each seed is reported and replays.
    let mut deadlocked = 0;
    for seed in 0..16 {
        let dev = Device::simulator_with(Schedule::Random { seed });
        if let Err(err) = ticket_race(&dev) {
            check_deadlock(&dev, &err, BOTH_LISTEN, ticket_race);
            assert_eq!(printed_schedule(&err), Schedule::Random { seed });
            deadlocked += 1;
        }
    }
    assert!((1..16).contains(&deadlocked), "{deadlocked} of 16 seeds");
}

#[test]
fn without_atomics_every_schedule_gives_the_same_verdict() {
    // Roles that share nothing but channels (each end in one role, blocking operations only)
    // form a Kahn network: what each role does does not depend on the order, so a deadlock
    // found in one schedule is the same in all of them. Every explored schedule of every
    // channel-only case ends in the same waits as the fixed order.
    let bounds = Exhaustive {
        max_schedules: 60,
        max_preemptions: 2,
    };
    for (name, launch, expected) in CASES {
        let reference = launch(&Device::simulator_with(Schedule::Fixed)).unwrap_err();
        let Error::Deadlock { waits, .. } = &reference else {
            panic!("{name}: {reference}");
        };
        check_waits(waits, expected);
        let same = |dev: &Device| match launch(dev) {
            Err(Error::Deadlock { waits: w, .. }) if &w == waits => Ok(()),
            Err(other) => Err(other),
            Ok(()) => Err(Error::InvalidArgument(format!("{name} finished"))),
        };
        let explored = explore(bounds, same).unwrap_or_else(|f| panic!("{name}: {f}"));
        assert!(explored.schedules > 1, "{name}: {explored:?}");
        for seed in 0..8 {
            same(&Device::simulator_with(Schedule::Random { seed }))
                .unwrap_or_else(|e| panic!("{name}, seed {seed}: {e}"));
        }
    }
}

#[test]
fn the_default_simulator_is_seeded_and_explains_which_seed() {
    // (Unless the environment sets another schedule, as to replay one.)
    let dev = Device::simulator();
    if std::env::var_os(SCHEDULE_ENV).is_some() {
        return;
    }
    let seeded = Schedule::Random {
        seed: gpu_async::SimOptions::DEFAULT_SEED,
    };
    assert_eq!(dev.simulator_schedule(), Some(seeded.clone()));
    let err = echo_cycle(&dev).unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "(simulator schedule `{seeded}`; replay it with {SCHEDULE_ENV}={seeded})"
        )),
        "{err}"
    );
}
