//! Matrix parameters on the GPU: the tensor maps a launch encodes and passes as 128-byte kernel
//! parameters, read by a hand-written PTX kernel's TMA copies (`cp.async.bulk.tensor.2d`).

#[path = "common/devices.rs"]
mod devices;

use gpu_async::__private::{launch, Target};
use gpu_async::tensor_map::{swizzled_offset, Swizzle};
use gpu_async::{
    block_on, DeviceBuffer, Error, Grid, KernelSpec, Launch, MatrixView, ParamKind, ParamSpec,
    Result, ScalarType, TileBox,
};
use gpu_async_testing::{needs_gpu, needs_ptxas};

/// Thread 0 loads box 0 (4 x 12 f32, row-major) and box 1 (8 x 32 f32, 128-byte swizzle) of
/// `a` at (`row0`, `col0`) into shared memory, then writes them to `out` as they lie there,
/// followed by `a`'s rows and columns, whether its address is non-zero, and `out`'s length.
const TMA_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry tma_tiles(
    .param .u64 a_ptr,
    .param .u64 a_rows,
    .param .u64 a_cols,
    .param .align 128 .b8 a_map0[128],
    .param .align 128 .b8 a_map1[128],
    .param .u32 row0,
    .param .u32 col0,
    .param .u64 out_ptr,
    .param .u64 out_len
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<24>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<16>;
    .shared .align 1024 .b8 tile1[1024];
    .shared .align 128 .b8 tile0[192];
    .shared .align 8 .b64 bar;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;

    ld.param.u32 %r2, [row0];
    ld.param.u32 %r3, [col0];
    mov.u64 %rd1, a_map0;
    cvta.param.u64 %rd2, %rd1;
    mov.u64 %rd3, a_map1;
    cvta.param.u64 %rd4, %rd3;
    mov.u32 %r4, bar;
    mov.u32 %r5, tile0;
    mov.u32 %r6, tile1;

    mbarrier.init.shared::cta.b64 [%r4], 1;
    fence.proxy.async.shared::cta;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 1216;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r3, %r2}], [%r4];
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r6], [%rd4, {%r3, %r2}], [%r4];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
    @!%p2 bra WAIT;

    ld.param.u64 %rd5, [out_ptr];
    cvta.to.global.u64 %rd5, %rd5;
    mov.u32 %r7, 0;
COPY0:
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r5, %r8;
    ld.shared.u32 %r10, [%r9];
    mul.wide.u32 %rd6, %r7, 4;
    add.u64 %rd7, %rd5, %rd6;
    st.global.u32 [%rd7], %r10;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p3, %r7, 48;
    @%p3 bra COPY0;
    mov.u32 %r7, 0;
COPY1:
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r6, %r8;
    ld.shared.u32 %r10, [%r9];
    add.u32 %r11, %r7, 48;
    mul.wide.u32 %rd6, %r11, 4;
    add.u64 %rd7, %rd5, %rd6;
    st.global.u32 [%rd7], %r10;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p3, %r7, 256;
    @%p3 bra COPY1;

    ld.param.u64 %rd8, [a_rows];
    ld.param.u64 %rd9, [a_cols];
    cvt.rn.f32.u64 %f1, %rd8;
    cvt.rn.f32.u64 %f2, %rd9;
    st.global.f32 [%rd5+1216], %f1;
    st.global.f32 [%rd5+1220], %f2;
    ld.param.u64 %rd10, [a_ptr];
    ld.param.u64 %rd11, [out_len];
    setp.eq.u64 %p3, %rd10, 0;
    selp.f32 %f3, 0f00000000, 0f3F800000, %p3;
    st.global.f32 [%rd5+1224], %f3;
    cvt.rn.f32.u64 %f3, %rd11;
    st.global.f32 [%rd5+1228], %f3;
DONE:
    ret;
}
"#;

/// The boxes of `a`: 48-byte rows (no swizzle), 128-byte rows (128-byte swizzle).
const BOXES: &[TileBox] = &[TileBox { rows: 4, cols: 12 }, TileBox { rows: 8, cols: 32 }];

