//! Unit tests of launches: the checks before submission, the parameters of CUDA launches, and
//! the outcome, cancellation and drop of launches whose completion the tests play by hand.

use super::completion::{complete, lock, Shared};
use super::*;
use crate::abort::{hidden_params, RECORD_SLOTS};
use crate::cuda::LaunchIds;
use crate::executor::block_on;
use crate::spec::{ParamKind, ParamSpec, ScalarType, HIDDEN_PARAMS};

static NOOP: KernelSpec = KernelSpec {
    entry: "noop",
    path: "tests::noop",
    ptx: "",
    warps: 1,
    shared_bytes: 0,
    params: &[],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

static AXPY: KernelSpec = KernelSpec {
    entry: "axpy",
    path: "tests::axpy",
    ptx: "",
    warps: 4,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "a",
            kind: ParamKind::Scalar(ScalarType::F32),
        },
        ParamSpec {
            name: "x",
            kind: ParamKind::Slice {
                elem: ScalarType::F32,
                mutable: false,
            },
        },
        ParamSpec {
            name: "y",
            kind: ParamKind::Slice {
                elem: ScalarType::F32,
                mutable: true,
            },
        },
    ],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

#[test]
fn zero_blocks_rejected_before_the_body_runs() {
    let device = Device::simulator();
    let mut ran = false;
    let launch = launch(&device, &NOOP, Grid::blocks(0), |_| {
        ran = true;
        Ok(())
    });
    assert!(!launch.is_submitted());
    assert!(launch.is_complete());
    match block_on(launch) {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "tests::noop");
            assert!(reason.contains("Grid::blocks"), "{reason}");
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
    assert!(!ran);
}

#[test]
fn body_error_is_the_outcome() {
    let device = Device::simulator();
    let launch = launch(&device, &NOOP, Grid::blocks(2), |target| {
        assert!(matches!(target, Target::Sim(_)));
        Err(Error::Buffer("from the body".to_string()))
    });
    assert!(launch.is_submitted());
    assert!(launch.is_complete());
    assert!(matches!(launch.wait(), Err(Error::Buffer(m)) if m == "from the body"));
    let ok = super::launch(&device, &NOOP, Grid::blocks(2), |_| Ok(()));
    assert!(block_on(ok).is_ok());
}

#[test]
fn buffers_of_another_device_rejected() -> Result<()> {
    let (a, b) = (Device::simulator(), Device::simulator());
    let x = b.upload(&[1.0f32])?;
    let mut args = CudaArgs::new(&AXPY, a.id());
    match args.slice("x", &x) {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "tests::axpy");
            assert!(reason.contains("`x`"), "{reason}");
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
    Ok(())
}

#[test]
fn parameters_checked_against_the_spec() {
    let mut args = CudaArgs::new(&AXPY, 1);
    args.scalar(2.0f32);
    // Stand-ins for two buffers (the checks look at slots and kinds only).
    for mutable in [false, true] {
        args.slots.extend([256, 4]);
        args.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable,
        });
    }
    assert!(args.check(&AXPY).is_ok());
    assert_eq!(args.slots[0], u64::from(2.0f32.to_bits()));

    let mut short = CudaArgs::new(&AXPY, 1);
    short.scalar(2.0f32);
    assert!(matches!(
        short.check(&AXPY),
        Err(Error::InvalidLaunch { .. })
    ));

    let mut wrong_type = CudaArgs::new(&AXPY, 1);
    wrong_type.scalar(2u32);
    wrong_type.slots.extend([256, 4, 512, 4]);
    for _ in 0..2 {
        wrong_type.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable: true,
        });
    }
    assert!(
        matches!(wrong_type.check(&AXPY), Err(Error::InvalidLaunch { reason, .. }) if reason.contains("`a`"))
    );

    let mut read_only = CudaArgs::new(&AXPY, 1);
    read_only.scalar(2.0f32);
    for _ in 0..2 {
        read_only.slots.extend([256, 4]);
        read_only.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable: false,
        });
    }
    assert!(
        matches!(read_only.check(&AXPY), Err(Error::InvalidLaunch { reason, .. }) if reason.contains("`y`"))
    );
}

#[test]
fn too_many_warps_rejected() {
    static WIDE: KernelSpec = KernelSpec {
        entry: "wide",
        path: "tests::wide",
        ptx: "",
        warps: 33,
        shared_bytes: 0,
        params: &[],
        roles: &[],
        sites: &[],
        abort_protocol: false,
    };
    let device = Device::simulator();
    let launch = launch(&device, &WIDE, Grid::blocks(1), |_| Ok(()));
    assert!(matches!(block_on(launch), Err(Error::InvalidLaunch { .. })));
}

fn running(device: &Device) -> (Launch<'_>, Arc<Shared>) {
    running_with(device, None)
}

fn running_with(device: &Device, abort: Option<AbortCheck>) -> (Launch<'_>, Arc<Shared>) {
    let shared: Arc<Shared> = Arc::new((Mutex::new(State::new()), Condvar::new()));
    let launch = Launch {
        kernel: "tests::noop",
        via: Via::Device(device),
        stage: Stage::Running(Running {
            shared: Arc::clone(&shared),
            launch_id: 42,
            epoch: 0,
            abort,
            mark: OnceLock::new(),
        }),
        submitted: true,
        _borrows: PhantomData,
    };
    (launch, shared)
}

