//! The host half of the abort protocol, on the GPU, with hand-written PTX kernels that follow it:
//! a device panic and a watchdog stop come back as `Error::KernelPanic` / `Error::Deadlock` with
//! the block, thread, role and site the kernel reported, and the device stays usable. Needs a
//! GPU.

#[path = "common/devices.rs"]
mod devices;

use std::time::{Duration, Instant};

use gpu_async::__private::{launch, Target};
use gpu_async::{
    block_on, Device, DeviceBuffer, Error, Grid, KernelSpec, Launch, ParamKind, ParamSpec,
    RoleSpec, ScalarType, SiteKind, SiteSpec,
};
use gpu_async_testing::needs_gpu;

/// Every kernel of this file. The `_abort` kernels take the protocol's four hidden parameters
/// after their own: `abort` (.u64), `launch_id` (.u32), `record` (.u64), `watchdog_ns` (.u64).
///
/// - `panic_at(marks, fail_block, fail_thread)`: thread `fail_thread` of block `fail_block`
///   reports a panic at site 0 (role 0) and exits; every other thread polls the abort word until
///   it holds the launch id, then writes 1 to its mark (2 if it gave up after 10 s).
/// - `watchdog_spin()`: every thread waits for a flag that never comes, polling the abort word;
///   past `watchdog_ns` it reports a watchdog stop at site 0 (role = its warp / 2). With the
///   watchdog off it gives up silently after 10 s.
/// - `double_abort(x, y)`: `y[i] = 2 * x[i]`, following the protocol without failing.
/// - `double_plain(x, y)`: the same without the hidden parameters.
/// - `nothing()`: follows the protocol and does nothing.
const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry panic_at(
    .param .u64 marks_ptr,
    .param .u64 marks_len,
    .param .u32 fail_block,
    .param .u32 fail_thread,
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;

    ld.param.u64 %rd1, [marks_ptr];
    ld.param.u32 %r1, [fail_block];
    ld.param.u32 %r2, [fail_thread];
    ld.param.u64 %rd2, [abort_word];
    ld.param.u32 %r3, [launch_id];
    ld.param.u64 %rd3, [record];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %tid.x;
    mov.u32 %r6, %ntid.x;
    mad.lo.u32 %r7, %r4, %r6, %r5;
    setp.eq.u32 %p1, %r4, %r1;
    setp.eq.u32 %p2, %r5, %r2;
    and.pred %p3, %p1, %p2;
    @%p3 bra FAIL;

    mov.u64 %rd4, %globaltimer;
SPIN:
    ld.volatile.global.u32 %r8, [%rd2];
    setp.eq.u32 %p4, %r8, %r3;
    @%p4 bra STOPPED;
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd5, %rd4;
    setp.lt.u64 %p5, %rd6, 10000000000;
    @%p5 bra SPIN;
    mov.u32 %r9, 2;
    bra.uni MARK;
STOPPED:
    mov.u32 %r9, 1;
MARK:
    mul.wide.u32 %rd7, %r7, 4;
    add.u64 %rd8, %rd1, %rd7;
    st.global.u32 [%rd8], %r9;
    ret;

FAIL:
    atom.global.exch.b32 %r10, [%rd2], %r3;
    setp.eq.u32 %p6, %r10, %r3;
    @%p6 bra DONE;
    mov.u32 %r11, 1;
    st.volatile.global.u32 [%rd3+4], %r11;
    mov.u32 %r12, 0;
    st.volatile.global.u32 [%rd3+8], %r12;
    st.volatile.global.u32 [%rd3+12], %r4;
    st.volatile.global.u32 [%rd3+16], %r5;
    st.volatile.global.u32 [%rd3+20], %r12;
    fence.sc.sys;
    st.volatile.global.u32 [%rd3], %r3;
DONE:
    ret;
}

.visible .entry watchdog_spin(
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;

    ld.param.u64 %rd2, [abort_word];
    ld.param.u32 %r3, [launch_id];
    ld.param.u64 %rd3, [record];
    ld.param.u64 %rd5, [watchdog_ns];
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %tid.x;
    setp.eq.u64 %p1, %rd5, 0;
    selp.b64 %rd6, 10000000000, %rd5, %p1;
    mov.u64 %rd4, %globaltimer;
LOOP:
    ld.volatile.global.u32 %r8, [%rd2];
    setp.eq.u32 %p2, %r8, %r3;
    @%p2 bra DONE;
    mov.u64 %rd7, %globaltimer;
    sub.u64 %rd8, %rd7, %rd4;
    setp.lt.u64 %p3, %rd8, %rd6;
    @%p3 bra LOOP;
    @%p1 bra DONE;

    atom.global.exch.b32 %r10, [%rd2], %r3;
    setp.eq.u32 %p4, %r10, %r3;
    @%p4 bra DONE;
    mov.u32 %r11, 2;
    st.volatile.global.u32 [%rd3+4], %r11;
    mov.u32 %r12, 0;
    st.volatile.global.u32 [%rd3+8], %r12;
    st.volatile.global.u32 [%rd3+12], %r4;
    st.volatile.global.u32 [%rd3+16], %r5;
    shr.u32 %r13, %r5, 6;
    st.volatile.global.u32 [%rd3+20], %r13;
    fence.sc.sys;
    st.volatile.global.u32 [%rd3], %r3;
DONE:
    ret;
}

