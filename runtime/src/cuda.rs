//! The CUDA backend, and the one `unsafe` layer of this crate.
//!
//! Every `unsafe` block of `gpu-async` lives in this file; the rest of the crate (devices, streams,
//! buffers, launches, the simulator) is safe code that reaches the driver only through the
//! functions here. Each block says, in a `// SAFETY:` comment, why it is sound. The driver is
//! reached through `cudarc`: its safe wrappers for contexts, streams and events, and its raw `sys`
//! bindings for what it does not wrap the way this crate needs it (module loading with the JIT
//! error log, `cuLaunchKernel` with our own parameter array, the completion events and
//! `cuStreamAddCallback`, `cuStreamQuery`, the mapped host memory of the failure records,
//! `cuMemsetD32Async`, and the buffers' memory, whose frees this crate orders itself).
//!
//! `cudarc` loads `libcuda` lazily and panics when it is missing, so [`CudaDevice::open`] checks
//! for the library before it calls anything else, and turns any panic of the driver loader into
//! [`Error::NoCudaDevice`].
//!
//! # Streams
//!
//! A device has a *default stream* (its own non-blocking stream, or the cudarc stream it was made
//! from) and any number of further streams ([`CudaDevice::new_stream`]). Each stream is a
//! [`StreamState`]: the CUDA stream plus the abort protocol's state of the launches on it (see
//! [`crate::abort`]): its abort word (the first 4 bytes of 4 KiB of device memory), its *record
//! ring* (4096 failure records of 32 bytes, page-locked host memory mapped into the device's
//! address space; launch `k` writes slot `k % 4096`) and its launch-id counter. A failing launch
//! never clears another running launch's id from the abort word, since the launches of one stream
//! run one after another. A device has one more stream, the *cancel stream*, used only to write
//! abort words while kernels run ([`CudaDevice::request_abort`]).
//!
//! # Completion
//!
//! Nothing on a launch's stream waits for the host, and submitting a launch records nothing but
//! the kernel: an event per launch would cost about half a microsecond of the host's time on
//! every launch, most of them never awaited one by one. The stream keeps, in `finished`, the
//! latest launch known to have finished; every launch before it has finished too. A launch whose
//! outcome is asked for and that is not known to be finished gets a *completion mark*
//! ([`CompletionMark`]: an event, `CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC`, reused
//! across the stream's marks, recorded at the stream's current end, with the id of the last launch
//! submitted before it). Whoever wants the outcome asks the mark's event: `cuEventQuery` without
//! waiting, `cuEventSynchronize` to sleep until it completes; either way a completed mark tells
//! `finished` about every launch before it. A future that must be woken gets, on its first
//! pending poll, a `cuStreamWaitEvent` for the mark's event and then a `cuStreamAddCallback`
//! enqueued on one of the stream's *watcher streams* ([`StreamState::notify_on_completion`]): the
//! host round trip of the callback delays only the watcher, never the launch stream. The slot of the launch in the record ring is read after
//! completion, when the outcome is taken ([`StreamState::failure_record`]).
//!
//! # Buffers and the order of frees
//!
//! A buffer's memory ([`DeviceMem`]) has a *home stream*: the one it was allocated on (the
//! device's default stream, or the stream of the cudarc slice it came from). Host operations on
//! the buffer (writes, reads) run there, and it is freed there, stream-ordered
//! (`cuMemFreeAsync`). Every use of the buffer on a stream (a launch, a copy) is remembered in the
//! buffer: the last write and the reads since, each with the stream it ran on and an event
//! recorded after it. A use on another stream than the previous ones first makes its stream wait
//! for them (`cuStreamWaitEvent`), and the free makes the home stream wait for every use on other
//! streams before it frees. The event of a use is recorded right after it when the stream is not
//! the buffer's home stream; a use on the home stream needs none for the free (the stream orders
//! it), and gets one only when a use on another stream needs to wait for it. So a buffer is never
//! freed, nor written by the host, under a kernel that still uses it, even when the kernel's
//! [`Launch`](crate::Launch) was leaked with `mem::forget`. cudarc's own per-buffer event
//! tracking is therefore switched off for the contexts this crate creates (a context handle
//! received from cudarc is left as its owner set it).
//!
//! The abort words and record rings live as long as their stream and are freed only after it
//! (and the cancel stream) was synchronized.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError,
};

use crate::abort::{next_launch_id, record_slot, Record, RECORD_SLOTS, RECORD_WORDS};
use crate::error::{Error, Result};
use crate::launch::Shared;
use crate::spec::{KernelScalar, KernelSpec, ScalarType};

// Buffers of `usize` are copied byte for byte to the device, where `usize` is 64 bits wide. CUDA
// only supports 64-bit hosts.
const _: () = assert!(std::mem::size_of::<usize>() == 8);

/// Turns a driver error into [`Error::Cuda`], naming the call that failed.
pub(crate) fn driver_error(call: &'static str, err: DriverError) -> Error {
    let name = err
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", err.0));
    let message = match err.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    };
    Error::Cuda { call, message }
}

/// `map_err` adapter for [`driver_error`].
fn cuda(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |err| driver_error(call, err)
}

/// Where every buffer this crate allocates starts: a multiple of 4 KiB ([`CudaDevice::alloc`]).
///
/// Measured on an H200 (docs/benchmarks.md, twelfth session): the pipeline example's bulk copies
/// from and to buffers 256 or 512 bytes past a 4 KiB boundary, where the driver's pool put them
/// after a small allocation, ran 0.1-0.2% slower on its default grid and 0.6-0.8% slower at 2
/// blocks per multiprocessor, in the hand-written peer as in the generated kernel; offsets of 1,
/// 2 and 4 KiB cost nothing.
pub(crate) const BUFFER_ALIGN: usize = 4096;

/// Allocates `bytes` (non-zero) bytes of device memory of the current context: stream-ordered on
/// `stream` with `cuMemAllocAsync` when `async_alloc`, with `cuMemAlloc` otherwise. The caller
/// frees it with [`driver_free`] and the same `async_alloc`.
fn driver_alloc(bytes: usize, stream: &CudaStream, async_alloc: bool) -> Result<u64> {
    let mut ptr: sys::CUdeviceptr = 0;
    if async_alloc {
        // SAFETY: `ptr` is a valid out-pointer; `bytes` is non-zero; the stream belongs to the
        // current context.
        unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream.cu_stream()) }
            .result()
            .map_err(cuda("cuMemAllocAsync"))?;
    } else {
        // SAFETY: `ptr` is a valid out-pointer; `bytes` is non-zero; a context is current.
        unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }
            .result()
            .map_err(cuda("cuMemAlloc"))?;
    }
    Ok(ptr)
}

/// Frees `base`, allocated by [`driver_alloc`] with the same `async_alloc` on `stream`'s
/// context, after every use of it: stream-ordered on `stream` (the caller ordered the uses on
/// other streams before it), or, without stream-ordered allocation, after synchronizing
/// `stream`, which then must have waited for every use. Errors are dropped: there is no one to
/// tell, and the memory is leaked rather than freed under a kernel when the synchronization
/// fails.
fn driver_free(base: u64, stream: &CudaStream, async_alloc: bool) {
    if stream.context().bind_to_thread().is_err() {
        return;
    }
    if async_alloc {
        // SAFETY: `base` was allocated by `cuMemAllocAsync` in this context and is freed only
        // here, once (the callers' contract). The free is ordered on `stream` after every use of
        // the memory (the callers' contract). The context is current.
        let _ = unsafe { sys::cuMemFreeAsync(base, stream.cu_stream()) };
    } else if stream.synchronize().is_ok() {
        // SAFETY: `base` was allocated by `cuMemAlloc` in this context and is freed only here,
        // once. `stream` was just synchronized, and it had waited for every use of the memory
        // on other streams (the callers' contract), so nothing uses it any more. The context is
        // current.
        let _ = unsafe { sys::cuMemFree_v2(base) };
    }
}

/// Whether `libcuda` can be loaded. Checked once per process.
pub(crate) fn libcuda_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to `dlopen` the driver library under its usual
        // names and closes what it opened. It is `unsafe` because loading a library runs its
        // initialisers; the NVIDIA driver library is designed to be loaded this way.
        unsafe { sys::is_culib_present() }
    })
}

