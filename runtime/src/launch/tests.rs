//! Unit tests of launches: the checks before submission, the parameters of CUDA launches, and
//! the outcome, cancellation and drop of launches whose completion the tests play by hand.

use super::completion::{complete, lock, Shared};
use super::*;
use crate::abort::{hidden_params, RECORD_SLOTS};
use crate::cuda::KernelParam;
use crate::cuda::LaunchIds;
use crate::executor::block_on;
use crate::spec::{ParamKind, ParamSpec, ScalarType, HIDDEN_PARAMS};

/// `values` as 8-byte PTX parameters.
fn words<const N: usize>(values: [u64; N]) -> [KernelParam; N] {
    values.map(KernelParam::Word)
}

/// The values of `args`' parameters, which must all be 8-byte words.
fn slots(args: &CudaArgs<'_>) -> Vec<u64> {
    args.params
        .iter()
        .map(|p| match p {
            KernelParam::Word(word) => *word,
            KernelParam::TensorMap(_) => panic!("a tensor map among the words"),
        })
        .collect()
}

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
    let mut args = CudaArgs::new(&AXPY, a.id(), None);
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
    let mut args = CudaArgs::new(&AXPY, 1, None);
    args.scalar(2.0f32);
    // Stand-ins for two buffers (the checks look at slots and kinds only).
    for mutable in [false, true] {
        args.params.extend(words([256, 4]));
        args.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable,
        });
    }
    assert!(args.check(&AXPY).is_ok());
    assert_eq!(slots(&args)[0], u64::from(2.0f32.to_bits()));

    let mut short = CudaArgs::new(&AXPY, 1, None);
    short.scalar(2.0f32);
    assert!(matches!(
        short.check(&AXPY),
        Err(Error::InvalidLaunch { .. })
    ));

    let mut wrong_type = CudaArgs::new(&AXPY, 1, None);
    wrong_type.scalar(2u32);
    wrong_type.params.extend(words([256, 4, 512, 4]));
    for _ in 0..2 {
        wrong_type.kinds.push(ParamKind::Slice {
            elem: ScalarType::F32,
            mutable: true,
        });
    }
    assert!(
        matches!(wrong_type.check(&AXPY), Err(Error::InvalidLaunch { reason, .. }) if reason.contains("`a`"))
    );

    let mut read_only = CudaArgs::new(&AXPY, 1, None);
    read_only.scalar(2.0f32);
    for _ in 0..2 {
        read_only.params.extend(words([256, 4]));
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
    let mut args = CudaArgs::new(spec, 1, None);
    args.scalar(2.0f32);
    for mutable in [false, true] {
        args.params.extend(words([256, 4]));
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
    assert_eq!(args.params.len(), 5 + HIDDEN_PARAMS);
    assert_eq!(
        slots(&args)[..5],
        [u64::from(2.0f32.to_bits()), 256, 4, 256, 4]
    );
    assert_eq!(
        slots(&args)[5..],
        hidden_params(IDS.abort_word, 42, IDS.record, 50_000_000)
    );
    assert_eq!(slots(&args)[5], 0x7f00_0000_1000);
    assert_eq!(slots(&args)[6].to_ne_bytes()[..4], 42u32.to_ne_bytes());
    assert_eq!(slots(&args)[7], 0x7e00_0000_2000);
    assert_eq!(slots(&args)[8], 50_000_000);

    // A kernel without the protocol gets none, and rejects them.
    let mut plain = axpy_args(&AXPY);
    plain
        .finish(&AXPY, IDS, 50_000_000)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain.params.len(), 5);
    plain.push_hidden([0; HIDDEN_PARAMS]);
    assert!(matches!(
        plain.check(&AXPY),
        Err(Error::InvalidLaunch { .. })
    ));

    // A parameter short is still caught with the hidden ones added.
    let mut short = CudaArgs::new(&AXPY_ABORT, 1, None);
    short.scalar(2.0f32);
    short.params.extend(words([256, 4]));
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

/// A GEMM-like kernel's matrix parameter `a` (bf16, loaded in 64 x 64 and 64 x 32 boxes) and
/// its output.
static GEMM: KernelSpec = KernelSpec {
    entry: "gemm",
    path: "tests::gemm",
    ptx: "",
    warps: 2,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "a",
            kind: ParamKind::Matrix {
                elem: ScalarType::Bf16,
                mutable: false,
                boxes: &[
                    crate::spec::TileBox { rows: 64, cols: 64 },
                    crate::spec::TileBox { rows: 64, cols: 32 },
                ],
            },
        },
        ParamSpec {
            name: "out",
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

/// `GEMM`'s parameters as a launch would push them, with stand-ins for the buffers and maps.
fn gemm_args(kind: ParamKind, maps: usize) -> CudaArgs<'static> {
    let mut args = CudaArgs::new(&GEMM, 1, None);
    args.params.extend(words([4096, 128, 256]));
    args.params
        .extend((0..maps).map(|_| KernelParam::TensorMap(Box::default())));
    args.kinds.push(kind);
    args.params.extend(words([8192, 16]));
    args.kinds.push(ParamKind::Slice {
        elem: ScalarType::F32,
        mutable: true,
    });
    args
}

#[test]
fn a_matrix_takes_three_parameters_and_a_tensor_map_per_box() {
    let declared = GEMM.params[0].kind;
    assert_eq!(super::args::ptx_param_count(declared), 5);
    let no_boxes = ParamKind::Matrix {
        elem: ScalarType::F32,
        mutable: false,
        boxes: &[],
    };
    assert_eq!(super::args::ptx_param_count(no_boxes), 3);
    assert!(gemm_args(declared, 2).check(&GEMM).is_ok());

    // A map short: the count is off.
    let short = gemm_args(declared, 1).check(&GEMM);
    assert!(
        matches!(&short, Err(Error::InvalidLaunch { reason, .. })
            if reason.contains("6 PTX parameters were passed") && reason.contains("takes 7")),
        "{short:?}"
    );
    // A word where the kernel takes a tensor map, and a map where it takes a word.
    let mut swapped = gemm_args(declared, 2);
    swapped.params.swap(2, 3);
    let swapped = swapped.check(&GEMM);
    assert!(
        matches!(&swapped, Err(Error::InvalidLaunch { reason, .. })
            if reason.contains("PTX parameter 2 is a word but was passed as a tensor map")),
        "{swapped:?}"
    );

    // Other boxes, or another element type, make another parameter.
    let ParamKind::Matrix { boxes, .. } = declared else {
        unreachable!("`a` is a matrix")
    };
    static SQUARE: [crate::spec::TileBox; 2] = [crate::spec::TileBox { rows: 64, cols: 64 }; 2];
    for kind in [
        ParamKind::Matrix {
            elem: ScalarType::Bf16,
            mutable: false,
            boxes: &SQUARE,
        },
        ParamKind::Matrix {
            elem: ScalarType::F16,
            mutable: false,
            boxes,
        },
        ParamKind::Matrix {
            elem: ScalarType::Bf16,
            mutable: true,
            boxes,
        },
    ] {
        let wrong = gemm_args(kind, 2).check(&GEMM);
        assert!(
            matches!(&wrong, Err(Error::InvalidLaunch { reason, .. })
                if reason.starts_with("parameter `a` is declared as Matrix { elem: Bf16")),
            "{wrong:?}"
        );
    }
}

#[test]
fn a_cuda_launch_rejects_a_matrix_of_the_simulator() -> Result<()> {
    let device = Device::simulator();
    let a = device.alloc::<half::bf16>(128 * 256)?;
    let m = a.as_matrix(128, 256)?;
    for device_id in [device.id(), device.id() + 1] {
        let mut args = CudaArgs::new(&GEMM, device_id, None);
        match args.matrix("a", m) {
            Err(Error::InvalidLaunch { kernel, reason }) => {
                assert_eq!(kernel, "tests::gemm");
                assert!(
                    reason.starts_with("the buffer passed as `a` belongs to another device"),
                    "{reason}"
                );
            }
            other => panic!("expected InvalidLaunch, got {other:?}"),
        }
        assert!(args.params.is_empty() && args.kinds.is_empty() && args.uses.is_empty());
    }
    // Pushed where the kernel takes another parameter: generated code out of date.
    let mut args = CudaArgs::new(&AXPY, device.id(), None);
    match args.matrix("a", m) {
        Err(Error::InvalidLaunch { reason, .. }) => assert!(
            reason.contains(
                "a bf16 matrix was passed as `a`, parameter 0 of the launch, which \
                             the kernel declares as Some(Scalar(F32))"
            ),
            "{reason}"
        ),
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
    Ok(())
}

/// A kernel that loads two 4 x 8 tiles of `a` (the second past its ragged corner) through a
/// channel and writes them to `out`, one after the other.
async fn two_tiles(a: &crate::device::Matrix<f32>, out: &mut [f32]) {
    use crate::device::{channel, join_roles, on_warps, Payload, Tile};
    let (mut tx, rx) = channel::<Tile<f32, 4, 8>, 2>();
    join_roles([
        on_warps(0..1, async move {
            for at in [[0, 0], [4, 8]] {
                let Some(mut slot) = tx.reserve().await else {
                    return;
                };
                slot.load(a, at).await;
                slot.send();
            }
        }),
        on_warps(1..2, async move {
            let mut chunks = out.chunks_mut(32);
            while let Some(tile) = rx.recv().await {
                if let Some(chunk) = chunks.next() {
                    chunk.copy_from_slice(tile.elems());
                }
            }
        }),
    ])
    .await;
}

static TWO_TILES: KernelSpec = KernelSpec {
    entry: "two_tiles",
    path: "tests::two_tiles",
    ptx: "",
    warps: 2,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "a",
            kind: ParamKind::Matrix {
                elem: ScalarType::F32,
                mutable: false,
                boxes: &[crate::spec::TileBox { rows: 4, cols: 8 }],
            },
        },
        ParamSpec {
            name: "out",
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

/// Launches [`two_tiles`] as the generated launcher would.
fn launch_two_tiles<'a>(
    device: &'a Device,
    a: crate::MatrixView<'a, f32>,
    out: &'a mut crate::DeviceBuffer<f32>,
) -> Launch<'a> {
    launch(
        device,
        &TWO_TILES,
        Grid::blocks(1),
        move |target| match target {
            Target::Cuda(args) => {
                args.matrix("a", a)?;
                args.slice_mut("out", out)?;
                Ok(())
            }
            Target::Sim(sim) => {
                let a = sim.read_matrix("a", a)?;
                let out = sim.write("out", out)?;
                sim.run(move |run| {
                    let a = a.matrix();
                    let mut out = out.slice_mut();
                    run.run_blocks(|block| block.run(two_tiles(&a, &mut out)))
                })
            }
        },
    )
}

#[test]
#[rustfmt::skip]
fn a_simulated_launch_loads_tiles_with_zeros_past_the_edges() -> Result<()> {
    let device = Device::simulator();
    // 6 x 12, element (r, c) = 100 r + c + 1, then elements past the matrix that must not show.
    let mut data: Vec<f32> = (0..72).map(|i| (100 * (i / 12) + i % 12 + 1) as f32).collect();
    data.extend([-1.0; 8]);
    let a = device.upload(&data)?;
    let mut out = device.alloc::<f32>(64)?;
    block_on(launch_two_tiles(&device, a.as_matrix(6, 12)?, &mut out))?;
    let out = out.download()?;
    let row = |r: usize, c0: usize| -> Vec<f32> {
        (c0..c0 + 8).map(|c| if r < 6 && c < 12 { (100 * r + c + 1) as f32 } else { 0.0 }).collect()
    };
    let want: Vec<f32> = [(0, 0), (1, 0), (2, 0), (3, 0), (4, 8), (5, 8), (6, 8), (7, 8)]
        .into_iter()
        .flat_map(|(r, c)| row(r, c))
        .collect();
    assert_eq!(out, want);
    assert_eq!(out[32..36], [409.0, 410.0, 411.0, 412.0]);
    assert_eq!(out[36..40], [0.0; 4]);
    Ok(())
}

#[test]
fn a_simulated_launch_rejects_a_matrix_the_driver_would() -> Result<()> {
    let device = Device::simulator();
    // 6 x 10 f32: rows of 40 bytes, not a multiple of 16.
    let a = device.alloc::<f32>(60)?;
    let mut out = device.alloc::<f32>(64)?;
    match block_on(launch_two_tiles(&device, a.as_matrix(6, 10)?, &mut out)) {
        Err(err @ Error::TensorMap { .. }) => {
            let Error::TensorMap { kernel, error } = &err else {
                unreachable!()
            };
            assert_eq!((*kernel, error.param.as_str()), ("tests::two_tiles", "a"));
            assert!(
                err.to_string().starts_with(
                    "invalid launch of kernel `tests::two_tiles`: matrix `a`: its row stride, \
                     40 bytes, is not a multiple of 16 bytes: pad each row to a multiple of 4 \
                     f32 elements (a stride of 48 bytes)"
                ),
                "{err}"
            );
        }
        other => panic!("expected Error::TensorMap, got {other:?}"),
    }
    Ok(())
}