static TMA_TILES: KernelSpec = KernelSpec {
    entry: "tma_tiles",
    path: "gpu::tma_tiles",
    ptx: TMA_PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[
        ParamSpec {
            name: "a",
            kind: ParamKind::Matrix {
                elem: ScalarType::F32,
                mutable: false,
                boxes: BOXES,
            },
        },
        ParamSpec {
            name: "row0",
            kind: ParamKind::Scalar(ScalarType::U32),
        },
        ParamSpec {
            name: "col0",
            kind: ParamKind::Scalar(ScalarType::U32),
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

/// Words `out` holds: the two boxes (48 + 256 elements), then 4 words about the parameters.
const OUT: usize = 48 + 256 + 4;

fn tma_tiles<'a>(
    device: &'a gpu_async::Device,
    a: MatrixView<'a, f32>,
    at: [u32; 2],
    out: &'a mut DeviceBuffer<f32>,
) -> Launch<'a> {
    launch(device, &TMA_TILES, Grid::blocks(1), move |t| match t {
        Target::Cuda(args) => {
            args.matrix("a", a)?;
            args.scalar(at[0]);
            args.scalar(at[1]);
            args.slice_mut("out", out)
        }
        Target::Sim(_) => Err(Error::InvalidArgument("a GPU test".into())),
    })
}

#[needs_ptxas]
fn the_tensor_map_kernel_assembles() {
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    if let Err(log) = gpu_async_compiler::ptxas::assemble(&ptxas, "tma_tiles", TMA_PTX) {
        panic!("ptxas rejected `tma_tiles`:\n{log}");
    }
}

#[needs_gpu]
fn tma_copies_read_the_encoded_tensor_maps() -> Result<()> {
    let device = devices::gpu();
    // 20 x 36 f32 (144-byte rows), element (r, c) = 100 r + c + 1, then 8 elements past the
    // matrix that a copy must not read.
    let (rows, cols) = (20, 36);
    let value = |r: usize, c: usize| (100 * r + c + 1) as f32;
    let mut data: Vec<f32> = (0..rows * cols)
        .map(|i| value(i / cols, i % cols))
        .collect();
    data.extend([-1.0; 8]);
    let a = device.upload(&data)?;
    let mut out = device.alloc::<f32>(OUT)?;
    // The column's 112 bytes are a multiple of 16, where a TMA copy's rows start.
    let (row0, col0) = (18, 28);
    block_on(tma_tiles(
        &device,
        a.as_matrix(rows, cols)?,
        [row0, col0],
        &mut out,
    ))?;
    let got = out.download()?;

    let elem = |i: usize, j: usize| {
        let (r, c) = (row0 as usize + i, col0 as usize + j);
        if r < rows && c < cols {
            value(r, c)
        } else {
            0.0
        }
    };
    let mut want = vec![0.0; OUT];
    for (i, j) in (0..4).flat_map(|i| (0..12).map(move |j| (i, j))) {
        want[i * 12 + j] = elem(i, j);
    }
    for (i, j) in (0..8).flat_map(|i| (0..32).map(move |j| (i, j))) {
        let at = swizzled_offset(Swizzle::B128, ((i * 32 + j) * 4) as u32) as usize / 4;
        want[48 + at] = elem(i, j);
    }
    want[304..].copy_from_slice(&[rows as f32, cols as f32, 1.0, OUT as f32]);
    assert_eq!(got, want);

    // A matrix the driver would reject fails before anything is encoded, naming the rule.
    let mut out = device.alloc::<f32>(OUT)?;
    match block_on(tma_tiles(&device, a.as_matrix(20, 35)?, [0, 0], &mut out)) {
        Err(err @ Error::TensorMap { .. }) => assert!(
            err.to_string()
                .contains("matrix `a`: its row stride, 140 bytes, is not a multiple"),
            "{err}"
        ),
        other => panic!("expected Error::TensorMap, got {other:?}"),
    }
    Ok(())
}