/// Views scalars as their bytes, as they are laid out in host and device memory.
fn scalars_as_bytes<T: KernelScalar>(data: &[T]) -> &[u8] {
    // SAFETY: `KernelScalar` is sealed to `bool` and the primitive integers and floats: plain values
    // with no padding, so every byte of `data` is initialised. `u8` has alignment 1 and the length
    // is exactly the byte size of `data`; the view borrows `data`, so it cannot outlive it.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Whether every bit pattern of the scalar's size is a valid value of it.
fn every_bit_pattern_valid(ty: ScalarType) -> bool {
    ty != ScalarType::Bool
}

/// Whether two cudarc stream handles are the same CUDA stream.
fn same_stream(a: &CudaStream, b: &CudaStream) -> bool {
    a == b
}

/// One CUDA device as this crate uses it: a context, its default stream, the kernels loaded so
/// far, and the stream that writes abort words.
pub(crate) struct CudaDevice {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    device_name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    /// Loaded kernels by the address of their `&'static KernelSpec` (one per kernel): a key that
    /// costs no string hashing on every launch.
    kernels: Mutex<HashMap<usize, Arc<LoadedKernel>>>,
    /// The stream launches and buffer operations use when no other is given.
    default_stream: Arc<StreamState>,
    /// A non-blocking stream for writing abort words while kernels run; nothing else.
    cancel_stream: Arc<CudaStream>,
    /// The priority of the streams' watcher streams (see [`watcher_priority`]).
    watcher_priority: i32,
}

/// The priority of watcher streams, given the context's range (`least` is the default priority,
/// numerically the greatest): one step above the default when that is still below the greatest
/// (the cancel stream's), else the default. A watcher's `cuStreamWaitEvent` holds up its hardware
/// queue until the launch it waits for has finished; streams beyond the device's hardware
/// queues share them, and a stream waiting behind it there would be held up too. Streams of
/// different priorities are expected not to share a queue (priority is a property of the
/// hardware channel), so this keeps the watchers' waits away from the launch streams (default
/// priority) and the cancel stream (greatest). Watchers run no kernels, so their priority
/// takes nothing from anyone.
fn watcher_priority(least: i32, greatest: i32) -> i32 {
    let above_default = least.saturating_sub(1);
    if above_default > greatest {
        above_default
    } else {
        least
    }
}

/// What a launch passes to the abort protocol's hidden parameters, besides the watchdog bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchIds {
    /// The device address of the abort word of the launch's stream.
    pub(crate) abort_word: u64,
    /// This launch's id, never 0.
    pub(crate) launch_id: u32,
    /// The device address of this launch's failure record: its slot of the stream's record ring.
    pub(crate) record: u64,
    /// The epoch of the stream's launch-id counter (how often it wrapped) the id belongs to.
    pub(crate) epoch: u32,
}

impl CudaDevice {
    /// Opens CUDA device `ordinal` with a new stream of its own.
    pub(crate) fn open(ordinal: usize) -> Result<CudaDevice> {
        if !libcuda_present() {
            return Err(Error::NoCudaDevice(
                "libcuda not found: no NVIDIA driver is installed, or its library is not on the \
                 library search path"
                    .to_string(),
            ));
        }
        // cudarc panics if a driver entry point it needs is missing (a driver older than the
        // CUDA version this crate is built for); report that as an unusable device.
        std::panic::catch_unwind(AssertUnwindSafe(|| Self::open_present(ordinal))).unwrap_or_else(
            |_| {
                Err(Error::NoCudaDevice(
                    "the NVIDIA driver lacks entry points this crate needs (a driver for CUDA 13 \
                     or newer is required)"
                        .to_string(),
                ))
            },
        )
    }

    fn open_present(ordinal: usize) -> Result<CudaDevice> {
        let count = CudaContext::device_count()
            .map_err(|e| Error::NoCudaDevice(format!("{}", driver_error("cuInit", e))))?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(Error::NoCudaDevice(format!(
                "CUDA device {ordinal} does not exist: the driver reports {count} device(s)"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda("cuDevicePrimaryCtxRetain"))?;
        // SAFETY: this crate orders every use and free of its buffers across streams itself
        // (see the module docs), so cudarc's per-buffer events are not needed. `ctx` is this
        // device's own handle: slices of other handles are not affected.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        Self::with_stream(ctx, stream)
    }

    /// A device on the context and stream of a cudarc stream: the stream becomes the device's
    /// default stream; the abort protocol's state and the cancel stream are created as usual.
    pub(crate) fn from_cudarc(stream: Arc<CudaStream>) -> Result<CudaDevice> {
        let ctx = Arc::clone(stream.context());
        Self::with_stream(ctx, stream)
    }

    fn with_stream(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<CudaDevice> {
        let device_name = ctx.name().map_err(cuda("cuDeviceGetName"))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(cuda("cuDeviceGetAttribute"))?;
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(cuda("cuDeviceGetAttribute"))?;
        // The cancel stream has the greatest priority. Measured on an H200 (driver 580): with a
        // stream of default priority, a write issued there while a kernel spun on another stream
        // often took effect only when that kernel ended; with the greatest priority it lands in
        // about 0.2 ms. (`cuStreamWriteValue32` on either waited for the kernel.)
        let (least, greatest) = cudarc::driver::result::stream::get_priority_range()
            .map_err(cuda("cuCtxGetStreamPriorityRange"))?;
        let cancel_stream = ctx
            .new_stream_with_priority(greatest)
            .map_err(cuda("cuStreamCreateWithPriority"))?;
        let watcher_priority = watcher_priority(least, greatest);
        let default_stream = Arc::new(StreamState::new(
            stream,
            Arc::clone(&cancel_stream),
            watcher_priority,
        )?);
        Ok(CudaDevice {
            ordinal: ctx.ordinal(),
            ctx,
            device_name,
            compute_capability,
            sm_count: u32::try_from(sm_count).unwrap_or(0),
            kernels: Mutex::new(HashMap::new()),
            default_stream,
            cancel_stream,
            watcher_priority,
        })
    }

    /// E.g. `NVIDIA H200 (sm_90, CUDA device 0)`.
    pub(crate) fn name(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!(
            "{} (sm_{major}{minor}, CUDA device {})",
            self.device_name, self.ordinal
        )
    }

    /// Number of streaming multiprocessors.
    pub(crate) fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The default stream.
    pub(crate) fn default_stream(&self) -> &Arc<StreamState> {
        &self.default_stream
    }

    /// A new non-blocking stream of this device's context, with its own abort-protocol state.
    pub(crate) fn new_stream(&self) -> Result<Arc<StreamState>> {
        let stream = self.ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        Ok(Arc::new(StreamState::new(
            stream,
            Arc::clone(&self.cancel_stream),
            self.watcher_priority,
        )?))
    }

    /// Waits until all work issued to the device's context so far, on every stream, has
    /// finished (`cuCtxSynchronize`).
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize().map_err(cuda("cuCtxSynchronize"))
    }

    /// Whether `slice` lives in this device's CUDA context.
    fn same_context<T>(&self, slice: &CudaSlice<T>) -> bool {
        slice.context().cu_ctx() == self.ctx.cu_ctx()
    }

    /// Allocates `bytes` bytes of zeroed device memory, ordered on the default stream.
    pub(crate) fn alloc_zeroed(&self, bytes: usize) -> Result<DeviceMem> {
        let mem = self.alloc(bytes)?;
        if bytes > 0 {
            // SAFETY: `mem.ptr` is a live allocation of `bytes` bytes of this context, freed
            // only by `mem`'s drop, in stream order on the same stream after this write. The
            // stream is valid and the context current (bound by `alloc`).
            unsafe { sys::cuMemsetD8Async(mem.ptr, 0, bytes, mem.home.cu_stream()) }
                .result()
                .map_err(cuda("cuMemsetD8Async"))?;
        }
        Ok(mem)
    }

    /// Allocates device memory holding a copy of `data`, ordered on the default stream.
    pub(crate) fn upload<T: KernelScalar>(&self, data: &[T]) -> Result<DeviceMem> {
        let bytes = scalars_as_bytes(data);
        let mem = self.alloc(bytes.len())?;
        if !bytes.is_empty() {
            copy_htod(&mem, bytes)?;
        }
        Ok(mem)
    }

    /// Allocates `bytes` bytes on the default stream, contents unspecified (the callers write
    /// all of them before anything can read them), starting at a multiple of [`BUFFER_ALIGN`].
    /// Zero bytes allocate nothing.
    ///
    /// The driver's pools place allocations at 512-byte granularity, so a buffer allocated after
    /// a small one would start 512 bytes into a page. The size is rounded up to a multiple of
    /// `BUFFER_ALIGN`, which keeps the pool's next allocations aligned as well; when the driver
    /// still returns an unaligned address (memory allocated around this crate, through cudarc
    /// for instance), the allocation is made again `BUFFER_ALIGN` bytes larger and the buffer
    /// starts at its first aligned address.
    fn alloc(&self, bytes: usize) -> Result<DeviceMem> {
        let home = Arc::clone(&self.default_stream.stream);
        if bytes == 0 {
            return Ok(DeviceMem::new(0, 0, home, Owner::Nothing));
        }
        let too_large = || Error::Buffer(format!("cannot allocate {bytes} bytes: too large"));
        let rounded = bytes
            .checked_next_multiple_of(BUFFER_ALIGN)
            .ok_or_else(too_large)?;
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let async_free = self.ctx.has_async_alloc();
        let base = driver_alloc(rounded, &home, async_free)?;
        if base % BUFFER_ALIGN as u64 == 0 {
            // From here on, dropping the `DeviceMem` frees the allocation.
            return Ok(DeviceMem::new(
                base,
                bytes,
                home,
                Owner::Driver { async_free, base },
            ));
        }
        driver_free(base, &home, async_free);
        let padded = rounded.checked_add(BUFFER_ALIGN).ok_or_else(too_large)?;
        let base = driver_alloc(padded, &home, async_free)?;
        let ptr = base.next_multiple_of(BUFFER_ALIGN as u64);
        // From here on, dropping the `DeviceMem` frees the allocation. `ptr` is at most
        // `BUFFER_ALIGN - 256` bytes past `base` (the driver aligns to at least 256 bytes), so the
        // buffer's `bytes` bytes lie inside the `padded` ones.
        Ok(DeviceMem::new(
            ptr,
            bytes,
            home,
            Owner::Driver { async_free, base },
        ))
    }

    /// Overwrites `mem` with `data`, on `mem`'s home stream after every earlier use of it. The
    /// caller checked that the sizes match.
    pub(crate) fn write<T: KernelScalar>(&self, mem: &mut DeviceMem, data: &[T]) -> Result<()> {
        let bytes = scalars_as_bytes(data);
        if bytes.len() != mem.bytes {
            return Err(size_mismatch(mem.bytes, bytes.len()));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let home = Arc::clone(&mem.home);
        order_uses(&home, &[(&*mem, true)], || copy_htod(mem, bytes))
    }

    /// Copies `mem` into `out`, on `mem`'s home stream after every earlier write of it, and
    /// waits for the copy. The caller checked that the sizes match.
    pub(crate) fn read<T: KernelScalar>(&self, mem: &DeviceMem, out: &mut [T]) -> Result<()> {
        let len = std::mem::size_of_val(out);
        if mem.bytes != len {
            return Err(size_mismatch(mem.bytes, len));
        }
        if len == 0 {
            return Ok(());
        }
        let home = Arc::clone(&mem.home);
        if every_bit_pattern_valid(T::TYPE) {
            // SAFETY: `out` is a live, exclusively borrowed slice of `len` initialised bytes;
            // `T` is one of the sealed `KernelScalar` types for which every bit pattern is a valid
            // value, so whatever the copy writes leaves `out` valid.
            let out_bytes =
                unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) };
            order_uses(&home, &[(mem, false)], || copy_dtoh(mem, out_bytes))?;
        } else {
            // `bool`: the device may hold any byte; normalise to 0 or 1 before it becomes a bool.
            let mut tmp = vec![0u8; len];
            order_uses(&home, &[(mem, false)], || copy_dtoh(mem, &mut tmp))?;
            for b in &mut tmp {
                *b = u8::from(*b != 0);
            }
            if std::mem::size_of::<T>() != 1 {
                return Err(Error::Buffer(format!(
                    "cannot read {:?} elements back from the device",
                    T::TYPE
                )));
            }
            // SAFETY: `T` is `bool` (the only scalar type with invalid bit patterns, and its size
            // was just checked to be 1); every byte of `tmp` is 0 or 1, a valid `bool`; `tmp` and
            // `out` both hold `len` bytes and do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.as_mut_ptr().cast::<u8>(), len)
            };
        }
        Ok(())
    }

