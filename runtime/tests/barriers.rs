//! Barriers between roles on both backends: values passed through a shared value in rounds,
//! ordered by the barrier, and a barrier the roles wait at unevenly, which is a deadlock the
//! simulator reports and the GPU's watchdog stops.

#[allow(dead_code, clippy::all)]
#[path = "common/barriers.rs"]
mod barriers;

use std::time::Duration;

use gpu_async::{block_on, Device, Error, Grid};
use gpu_async_testing::on_each_device;

#[on_each_device]
fn roles_meet_at_a_barrier_in_rounds(dev: Device) -> gpu_async::Result<()> {
    for rounds in [0u32, 1, 7, 300] {
        let blocks = 5;
        let mut out = dev.alloc::<u32>(blocks)?;
        block_on(barriers::barriers::rounds::launch(
            &dev,
            Grid::blocks(blocks as u32),
            (rounds, &mut out),
        ))?;
        let want: u32 = (0..rounds).map(|r| r * 10 + 1).sum();
        assert_eq!(
            out.download()?,
            vec![want; blocks],
            "{dev}, {rounds} rounds"
        );
    }
    Ok(())
}

#[on_each_device]
fn roles_that_wait_unevenly_deadlock(dev: Device) {
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let mut out = dev.alloc::<u32>(32).unwrap();
    let err = block_on(barriers::barriers::uneven::launch(
        &dev,
        Grid::blocks(2),
        (&mut out,),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    let Error::Deadlock { waits, .. } = &err else {
        panic!("{dev}: expected a deadlock, got {err:?}");
    };
    assert!(
        waits
            .iter()
            .any(|w| w.role == "twice" && w.location.contains("barriers.rs:")),
        "{dev}: {err}"
    );
    dev.set_watchdog(Some(Duration::from_secs(5)));
    // The device stays usable.
    block_on(barriers::barriers::rounds::launch(
        &dev,
        Grid::blocks(1),
        (3, &mut out),
    ))
    .unwrap();
    assert_eq!(out.download().unwrap()[0], 1 + 11 + 21, "{dev}");
}

#[on_each_device]
fn a_one_shot_value_passes_between_roles(dev: Device) -> gpu_async::Result<()> {
    let blocks = 6usize;
    let per = 1000usize;
    let xs: Vec<u32> = (0..(blocks * per) as u32).map(|i| i * 7 % 1001).collect();
    let x = dev.upload(&xs)?;
    let mut out = dev.alloc::<u32>(blocks)?;
    block_on(barriers::oneshots::total::launch(
        &dev,
        Grid::blocks(blocks as u32),
        (&x, &mut out),
    ))?;
    let want: Vec<u32> = xs
        .chunks(per)
        .map(|c| c.iter().fold(1u32, |a, v| a.wrapping_add(*v)))
        .collect();
    assert_eq!(out.download()?, want, "{dev}");
    Ok(())
}

#[on_each_device]
fn a_one_shot_value_never_sent_is_a_deadlock(dev: Device) {
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let mut out = dev.alloc::<u32>(4).unwrap();
    let err = block_on(barriers::oneshots::never::launch(
        &dev,
        Grid::blocks(1),
        (&mut out,),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    let Error::Deadlock { waits, .. } = &err else {
        panic!("{dev}: expected a deadlock, got {err:?}");
    };
    assert!(waits.iter().any(|w| w.role == "writer"), "{dev}: {err}");
    dev.set_watchdog(Some(Duration::from_secs(5)));
}

#[on_each_device]
fn a_broadcast_reaches_every_receiving_role(dev: Device) -> gpu_async::Result<()> {
    for n in [0usize, 5, 256, 257, 10_000] {
        let xs: Vec<f32> = (0..n).map(|i| (i as f32) * 0.5 - 7.0).collect();
        let x = dev.upload(&xs)?;
        let (mut d, mut s) = (dev.alloc::<f32>(n)?, dev.alloc::<f32>(n)?);
        block_on(barriers::broadcasts::fan_out::launch(
            &dev,
            Grid::blocks(3),
            (&x, &mut d, &mut s),
        ))?;
        let want_d: Vec<f32> = xs.iter().map(|v| v * 2.0).collect();
        let want_s: Vec<f32> = xs.iter().map(|v| v * v).collect();
        assert_eq!(d.download()?, want_d, "{dev}, n = {n}");
        assert_eq!(s.download()?, want_s, "{dev}, n = {n}");
    }
    Ok(())
}
