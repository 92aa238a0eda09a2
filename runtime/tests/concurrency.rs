//! Concurrency inside one role on both backends: `join!` of futures (loops, async blocks, values)
//! and `select!` between channel receives, plus the deadlock a join can hide, which the
//! simulator reports and the GPU's watchdog stops.

#[allow(dead_code, clippy::all)]
#[path = "common/concurrency.rs"]
mod concurrency;

use std::time::Duration;

use concurrency::{joins, moves, selects};
use gpu_async::{block_on, explore, Device, Error, Exhaustive, Grid};
use gpu_async_testing::on_each_device;

/// Deterministic values below 1000, different per seed.
fn values(n: usize, seed: u32) -> Vec<u32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s % 1000
        })
        .collect()
}

#[on_each_device]
fn a_join_in_each_role_runs_two_loops_and_gives_both_values(dev: Device) -> gpu_async::Result<()> {
    for (nx, ny) in [
        (0usize, 0usize),
        (32, 0),
        (0, 64),
        (320, 96),
        (32 * 300, 32 * 7),
    ] {
        let (xs, ys) = (values(nx, 1), values(ny, 2));
        let (x, y) = (dev.upload(&xs)?, dev.upload(&ys)?);
        let mut out = dev.alloc::<u32>(2)?;
        block_on(joins::two_totals::launch(
            &dev,
            Grid::blocks(1),
            (&x, &y, &mut out),
        ))?;
        let want = vec![xs.iter().sum::<u32>(), ys.iter().sum::<u32>()];
        assert_eq!(out.download()?, want, "{dev}, {nx} and {ny} elements");
    }
    Ok(())
}

#[on_each_device]
fn three_async_blocks_run_concurrently_in_one_warp(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 5, 1000] {
        let mut out = dev.alloc::<u32>(3)?;
        block_on(joins::three_tasks::launch(
            &dev,
            Grid::blocks(2),
            (n, &mut out),
        ))?;
        assert_eq!(out.download()?, vec![n, n, 10 * n], "{dev}, n = {n}");
    }
    Ok(())
}

#[on_each_device]
fn a_deadlock_behind_a_join_is_reported(dev: Device) {
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let mut out = dev.alloc::<u32>(1).unwrap();
    let err = block_on(joins::stuck::launch(&dev, Grid::blocks(1), (&mut out,))).unwrap_err();
    eprintln!("{dev}: {err}");
    let Error::Deadlock { waits, .. } = &err else {
        panic!("{dev}: expected a deadlock, got {err:?}");
    };
    assert!(
        waits
            .iter()
            .any(|w| w.role == "wait_both" || w.role == "send_one"),
        "{dev}: {err}"
    );
    dev.set_watchdog(Some(Duration::from_secs(5)));
    // The device stays usable.
    let mut out = dev.alloc::<u32>(3).unwrap();
    block_on(joins::three_tasks::launch(
        &dev,
        Grid::blocks(1),
        (4, &mut out),
    ))
    .unwrap();
    assert_eq!(out.download().unwrap(), vec![4, 4, 40], "{dev}");
}

#[on_each_device]
fn select_takes_items_from_two_channels_as_they_come(dev: Device) -> gpu_async::Result<()> {
    for (na, nb) in [(0u32, 0u32), (1, 0), (0, 3), (100, 7), (2000, 3000)] {
        let mut out = dev.alloc::<u32>(5)?;
        block_on(selects::merge::launch(
            &dev,
            Grid::blocks(3),
            (na, nb, &mut out),
        ))?;
        let sum_a: u32 = (1..=na).sum();
        let sum_b: u32 = (0..nb).map(|i| i + 1000).sum();
        assert_eq!(
            out.download()?,
            vec![sum_a, na, sum_b, nb, 1],
            "{dev}, {na} and {nb} items"
        );
    }
    Ok(())
}

#[on_each_device]
fn select_inside_a_join_branch(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 2, 3, 10, 999] {
        let mut out = dev.alloc::<u32>(3)?;
        block_on(selects::select_in_join::launch(
            &dev,
            Grid::blocks(2),
            (n, &mut out),
        ))?;
        let from_a = (0..n).filter(|i| i % 3 == 0).count() as u32;
        assert_eq!(
            out.download()?,
            vec![from_a, n - from_a, n],
            "{dev}, n = {n}"
        );
    }
    Ok(())
}