#[test]
fn completion_wakes_the_waiter() {
    let device = Device::simulator();
    for succeeded in [true, false] {
        let (launch, shared) = running(&device);
        assert!(!launch.is_complete());
        let remote = Arc::clone(&shared);
        let callback = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            complete(&remote, succeeded, None);
        });
        let outcome = block_on(launch);
        assert!(callback.join().is_ok());
        assert!(lock(&shared).done);
        if succeeded {
            assert!(outcome.is_ok());
        } else {
            assert!(matches!(
                outcome,
                Err(Error::Cuda {
                    call: "kernel execution",
                    ..
                })
            ));
        }
    }
    let (launch, shared) = running(&device);
    complete(&shared, true, None);
    assert!(launch.is_complete());
    assert!(launch.wait().is_ok());
}

static AXPY_ABORT: KernelSpec = KernelSpec {
    entry: "axpy_abort",
    path: "tests::axpy_abort",
    roles: &[crate::spec::RoleSpec {
        name: "compute",
        first_warp: 0,
        end_warp: 4,
    }],
    sites: &[
        crate::spec::SiteSpec {
            kind: crate::spec::SiteKind::Panic,
            message: "index out of bounds",
            file: "src/axpy.rs",
            line: 7,
            column: 13,
        },
        crate::spec::SiteSpec {
            kind: crate::spec::SiteKind::Wait,
            message: "rx.recv() on channel `rx`",
            file: "src/axpy.rs",
            line: 9,
            column: 21,
        },
    ],
    abort_protocol: true,
    ..AXPY
};

const IDS: LaunchIds = LaunchIds {
    abort_word: 0x7f00_0000_1000,
    launch_id: 42,
    record: 0x7e00_0000_2000,
    epoch: 0,
};

/// `args` with AXPY's own parameters pushed (stand-ins for the two buffers).
fn axpy_args(spec: &'static KernelSpec) -> CudaArgs<'static> {
    let mut args = CudaArgs::new(spec, 1);
    args.scalar(2.0f32);
    for mutable in [false, true] {
        args.slots.extend([256, 4]);
        args.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable,
        });
    }
    args
}

#[test]
fn hidden_parameters_appended_and_counted() {
    let mut args = axpy_args(&AXPY_ABORT);
    // Without the hidden parameters, an abort-protocol kernel's parameters are incomplete.
    assert!(
        matches!(args.check(&AXPY_ABORT), Err(Error::InvalidLaunch { reason, .. })
            if reason.contains("takes 9 (4 hidden)")),
    );
    args.finish(&AXPY_ABORT, IDS, 50_000_000)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(args.slots.len(), 5 + HIDDEN_PARAMS);
    assert_eq!(
        args.slots[..5],
        [u64::from(2.0f32.to_bits()), 256, 4, 256, 4]
    );
    assert_eq!(
        args.slots[5..],
        hidden_params(IDS.abort_word, 42, IDS.record, 50_000_000)
    );
    assert_eq!(args.slots[5], 0x7f00_0000_1000);
    assert_eq!(args.slots[6].to_ne_bytes()[..4], 42u32.to_ne_bytes());
    assert_eq!(args.slots[7], 0x7e00_0000_2000);
    assert_eq!(args.slots[8], 50_000_000);

    // A kernel without the protocol gets none, and rejects them.
    let mut plain = axpy_args(&AXPY);
    plain
        .finish(&AXPY, IDS, 50_000_000)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain.slots.len(), 5);
    plain.push_hidden([0; HIDDEN_PARAMS]);
    assert!(matches!(
        plain.check(&AXPY),
        Err(Error::InvalidLaunch { .. })
    ));

    // A parameter short is still caught with the hidden ones added.
    let mut short = CudaArgs::new(&AXPY_ABORT, 1);
    short.scalar(2.0f32);
    short.slots.extend([256, 4]);
    short.kinds.push(ParamKind::Slice {
        elem: ScalarType::F32,
        mutable: false,
    });
    assert!(matches!(
        short.finish(&AXPY_ABORT, IDS, 0),
        Err(Error::InvalidLaunch { .. })
    ));
}

