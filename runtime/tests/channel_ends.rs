//! The end of a channel's stream on both backends. A close puts the end-of-stream marker in the
//! next slot, as an item (its state word 0), and a receiver answers `None` when it takes it.
//! These tests close at every slot and phase of the first two laps of a ring, with the receiver
//! waiting or not, and for a broadcast's two receivers.

#[allow(dead_code, clippy::all)]
#[path = "common/ends.rs"]
mod ends;

use ends::ends as k;
use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

#[on_each_device]
fn a_receiver_ends_after_every_item_sent_whatever_the_ring_position(
    dev: Device,
) -> gpu_async::Result<()> {
    // A ring of 3: positions repeat every 6 items; 0..=13 covers each twice, and 1000 many
    // laps with the receiver sometimes ahead of the sender and sometimes behind.
    for n in (0u32..=13).chain([1000]) {
        let mut out = dev.upload(&[u32::MAX])?;
        block_on(k::count_then_close::launch(
            &dev,
            Grid::blocks(2),
            (n, &mut out),
        ))?;
        let want = (0..n).map(|i| 65536 + i).fold(0u32, u32::wrapping_add);
        assert_eq!(out.download()?, vec![want], "on {dev}: {n} items");
    }
    Ok(())
}

#[on_each_device]
fn every_receiver_of_a_broadcast_sees_the_end(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 2, 3, 4, 5, 777] {
        let mut first = dev.upload(&[u32::MAX])?;
        let mut second = dev.upload(&[u32::MAX])?;
        block_on(k::broadcast_then_close::launch(
            &dev,
            Grid::blocks(1),
            (n, &mut first, &mut second),
        ))?;
        let want = (0..n).map(|i| 3 * i + 1).fold(0u32, u32::wrapping_add);
        assert_eq!(first.download()?, vec![want], "on {dev}: {n} items, first");
        assert_eq!(
            second.download()?,
            vec![want],
            "on {dev}: {n} items, second"
        );
    }
    Ok(())
}