#[on_each_device]
fn select_without_else_panics_once_every_channel_closed(dev: Device) {
    let mut out = dev.alloc::<u32>(1).unwrap();
    let err = block_on(selects::no_else::launch(
        &dev,
        Grid::blocks(1),
        (5, &mut out),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    assert!(
        err.to_string()
            .contains("all branches of `select!` are disabled"),
        "{dev}: {err}"
    );
    // The device stays usable.
    let mut out = dev.alloc::<u32>(3).unwrap();
    block_on(joins::three_tasks::launch(
        &dev,
        Grid::blocks(1),
        (2, &mut out),
    ))
    .unwrap();
    assert_eq!(out.download().unwrap(), vec![2, 2, 20], "{dev}");
}

/// Every schedule the simulator's bounded exploration makes of the join and select kernels gives
/// the right results: a role that waits on two channels at once must be woken by either (a role
/// marked as waiting on the last channel it polled only would be reported as deadlocked).
#[test]
fn joins_and_selects_are_right_in_every_explored_schedule() {
    let bounds = Exhaustive {
        max_schedules: 400,
        max_preemptions: 2,
    };
    let mismatch = |what: &str, got: Vec<u32>, want: Vec<u32>| {
        Err(Error::InvalidArgument(format!(
            "{what}: got {got:?}, expected {want:?}"
        )))
    };
    let explored = explore(bounds, |dev| {
        let (xs, ys) = (values(64, 5), values(96, 6));
        let (x, y) = (dev.upload(&xs)?, dev.upload(&ys)?);
        let mut out = dev.alloc::<u32>(5)?;
        block_on(joins::two_totals::launch(
            dev,
            Grid::blocks(1),
            (&x, &y, &mut out),
        ))?;
        let (got, want) = (
            out.download()?[..2].to_vec(),
            vec![xs.iter().sum(), ys.iter().sum()],
        );
        if got != want {
            return mismatch("two_totals", got, want);
        }
        block_on(selects::merge::launch(
            dev,
            Grid::blocks(1),
            (3, 2, &mut out),
        ))?;
        let (got, want) = (out.download()?, vec![6, 3, 2001, 2, 1]);
        if got != want {
            return mismatch("merge", got, want);
        }
        block_on(selects::select_in_join::launch(
            dev,
            Grid::blocks(1),
            (4, &mut out),
        ))?;
        let (got, want) = (out.download()?[..3].to_vec(), vec![2, 2, 4]);
        if got != want {
            return mismatch("select_in_join", got, want);
        }
        Ok(())
    })
    .unwrap_or_else(|f| panic!("{f}"));
    eprintln!("{explored:?}");
    assert!(explored.schedules > 1, "{explored:?}");
}

#[on_each_device]
fn an_async_move_block_closes_its_sender_where_it_ends(dev: Device) -> gpu_async::Result<()> {
    dev.set_watchdog(Some(Duration::from_secs(2)));
    for n in [0u32, 1, 3, 500] {
        let mut out = dev.alloc::<u32>(1)?;
        block_on(moves::moved_sender::launch(
            &dev,
            Grid::blocks(2),
            (n, &mut out),
        ))?;
        assert_eq!(
            out.download()?,
            vec![(0..n).map(|i| 2 * i).sum::<u32>()],
            "{dev}, n = {n}"
        );
    }
    dev.set_watchdog(Some(Duration::from_secs(5)));
    Ok(())
}

/// On the GPU the close of an `async move` block's sender is in that branch of the join (the
/// simulator runs Rust's own drop, so only the IR shows where the GPU closes it).
#[test]
fn the_close_of_a_moved_sender_is_in_its_join_branch() {
    let ir = moves::moved_sender::IR;
    let at = |needle: &str| {
        ir.find(needle)
            .unwrap_or_else(|| panic!("no `{needle}` in the IR:\n{ir}"))
    };
    let (first, close, second) = (at("branch 0:"), at("close ch0"), at("branch 1:"));
    assert!(first < close && close < second, "{ir}");
}