.visible .entry double_abort(
    .param .u64 x_ptr,
    .param .u64 x_len,
    .param .u64 y_ptr,
    .param .u64 y_len,
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [y_ptr];
    ld.param.u64 %rd3, [y_len];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra END;
    shl.b64 %rd5, %rd4, 2;
    add.u64 %rd6, %rd1, %rd5;
    add.u64 %rd7, %rd2, %rd5;
    ld.global.u32 %r5, [%rd6];
    shl.b32 %r6, %r5, 1;
    st.global.u32 [%rd7], %r6;
END:
    ret;
}

.visible .entry nothing(
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    ret;
}

.visible .entry double_plain(
    .param .u64 x_ptr,
    .param .u64 x_len,
    .param .u64 y_ptr,
    .param .u64 y_len
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [y_ptr];
    ld.param.u64 %rd3, [y_len];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra END;
    shl.b64 %rd5, %rd4, 2;
    add.u64 %rd6, %rd1, %rd5;
    add.u64 %rd7, %rd2, %rd5;
    ld.global.u32 %r5, [%rd6];
    shl.b32 %r6, %r5, 1;
    st.global.u32 [%rd7], %r6;
END:
    ret;
}
"#;

const PANIC_SITE: SiteSpec = SiteSpec {
    kind: SiteKind::Panic,
    message: "index out of bounds: the len is 10 but the index is 12",
    file: "src/k.rs",
    line: 12,
    column: 9,
};

const WAIT_SITE: SiteSpec = SiteSpec {
    kind: SiteKind::Wait,
    message: "rx.recv() on channel `rx`",
    file: "src/k.rs",
    line: 30,
    column: 17,
};

/// 2 warps per block.
static PANIC_AT: KernelSpec = KernelSpec {
    entry: "panic_at",
    path: "abort_protocol::panic_at",
    ptx: PTX,
    warps: 2,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "marks",
            kind: ParamKind::Slice {
                elem: ScalarType::U32,
                mutable: true,
            },
        },
        ParamSpec {
            name: "fail_block",
            kind: ParamKind::Scalar(ScalarType::U32),
        },
        ParamSpec {
            name: "fail_thread",
            kind: ParamKind::Scalar(ScalarType::U32),
        },
    ],
    roles: &[RoleSpec {
        name: "worker",
        first_warp: 0,
        end_warp: 2,
    }],
    sites: &[PANIC_SITE],
    abort_protocol: true,
};

/// 4 warps per block, two roles of two warps each.
static WATCHDOG_SPIN: KernelSpec = KernelSpec {
    entry: "watchdog_spin",
    path: "abort_protocol::watchdog_spin",
    ptx: PTX,
    warps: 4,
    shared_bytes: 0,
    params: &[],
    roles: &[
        RoleSpec {
            name: "producer",
            first_warp: 0,
            end_warp: 2,
        },
        RoleSpec {
            name: "consumer",
            first_warp: 2,
            end_warp: 4,
        },
    ],
    sites: &[WAIT_SITE],
    abort_protocol: true,
};

const DOUBLE_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "x",
        kind: ParamKind::Slice {
            elem: ScalarType::U32,
            mutable: false,
        },
    },
    ParamSpec {
        name: "y",
        kind: ParamKind::Slice {
            elem: ScalarType::U32,
            mutable: true,
        },
    },
];

static DOUBLE_ABORT: KernelSpec = KernelSpec {
    entry: "double_abort",
    path: "abort_protocol::double_abort",
    ptx: PTX,
    warps: 4,
    shared_bytes: 0,
    params: DOUBLE_PARAMS,
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

static DOUBLE_PLAIN: KernelSpec = KernelSpec {
    entry: "double_plain",
    path: "abort_protocol::double_plain",
    abort_protocol: false,
    ..DOUBLE_ABORT
};

static NOTHING: KernelSpec = KernelSpec {
    entry: "nothing",
    path: "abort_protocol::nothing",
    ptx: PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[],
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

const THREADS: u32 = 64;
const BLOCKS: u32 = 4;

fn not_sim() -> Error {
    Error::Buffer("expected CUDA".into())
}

fn panic_at<'a>(
    device: &'a Device,
    marks: &'a mut DeviceBuffer<u32>,
    fail_block: u32,
    fail_thread: u32,
) -> Launch<'a> {
    launch(device, &PANIC_AT, Grid::blocks(BLOCKS), move |t| match t {
        Target::Cuda(args) => {
            args.slice_mut("marks", marks)?;
            args.scalar(fail_block);
            args.scalar(fail_thread);
            Ok(())
        }
        Target::Sim(_) => Err(not_sim()),
    })
}

