//! Slots as ordinary values, on both backends: a window of two received slots, an `Option` of a
//! receive kept in a local, `match` and `if let` over receives and reserves, slices of slots,
//! `enumerate` of tiles, nested zip patterns, role-code element writes, and async helpers
//! awaited in parallel loops.

#[allow(dead_code, clippy::all)]
#[path = "common/slot_values.rs"]
mod slot_values;

use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;
use slot_values::slots as k;

const N: u32 = k::N as u32;

#[on_each_device]
fn a_window_holds_two_slots_of_one_receiver(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 2, 3, 4, 5, 100] {
        let len = n.max(1) as usize;
        let mut out = dev.upload(&vec![u32::MAX; len])?;
        block_on(k::window::launch(&dev, Grid::blocks(2), (n, &mut out)))?;
        let got = out.download()?;
        for i in 0..n.saturating_sub(1) {
            // Item i's first element and item i + 1's last.
            assert_eq!(
                got[i as usize],
                (i + 1) + (i + 1 + N),
                "n = {n}, on {dev}: {got:?}"
            );
        }
    }
    Ok(())
}

#[on_each_device]
fn an_option_of_a_receive_kept_in_a_local(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 4, 5, 9, 300] {
        let mut out = dev.upload(&vec![u32::MAX; n as usize + 1])?;
        block_on(k::ahead::launch(&dev, Grid::blocks(1), (n, &mut out)))?;
        let got = out.download()?;
        for i in 0..n {
            let want: u32 = (0..N).map(|j| i + 1 + j).sum();
            assert_eq!(got[i as usize], want, "n = {n}, item {i}, on {dev}");
        }
        assert_eq!(got[n as usize], n, "n = {n}, on {dev}: items seen");
    }
    Ok(())
}

#[on_each_device]
fn slices_of_slots(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 3, 50] {
        let mut out = dev.upload(&vec![u32::MAX; n.max(1) as usize])?;
        block_on(k::sliced::launch(&dev, Grid::blocks(1), (n, &mut out)))?;
        let got = out.download()?;
        for i in 0..n {
            // Elements 2, 3 (of the low half: i + 3, i + 4) and 4 (of the high half: i + 5),
            // plus the slice's length 3 and the slot's 8.
            let want = (i + 3) + (i + 4) + (i + 5) + 3 + N;
            assert_eq!(got[i as usize], want, "n = {n}, item {i}, on {dev}");
        }
    }
    Ok(())
}

#[on_each_device]
fn tiles_enumerated_and_helpers_awaited_in_parallel_loops(dev: Device) -> gpu_async::Result<()> {
    let tile = k::TILE;
    for (n, blocks) in [
        (0usize, 1u32),
        (1, 1),
        (tile + 5, 1),
        (5 * tile + 17, 2),
        (9000, 3),
    ] {
        let xs: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
        let ws: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
        let (x, w) = (dev.upload(&xs)?, dev.upload(&ws)?);
        let mut y = dev.upload(&vec![0u32; n])?;
        block_on(k::tiles::launch(
            &dev,
            Grid::blocks(blocks),
            (&x, &w, &mut y),
        ))?;
        let got = y.download()?;
        for i in 0..n {
            let t = i / tile;
            // The block's k-th tile: block `t % blocks` takes tiles t, t + blocks, ...
            let kth = (t / blocks as usize) as u32;
            let len = (n - t * tile).min(tile) as u32;
            let want = xs[i]
                .wrapping_mul(kth + 1)
                .wrapping_add(len.wrapping_mul(ws[i]));
            assert_eq!(got[i], want, "n = {n}, {blocks} blocks, i = {i}, on {dev}");
        }
    }
    for n in [0usize, 32, 64, 4096] {
        let xs: Vec<u32> = (0..n as u32).map(|i| i * 5 + 2).collect();
        let x = dev.upload(&xs)?;
        let mut y = dev.upload(&vec![0u32; n])?;
        block_on(k::lanes::launch(&dev, Grid::blocks(1), (&x, &mut y)))?;
        let got = y.download()?;
        for (i, v) in xs.iter().enumerate() {
            let warp: u32 = xs[i / 32 * 32..i / 32 * 32 + 32]
                .iter()
                .fold(0, |s, v| s.wrapping_add(*v));
            assert_eq!(got[i], 2 * v + warp, "n = {n}, i = {i}, on {dev}");
        }
    }
    Ok(())
}

#[on_each_device]
fn elements_written_from_role_code(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 10, 1000] {
        let mut out = dev.upload(&[u32::MAX; 3])?;
        block_on(k::writes::launch(&dev, Grid::blocks(3), (n, &mut out)))?;
        let s = (1..=n).fold(0u32, u32::wrapping_add);
        assert_eq!(
            out.download()?,
            vec![s, 2 * n, 2 * n + s],
            "n = {n}, on {dev}"
        );
    }
    Ok(())
}

#[on_each_device]
fn a_role_takes_two_receivers_of_a_broadcast(dev: Device) -> gpu_async::Result<()> {
    for n in [0u32, 1, 2, 3, 7, 1000] {
        let len = n.max(2) as usize - 1;
        let mut out = dev.upload(&vec![u32::MAX; len])?;
        block_on(slot_values::two_receivers::neighbours::launch(
            &dev,
            Grid::blocks(2),
            (n, &mut out),
        ))?;
        let got = out.download()?;
        for k in 0..n.saturating_sub(1) {
            assert_eq!(got[k as usize], 2 * k + 3, "n = {n}, k = {k}, on {dev}");
        }
    }
    Ok(())
}
