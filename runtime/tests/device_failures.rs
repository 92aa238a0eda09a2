//! Failures inside kernels come back from the launch as errors naming the kernel, the role, the
//! block and the source location, on the simulator and on the GPU, and the device stays usable.

#[allow(dead_code)]
#[path = "common/faults.rs"]
mod faults;

#[allow(dead_code)]
#[path = "common/deadlock.rs"]
mod deadlock;

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

use std::time::{Duration, Instant};

use faults::faults as k;
use gpu_async::{block_on, Device, Error, Grid};
use gpu_async_testing::on_each_device;

/// The device still runs a correct kernel correctly.
fn still_usable(dev: &Device) {
    let bad =
        saxpy::run_and_check(dev, Grid::blocks(4), 10_001, 1).expect("a launch after the failure");
    assert_eq!(bad, 0, "{dev}: wrong results after a failed launch");
}

fn expect_panic(err: Error, role: &str, message: &str, line_of: &str) {
    let Error::KernelPanic {
        kernel,
        role: r,
        message: m,
        location,
        ..
    } = &err
    else {
        panic!("expected a kernel panic, got {err:?}");
    };
    assert!(kernel.contains("faults::"), "{kernel}");
    assert_eq!(r, role, "{err}");
    assert!(m.contains(message), "{err}");
    if location != "-" {
        assert!(location.contains("faults.rs:"), "{err}");
        let line: usize = location
            .split(':')
            .nth(1)
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let source = include_str!("common/faults.rs");
        let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
        assert!(text.contains(line_of), "{err}: line {line} is `{text}`");
    }
}