    /// Copies `src` into `dst` on `stream`, after every earlier use of `dst` and write of `src`,
    /// without waiting. The caller checked the sizes.
    pub(crate) fn copy(
        &self,
        stream: &StreamState,
        dst: &mut DeviceMem,
        src: &DeviceMem,
    ) -> Result<()> {
        if dst.bytes != src.bytes {
            return Err(size_mismatch(dst.bytes, src.bytes));
        }
        if dst.bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let (dst_ptr, src_ptr, bytes) = (dst.ptr, src.ptr, dst.bytes);
        order_uses(&stream.stream, &[(src, false), (&*dst, true)], || {
            // SAFETY: both are live allocations of this context of `bytes` bytes each, freed
            // only by their `DeviceMem`s, whose frees `order_uses` orders after this copy. The
            // stream is valid and the context current.
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst_ptr, src_ptr, bytes, stream.stream.cu_stream()) }
                .result()
                .map_err(cuda("cuMemcpyDtoDAsync"))
        })
    }

    /// Takes over a cudarc slice of this device's context. Its stream becomes the buffer's home
    /// stream (the slice is freed there, by cudarc, when the buffer is dropped), after the
    /// pending uses cudarc tracks for it.
    pub(crate) fn adopt<T: DeviceRepr + Send + Sync + 'static>(
        &self,
        mut slice: CudaSlice<T>,
    ) -> Result<DeviceMem> {
        if !self.same_context(&slice) {
            return Err(Error::Buffer(
                "from_cudarc: the slice belongs to another CUDA context than the device; \
                 allocate it on the device's context (see Device::cudarc_stream)"
                    .to_string(),
            ));
        }
        let home = Arc::clone(slice.stream());
        let bytes = slice.num_bytes();
        // With cudarc's event tracking on, this makes the home stream wait for the slice's
        // pending reads and writes on other streams, so that the buffer's first use (ordered
        // after the home stream) comes after them.
        let ptr = {
            let (ptr, _record) = slice.device_ptr_mut(&home);
            ptr
        };
        let owner = Owner::Cudarc(Some(Box::new(slice)));
        Ok(DeviceMem::new(ptr, bytes, home, owner))
    }

    /// Hands `mem`'s memory back as a cudarc slice of `len` `T`s, ordered on its home stream
    /// after every use of it (and recorded as a write of cudarc's event tracking there).
    pub(crate) fn release<T: DeviceRepr + Send + Sync + 'static>(
        &self,
        mut mem: DeviceMem,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        if len.checked_mul(std::mem::size_of::<T>()) != Some(mem.bytes) {
            return Err(size_mismatch(mem.bytes, len.saturating_mul(size_of::<T>())));
        }
        let home = Arc::clone(&mem.home);
        mem.order_home_after_other_streams()?;
        let mut slice = match std::mem::replace(&mut mem.owner, Owner::Nothing) {
            Owner::Cudarc(Some(slice)) => match slice.downcast::<CudaSlice<T>>() {
                Ok(slice) => *slice,
                Err(other) => {
                    mem.owner = Owner::Cudarc(Some(other));
                    return Err(Error::Buffer(
                        "into_cudarc: the buffer holds a slice of another element type".to_string(),
                    ));
                }
            },
            Owner::Cudarc(None) | Owner::Nothing => {
                home.null::<T>().map_err(cuda("cuMemAllocAsync"))?
            }
            Owner::Driver { async_free, base } if base != mem.ptr => {
                // The buffer starts past its allocation's base (see `alloc`), which cudarc
                // could not free: hand over a copy, and free the allocation after it.
                mem.owner = Owner::Driver { async_free, base };
                // SAFETY: the slice's contents are unspecified until the copy below, which is
                // ordered on `home` before anything cudarc or the caller can issue on it, and
                // writes all of its bytes.
                let mut slice = unsafe { home.alloc::<T>(len) }.map_err(cuda("cuMemAllocAsync"))?;
                let (dst, src, bytes) = {
                    let (dst, _record) = slice.device_ptr_mut(&home);
                    (dst, mem.ptr, mem.bytes)
                };
                // SAFETY: `dst` is the slice's allocation of `len * size_of::<T>()` = `bytes`
                // bytes and `src` `mem`'s, both of this context, which is current (bound by
                // `alloc`); `mem` is freed by its drop below, ordered on `home` after
                // this copy, and the slice by cudarc, also after it on `home`. The source's
                // bytes were written by this crate as `T`s, so the slice holds valid `T`s.
                unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, home.cu_stream()) }
                    .result()
                    .map_err(cuda("cuMemcpyDtoDAsync"))?;
                slice
            }
            Owner::Driver { async_free, base } => {
                // cudarc frees with `cuMemFreeAsync` when the context supports it, as
                // `DeviceMem` does; make sure both agree.
                if async_free != self.ctx.has_async_alloc() {
                    mem.owner = Owner::Driver { async_free, base };
                    return Err(Error::Buffer(
                        "into_cudarc: the buffer's memory cannot be handed to cudarc".to_string(),
                    ));
                }
                let ptr = mem.ptr;
                // cudarc creates the slice's events with `unwrap` when event tracking is on; a
                // panic there must not escape, and the memory stays ours then.
                let upgraded = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    // SAFETY: `ptr` is a live allocation of `len * size_of::<T>()` bytes of
                    // this context (checked above), allocated on `home`'s context with the
                    // same allocator cudarc frees with (checked above). Ownership passes to the
                    // slice: `mem.owner` is `Nothing` now, so `mem`'s drop does not free it.
                    // Its bytes were written by this crate as `T`s (a `KernelScalar`), so they
                    // are valid `T`s.
                    unsafe { home.upgrade_device_ptr::<T>(ptr, len) }
                }));
                match upgraded {
                    Ok(slice) => slice,
                    Err(_) => {
                        mem.owner = Owner::Driver { async_free, base };
                        return Err(Error::Cuda {
                            call: "cuEventCreate",
                            message: "cudarc could not create the slice's events".to_string(),
                        });
                    }
                }
            }
        };
        // Later cudarc uses on other streams wait for this point of the home stream.
        {
            let (_ptr, _record) = slice.device_ptr_mut(&home);
        }
        Ok(slice)
    }

    /// The kernel of `spec`, loaded into this device's context on first use.
    pub(crate) fn kernel(&self, spec: &'static KernelSpec) -> Result<Arc<LoadedKernel>> {
        let key = std::ptr::from_ref(spec) as usize;
        let mut cache = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kernel) = cache.get(&key) {
            return Ok(Arc::clone(kernel));
        }
        let kernel = Arc::new(self.load(spec)?);
        cache.insert(key, Arc::clone(&kernel));
        Ok(kernel)
    }

    fn load(&self, spec: &'static KernelSpec) -> Result<LoadedKernel> {
        let invalid = |reason: &str| Error::InvalidLaunch {
            kernel: spec.path,
            reason: reason.to_string(),
        };
        let ptx =
            CString::new(spec.ptx).map_err(|_| invalid("its PTX text contains a NUL byte"))?;
        let entry =
            CString::new(spec.entry).map_err(|_| invalid("its entry name contains a NUL byte"))?;
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;

        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [
            log.as_mut_ptr().cast::<c_void>(),
            std::ptr::without_provenance_mut(log.len()),
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `ptx` is a NUL-terminated PTX image that lives across the call; `module` is a
        // valid out-pointer; `options` and `values` both have 2 entries: the error log buffer
        // (`log`, alive and writable for its whole length across the call) and its size, which
        // the driver takes by value in the pointer slot. The context is current on this thread.
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                ptx.as_ptr().cast::<c_void>(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(err) = status.result() {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let log = String::from_utf8_lossy(&log[..end]);
            let Error::Cuda { call, message } = driver_error("cuModuleLoadDataEx", err) else {
                return Err(invalid("the driver rejected its PTX"));
            };
            return Err(Error::Cuda {
                call,
                message: format!(
                    "{message}; loading the PTX of kernel `{}`: {}{}",
                    spec.path,
                    log.trim(),
                    arch_specific_note(spec.ptx, self.compute_capability)
                ),
            });
        }
        // From here on, dropping `kernel` unloads the module.
        let mut kernel = LoadedKernel {
            ctx: Arc::clone(&self.ctx),
            module,
            function: std::ptr::null_mut(),
        };
        // SAFETY: `kernel.module` was just loaded in the current context; `entry` is
        // NUL-terminated and lives across the call; `kernel.function` is a valid out-pointer.
        unsafe { sys::cuModuleGetFunction(&mut kernel.function, kernel.module, entry.as_ptr()) }
            .result()
            .map_err(cuda("cuModuleGetFunction"))?;
        if spec.shared_bytes > 48 * 1024 {
            let bytes = i32::try_from(spec.shared_bytes)
                .map_err(|_| invalid("its dynamic shared memory size does not fit an i32"))?;
            // SAFETY: `kernel.function` is a valid function handle of a loaded module.
            unsafe {
                sys::cuFuncSetAttribute(
                    kernel.function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes,
                )
            }
            .result()
            .map_err(cuda("cuFuncSetAttribute"))?;
        }
        Ok(kernel)
    }

    /// Launches `kernel` on `stream` with `blocks` blocks of `threads` threads, after the earlier
    /// uses of its buffers `uses` (`(memory, written)`) on other streams, and records the launch
    /// as their latest use.
    ///
    /// `params` holds one 8-byte slot per PTX parameter, the value in its first bytes; the caller
    /// checked them against the kernel's spec, which the compiler emitted with its PTX. The
    /// buffers whose addresses are among them are the ones in `uses`; their frees wait for this
    /// launch (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        stream: &StreamState,
        kernel: &LoadedKernel,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
        params: &mut [u64],
        uses: &[(&DeviceMem, bool)],
    ) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // The parameters' addresses, on the stack for the usual kernels (no allocation per
        // launch), in a vector beyond that.
        let mut on_stack = [std::ptr::null_mut::<c_void>(); 32];
        let mut on_heap = Vec::new();
        let pointers: &mut [*mut c_void] = match on_stack.get_mut(..params.len()) {
            Some(slots) => slots,
            None => {
                on_heap.resize(params.len(), std::ptr::null_mut());
                &mut on_heap
            }
        };
        for (pointer, param) in pointers.iter_mut().zip(params.iter_mut()) {
            *pointer = (param as *mut u64).cast::<c_void>();
        }
        order_uses(&stream.stream, uses, || {
            // SAFETY: `kernel.function` belongs to a module of this context that stays loaded
            // while the device is alive (the device outlives its streams, which synchronize
            // before they go, and synchronizes its own before unloading). `pointers` has one
            // entry per PTX parameter, each pointing to an 8-byte, 8-aligned slot of `params`
            // that is at least as large as the parameter and alive across the call; the driver
            // copies the values before returning. Addresses among them are the device buffers of
            // `uses`, whose frees `order_uses` orders after this launch. `extra` is null. The
            // stream belongs to this context, which is current.
            unsafe {
                sys::cuLaunchKernel(
                    kernel.function,
                    blocks,
                    1,
                    1,
                    threads,
                    1,
                    1,
                    shared_bytes,
                    stream.stream.cu_stream(),
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(cuda("cuLaunchKernel"))
        })
    }

    /// Writes `launch_id` into the abort word of `stream` from the host, on the device's cancel
    /// stream, so that a kernel of that launch which is running now, or starts later, stops at
    /// its next poll of the word (the threads of a launch stop when the word holds their id).
    /// Nothing waits for the write. The write is GPU work, so the driver decides when it runs:
    /// measured on an H200 it landed about 0.2 ms after the call, except while other threads of
    /// the process were starting up (creating devices, loading modules), when it sometimes
    /// waited for the running kernel to end.
    pub(crate) fn request_abort(&self, stream: &StreamState, launch_id: u32) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: the address is that of the first 4 bytes of the device allocation
        // `stream.abort_word`, which stays allocated until `stream` is dropped, and that drop
        // synchronizes the cancel stream before freeing it; one `u32` is written. Kernels read the
        // word concurrently with volatile loads, which a 4-byte aligned store cannot tear. The
        // cancel stream belongs to this context, which is current.
        unsafe {
            sys::cuMemsetD32Async(
                stream.abort_word_address(),
                launch_id,
                1,
                self.cancel_stream.cu_stream(),
            )
        }
        .result()
        .map_err(cuda("cuMemsetD32Async"))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // Nothing may still run from the modules unloaded below (a `Launch` that was leaked
        // with `mem::forget` could otherwise leave one running). Every other stream of the
        // device was dropped before it (streams hold the device), and synchronized then; the
        // default stream's state synchronizes when it goes, but that may be after the modules,
        // so synchronize it here too. Errors cannot be reported here.
        let _ = self.default_stream.stream.synchronize();
        let _ = self.cancel_stream.synchronize();
    }
}