fn double<'a>(
    device: &'a Device,
    spec: &'static KernelSpec,
    x: &'a DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
) -> Launch<'a> {
    let blocks = u32::try_from(x.len().div_ceil(128)).unwrap_or(1).max(1);
    launch(device, spec, Grid::blocks(blocks), move |t| match t {
        Target::Cuda(args) => {
            args.slice("x", x)?;
            args.slice_mut("y", y)
        }
        Target::Sim(_) => Err(not_sim()),
    })
}

/// Both doubling kernels give the right results on `device`.
fn check_double(device: &Device) {
    let xs: Vec<u32> = (0..1000).collect();
    let x = device.upload(&xs).expect("upload");
    for spec in [&DOUBLE_ABORT, &DOUBLE_PLAIN] {
        let mut y = device.alloc::<u32>(xs.len()).expect("alloc");
        let r = block_on(double(device, spec, &x, &mut y));
        assert!(r.is_ok(), "{}: {r:?}", spec.path);
        let ys = y.download().expect("download");
        assert!(
            xs.iter().zip(&ys).all(|(x, y)| *y == 2 * x),
            "{}: wrong results",
            spec.path
        );
    }
}

/// Asserts that `r` is the panic `panic_at` reports for block `block`, thread `thread`.
fn expect_panic(r: &Result<(), Error>, block: u32, thread: u32) {
    match r {
        Err(Error::KernelPanic {
            kernel,
            role,
            block: b,
            message,
            location,
            thread: t,
        }) => {
            assert_eq!(*kernel, "abort_protocol::panic_at");
            assert_eq!(role, "worker");
            assert_eq!(*b, block);
            assert_eq!(*t, Some(thread));
            assert_eq!(message, PANIC_SITE.message);
            assert_eq!(location, "src/k.rs:12:9");
        }
        other => panic!("expected a KernelPanic, got {other:?}"),
    }
}

/// Every thread but the failing one saw the abort word and stopped.
fn expect_marks(marks: &DeviceBuffer<u32>, block: u32, thread: u32) {
    let marks = marks.download().expect("download marks");
    let failing = (block * THREADS + thread) as usize;
    for (i, &m) in marks.iter().enumerate() {
        let want = if i == failing { 0 } else { 1 };
        assert_eq!(m, want, "mark of global thread {i}");
    }
}

#[needs_gpu]
fn a_device_panic_names_block_thread_and_site_and_the_device_stays_usable() {
    let device = devices::gpu();
    let n = (BLOCKS * THREADS) as usize;
    let mut marks = device.alloc::<u32>(n).expect("alloc");
    let start = Instant::now();
    let r = block_on(panic_at(&device, &mut marks, 2, 37));
    eprintln!("panic: {:?} after {:?}", r, start.elapsed());
    if let Err(e) = &r {
        eprintln!("  shown as: {e}");
    }
    expect_panic(&r, 2, 37);
    expect_marks(&marks, 2, 37);
    check_double(&device);

    // Again on the same device: nothing was reset, the new launch id tells the records apart.
    let mut marks = device.alloc::<u32>(n).expect("alloc");
    let r = block_on(panic_at(&device, &mut marks, 0, 63));
    expect_panic(&r, 0, 63);
    expect_marks(&marks, 0, 63);
    check_double(&device);
}