#[on_each_device]
fn an_index_out_of_bounds_in_a_parallel_loop(dev: Device) {
    let n = 1000;
    let x = dev.upload(&vec![1.0f32; n]).unwrap();
    let mut y = dev.alloc::<f32>(n).unwrap();
    let err = block_on(k::shifted_read::launch(
        &dev,
        Grid::blocks(2),
        (3, &x, &mut y),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    expect_panic(err, "shifted", "index out of bounds", "x[i + shift]");
    still_usable(&dev);
}

#[on_each_device]
fn a_division_by_zero_in_role_code(dev: Device) {
    let mut y = dev.alloc::<u32>(64).unwrap();
    let err = block_on(k::divide::launch(&dev, Grid::blocks(3), (7, 0, &mut y))).unwrap_err();
    eprintln!("{dev}: {err}");
    expect_panic(err, "quotient", "divide by zero", "n / d");
    still_usable(&dev);
    // And the same kernel with a divisor works.
    block_on(k::divide::launch(&dev, Grid::blocks(3), (7, 2, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![3; 64]);
}

#[on_each_device]
fn an_unwrap_of_none_while_another_role_waits(dev: Device) {
    let x = dev.upload(&vec![2.0f32; 64 * 40]).unwrap();
    let mut y = dev.alloc::<f32>(64 * 3).unwrap();
    let err = block_on(k::short_output::launch(&dev, Grid::blocks(2), (&x, &mut y))).unwrap_err();
    eprintln!("{dev}: {err}");
    expect_panic(err, "store", "unwrap()", "tiles.next().unwrap()");
    still_usable(&dev);
}

/// `short_stream` with `sent` items, `taken` unwrapped receives and `spin` counted after them.
fn short_stream(dev: &Device, sent: u32, taken: u32, spin: u64) -> gpu_async::Result<u32> {
    let mut out = dev.alloc::<u32>(1)?;
    block_on(k::short_stream::launch(
        dev,
        Grid::blocks(2),
        (sent, taken, spin, &mut out),
    ))?;
    Ok(out.download()?[0])
}

#[on_each_device]
fn a_receive_unwrapped_past_the_end_fails_the_launch(dev: Device) {
    // All items taken: 1 + 2 + 3 + 4, and the count of 5.
    assert_eq!(short_stream(&dev, 4, 4, 5).unwrap(), 15);
    // The end met with receives still to come: raised at the next receive's wait; met by the
    // last receive: at the role's end; followed by a count that would run for hours: in the
    // counting loop. Each reports the unwrap, not a hang or a wrong sum.
    for (taken, spin) in [(6, 0), (4, 0), (4, 1 << 40)] {
        let started = Instant::now();
        let err = short_stream(&dev, 3, taken, spin).unwrap_err();
        eprintln!("{dev}: taken {taken}, spin {spin}: {err}");
        expect_panic(err, "take_items", "unwrap()", "rx.recv().await.unwrap()");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }
    still_usable(&dev);
}

#[on_each_device]
fn a_tile_of_a_longer_slice_is_out_of_bounds(dev: Device) {
    let x = dev.upload(&vec![1.5f32; 64 * 5]).unwrap();
    let mut y = dev.alloc::<f32>(64 * 3 + 10).unwrap();
    let err = block_on(k::tiles_of_another_slice::launch(
        &dev,
        Grid::blocks(2),
        (&x, &mut y),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    // Rust's message on the simulator, the compiler's on the GPU.
    let message = match dev.kind() {
        gpu_async::BackendKind::Simulator => "out of range for slice of length 202",
        _ => "slice range past the end of the slice",
    };
    expect_panic(err, "copy_tiles", message, "y[tile.start..tile.end]");
    // As long as `x`, `y` takes every tile.
    let mut y = dev.alloc::<f32>(64 * 5).unwrap();
    block_on(k::tiles_of_another_slice::launch(
        &dev,
        Grid::blocks(2),
        (&x, &mut y),
    ))
    .unwrap();
    assert_eq!(y.download().unwrap(), vec![1.5; 64 * 5], "{dev}");
    still_usable(&dev);
}

#[on_each_device]
fn a_deadlock_is_stopped_by_the_watchdog(dev: Device) {
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let mut x = dev.alloc::<f32>(32).unwrap();
    let started = Instant::now();
    let err = block_on(deadlock::deadlock::cross::launch(
        &dev,
        Grid::blocks(2),
        (false, &mut x),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err} (after {:?})", started.elapsed());
    let Error::Deadlock { kernel, waits, .. } = &err else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert!(kernel.ends_with("deadlock::cross"));
    assert!(
        waits
            .iter()
            .any(|w| w.waiting_on.contains("recv()") && w.location.contains("deadlock.rs:")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    dev.set_watchdog(Some(Duration::from_secs(5)));
    still_usable(&dev);
}

#[on_each_device]
fn an_assert_in_a_parallel_loop(dev: Device) {
    let mut xs = vec![4.0f32; 5000];
    xs[4321] = -1.0;
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(xs.len()).unwrap();
    let err = block_on(k::checked_sqrt::launch(&dev, Grid::blocks(3), (&x, &mut y))).unwrap_err();
    eprintln!("{dev}: {err}");
    expect_panic(err, "roots", "negative input", "assert!(*v >= 0.0");
    still_usable(&dev);
    let x = dev.upload(&vec![4.0f32; 5000]).unwrap();
    block_on(k::checked_sqrt::launch(&dev, Grid::blocks(3), (&x, &mut y))).unwrap();
    assert!(y.download().unwrap().iter().all(|v| *v == 2.0));
}

#[on_each_device]
fn panic_unreachable_and_assert_eq_in_role_code(dev: Device) {
    let mut y = dev.alloc::<u32>(64).unwrap();
    for (mode, message, line) in [
        (1, "mode one is not allowed", "panic!(\"mode one"),
        (2, "entered unreachable code", "unreachable!()"),
        (
            7,
            "assertion `left == right` failed",
            "assert_eq!(mode + 1, 5)",
        ),
    ] {
        let err = block_on(k::modes::launch(&dev, Grid::blocks(2), (mode, &mut y))).unwrap_err();
        eprintln!("{dev}: {err}");
        expect_panic(err, "pick", message, line);
    }
    still_usable(&dev);
    block_on(k::modes::launch(&dev, Grid::blocks(2), (4, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![20; 64]);
}

#[on_each_device]
fn compound_division_checks_its_divisor(dev: Device) {
    let mut y = dev.alloc::<i32>(32).unwrap();
    let err = block_on(k::compound::launch(&dev, Grid::blocks(1), (7, 0, &mut y))).unwrap_err();
    expect_panic(
        err,
        "divide_compound",
        "attempt to divide by zero",
        "q /= d",
    );
    let err = block_on(k::compound::launch(
        &dev,
        Grid::blocks(1),
        (i32::MIN, -1, &mut y),
    ))
    .unwrap_err();
    expect_panic(
        err,
        "divide_compound",
        "attempt to divide with overflow",
        "q /= d",
    );
    block_on(k::compound::launch(&dev, Grid::blocks(1), (-7, 2, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![-1; 32], "{dev}");
    still_usable(&dev);
}

#[on_each_device]
fn signed_division_overflow_panics(dev: Device) {
    let mut y = dev.alloc::<i32>(32).unwrap();
    let err = block_on(k::overflow::launch(
        &dev,
        Grid::blocks(1),
        (i32::MIN, -1, &mut y),
    ))
    .unwrap_err();
    eprintln!("{dev}: {err}");
    expect_panic(
        err,
        "divide_signed",
        "attempt to divide with overflow",
        "n / d",
    );
    block_on(k::overflow::launch(
        &dev,
        Grid::blocks(1),
        (i32::MIN, 2, &mut y),
    ))
    .unwrap();
    assert_eq!(y.download().unwrap(), vec![i32::MIN / 2; 32]);
}
