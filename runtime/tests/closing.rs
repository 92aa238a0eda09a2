//! Closing a channel from the receiving side, on both backends: a consumer that stops after `k`
//! of `n` items (dropping its receiver, calling `close()`, or leaving its loop) never leaves the
//! producer waiting, whatever the ring's depth (1, 2, 4, 8) and wherever the producer is when
//! the consumer stops (waiting in `reserve` for a slot, most often, when `n` is past the ring).

#[allow(dead_code, clippy::all)]
#[path = "common/closing.rs"]
mod closing;

use gpu_async::{block_on, Device, DeviceBuffer, Grid, Launch};
use gpu_async_testing::on_each_device;

type Kernel = for<'a> fn(
    &'a Device,
    Grid,
    (
        u32,
        u32,
        &'a mut DeviceBuffer<u32>,
        &'a mut DeviceBuffer<u32>,
    ),
) -> Launch<'a>;

/// Every stopping consumer of every depth: `(name, depth, kernel)`.
fn kernels() -> Vec<(&'static str, u32, Kernel)> {
    vec![
        ("dropped", 1, closing::depth1::dropped::launch),
        ("closed", 1, closing::depth1::closed::launch),
        ("broken", 1, closing::depth1::broken::launch),
        ("dropped", 2, closing::depth2::dropped::launch),
        ("closed", 2, closing::depth2::closed::launch),
        ("broken", 2, closing::depth2::broken::launch),
        ("dropped", 4, closing::depth4::dropped::launch),
        ("closed", 4, closing::depth4::closed::launch),
        ("broken", 4, closing::depth4::broken::launch),
        ("dropped", 8, closing::depth8::dropped::launch),
        ("closed", 8, closing::depth8::closed::launch),
        ("broken", 8, closing::depth8::broken::launch),
    ]
}

/// The sum of items `1..=k`.
fn sum_to(k: u32) -> u32 {
    k * (k + 1) / 2
}

#[on_each_device]
fn a_consumer_that_stops_early_ends_its_producer_at_every_depth(
    dev: Device,
) -> gpu_async::Result<()> {
    for (name, depth, launch) in kernels() {
        for (n, k) in [
            (0, 0),
            (5, 0),
            (1, 1),
            (3, 1),
            (50, 2),
            (50, depth - 1),
            (50, depth),
            (50, depth + 1),
            (50, 2 * depth + 3),
            (2000, 999),
            (7, 7),
            (7, 9),
        ] {
            // Every block does the same (and writes the same values).
            for blocks in [1, 3] {
                let mut sent = dev.upload(&[u32::MAX])?;
                let mut out = dev.upload(&[u32::MAX; 2])?;
                block_on(launch(
                    &dev,
                    Grid::blocks(blocks),
                    (n, k, &mut sent, &mut out),
                ))
                .unwrap_or_else(|e| panic!("{name}, depth {depth}, n = {n}, k = {k}: {e}"));
                let (sent, got) = (sent.download()?[0], out.download()?);
                let taken = k.min(n);
                let what = format!(
                    "{name}, depth {depth}, n = {n}, k = {k}, on {dev}: sent {sent}, {got:?}"
                );
                assert_eq!(got[0], sum_to(taken), "{what}");
                // The producer learns of the close at its next reserve that would wait: it sends
                // at least the items taken, and at most twice the ring's depth more than the
                // consumer received (the slots the consumer released, then the phases the close
                // completed, when the producer was not waiting at those moments). `broken`
                // receives one item more than it takes: the one its loop leaves with.
                let received = if name == "broken" {
                    (k + 1).min(n)
                } else {
                    taken
                };
                assert!(
                    sent >= taken && sent <= n.min(received + 2 * depth),
                    "{what}"
                );
                if name == "closed" {
                    assert_eq!(got[1], 1, "{what}: a receive after close() answers None");
                }
            }
        }
    }
    Ok(())
}

#[on_each_device]
fn a_broadcast_goes_on_for_the_receivers_that_have_not_closed(
    dev: Device,
) -> gpu_async::Result<()> {
    for (n, k1, k2) in [
        (20, 3, 20),
        (20, 20, 3),
        (20, 0, 20),
        (300, 5, 9),
        (300, 9, 5),
        (300, 0, 0),
        (300, 300, 300),
    ] {
        let mut sent = dev.upload(&[u32::MAX])?;
        let mut first = dev.upload(&[u32::MAX])?;
        let mut second = dev.upload(&[u32::MAX])?;
        block_on(closing::broadcast::two_stops::launch(
            &dev,
            Grid::blocks(1),
            (n, k1, k2, &mut sent, &mut first, &mut second),
        ))?;
        let (sent, a, b) = (
            sent.download()?[0],
            first.download()?[0],
            second.download()?[0],
        );
        let what = format!("n = {n}, k1 = {k1}, k2 = {k2}, on {dev}: {sent} sent, {a}, {b}");
        assert_eq!(a, sum_to(k1.min(n)), "{what}");
        assert_eq!(b, sum_to(k2.min(n)), "{what}");
        // The producer goes on while one receiver is open: it sends at least what the later one
        // took, and at most twice the ring's depth more.
        let later = k1.max(k2).min(n);
        assert!(sent >= later && sent <= n.min(later + 4), "{what}");
    }
    Ok(())
}

#[test]
fn every_schedule_of_a_stopping_consumer_ends() {
    // The simulator's exploration: whatever the order of the roles' steps, the kernel ends.
    let bounds = gpu_async::Exhaustive {
        max_schedules: 200,
        max_preemptions: 3,
    };
    for (name, depth, launch) in kernels() {
        let explored = gpu_async::explore(bounds, |dev| {
            let mut sent = dev.upload(&[u32::MAX])?;
            let mut out = dev.upload(&[u32::MAX; 2])?;
            block_on(launch(dev, Grid::blocks(1), (12, 3, &mut sent, &mut out)))?;
            assert_eq!(out.download()?[0], sum_to(3), "{name}, depth {depth}");
            Ok(())
        })
        .unwrap_or_else(|f| panic!("{name}, depth {depth}: {f}"));
        assert!(
            explored.schedules > 1,
            "{name}, depth {depth}: {explored:?}"
        );
    }
}