/// One stream of a device: the CUDA stream, the abort protocol's state of the launches on it, and
/// what observes their completion (see the module docs).
pub(crate) struct StreamState {
    stream: Arc<CudaStream>,
    /// The device's cancel stream, which writes `abort_word`.
    cancel_stream: Arc<CudaStream>,
    /// The abort word: the first `u32` of this device memory (`BUFFER_ALIGN` bytes), zero at
    /// creation.
    abort_word: CudaSlice<u32>,
    /// The failure records of the launches: slot `k % RECORD_SLOTS` is launch `k`'s.
    ring: RecordRing,
    /// The launch-id counter. Held while a launch is submitted, so that ids are submitted in
    /// order and a wrap of the counter can reset the protocol's memory with no launch of an older
    /// id still to come.
    counter: Mutex<LaunchCounter>,
    /// The current epoch and the ring as it was at its start; written only at a wrap.
    epochs: RwLock<Epochs>,
    /// `epoch << 32 | launch id` of the latest launch known to have finished without a driver
    /// error: every launch of the stream up to it has finished too (they run in order).
    finished: AtomicU64,
    /// Completion events whose launches are over, for reuse (at most [`EVENT_POOL_MAX`]).
    events: Mutex<Vec<LaunchEvent>>,
    /// The streams that run completion callbacks, created on first need (at most
    /// [`MAX_WATCHERS`]).
    watchers: Mutex<Vec<Watcher>>,
    /// The priority watcher streams are created with (see [`watcher_priority`]).
    watcher_priority: i32,
}

