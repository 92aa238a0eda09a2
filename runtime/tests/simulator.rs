//! What the simulator reports instead of hanging or crashing, and launch validation.

#[allow(dead_code)]
#[path = "common/deadlock.rs"]
mod deadlock;

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

use gpu_async::{block_on, Device, Error, Grid};

#[test]
fn a_deadlock_is_reported_with_each_role_and_its_await() {
    let dev = Device::simulator();
    let mut x = dev.alloc::<f32>(32).unwrap();
    let err = block_on(deadlock::deadlock::cross::launch(
        &dev,
        Grid::blocks(2),
        (false, &mut x),
    ))
    .unwrap_err();
    let Error::Deadlock {
        kernel,
        block,
        waits,
        ..
    } = &err
    else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert!(kernel.ends_with("deadlock::cross"), "{kernel}");
    assert_eq!(*block, 0);
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0].role, "echo");
    assert_eq!(waits[0].warps, 0..1);
    assert_eq!(waits[1].role, "echo_into");
    for w in waits {
        assert!(w.waiting_on.contains("recv()"), "{w:?}");
        assert!(w.location.contains("deadlock.rs:"), "{w:?}");
    }
    let message = err.to_string();
    assert!(message.contains("deadlocked in block 0"), "{message}");
    assert!(
        message.contains("role `echo` (warps 0..1) waits for a full slot in `recv()`"),
        "{message}"
    );
}

#[test]
fn a_grid_of_zero_blocks_is_an_error() {
    let dev = Device::simulator();
    let x = dev.upload(&[1.0f32; 4]).unwrap();
    let mut y = dev.upload(&[1.0f32; 4]).unwrap();
    let err = block_on(saxpy::stream::saxpy::launch(
        &dev,
        Grid::blocks(0),
        (2.0, &x, &mut y),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::InvalidLaunch { .. }), "{err:?}");
    assert!(err.to_string().contains("block"), "{err}");
}

#[test]
fn a_grid_past_the_hardware_limit_is_an_error() {
    let dev = Device::simulator();
    let x = dev.upload(&[1.0f32; 4]).unwrap();
    let mut y = dev.upload(&[1.0f32; 4]).unwrap();
    let err = block_on(saxpy::stream::saxpy::launch(
        &dev,
        Grid::blocks(u32::MAX),
        (2.0, &x, &mut y),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::InvalidLaunch { .. }), "{err:?}");
}

#[test]
fn a_buffer_from_another_device_is_an_error() {
    let dev = Device::simulator();
    let other = Device::simulator();
    let x = other.upload(&[1.0f32; 4]).unwrap();
    let mut y = dev.upload(&[1.0f32; 4]).unwrap();
    let err = block_on(saxpy::stream::saxpy::launch(
        &dev,
        Grid::blocks(1),
        (2.0, &x, &mut y),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::InvalidLaunch { .. }), "{err:?}");
    assert!(err.to_string().contains("`x`"), "{err}");
    // Nothing was written.
    assert_eq!(y.download().unwrap(), vec![1.0; 4]);
}

#[test]
fn the_simulator_is_deterministic() {
    let dev = Device::simulator();
    let a = saxpy::run_and_check(&dev, Grid::blocks(3), 10_000, 5).unwrap();
    let b = saxpy::run_and_check(&dev, Grid::blocks(3), 10_000, 5).unwrap();
    assert_eq!((a, b), (0, 0));
}
