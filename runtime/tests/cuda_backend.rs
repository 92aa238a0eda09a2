//! Checks of the CUDA backend, on the GPU.

#[path = "common/devices.rs"]
mod devices;

use std::time::{Duration, Instant};

use gpu_async::__private::{launch, Target};
use gpu_async::{
    block_on, BackendKind, Device, Error, Grid, KernelSpec, ParamKind, ParamSpec, Result,
    ScalarType,
};
use gpu_async_testing::needs_gpu;

const SAXPY_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry saxpy(
    .param .f32 a,
    .param .u64 x_ptr,
    .param .u64 x_len,
    .param .u64 y_ptr,
    .param .u64 y_len
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<4>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<10>;

    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [x_len];
    ld.param.u64 %rd3, [y_ptr];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd5, %rd1;
    cvta.to.global.u64 %rd6, %rd3;
    shl.b64 %rd7, %rd4, 2;
    add.u64 %rd8, %rd5, %rd7;
    add.u64 %rd9, %rd6, %rd7;
    ld.global.f32 %f2, [%rd8];
    ld.global.f32 %f3, [%rd9];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd9], %f3;
DONE:
    ret;
}

.visible .entry spin(.param .u64 cycles)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [cycles];
    mov.u64 %rd2, %clock64;
LOOP:
    mov.u64 %rd3, %clock64;
    sub.u64 %rd3, %rd3, %rd2;
    setp.lt.u64 %p1, %rd3, %rd1;
    @%p1 bra LOOP;
    ret;
}

.extern .shared .align 16 .b8 smem[];

.visible .entry bigsmem(.param .u64 out_ptr, .param .u64 out_len, .param .u32 flag)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r3, [flag];
    add.u32 %r1, %r1, %r3;
    mov.u64 %rd2, smem;
    add.u64 %rd2, %rd2, 90000;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.shared.u32 [%rd2], %r1;
    bar.sync 0;
    ld.shared.u32 %r1, [%rd2];
    ld.param.u64 %rd1, [out_ptr];
    cvta.to.global.u64 %rd1, %rd1;
    add.u64 %rd1, %rd1, %rd3;
    st.global.u32 [%rd1], %r1;
    ret;
}

.visible .entry fault()
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    mov.u64 %rd1, 8;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
"#;