/// The launch-id counter of a stream.
struct LaunchCounter {
    /// The id of the last launch (0 before the first).
    last: u32,
    /// How often the counter wrapped.
    epoch: u32,
}

/// What the launches of the previous epoch need to read their records after a wrap.
struct Epochs {
    /// The current epoch (as [`LaunchCounter::epoch`]).
    current: u32,
    /// The ring as it was when the current epoch began (`None` in epoch 0).
    previous: Option<Box<[Record]>>,
}

/// A stream that runs completion callbacks for the launches of one [`StreamState`]: it waits for
/// a launch's event, then runs the callback, in the order they were enqueued.
struct Watcher {
    stream: Arc<CudaStream>,
    /// `(epoch, launch id)` of the latest launch a callback was enqueued for. A launch after it
    /// may be appended: its callback then runs right when it finishes, since the launches of one
    /// stream finish in order.
    frontier: (u32, u32),
}

/// The order of launches of a stream across epochs: `epoch << 32 | launch_id`.
fn finished_key(epoch: u32, launch_id: u32) -> u64 {
    (u64::from(epoch) << 32) | u64::from(launch_id)
}

/// Flags of the completion events: no timing (cheaper to record), and blocking synchronization,
/// so that a thread waiting in `cuEventSynchronize` sleeps instead of spinning.
const COMPLETION_EVENT_FLAGS: u32 = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    | sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;

/// Most completion events a stream keeps for reuse: enough for four rings' worth of launches in
/// flight; beyond it, events of finished launches are destroyed.
const EVENT_POOL_MAX: usize = 4 * RECORD_SLOTS as usize;

/// Most watcher streams of one stream. A launch polled for the first time while every watcher
/// already waits for a later launch is appended to the watcher with the earliest frontier: its
/// future is then woken when that later launch finishes, not earlier.
const MAX_WATCHERS: usize = 8;

impl StreamState {
    fn new(
        stream: Arc<CudaStream>,
        cancel_stream: Arc<CudaStream>,
        watcher_priority: i32,
    ) -> Result<StreamState> {
        // One word is used; allocating a whole `BUFFER_ALIGN` keeps the buffers that the pool
        // places after it aligned without padding (see `CudaDevice::alloc`).
        let abort_word = stream
            .alloc_zeros::<u32>(BUFFER_ALIGN / 4)
            .map_err(cuda("cuMemAllocAsync"))?;
        let ring = RecordRing::new(stream.context())?;
        // The abort word was allocated and zeroed on `stream`; wait for that, so that it is
        // ready for the cancel stream too.
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        Ok(StreamState {
            stream,
            cancel_stream,
            abort_word,
            ring,
            counter: Mutex::new(LaunchCounter { last: 0, epoch: 0 }),
            epochs: RwLock::new(Epochs {
                current: 0,
                previous: None,
            }),
            finished: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            watchers: Mutex::new(Vec::new()),
            watcher_priority,
        })
    }

    /// The cudarc stream.
    pub(crate) fn cudarc(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Whether `self` and `other` are the same CUDA stream.
    pub(crate) fn is(&self, other: &StreamState) -> bool {
        same_stream(&self.stream, &other.stream)
    }

    /// Waits until everything issued on the stream has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// The status of the stream without waiting: an error of earlier asynchronous work (a kernel
    /// fault) is reported under the name `call`; unfinished work is not an error.
    pub(crate) fn status(&self, call: &'static str) -> Result<()> {
        bind(self.stream.context())?;
        // SAFETY: the stream handle is valid while `self.stream` is alive, and its context is
        // current on this thread.
        let status = unsafe { sys::cuStreamQuery(self.stream.cu_stream()) };
        match status {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            other => Err(driver_error(call, DriverError(other))),
        }
    }

    /// Records an event with timing on the stream.
    pub(crate) fn record_event(&self) -> Result<CudaEvent> {
        self.stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda("cuEventRecord"))
    }

    /// Makes the stream's later work wait for `event` (`cuStreamWaitEvent`).
    pub(crate) fn wait_event(&self, event: &CudaEvent) -> Result<()> {
        self.stream.wait(event).map_err(cuda("cuStreamWaitEvent"))
    }

    /// Assigns the next launch id of the stream and calls `submit` with it, the addresses of the
    /// stream's abort word and of the id's failure-record slot, and the epoch, holding the
    /// stream's launch lock: the launch `submit` makes (with [`CudaDevice::launch`] and
    /// [`StreamState::record_completion`]) is ordered on the stream with the ids of its other
    /// launches. When the 32-bit counter wraps, this first waits for the stream to drain, keeps a
    /// copy of the ring for the launches of the ending epoch, and zeroes the abort word and the
    /// ring, so that no id from before the wrap is still in them (once every 2^32 − 1 launches).
    pub(crate) fn with_launch_id<R>(
        &self,
        submit: impl FnOnce(LaunchIds) -> Result<R>,
    ) -> Result<R> {
        let mut counter = self.counter.lock().unwrap_or_else(PoisonError::into_inner);
        let (launch_id, wrapped) = next_launch_id(counter.last);
        if wrapped {
            counter.epoch = self.start_new_epoch(counter.epoch)?;
        }
        counter.last = launch_id;
        submit(LaunchIds {
            abort_word: self.abort_word_address(),
            launch_id,
            record: self.ring.slot_address(launch_id),
            epoch: counter.epoch,
        })
    }

    /// Records a completion event at the current end of the stream: it completes when the work
    /// issued so far has finished, the last launch submitted included, which the mark names. The
    /// launch-id counter is held meanwhile, so that no launch is submitted between reading its id
    /// and recording the event. The stream does not wait for anything.
    pub(crate) fn mark_completion(&self) -> Result<CompletionMark> {
        bind(self.stream.context())?;
        let counter = self.counter.lock().unwrap_or_else(PoisonError::into_inner);
        let reused = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let event = match reused {
            Some(event) => event,
            None => LaunchEvent::new(self.stream.context())?,
        };
        event.record(&self.stream)?;
        Ok(CompletionMark {
            event,
            epoch: counter.epoch,
            launch_id: counter.last,
        })
    }

    /// Notes that launch `launch_id` of epoch `epoch` finished without a driver error (its
    /// completion event completed): so did every launch of the stream before it.
    pub(crate) fn mark_finished(&self, epoch: u32, launch_id: u32) {
        self.finished
            .fetch_max(finished_key(epoch, launch_id), Ordering::Release);
    }

    /// Whether launch `launch_id` of epoch `epoch` is known to have finished without a driver
    /// error, because it or a later launch of the stream was seen finished.
    pub(crate) fn finished_through(&self, epoch: u32, launch_id: u32) -> bool {
        finished_key(epoch, launch_id) <= self.finished.load(Ordering::Acquire)
    }

