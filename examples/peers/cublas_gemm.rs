//! cuBLAS as the peer of the bf16 GEMM benchmark, in the same process: `cublasGemmEx` with bf16
//! inputs, an f32 output and f32 accumulation, through cudarc.
//!
//! cudarc loads `libcublas` at run time (`dlopen`, under names such as `libcublas.so` and
//! `libcublas.so.13`), so the example's caller must have the directory that holds it on
//! `LD_LIBRARY_PATH`: on the H200 machine, `/usr/local/cuda/lib64`, which is not on the default
//! library path. [`CublasGemm::new`] checks that the library loads before anything calls it
//! and fails with an error that says so when it does not (cudarc itself would panic). It
//! expects a working CUDA driver: the caller has opened the device already (a missing driver
//! panics inside cudarc).

use std::sync::Arc;

use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasGemmEx, cublasOperation_t, cudaDataType_t,
};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use gpu_async::half::bf16;

/// Bytes the flush before a timed run copies, as `gpu_async::bench::Timing::FLUSH_BYTES`: more
/// than the L2 cache holds.
pub const FLUSH_BYTES: usize = gpu_async::bench::Timing::FLUSH_BYTES;

/// How the peer is given B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BLayout {
    /// B is N x K, row-major, and C = A · Bᵀ.
    NK,
    /// B is K x N, row-major, and C = A · B.
    KN,
}

/// C (M x N, f32, row-major) = A (M x K, bf16, row-major) · Bᵀ where B is N x K (bf16,
/// row-major), through `cublasGemmEx` (bf16 inputs, f32 output, f32 compute:
/// `CUBLAS_COMPUTE_32F`, `CUBLAS_GEMM_DEFAULT`), on CUDA device `ordinal` through cudarc's
/// primary context of that device (the same context the gpu_async runtime uses), on a stream of
/// its own.
///
/// cuBLAS is column-major. A row-major matrix read as column-major is its transpose, so the
/// row-major C (M x N) is the column-major Cᵀ (N x M, leading dimension N), and
/// Cᵀ = (A·Bᵀ)ᵀ = B·Aᵀ. The buffer of B (row-major N x K) is the column-major Bᵀ (K x N,
/// leading dimension K): transposing it (`CUBLAS_OP_T`) gives B, the first operand, N x K. The
/// buffer of A (row-major M x K) is the column-major Aᵀ (K x M, leading dimension K): taken as
/// it is (`CUBLAS_OP_N`), the second operand. So the call is
/// `cublasGemmEx(OP_T, OP_N, n, m, k, 1, B, k, A, k, 0, C, n)`.
///
/// With B given as K x N ([`BLayout::KN`], C = A · B), its buffer is the column-major Bᵀ (N x
/// K, leading dimension N), Cᵀ = Bᵀ·Aᵀ takes it as it is, and the call is
/// `cublasGemmEx(OP_N, OP_N, n, m, k, 1, B, n, A, k, 0, C, n)`.
pub struct CublasGemm {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
    /// A's bf16 values as their bits (cudarc copies `half` types only with its `f16` feature).
    a: CudaSlice<u16>,
    b: CudaSlice<u16>,
    c: CudaSlice<f32>,
    start: CudaEvent,
    end: CudaEvent,
    /// The flush's source and destination.
    scratch: (CudaSlice<u8>, CudaSlice<u8>),
    m: i32,
    n: i32,
    k: i32,
    layout: BLayout,
}

/// Turns an error of the call `call` into the `String` this module returns.
fn failed<E: std::fmt::Display>(call: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{call} failed: {e}")
}

/// `value` as the `int` cuBLAS takes for a dimension.
fn dim(value: usize, what: &str) -> Result<i32, String> {
    i32::try_from(value).map_err(|_| format!("{what} = {value} does not fit cuBLAS's int"))
}