#[needs_gpu]
fn launches_in_flight_together_keep_their_own_outcomes() {
    let device = devices::gpu();
    let n = (BLOCKS * THREADS) as usize;
    let xs: Vec<u32> = (0..1000).collect();
    let x = device.upload(&xs).expect("upload");
    let mut y1 = device.alloc::<u32>(xs.len()).expect("alloc");
    let mut y2 = device.alloc::<u32>(xs.len()).expect("alloc");
    let mut marks1 = device.alloc::<u32>(n).expect("alloc");
    let mut marks2 = device.alloc::<u32>(n).expect("alloc");
    // All submitted before any is awaited: two failures back to back, a success between and
    // after them. Each failing launch must report its own record, which the second one
    // overwrote by the time the first is awaited.
    let a = panic_at(&device, &mut marks1, 1, 5);
    let b = double(&device, &DOUBLE_ABORT, &x, &mut y1);
    let c = panic_at(&device, &mut marks2, 3, 62);
    let d = double(&device, &DOUBLE_ABORT, &x, &mut y2);
    let rd = block_on(d);
    let (ra, rb, rc) = (block_on(a), block_on(b), block_on(c));
    expect_panic(&ra, 1, 5);
    assert!(rb.is_ok(), "{rb:?}");
    expect_panic(&rc, 3, 62);
    assert!(rd.is_ok(), "{rd:?}");
    expect_marks(&marks1, 1, 5);
    expect_marks(&marks2, 3, 62);
    for y in [&y1, &y2] {
        let ys = y.download().expect("download");
        assert!(xs.iter().zip(&ys).all(|(x, y)| *y == 2 * x));
    }
}

#[needs_gpu]
fn the_watchdog_stops_a_wait_that_never_ends() {
    let device = devices::gpu();
    assert_eq!(device.watchdog(), Some(Duration::from_secs(5)));
    device.set_watchdog(Some(Duration::from_millis(50)));
    let start = Instant::now();
    let r = block_on(launch(&device, &WATCHDOG_SPIN, Grid::blocks(2), |_| Ok(())));
    let took = start.elapsed();
    eprintln!("watchdog: {r:?} after {took:?}");
    if let Err(e) = &r {
        eprintln!("  shown as: {e}");
    }
    match &r {
        Err(Error::Deadlock {
            kernel,
            block,
            waits,
            schedule: None,
        }) => {
            assert_eq!(*kernel, "abort_protocol::watchdog_spin");
            assert!(*block < 2, "block {block}");
            assert_eq!(waits.len(), 1);
            let w = &waits[0];
            assert!(
                (w.role == "producer" && w.warps == (0..2))
                    || (w.role == "consumer" && w.warps == (2..4)),
                "{w:?}"
            );
            assert_eq!(
                w.waiting_on,
                "was stopped by the watchdog after 50ms in rx.recv() on channel `rx`"
            );
            assert_eq!(w.location, "src/k.rs:30:17");
        }
        other => panic!("expected a Deadlock, got {other:?}"),
    }
    assert!(took < Duration::from_secs(5), "took {took:?}");
    check_double(&device);
    device.set_watchdog(None);
    assert_eq!(device.watchdog(), None);
}

/// `count` launches of `nothing`, all in flight.
fn nothings(device: &Device, count: usize) -> Vec<Launch<'_>> {
    (0..count)
        .map(|_| launch(device, &NOTHING, Grid::blocks(1), |_| Ok(())))
        .collect()
}

#[needs_gpu]
fn failures_are_exact_for_4096_launches_in_flight_and_overwrites_are_detected_beyond() {
    let device = devices::gpu();
    let n = (BLOCKS * THREADS) as usize;
    let mut marks = [(); 4].map(|()| device.alloc::<u32>(n).expect("alloc"));
    let [m1, m2, m3, m4] = &mut marks;
    // 4096 launches in flight, the first and the last failing: each has a slot of its own.
    let first = panic_at(&device, m1, 1, 5);
    let between = nothings(&device, 4094);
    let last = panic_at(&device, m2, 2, 6);
    let r_last = last.wait();
    assert!(between.iter().all(Launch::is_complete));
    drop(between);
    expect_panic(&r_last, 2, 6);
    expect_panic(&first.wait(), 1, 5);
    // 4097 in flight: the last one shares the first one's slot and overwrites its record. The
    // first one cannot tell its outcome any more, and says so.
    let first = panic_at(&device, m3, 3, 7);
    let between = nothings(&device, 4095);
    let last = panic_at(&device, m4, 0, 8);
    let r_last = last.wait();
    drop(between);
    expect_panic(&r_last, 0, 8);
    let r_first = first.wait();
    eprintln!("4097 in flight, both ends failing: the first reports {r_first:?}");
    assert!(
        matches!(&r_first, Err(Error::OutcomeUnknown { kernel: "abort_protocol::panic_at", reason })
            if reason.contains("overwritten")),
        "{r_first:?}"
    );
    // With 4097 in flight and only the first one failing, nothing is lost.
    let first = panic_at(&device, m1, 1, 9);
    let mut between = nothings(&device, 4096);
    // Waited for before the others are dropped: dropping an unfinished launch cancels it, and
    // a cancel writes the abort word, which `first`'s waiting threads still watch.
    let tail = between.pop().map(Launch::wait);
    assert!(matches!(tail, Some(Ok(()))), "{tail:?}");
    drop(between);
    expect_panic(&first.wait(), 1, 9);
    check_double(&device);
}
