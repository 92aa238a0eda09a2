//! The parts of one `&mut` slice handed to different roles, on both backends: `split_at_mut`,
//! disjoint ranges of the kernel body, `chunks_mut` and `chunks_exact_mut`, and `split_at` in
//! role code.

#[allow(dead_code, clippy::all)]
#[path = "common/parts.rs"]
mod parts;

use gpu_async::{block_on, Device, Error, Grid};
use gpu_async_testing::on_each_device;
use parts::parts as k;

fn input(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| i * 7 + 1).collect()
}

/// `k(i)` times `x[i]`.
fn scaled(x: &[u32], k: impl Fn(usize) -> u32) -> Vec<u32> {
    x.iter()
        .enumerate()
        .map(|(i, v)| k(i).wrapping_mul(*v))
        .collect()
}

#[on_each_device]
fn two_roles_write_the_halves_of_one_slice(dev: Device) -> gpu_async::Result<()> {
    for (n, mid) in [
        (0, 0),
        (1, 0),
        (1, 1),
        (100, 37),
        (5000, 4096),
        (5000, 5000),
    ] {
        let xs = input(n);
        let want = scaled(&xs, |i| if i < mid { 2 } else { 3 });
        let x = dev.upload(&xs)?;
        for launch in [k::halves::launch, k::ranges::launch] {
            let mut y = dev.upload(&vec![0u32; n])?;
            block_on(launch(&dev, Grid::blocks(2), (mid, &x, &mut y)))?;
            assert_eq!(y.download()?, want, "n = {n}, mid = {mid}, on {dev}");
        }
    }
    Ok(())
}

#[on_each_device]
fn three_ranges_kept_in_locals(dev: Device) -> gpu_async::Result<()> {
    for (n, a, b) in [
        (10, 3, 7),
        (1000, 0, 1000),
        (1000, 500, 500),
        (3000, 1, 2999),
    ] {
        let xs = input(n);
        let want = scaled(&xs, |i| {
            if i < a {
                2
            } else if i < b {
                3
            } else {
                5
            }
        });
        let x = dev.upload(&xs)?;
        let mut y = dev.upload(&vec![0u32; n])?;
        block_on(k::thirds::launch(&dev, Grid::blocks(1), (a, b, &x, &mut y)))?;
        assert_eq!(y.download()?, want, "n = {n}, a = {a}, b = {b}, on {dev}");
    }
    Ok(())
}

#[on_each_device]
fn chunks_go_to_the_roles_in_order(dev: Device) -> gpu_async::Result<()> {
    for (n, size) in [(10, 4), (8, 4), (2049, 1024), (5, 3)] {
        let xs = input(n);
        let want = scaled(&xs, |i| match i / size {
            0 => 2,
            1 => 3,
            _ => 1,
        });
        let x = dev.upload(&xs)?;
        let mut y = dev.upload(&xs)?;
        block_on(k::chunked::launch(
            &dev,
            Grid::blocks(1),
            (size, &x, &mut y),
        ))?;
        assert_eq!(
            y.download()?,
            want,
            "chunks, n = {n}, size = {size}, on {dev}"
        );
        // `chunks_exact_mut` has a second chunk when two whole ones fit.
        if 2 * size <= n {
            let mut y = dev.upload(&xs)?;
            block_on(k::chunked_exact::launch(
                &dev,
                Grid::blocks(1),
                (size, &x, &mut y),
            ))?;
            assert_eq!(
                y.download()?,
                want,
                "exact, n = {n}, size = {size}, on {dev}"
            );
        }
    }
    // Too few elements for two chunks: `unwrap()` of `None`.
    let x = dev.upload(&input(6))?;
    for launch in [k::chunked::launch, k::chunked_exact::launch] {
        let mut y = dev.alloc::<u32>(6)?;
        let err = block_on(launch(&dev, Grid::blocks(1), (6, &x, &mut y))).unwrap_err();
        assert!(matches!(err, Error::KernelPanic { .. }), "on {dev}: {err}");
    }
    // `chunks_exact_mut` has no second chunk of 4 in 7 elements.
    let x = dev.upload(&input(7))?;
    let mut y = dev.alloc::<u32>(7)?;
    let err = block_on(k::chunked_exact::launch(
        &dev,
        Grid::blocks(1),
        (4, &x, &mut y),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::KernelPanic { .. }), "on {dev}: {err}");
    Ok(())
}

#[on_each_device]
fn split_at_of_a_shared_slice_and_element_writes(dev: Device) -> gpu_async::Result<()> {
    for (n, mid) in [(10, 4), (4096, 1000), (100, 0), (100, 100)] {
        let xs = input(n);
        let a: u32 = xs[..mid].iter().fold(0, |s, v| s.wrapping_add(*v));
        let b: u32 = xs[mid..].iter().fold(0, |s, v| s.wrapping_add(*v));
        let x = dev.upload(&xs)?;
        let mut y = dev.alloc::<u32>(2)?;
        block_on(k::sums::launch(&dev, Grid::blocks(1), (mid, &x, &mut y)))?;
        assert_eq!(y.download()?, vec![a, b], "n = {n}, mid = {mid}, on {dev}");
    }
    // `mid` past the end: Rust's panic, and the device's.
    let x = dev.upload(&input(10))?;
    let mut y = dev.alloc::<u32>(2)?;
    let err = block_on(k::sums::launch(&dev, Grid::blocks(1), (11, &x, &mut y))).unwrap_err();
    assert!(matches!(err, Error::KernelPanic { .. }), "on {dev}: {err}");
    Ok(())
}
