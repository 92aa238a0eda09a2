//! Hand-written PTX kernels that follow the abort protocol (the four hidden parameters after
//! their own: `abort` .u64, `launch_id` .u32, `record` .u64, `watchdog_ns` .u64), with their
//! specs and typed launchers on a stream: for the tests of streams, cancellation and buffer
//! lifetimes on the GPU. Their `Target::Sim` arms return an error: they exist on CUDA only.
//!
//! - `spin_write(out, spin_ns, value)`: every thread spins for `spin_ns` nanoseconds of
//!   `%globaltimer`, polling its stream's abort word; when the word holds its launch id it exits
//!   at once, writing nothing. Otherwise the grid then writes `value` to every element of `out`
//!   (grid-stride loop).
//! - `affine(x, y)`: `y[i] = 2 * x[i] + 1`.
//! - `address_of(x, out)`: `out[0]` = the device address of `x`, as the kernel receives it.

use gpu_async::__private::{launch_on, Target};
use gpu_async::{
    DeviceBuffer, Error, Grid, KernelSpec, Launch, ParamKind, ParamSpec, ScalarType, Stream,
};

pub const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry spin_write(
    .param .u64 out_ptr,
    .param .u64 out_len,
    .param .u64 spin_ns,
    .param .u32 value,
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [out_ptr];
    ld.param.u64 %rd2, [out_len];
    ld.param.u64 %rd3, [spin_ns];
    ld.param.u32 %r1, [value];
    ld.param.u64 %rd4, [abort_word];
    ld.param.u32 %r2, [launch_id];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd4, %rd4;
    mov.u64 %rd5, %globaltimer;
SPIN:
    ld.volatile.global.u32 %r3, [%rd4];
    setp.eq.u32 %p1, %r3, %r2;
    @%p1 bra DONE;
    mov.u64 %rd6, %globaltimer;
    sub.u64 %rd7, %rd6, %rd5;
    setp.lt.u64 %p2, %rd7, %rd3;
    @%p2 bra SPIN;

    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, %tid.x;
    mad.lo.u32 %r7, %r4, %r5, %r6;
    cvt.u64.u32 %rd8, %r7;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd9, %r4, %r5;
WRITE:
    setp.ge.u64 %p3, %rd8, %rd2;
    @%p3 bra DONE;
    shl.b64 %rd10, %rd8, 2;
    add.u64 %rd11, %rd1, %rd10;
    st.global.u32 [%rd11], %r1;
    add.u64 %rd8, %rd8, %rd9;
    bra.uni WRITE;
DONE:
    ret;
}

.visible .entry affine(
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
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<10>;

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
    add.u32 %r6, %r6, 1;
    st.global.u32 [%rd7], %r6;
END:
    ret;
}

.visible .entry address_of(
    .param .u64 x_ptr,
    .param .u64 x_len,
    .param .u64 out_ptr,
    .param .u64 out_len,
    .param .u64 abort_word,
    .param .u32 launch_id,
    .param .u64 record,
    .param .u64 watchdog_ns
)
{
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    cvta.to.global.u64 %rd2, %rd2;
    st.global.u64 [%rd2], %rd1;
    ret;
}
"#;

pub static SPIN_WRITE: KernelSpec = KernelSpec {
    entry: "spin_write",
    path: "host_kernels::spin_write",
    ptx: PTX,
    warps: 4,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "out",
            kind: ParamKind::Slice {
                elem: ScalarType::U32,
                mutable: true,
            },
        },
        ParamSpec {
            name: "spin_ns",
            kind: ParamKind::Scalar(ScalarType::Usize),
        },
        ParamSpec {
            name: "value",
            kind: ParamKind::Scalar(ScalarType::U32),
        },
    ],
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

pub static AFFINE: KernelSpec = KernelSpec {
    entry: "affine",
    path: "host_kernels::affine",
    ptx: PTX,
    warps: 4,
    shared_bytes: 0,
    params: &[
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
    ],
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

pub static ADDRESS_OF: KernelSpec = KernelSpec {
    entry: "address_of",
    path: "host_kernels::address_of",
    ptx: PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "x",
            kind: ParamKind::Slice {
                elem: ScalarType::U8,
                mutable: false,
            },
        },
        ParamSpec {
            name: "out",
            kind: ParamKind::Slice {
                elem: ScalarType::U64,
                mutable: true,
            },
        },
    ],
    roles: &[],
    sites: &[],
    abort_protocol: true,
};

fn cuda_only() -> Error {
    Error::Buffer("hand-written PTX kernels run on CUDA only".to_string())
}

/// `spin_write` on `stream` with `blocks` blocks of 128 threads.
pub fn spin_write<'a>(
    stream: &'a Stream,
    blocks: u32,
    out: &'a mut DeviceBuffer<u32>,
    spin_ns: usize,
    value: u32,
) -> Launch<'a> {
    launch_on(
        stream,
        &SPIN_WRITE,
        Grid::blocks(blocks),
        move |t| match t {
            Target::Cuda(args) => {
                args.slice_mut("out", out)?;
                args.scalar(spin_ns);
                args.scalar(value);
                Ok(())
            }
            Target::Sim(_) => Err(cuda_only()),
        },
    )
}

/// `affine` on `stream`, one thread per element.
pub fn affine<'a>(
    stream: &'a Stream,
    x: &'a DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
) -> Launch<'a> {
    let blocks = u32::try_from(y.len().div_ceil(128))
        .unwrap_or(u32::MAX)
        .max(1);
    launch_on(stream, &AFFINE, Grid::blocks(blocks), move |t| match t {
        Target::Cuda(args) => {
            args.slice("x", x)?;
            args.slice_mut("y", y)
        }
        Target::Sim(_) => Err(cuda_only()),
    })
}

/// `address_of` on `stream`, one thread: writes the address of `x` into `out[0]`.
pub fn address_of<'a>(
    stream: &'a Stream,
    x: &'a DeviceBuffer<u8>,
    out: &'a mut DeviceBuffer<u64>,
) -> Launch<'a> {
    launch_on(stream, &ADDRESS_OF, Grid::blocks(1), move |t| match t {
        Target::Cuda(args) => {
            args.slice("x", x)?;
            args.slice_mut("out", out)
        }
        Target::Sim(_) => Err(cuda_only()),
    })
}