impl CublasGemm {
    /// Uploads A (`m` x `k`, row-major) and B (row-major, `n` x `k` or `k` x `n` as `layout`
    /// says) to device `ordinal` and allocates C (`m` x `n`, zeroed). Fails when a slice's
    /// length is not its shape's, when `libcublas` cannot be loaded (the message says to put it
    /// on `LD_LIBRARY_PATH`), and when a CUDA or cuBLAS call fails (the message names it).
    pub fn new(
        ordinal: usize,
        (m, n, k): (usize, usize, usize),
        a: &[bf16],
        (b, layout): (&[bf16], BLayout),
    ) -> Result<Self, String> {
        if Some(a.len()) != m.checked_mul(k) {
            return Err(format!("A has {} elements, not {m} x {k}", a.len()));
        }
        if Some(b.len()) != n.checked_mul(k) {
            return Err(format!("B has {} elements, not {n} x {k}", b.len()));
        }
        let len_c = m
            .checked_mul(n)
            .ok_or_else(|| format!("C ({m} x {n}) has too many elements"))?;
        let (m, n, k) = (dim(m, "m")?, dim(n, "n")?, dim(k, "k")?);
        // SAFETY: `is_culib_present` only tries to `dlopen` libcublas under the names cudarc
        // uses and closes what it opened. It is `unsafe` because loading a library runs its
        // initialisers; cuBLAS is designed to be loaded this way (cudarc loads it the same way
        // on its first call).
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(
                "cuBLAS could not be loaded: no libcublas (e.g. libcublas.so.13) on the \
                        library path; put the directory that holds it on LD_LIBRARY_PATH (on the \
                        H200 machine, /usr/local/cuda/lib64)"
                    .to_string(),
            );
        }
        let ctx = CudaContext::new(ordinal).map_err(failed("cuDevicePrimaryCtxRetain"))?;
        let stream = ctx.new_stream().map_err(failed("cuStreamCreate"))?;
        let blas =
            CudaBlas::new(Arc::clone(&stream)).map_err(failed("cublasCreate / cublasSetStream"))?;
        let bits = |x: &[bf16]| x.iter().map(|v| v.to_bits()).collect::<Vec<u16>>();
        let a = stream
            .clone_htod(&bits(a))
            .map_err(failed("cuMemcpyHtoDAsync (A)"))?;
        let b = stream
            .clone_htod(&bits(b))
            .map_err(failed("cuMemcpyHtoDAsync (B)"))?;
        let c = stream
            .alloc_zeros::<f32>(len_c)
            .map_err(failed("cuMemAlloc / cuMemsetD8Async (C)"))?;
        let scratch = (
            stream
                .alloc_zeros::<u8>(FLUSH_BYTES)
                .map_err(failed("cuMemAlloc (flush source)"))?,
            stream
                .alloc_zeros::<u8>(FLUSH_BYTES)
                .map_err(failed("cuMemAlloc (flush destination)"))?,
        );
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(failed("cuEventCreate"))?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(failed("cuEventCreate"))?;
        stream
            .synchronize()
            .map_err(failed("cuStreamSynchronize"))?;
        Ok(CublasGemm {
            blas,
            stream,
            a,
            b,
            c,
            start,
            end,
            scratch,
            m,
            n,
            k,
            layout,
        })
    }

    /// Runs the GEMM once and waits: the elapsed milliseconds, timed with CUDA events on its
    /// stream around the call, after a flush of the L2 cache (a copy of [`FLUSH_BYTES`] on the
    /// same stream, before the start event), as `gpu_async::bench::Timing` times a launch: the
    /// call starts from a cold cache, and the host's work for it overlaps the flush.
    pub fn run_ms(&mut self) -> Result<f64, String> {
        let (m, n, k) = (self.m, self.n, self.k);
        let (alpha, beta) = (1.0f32, 0.0f32);
        self.stream
            .context()
            .bind_to_thread()
            .map_err(failed("cuCtxSetCurrent"))?;
        let (src, dst) = &mut self.scratch;
        self.stream
            .memcpy_dtod(&*src, dst)
            .map_err(failed("cuMemcpyDtoDAsync (flush)"))?;
        self.start
            .record(&self.stream)
            .map_err(failed("cuEventRecord (start)"))?;
        {
            let (a, _a_done) = self.a.device_ptr(&self.stream);
            let (b, _b_done) = self.b.device_ptr(&self.stream);
            let (c, _c_done) = self.c.device_ptr_mut(&self.stream);
            // B's operation and leading dimension (see the type's comment).
            let (op_b, ld_b) = match self.layout {
                BLayout::NK => (cublasOperation_t::CUBLAS_OP_T, k),
                BLayout::KN => (cublasOperation_t::CUBLAS_OP_N, n),
            };
            // SAFETY: the handle is live and set to `self.stream`; `b` holds n x k and `a` m x k
            // bf16 values (checked in `new`), so with B's operation and leading dimension (OP_T
            // on a k x n column-major buffer with leading dimension k, or OP_N on an n x k one
            // with leading dimension n) and OP_N on A (k x m, leading dimension k) every read is
            // in bounds, and `c` holds m x n f32 values written with leading dimension n.
            // `alpha` and `beta` are host f32s (the handle's default pointer mode, f32 compute),
            // read before the call returns. The guards order the buffers' later uses after the
            // call.
            unsafe {
                cublasGemmEx(
                    *self.blas.handle(),
                    op_b,
                    cublasOperation_t::CUBLAS_OP_N,
                    n,
                    m,
                    k,
                    (&alpha as *const f32).cast(),
                    b as *const std::ffi::c_void,
                    cudaDataType_t::CUDA_R_16BF,
                    ld_b,
                    a as *const std::ffi::c_void,
                    cudaDataType_t::CUDA_R_16BF,
                    k,
                    (&beta as *const f32).cast(),
                    c as *mut std::ffi::c_void,
                    cudaDataType_t::CUDA_R_32F,
                    n,
                    cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .result()
            .map_err(failed("cublasGemmEx"))?;
        }
        self.end
            .record(&self.stream)
            .map_err(failed("cuEventRecord (end)"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(failed("cuEventElapsedTime"))?;
        Ok(f64::from(ms))
    }

    /// C after the last run, downloaded.
    pub fn c(&self) -> Result<Vec<f32>, String> {
        let c = self
            .stream
            .clone_dtoh(&self.c)
            .map_err(failed("cuMemcpyDtoHAsync (C)"))?;
        self.stream
            .synchronize()
            .map_err(failed("cuStreamSynchronize"))?;
        Ok(c)
    }
}