static SAXPY: KernelSpec = KernelSpec {
    entry: "saxpy",
    path: "gpu::saxpy",
    ptx: SAXPY_PTX,
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

static SPIN: KernelSpec = KernelSpec {
    entry: "spin",
    path: "gpu::spin",
    ptx: SAXPY_PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[ParamSpec {
        name: "cycles",
        kind: ParamKind::Scalar(ScalarType::Usize),
    }],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

static BIGSMEM: KernelSpec = KernelSpec {
    entry: "bigsmem",
    path: "gpu::bigsmem",
    ptx: SAXPY_PTX,
    warps: 1,
    shared_bytes: 100 * 1024,
    params: &[
        ParamSpec {
            name: "out",
            kind: ParamKind::Slice {
                elem: ScalarType::U32,
                mutable: true,
            },
        },
        ParamSpec {
            name: "flag",
            kind: ParamKind::Scalar(ScalarType::Bool),
        },
    ],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

static BAD: KernelSpec = KernelSpec {
    entry: "bad",
    path: "gpu::bad",
    ptx: ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry bad() { frobnicate; ret; }\n",
    warps: 1,
    shared_bytes: 0,
    params: &[],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

fn not_sim() -> Error {
    Error::Buffer("expected CUDA".into())
}

fn saxpy<'a>(
    device: &'a Device,
    a: f32,
    x: &'a gpu_async::DeviceBuffer<f32>,
    y: &'a mut gpu_async::DeviceBuffer<f32>,
) -> gpu_async::Launch<'a> {
    let n = x.len() as u32;
    launch(
        device,
        &SAXPY,
        Grid::blocks(n.div_ceil(128).max(1)),
        move |t| match t {
            Target::Cuda(args) => {
                args.scalar(a);
                args.slice("x", x)?;
                args.slice_mut("y", y)
            }
            Target::Sim(_) => Err(not_sim()),
        },
    )
}

fn spin(device: &Device, cycles: usize) -> gpu_async::Launch<'_> {
    launch(device, &SPIN, Grid::blocks(1), move |t| match t {
        Target::Cuda(args) => {
            args.scalar(cycles);
            Ok(())
        }
        Target::Sim(_) => Err(not_sim()),
    })
}

#[needs_gpu]
fn cuda_end_to_end() -> Result<()> {
    let device = devices::gpu();
    eprintln!("device: {device} / {device:?}, sms {}", device.sm_count()?);
    assert_eq!(device.kind(), BackendKind::Cuda);
    let default = Device::default()?;
    assert_eq!(default.kind(), BackendKind::Cuda);
    assert_eq!(default.fallback_reason(), None);

    // Buffers.
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = device.upload(&xs)?;
    assert_eq!(x.download()?, xs);
    let mut y = device.alloc::<f32>(n)?;
    assert_eq!(y.download()?, vec![0.0; n]);
    y.upload_from(&vec![1.0; n])?;
    let bools = device.upload(&[true, false, true])?;
    assert_eq!(bools.download()?, [true, false, true]);
    let sizes = device.upload(&[usize::MAX, 3])?;
    assert_eq!(sizes.download()?, [usize::MAX, 3]);
    let empty = device.upload::<i32>(&[])?;
    assert_eq!(empty.download()?, Vec::<i32>::new());
    let mut copy = device.alloc::<f32>(n)?;
    copy.copy_from_buffer(&x)?;
    assert_eq!(copy.download()?, xs);
    assert!(matches!(
        copy.download_into(&mut [0.0; 3]),
        Err(Error::Buffer(_))
    ));

    // Launch, awaited.
    block_on(saxpy(&device, 2.0, &x, &mut y))?;
    let expect: Vec<f32> = xs.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(y.download()?, expect);
    // Again (cached kernel), with wait().
    let l = saxpy(&device, 1.0, &x, &mut y);
    assert!(l.is_submitted());
    l.wait()?;
    let expect2: Vec<f32> = expect.iter().zip(&xs).map(|(y, x)| x + y).collect();
    assert_eq!(y.download()?, expect2);

    // A long kernel is pending at first, then completes; the timer sees it.
    let timer = device.start_timer()?;
    let t0 = Instant::now();
    let l = spin(&device, 400_000_000);
    assert!(!l.is_complete());
    block_on(l)?;
    let ms = timer.stop()?;
    eprintln!("spin: host {:?}, gpu {ms:.2} ms", t0.elapsed());
    assert!(ms > 50.0, "{ms}");

    // Dropping an unfinished launch blocks until it is done.
    let t0 = Instant::now();
    let l = spin(&device, 400_000_000);
    drop(l);
    let dropped = t0.elapsed();
    eprintln!("drop waited {dropped:?}");
    assert!(dropped > Duration::from_millis(50));

    // Many launches in flight, awaited in reverse order.
    let mut ys: Vec<_> = (0..8)
        .map(|_| device.alloc::<f32>(n))
        .collect::<Result<_>>()?;
    let launches: Vec<_> = ys.iter_mut().map(|y| saxpy(&device, 3.0, &x, y)).collect();
    for l in launches.into_iter().rev() {
        block_on(l)?;
    }
    for y in &ys {
        assert_eq!(y.download()?[10], 30.0);
    }

    // Dynamic shared memory above 48 KiB, and a bool parameter.
    let mut out = device.alloc::<u32>(32)?;
    let l = launch(&device, &BIGSMEM, Grid::blocks(1), |t| match t {
        Target::Cuda(args) => {
            args.slice_mut("out", &mut out)?;
            args.scalar(true);
            Ok(())
        }
        Target::Sim(_) => Err(not_sim()),
    });
    block_on(l)?;
    assert_eq!(out.download()?, (1..=32).collect::<Vec<u32>>());

    // Rejections.
    let other = Device::cuda(0)?;
    let foreign = other.upload(&xs)?;
    let r = block_on(saxpy(&device, 1.0, &foreign, &mut y));
    eprintln!("foreign: {r:?}");
    assert!(matches!(r, Err(Error::InvalidLaunch { .. })));
    let r = block_on(launch(&device, &SAXPY, Grid::blocks(1), |t| match t {
        Target::Cuda(args) => {
            args.scalar(1.0f32);
            Ok(())
        }
        Target::Sim(_) => Err(not_sim()),
    }));
    eprintln!("short: {r:?}");
    assert!(matches!(r, Err(Error::InvalidLaunch { .. })));
    let r = block_on(launch(&device, &SAXPY, Grid::blocks(0), |_| Ok(())));
    assert!(matches!(r, Err(Error::InvalidLaunch { .. })));
    let r = block_on(launch(&device, &BAD, Grid::blocks(1), |_| Ok(())));
    eprintln!("bad ptx: {r:?}");
    assert!(matches!(
        r,
        Err(Error::Cuda {
            call: "cuModuleLoadDataEx",
            ..
        })
    ));
    // Still usable after all that.
    block_on(saxpy(&device, 1.0, &x, &mut y))?;
    device.synchronize()?;
    Ok(())
}