    /// Keeps the event of a completed completion mark for a later mark.
    pub(crate) fn recycle(&self, event: LaunchEvent) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if events.len() < EVENT_POOL_MAX {
            events.push(event);
        }
    }

    /// Arranges for [`crate::launch::complete`] to be called on `shared` from a driver thread
    /// once `event`, the event of a completion mark through launch `launch_id` of epoch `epoch`
    /// ([`CompletionMark`]), has completed
    /// (or the context has failed): on one of the stream's watcher streams, a
    /// `cuStreamWaitEvent` for the event followed by a `cuStreamAddCallback`. The launch's own
    /// stream waits for nothing.
    ///
    /// The watcher is the first whose latest callback is for an earlier launch, so that callbacks
    /// of launches polled in their submission order run as soon as each launch finishes; a launch
    /// polled after a later one of the same stream gets another watcher (up to
    /// [`MAX_WATCHERS`]).
    ///
    /// This uses `cuStreamAddCallback`, not `cuLaunchHostFunc`: after a kernel fault the driver
    /// (measured with driver 580 on an H200) never runs functions enqueued with
    /// `cuLaunchHostFunc`, which would leave the launch pending forever, while it does run stream
    /// callbacks, passing them the error.
    pub(crate) fn notify_on_completion(
        &self,
        event: &LaunchEvent,
        epoch: u32,
        launch_id: u32,
        shared: Arc<Shared>,
    ) -> Result<()> {
        bind(self.stream.context())?;
        let key = (epoch, launch_id);
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        let index = match watchers.iter().position(|w| w.frontier < key) {
            Some(index) => index,
            None if watchers.len() < MAX_WATCHERS => {
                let stream = self
                    .stream
                    .context()
                    .new_stream_with_priority(self.watcher_priority)
                    .map_err(cuda("cuStreamCreateWithPriority"))?;
                watchers.push(Watcher {
                    stream,
                    frontier: (0, 0),
                });
                watchers.len() - 1
            }
            None => watchers
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| w.frontier)
                .map_or(0, |(i, _)| i),
        };
        let Some(watcher) = watchers.get_mut(index) else {
            return Err(Error::Cuda {
                call: "cuStreamCreate",
                message: "no stream to watch the launch's completion on".to_string(),
            });
        };
        // SAFETY: both handles are valid: the watcher stream is owned by `watchers`, the event by
        // `event`, and both belong to this stream's context, which is current. The wait captures
        // the event's latest record now; later records of the event do not affect it.
        unsafe { sys::cuStreamWaitEvent(watcher.stream.cu_stream(), event.event, 0) }
            .result()
            .map_err(cuda("cuStreamWaitEvent"))?;
        let raw = Box::into_raw(Box::new(Completion { shared })).cast::<c_void>();
        // SAFETY: `stream_callback` is an `extern "C"` fn of the expected signature that never
        // unwinds and calls no CUDA function. `raw` owns a `Box<Completion>` handed over to the
        // callback, which the driver calls exactly once; the box owns everything the callback
        // touches. Flags must be 0. The stream is valid and its context is current.
        let status = unsafe {
            sys::cuStreamAddCallback(watcher.stream.cu_stream(), Some(stream_callback), raw, 0)
        };
        if let Err(err) = status.result() {
            // SAFETY: the driver did not accept the callback, so it will never run; the box
            // `raw` owns is reclaimed here, exactly once.
            drop(unsafe { Box::from_raw(raw.cast::<Completion>()) });
            return Err(driver_error("cuStreamAddCallback", err));
        }
        watcher.frontier = watcher.frontier.max(key);
        Ok(())
    }

    /// A copy of the failure-record slot of launch `launch_id` of epoch `epoch`, read now; the
    /// caller knows the launch has finished. `None` when the launch is more than one epoch old
    /// (2^32 launches of the stream ago), whose slot is gone.
    pub(crate) fn failure_record(&self, launch_id: u32, epoch: u32) -> Option<Record> {
        let slot = record_slot(launch_id);
        let epochs = self.epochs.read().unwrap_or_else(PoisonError::into_inner);
        if epoch == epochs.current {
            Some(self.ring.read(slot))
        } else if epoch == epochs.current.wrapping_sub(1) {
            epochs
                .previous
                .as_ref()
                .and_then(|ring| ring.get(slot).copied())
        } else {
            None
        }
    }

    /// The device address of the abort word.
    fn abort_word_address(&self) -> u64 {
        let (address, _no_tracking) = self.abort_word.device_ptr(&self.stream);
        address
    }

    /// Begins the epoch after `epoch` (returned) once the stream has drained: keeps a copy of the
    /// ring for the launches of `epoch`, and zeroes the ring and the abort word. The caller holds
    /// the launch lock, so no launch is submitted meanwhile.
    fn start_new_epoch(&self, epoch: u32) -> Result<u32> {
        self.synchronize()?;
        self.cancel_stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        let next = epoch.wrapping_add(1);
        {
            let mut epochs = self.epochs.write().unwrap_or_else(PoisonError::into_inner);
            epochs.previous = Some(self.ring.snapshot());
            self.ring.clear();
            epochs.current = next;
        }
        bind(self.stream.context())?;
        // SAFETY: the address is that of the first 4 bytes of the device allocation
        // `self.abort_word`, alive while `self` is; one `u32` is written. The stream is valid and
        // its context current. Ordered on the stream, the write completes before any later launch
        // starts.
        unsafe { sys::cuMemsetD32Async(self.abort_word_address(), 0, 1, self.stream.cu_stream()) }
            .result()
            .map_err(cuda("cuMemsetD32Async"))?;
        Ok(next)
    }

    /// The abort word's value, read on the stream after the cancel stream's writes (for tests).
    #[cfg(test)]
    pub(crate) fn abort_word_value(&self) -> Result<u32> {
        self.cancel_stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        let mut value = [0u32];
        self.stream
            .memcpy_dtoh(&self.abort_word.slice(0..1), &mut value)
            .map_err(cuda("cuMemcpyDtoHAsync"))?;
        self.synchronize()?;
        Ok(value[0])
    }
}

impl Drop for StreamState {
    fn drop(&mut self) {
        // No kernel may still write the abort word or the ring, freed with the fields, and no
        // write of the cancel stream may still be on its way to the abort word. The watchers are
        // drained too, so that no callback is left behind on a destroyed stream. Errors cannot
        // be reported here; when a stream cannot be synchronized, the ring is leaked rather than
        // freed under a kernel that may still write it.
        let main = self.stream.synchronize();
        let cancel = self.cancel_stream.synchronize();
        if main.is_err() || cancel.is_err() {
            self.ring.leak = true;
        }
        let watchers = self
            .watchers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for watcher in watchers.iter() {
            let _ = watcher.stream.synchronize();
        }
    }
}

/// Copies `bytes` into `mem` on its home stream. The caller checked the sizes.
fn copy_htod(mem: &DeviceMem, bytes: &[u8]) -> Result<()> {
    mem.home
        .context()
        .bind_to_thread()
        .map_err(cuda("cuCtxSetCurrent"))?;
    // SAFETY: `mem.ptr` is a live allocation of `bytes.len()` bytes (the caller checked),
    // freed only in stream order after this copy. `bytes` is ordinary (pageable) host memory
    // borrowed across the call: for pageable memory the driver has copied it to its staging
    // memory before returning, so it may be released afterwards. (Memory that unsafe code
    // page-locked with `cuMemHostRegister` is that code's responsibility.) The stream is valid
    // and its context current.
    unsafe {
        sys::cuMemcpyHtoDAsync_v2(
            mem.ptr,
            bytes.as_ptr().cast::<c_void>(),
            bytes.len(),
            mem.home.cu_stream(),
        )
    }
    .result()
    .map_err(cuda("cuMemcpyHtoDAsync"))
}

/// Copies `mem` into `out` on its home stream and waits for the stream. The caller checked the
/// sizes.
fn copy_dtoh(mem: &DeviceMem, out: &mut [u8]) -> Result<()> {
    mem.home
        .context()
        .bind_to_thread()
        .map_err(cuda("cuCtxSetCurrent"))?;
    // SAFETY: `mem.ptr` is a live allocation of `out.len()` bytes (the caller checked), freed
    // only in stream order after this copy. `out` is exclusively borrowed host memory of that
    // size, alive until this function returns; the stream is synchronized below before it
    // returns, and for pageable memory the driver returns only once the copy is done anyway. The
    // stream is valid and its context current.
    unsafe {
        sys::cuMemcpyDtoHAsync_v2(
            out.as_mut_ptr().cast::<c_void>(),
            mem.ptr,
            out.len(),
            mem.home.cu_stream(),
        )
    }
    .result()
    .map_err(cuda("cuMemcpyDtoHAsync"))?;
    mem.home.synchronize().map_err(cuda("cuStreamSynchronize"))
}

/// Orders `submit`, which issues work on `stream` using the buffers `uses` (`(memory,
/// written)`), after their earlier conflicting uses on other streams, and records it as their
/// latest use: a read waits for the last write, a write for the last write and the reads since.
/// The event recorded for this use (only when some buffer's home stream is not `stream`, see the
/// module docs) is recorded right after `submit`. Nothing is recorded when `submit` fails.
pub(crate) fn order_uses(
    stream: &Arc<CudaStream>,
    uses: &[(&DeviceMem, bool)],
    submit: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let mut waited: Vec<Arc<CudaEvent>> = Vec::new();
    for &(mem, write) in uses {
        if mem.bytes == 0 {
            continue;
        }
        let mut uses = mem.lock();
        let Uses {
            write: last_write,
            reads,
        } = &mut *uses;
        let reads: &mut [Access] = if write { reads } else { &mut [] };
        for earlier in last_write.iter_mut().chain(reads.iter_mut()) {
            if same_stream(&earlier.stream, stream) {
                continue;
            }
            let event = earlier.event()?;
            if !waited.iter().any(|e| Arc::ptr_eq(e, &event)) {
                stream.wait(&event).map_err(cuda("cuStreamWaitEvent"))?;
                waited.push(event);
            }
        }
    }
    submit()?;
    let away_from_home = uses
        .iter()
        .any(|(mem, _)| mem.bytes > 0 && !same_stream(&mem.home, stream));
    // Without the event, a later need records one then (a later point of the stream).
    let event = if away_from_home {
        stream.record_event(None).ok().map(Arc::new)
    } else {
        None
    };
    for &(mem, write) in uses {
        if mem.bytes == 0 {
            continue;
        }
        let access = Access {
            stream: Arc::clone(stream),
            event: event.clone(),
        };
        let mut uses = mem.lock();
        if write {
            // This write waited for every earlier use on other streams, and those on its own
            // stream come before it: its completion implies theirs.
            uses.write = Some(access);
            uses.reads.clear();
        } else if let Some(read) = uses
            .reads
            .iter_mut()
            .find(|r| same_stream(&r.stream, stream))
        {
            *read = access;
        } else {
            uses.reads.push(access);
        }
    }
    Ok(())
}