#[test]
fn the_record_decides_the_outcome() {
    let device = Device::simulator();
    let check = AbortCheck {
        spec: &AXPY_ABORT,
        launch_id: 42,
        watchdog: Some(std::time::Duration::from_millis(50)),
    };
    // This launch's panic record.
    let (launch, shared) = running_with(&device, Some(check));
    complete(&shared, true, Some([42, 1, 0, 2, 37, 0, 0, 0]));
    match launch.wait() {
        Err(Error::KernelPanic {
            kernel,
            role,
            block,
            message,
            location,
            thread,
        }) => {
            assert_eq!(kernel, "tests::axpy_abort");
            assert_eq!(role, "compute");
            assert_eq!(block, 2);
            assert_eq!(message, "index out of bounds");
            assert_eq!(location, "src/axpy.rs:7:13");
            assert_eq!(thread, Some(37));
        }
        other => panic!("expected KernelPanic, got {other:?}"),
    }
    // This launch's watchdog record.
    let (launch, shared) = running_with(&device, Some(check));
    complete(&shared, true, Some([42, 2, 1, 0, 5, 0, 0, 0]));
    let outcome = block_on(launch);
    assert!(
        matches!(&outcome, Err(Error::Deadlock { waits, .. })
            if waits[0].waiting_on.contains("after 50ms in rx.recv()")),
        "{outcome:?}"
    );
    // An older launch's record: success.
    let (launch, shared) = running_with(&device, Some(check));
    complete(&shared, true, Some([41, 1, 0, 2, 37, 0, 0, 0]));
    assert!(launch.wait().is_ok());
    // A later launch of the same slot failed and overwrote the record: unknown, not success.
    let (launch, shared) = running_with(&device, Some(check));
    complete(
        &shared,
        true,
        Some([42 + RECORD_SLOTS, 1, 0, 2, 37, 0, 0, 0]),
    );
    assert!(
        matches!(launch.wait(), Err(Error::OutcomeUnknown { kernel: "tests::noop", reason })
            if reason.contains(&format!("launch {}", 42 + RECORD_SLOTS))),
    );
    // A driver error wins over the record (which is not read then).
    let (launch, shared) = running_with(&device, Some(check));
    complete(&shared, false, None);
    assert!(matches!(launch.wait(), Err(Error::Cuda { .. })));
    // A launch without the protocol ignores a record.
    let (launch, shared) = running(&device);
    complete(&shared, true, Some([42, 1, 0, 2, 37, 0, 0, 0]));
    assert!(launch.wait().is_ok());
}

#[test]
fn cancel_decides_unless_a_failure_wins() {
    let device = Device::simulator();
    let check = AbortCheck {
        spec: &AXPY_ABORT,
        launch_id: 42,
        watchdog: None,
    };
    // Cancelled while running: resolves to Cancelled once the kernel has stopped.
    let (launch, shared) = running_with(&device, Some(check));
    launch.cancel();
    launch.cancel();
    assert!(!launch.is_complete());
    complete(&shared, true, Some([0; 8]));
    assert!(matches!(
        block_on(launch),
        Err(Error::Cancelled {
            kernel: "tests::noop"
        })
    ));
    // Finished before the request took effect: still Cancelled.
    let (launch, shared) = running_with(&device, Some(check));
    complete(&shared, true, Some([41, 1, 0, 0, 0, 0, 0, 0]));
    launch.cancel();
    assert!(matches!(launch.wait(), Err(Error::Cancelled { .. })));
    // A panic of the launch wins over the cancellation, and so does a driver error.
    let (launch, shared) = running_with(&device, Some(check));
    launch.cancel();
    complete(&shared, true, Some([42, 1, 0, 2, 37, 0, 0, 0]));
    assert!(matches!(launch.wait(), Err(Error::KernelPanic { .. })));
    let (launch, shared) = running_with(&device, Some(check));
    launch.cancel();
    complete(&shared, false, None);
    assert!(matches!(launch.wait(), Err(Error::Cuda { .. })));
    // A kernel without the protocol cannot be stopped, but is reported cancelled.
    let (launch, shared) = running(&device);
    launch.cancel();
    complete(&shared, true, None);
    assert!(matches!(launch.wait(), Err(Error::Cancelled { .. })));
}

#[test]
fn cancel_of_a_finished_launch_changes_nothing() {
    let device = Device::simulator();
    let ok = launch(&device, &NOOP, Grid::blocks(1), |_| Ok(()));
    ok.cancel();
    assert!(ok.wait().is_ok());
    let failed = launch(&device, &NOOP, Grid::blocks(1), |_| {
        Err(Error::Buffer("kept".to_string()))
    });
    failed.cancel();
    assert!(matches!(failed.wait(), Err(Error::Buffer(m)) if m == "kept"));
    let rejected = launch(&device, &NOOP, Grid::blocks(0), |_| Ok(()));
    rejected.cancel();
    assert!(matches!(rejected.wait(), Err(Error::InvalidLaunch { .. })));
    let stream = device.new_stream().unwrap_or_else(|e| panic!("{e}"));
    let on = launch_on(&stream, &NOOP, Grid::blocks(1), |t| match t {
        Target::Sim(_) => Ok(()),
        Target::Cuda(_) => Err(Error::Buffer("not the simulator".to_string())),
    });
    on.cancel();
    assert!(block_on(on).is_ok());
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Launch<'static>>();
}

#[test]
fn dropping_a_running_launch_cancels_and_waits() {
    let device = Device::simulator();
    let (launch, shared) = running(&device);
    let remote = Arc::clone(&shared);
    let callback = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        complete(&remote, true, None);
    });
    let start = std::time::Instant::now();
    drop(launch);
    assert!(start.elapsed() >= std::time::Duration::from_millis(25));
    assert!(callback.join().is_ok());
    let state = lock(&shared);
    assert!(state.done && state.cancelled);
}