/// The uses of a buffer that later uses and its free must come after: the last write, and the
/// reads since (at most one per stream, the latest).
#[derive(Default)]
struct Uses {
    write: Option<Access>,
    reads: Vec<Access>,
}

/// One use of a buffer: the stream it was issued on, and an event recorded after it there.
struct Access {
    stream: Arc<CudaStream>,
    /// `None` until someone needs it: then an event is recorded on `stream` at that time, which
    /// is after the use.
    event: Option<Arc<CudaEvent>>,
}

impl Access {
    /// The event after this use, recorded now if there is none yet.
    fn event(&mut self) -> Result<Arc<CudaEvent>> {
        if let Some(event) = &self.event {
            return Ok(Arc::clone(event));
        }
        let event = Arc::new(
            self.stream
                .record_event(None)
                .map_err(cuda("cuEventRecord"))?,
        );
        self.event = Some(Arc::clone(&event));
        Ok(event)
    }
}

/// Who frees a buffer's memory.
enum Owner {
    /// No memory (an empty buffer), or it was handed on.
    Nothing,
    /// Allocated by this crate, from `base` (the buffer's address, or up to [`BUFFER_ALIGN`]
    /// bytes before it): `cuMemFreeAsync` on the home stream, or, without stream-ordered
    /// allocation, `cuMemFree` after synchronizing it.
    Driver { async_free: bool, base: u64 },
    /// A cudarc slice (`CudaSlice<T>`), freed by its drop on its own stream, the home stream.
    Cudarc(Option<Box<dyn Any + Send + Sync>>),
}

/// Device memory of a buffer: its address and size, its home stream, and its uses (see the
/// module docs).
pub(crate) struct DeviceMem {
    /// 0 for an empty buffer.
    ptr: u64,
    bytes: usize,
    home: Arc<CudaStream>,
    owner: Owner,
    uses: Mutex<Uses>,
}

impl DeviceMem {
    fn new(ptr: u64, bytes: usize, home: Arc<CudaStream>, owner: Owner) -> DeviceMem {
        // The allocation (and whatever wrote it first) is a write on the home stream.
        let write = (bytes > 0).then(|| Access {
            stream: Arc::clone(&home),
            event: None,
        });
        DeviceMem {
            ptr,
            bytes,
            home,
            owner,
            uses: Mutex::new(Uses {
                write,
                reads: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Uses> {
        self.uses.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The raw device address (`CUdeviceptr`); 0 for an empty buffer, a multiple of
    /// [`BUFFER_ALIGN`] for the memory this crate allocated (at least 256 for adopted slices).
    pub(crate) fn address(&self) -> u64 {
        self.ptr
    }

    /// How many uses on streams other than the home stream the memory still remembers (tests).
    #[cfg(test)]
    pub(crate) fn uses_away_from_home(&self) -> usize {
        let uses = self.lock();
        uses.write
            .iter()
            .chain(&uses.reads)
            .filter(|a| !same_stream(&a.stream, &self.home))
            .count()
    }

    /// Makes the home stream wait for every remembered use on other streams, so that whatever
    /// is issued on it from now on (a host copy, the free) comes after them.
    fn order_home_after_other_streams(&mut self) -> Result<()> {
        let home = Arc::clone(&self.home);
        let uses = self.uses.get_mut().unwrap_or_else(PoisonError::into_inner);
        let mut waited: Vec<Arc<CudaEvent>> = Vec::new();
        for earlier in uses.write.iter_mut().chain(uses.reads.iter_mut()) {
            if same_stream(&earlier.stream, &home) {
                continue;
            }
            let event = earlier.event()?;
            if !waited.iter().any(|e| Arc::ptr_eq(e, &event)) {
                home.wait(&event).map_err(cuda("cuStreamWaitEvent"))?;
                waited.push(event);
            }
        }
        // Everything remembered is now before the home stream's current point.
        uses.write = (self.bytes > 0).then(|| Access {
            stream: Arc::clone(&home),
            event: None,
        });
        uses.reads.clear();
        Ok(())
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        if matches!(self.owner, Owner::Nothing) {
            return;
        }
        // The free goes on the home stream after every use on other streams. When that order
        // cannot be established, the memory is leaked rather than freed under a kernel.
        if self.order_home_after_other_streams().is_err() {
            if let Owner::Cudarc(slice) = &mut self.owner {
                std::mem::forget(slice.take());
            }
            return;
        }
        match &mut self.owner {
            Owner::Nothing => {}
            // cudarc frees it on its stream, the home stream, in stream order.
            Owner::Cudarc(slice) => drop(slice.take()),
            Owner::Driver { async_free, base } => driver_free(*base, &self.home, *async_free),
        }
    }
}

/// What a completion callback owns: the launch's shared state.
struct Completion {
    shared: Arc<Shared>,
}

/// The driver's completion callback of a launch, on a watcher stream; see
/// [`StreamState::notify_on_completion`].
unsafe extern "C" fn stream_callback(
    _stream: sys::CUstream,
    status: sys::CUresult,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the pointer `notify_on_completion` produced with `Box::into_raw`
    // from a `Box<Completion>`, and the driver calls this callback exactly once, so the box is
    // reclaimed exactly once.
    let completion = unsafe { Box::from_raw(user_data.cast::<Completion>()) };
    let succeeded = status == sys::CUresult::CUDA_SUCCESS;
    // A panic must not unwind into the driver (a waker could panic); there is no one to tell.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        crate::launch::complete(&completion.shared, succeeded, None)
    }));
}

/// Makes `ctx` current on this thread. cudarc keeps the error of a failed call made in a `Drop`
/// in the context and returns it, once, from the next `bind_to_thread`; a second try gets past
/// such a stale error (a real one is returned again).
fn bind(ctx: &CudaContext) -> Result<()> {
    ctx.bind_to_thread()
        .or_else(|_| ctx.bind_to_thread())
        .map_err(cuda("cuCtxSetCurrent"))
}

/// Whether a launch's completion event has completed; see [`LaunchEvent::query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventState {
    /// The work before the event has not finished yet.
    Pending,
    /// It has finished.
    Complete,
    /// The driver reported an error instead (a fault of the context).
    Failed,
}

/// A completion event recorded at some point of a stream ([`StreamState::mark_completion`]), and
/// the last launch submitted on the stream before that point: when the event completes, that
/// launch and every launch of the stream before it have finished.
pub(crate) struct CompletionMark {
    pub(crate) event: LaunchEvent,
    /// The epoch of the stream's launch-id counter that `launch_id` belongs to.
    pub(crate) epoch: u32,
    /// The id of the last launch submitted before the event (0 before the first).
    pub(crate) launch_id: u32,
}

/// The event of a [`CompletionMark`] (`CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC`), reused
/// across the marks of the stream.
pub(crate) struct LaunchEvent {
    ctx: Arc<CudaContext>,
    event: sys::CUevent,
}

// SAFETY: an event handle is a plain driver handle; the driver API is thread-safe, and the event
// stays valid on every thread until `LaunchEvent` destroys it, once, on drop.
unsafe impl Send for LaunchEvent {}
// SAFETY: as for `Send`; `&LaunchEvent` only queries and synchronizes the event, both
// thread-safe driver calls.
unsafe impl Sync for LaunchEvent {}

impl LaunchEvent {
    fn new(ctx: &Arc<CudaContext>) -> Result<LaunchEvent> {
        bind(ctx)?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        // SAFETY: `event` is a valid out-pointer; the flags are valid event flags. The context
        // is current on this thread.
        unsafe { sys::cuEventCreate(&mut event, COMPLETION_EVENT_FLAGS) }
            .result()
            .map_err(cuda("cuEventCreate"))?;
        Ok(LaunchEvent {
            ctx: Arc::clone(ctx),
            event,
        })
    }

    /// Records the event at the current end of `stream`, a stream of the event's context.
    fn record(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: the event is valid while `self` is; the stream is valid while the caller's
        // reference is, and belongs to the event's context, which the caller made current
        // (`mark_completion` binds it first).
        unsafe { sys::cuEventRecord(self.event, stream.cu_stream()) }
            .result()
            .map_err(cuda("cuEventRecord"))
    }

    /// Whether the work before the event has finished, without waiting (`cuEventQuery`). When
    /// the context cannot be made current, the event counts as pending.
    pub(crate) fn query(&self) -> EventState {
        if bind(&self.ctx).is_err() {
            return EventState::Pending;
        }
        // SAFETY: the event is valid while `self` is; its context is current.
        match unsafe { sys::cuEventQuery(self.event) } {
            sys::CUresult::CUDA_SUCCESS => EventState::Complete,
            sys::CUresult::CUDA_ERROR_NOT_READY => EventState::Pending,
            _ => EventState::Failed,
        }
    }

    /// Blocks the thread until the work before the event has finished (`cuEventSynchronize`;
    /// the thread sleeps, as the event was created with `CU_EVENT_BLOCKING_SYNC`). An error
    /// means the driver reported a failure instead, or the context could not be made current.
    pub(crate) fn synchronize(&self) -> Result<()> {
        bind(&self.ctx)?;
        // SAFETY: the event is valid while `self` is; its context is current.
        unsafe { sys::cuEventSynchronize(self.event) }
            .result()
            .map_err(cuda("cuEventSynchronize"))
    }
}

impl Drop for LaunchEvent {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: the event was created by `LaunchEvent::new` in this context and is
            // destroyed only here, once. Destroying an event that is still recorded on a stream,
            // or waited for by one, is allowed: the driver releases it once that work is done.
            let _ = unsafe { sys::cuEventDestroy_v2(self.event) };
        }
    }
}

/// Reads one failure record with volatile loads: word 0 (the launch id) first, then the rest,
/// which the GPU wrote before word 0 with a `fence.sc.sys` in between.
///
/// # Safety
///
/// `host` must point to `RECORD_WORDS` 4-aligned `u32`s of live memory.
unsafe fn read_record(host: NonNull<u32>) -> Record {
    let mut record = [0u32; RECORD_WORDS];
    for (i, word) in record.iter_mut().enumerate() {
        // SAFETY: the caller guarantees `host` points to the record's `RECORD_WORDS` `u32`s,
        // 4-aligned, so `host + i` is in bounds. Volatile, because the GPU writes this memory
        // behind the compiler's back.
        *word = unsafe { host.as_ptr().add(i).read_volatile() };
        if i == 0 {
            // The rest of the record was written before word 0; read it after.
            fence(Ordering::Acquire);
        }
    }
    record
}

/// Words of a stream's record ring.
const RING_WORDS: usize = RECORD_SLOTS as usize * RECORD_WORDS;

/// The record ring of a stream: [`RECORD_SLOTS`] failure records of `RECORD_WORDS` `u32`s each
/// (128 KiB), page-locked host memory mapped into the device's address space (`cuMemHostAlloc`
/// with `CU_MEMHOSTALLOC_DEVICEMAP`), zeroed at creation. Kernels write a slot through its device
/// address; the host reads it through `host`.
struct RecordRing {
    ctx: Arc<CudaContext>,
    host: NonNull<u32>,
    device: u64,
    /// Set when it must not be freed: a kernel may still write it.
    leak: bool,
}

// SAFETY: the ring is plain memory the driver allocated for the context, usable from every
// thread; the host only touches it with volatile loads and stores of whole `u32`s (reads of
// slots of finished launches, writes while no launch can run), and frees it once, on drop.
unsafe impl Send for RecordRing {}
// SAFETY: as for `Send`; `&RecordRing` only reads slots and hands out addresses.
unsafe impl Sync for RecordRing {}

impl RecordRing {
    fn new(ctx: &Arc<CudaContext>) -> Result<RecordRing> {
        const BYTES: usize = RING_WORDS * std::mem::size_of::<u32>();
        bind(ctx)?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: `host` is a valid out-pointer; the size is non-zero; DEVICEMAP is a valid flag.
        // The context is current on this thread.
        unsafe { sys::cuMemHostAlloc(&mut host, BYTES, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .result()
            .map_err(cuda("cuMemHostAlloc"))?;
        let host = NonNull::new(host.cast::<u32>()).ok_or_else(|| Error::Cuda {
            call: "cuMemHostAlloc",
            message: "the driver returned a null pointer".to_string(),
        })?;
        // From here on, dropping `ring` frees the memory.
        let mut ring = RecordRing {
            ctx: Arc::clone(ctx),
            host,
            device: 0,
            leak: false,
        };
        ring.clear();
        // SAFETY: `ring.host` was just allocated with DEVICEMAP in the current context;
        // `ring.device` is a valid out-pointer; flags must be 0.
        unsafe {
            sys::cuMemHostGetDevicePointer_v2(
                &mut ring.device,
                ring.host.as_ptr().cast::<c_void>(),
                0,
            )
        }
        .result()
        .map_err(cuda("cuMemHostGetDevicePointer"))?;
        Ok(ring)
    }

    /// The device address of the slot of launch `launch_id`.
    fn slot_address(&self, launch_id: u32) -> u64 {
        const SLOT_BYTES: u64 = (RECORD_WORDS * std::mem::size_of::<u32>()) as u64;
        self.device + record_slot(launch_id) as u64 * SLOT_BYTES
    }

    /// A copy of slot `slot` (taken modulo [`RECORD_SLOTS`]).
    fn read(&self, slot: usize) -> Record {
        let slot = slot % RECORD_SLOTS as usize;
        // SAFETY: `host` points to `RING_WORDS` 4-aligned `u32`s (page-locked allocations are
        // page-aligned), live while `self` is; slot `slot < RECORD_SLOTS` starts at word
        // `slot * RECORD_WORDS`, so its `RECORD_WORDS` words are in bounds.
        unsafe { read_record(self.host.add(slot * RECORD_WORDS)) }
    }

    /// A copy of every slot. Only while no kernel can write the ring.
    fn snapshot(&self) -> Box<[Record]> {
        (0..RECORD_SLOTS as usize)
            .map(|slot| self.read(slot))
            .collect()
    }

    /// Zeroes every slot. Only while no kernel can write the ring.
    fn clear(&self) {
        for i in 0..RING_WORDS {
            // SAFETY: `host` points to `RING_WORDS` 4-aligned `u32`s, live while `self` is.
            unsafe { self.host.as_ptr().add(i).write_volatile(0) };
        }
    }
}

impl Drop for RecordRing {
    fn drop(&mut self) {
        if self.leak || bind(&self.ctx).is_err() {
            return;
        }
        // SAFETY: `host` was allocated by `cuMemHostAlloc` in this context and is freed only
        // here, once. The stream that owned it synchronized first (or set `leak`), so no kernel
        // writes it any more, and the host reads it only through `&self`.
        let _ = unsafe { sys::cuMemFreeHost(self.host.as_ptr().cast::<c_void>()) };
    }
}

/// A loaded module and the kernel function of one [`KernelSpec`].
pub(crate) struct LoadedKernel {
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
    function: sys::CUfunction,
}

// SAFETY: module and function handles are plain driver handles; the driver API is thread-safe and
// they stay valid on every thread while the module is loaded, which `LoadedKernel` owns (it holds
// the context, and unloads the module only on drop).
unsafe impl Send for LoadedKernel {}
// SAFETY: as for `Send`; `&LoadedKernel` only hands the function handle to `cuLaunchKernel`.
unsafe impl Sync for LoadedKernel {}

impl Drop for LoadedKernel {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `module` was loaded by `CudaDevice::load` in this context and is unloaded
            // only here, once. Kernels are dropped with their device, after its stream was
            // synchronized, so none of its functions is running. Errors cannot be reported here.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

fn size_mismatch(device_bytes: usize, host_bytes: usize) -> Error {
    Error::Buffer(format!(
        "size mismatch: the device buffer holds {device_bytes} bytes, the other side \
         {host_bytes} bytes"
    ))
}

/// Why PTX for `sm_90a` (kernels with register budgets: `setmaxnreg`) may not load on a device
/// of compute capability `cc`: architecture-specific PTX runs on compute capability 9.0 only,
/// where plain `sm_90` PTX is also compiled for later devices.
fn arch_specific_note(ptx: &str, cc: (i32, i32)) -> String {
    let specific = ptx.lines().any(|l| l.trim() == ".target sm_90a");
    if !specific || cc == (9, 0) {
        return String::new();
    }
    format!(
        " (the kernel targets sm_90a for its register budgets, which only devices of compute capability 9.0 run, and this one is {}.{}: `#[kernel(.., registers(off))]` makes it plain sm_90)",
        cc.0, cc.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_90a_ptx_on_another_device_says_why_it_may_not_load() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
        assert_eq!(arch_specific_note(ptx, (9, 0)), "");
        assert_eq!(arch_specific_note(".target sm_90\n", (10, 0)), "");
        assert!(arch_specific_note(ptx, (10, 0)).contains(
            "only devices of compute capability 9.0 run, and this one is 10.0: `#[kernel(.., registers(off))]`"
        ));
    }

    #[test]
    fn watchers_sit_between_the_default_and_the_greatest_priority() {
        // The H200's range: 0 (least, the default) to -5 (greatest).
        assert_eq!(watcher_priority(0, -5), -1);
        assert_eq!(watcher_priority(0, -2), -1);
        // No level between the two: the default.
        assert_eq!(watcher_priority(0, -1), 0);
        assert_eq!(watcher_priority(0, 0), 0);
    }

    #[test]
    fn finished_keys_order_epochs_before_ids() {
        assert!(finished_key(0, u32::MAX) < finished_key(1, 1));
        assert!(finished_key(0, 1) < finished_key(0, 2));
        assert_eq!(finished_key(0, 0), 0);
    }
}
