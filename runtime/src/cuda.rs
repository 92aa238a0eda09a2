//! The CUDA backend, and the one `unsafe` layer of this crate.
//!
//! Every `unsafe` block of `gpu-async` lives in this file; the rest of the crate (devices, buffers,
//! launches, the simulator) is safe code that reaches the driver only through the functions here.
//! Each block says, in a `// SAFETY:` comment, why it is sound. The driver is reached through
//! `cudarc`: its safe wrappers for contexts, streams, memory and events, and its raw `sys`
//! bindings for the few calls it does not wrap the way this crate needs them (module loading with
//! the JIT error log, `cuLaunchKernel` with our own parameter array, `cuStreamAddCallback`,
//! `cuStreamQuery`, the mapped host memory of the failure record, `cuMemsetD32Async`).
//!
//! `cudarc` loads `libcuda` lazily and panics when it is missing, so [`CudaDevice::open`] checks
//! for the library before it calls anything else, and turns any panic of the driver loader into
//! [`Error::NoCudaDevice`].
//!
//! Ordering: a device owns one non-default stream and every operation (allocation, copies,
//! launches, frees, timing events) is issued on it, so the stream orders them all. cudarc's
//! per-buffer event tracking is therefore switched off for the device's context handle. (A second
//! stream exists only to write the abort word while a kernel runs, see
//! [`CudaDevice::request_abort`]; it touches nothing else.)
//!
//! The abort protocol (see [`crate::abort`]): each device owns its abort word (4 bytes of device
//! memory), its failure record (32 bytes of page-locked host memory mapped into the device's
//! address space) and its launch-id counter. Both memories live as long as the device and are
//! freed only after its streams were synchronized.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DriverError};

use crate::abort::{next_launch_id, Record, RECORD_WORDS};
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
    // SAFETY: `KernelScalar` is sealed to `bool`, `u32`, `i32`, `f32` and `usize`: plain values
    // with no padding, so every byte of `data` is initialised. `u8` has alignment 1 and the length
    // is exactly the byte size of `data`; the view borrows `data`, so it cannot outlive it.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Whether every bit pattern of the scalar's size is a valid value of it.
fn every_bit_pattern_valid(ty: ScalarType) -> bool {
    match ty {
        ScalarType::Bool => false,
        ScalarType::U32 | ScalarType::I32 | ScalarType::F32 | ScalarType::Usize => true,
    }
}

/// One CUDA device as this crate uses it: a context, one stream, the kernels loaded so far, and
/// the abort protocol's state.
pub(crate) struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    device_name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    kernels: Mutex<HashMap<(usize, &'static str), Arc<LoadedKernel>>>,
    /// The abort word: one `u32` of device memory, zero at creation.
    abort_word: CudaSlice<u32>,
    /// The failure record.
    record: FailureRecord,
    /// The id of the last launch (0 before the first). Held while a launch is submitted, so
    /// that ids are submitted in order and a wrap of the counter can reset the protocol's memory
    /// with no launch of an older id still to come.
    last_launch_id: Mutex<u32>,
    /// A second non-blocking stream, for writing the abort word while a kernel runs.
    cancel_stream: Arc<CudaStream>,
}

/// What a launch passes to the abort protocol's hidden parameters, besides the watchdog bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchIds {
    /// The device address of the abort word.
    pub(crate) abort_word: u64,
    /// This launch's id, never 0.
    pub(crate) launch_id: u32,
    /// The device address of the failure record.
    pub(crate) record: u64,
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
        // SAFETY: every buffer of this device is allocated, used and freed on the one stream
        // created below, so the stream orders all uses and no cross-stream events are needed.
        // `ctx` is this device's own handle, so buffers of other handles are not affected.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        let device_name = ctx.name().map_err(cuda("cuDeviceGetName"))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(cuda("cuDeviceGetAttribute"))?;
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(cuda("cuDeviceGetAttribute"))?;
        let cancel_stream = ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        let abort_word = stream
            .alloc_zeros::<u32>(1)
            .map_err(cuda("cuMemAllocAsync"))?;
        let record = FailureRecord::new(&ctx)?;
        // The abort word was allocated and zeroed on `stream`; wait for that, so that it is
        // ready for `cancel_stream` too.
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        Ok(CudaDevice {
            ctx,
            stream,
            ordinal,
            device_name,
            compute_capability,
            sm_count: u32::try_from(sm_count).unwrap_or(0),
            kernels: Mutex::new(HashMap::new()),
            abort_word,
            record,
            last_launch_id: Mutex::new(0),
            cancel_stream,
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

    /// Waits until everything issued on the device's stream has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// The status of the stream without waiting: an error of earlier asynchronous work (a kernel
    /// fault) is reported under the name `call`; unfinished work is not an error.
    pub(crate) fn stream_status(&self, call: &'static str) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: the stream handle is valid while `self.stream` is alive, and its context is
        // current on this thread.
        let status = unsafe { sys::cuStreamQuery(self.stream.cu_stream()) };
        match status {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            other => Err(driver_error(call, DriverError(other))),
        }
    }

    /// Allocates `bytes` bytes of zeroed device memory, ordered on the stream.
    pub(crate) fn alloc_zeroed(&self, bytes: usize) -> Result<DeviceMem> {
        if bytes == 0 {
            return Ok(DeviceMem { slice: None });
        }
        let slice = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(cuda("cuMemAllocAsync"))?;
        Ok(DeviceMem { slice: Some(slice) })
    }

    /// Allocates device memory holding a copy of `data`.
    pub(crate) fn upload<T: KernelScalar>(&self, data: &[T]) -> Result<DeviceMem> {
        let bytes = scalars_as_bytes(data);
        if bytes.is_empty() {
            return Ok(DeviceMem { slice: None });
        }
        let slice = self
            .stream
            .clone_htod(bytes)
            .map_err(cuda("cuMemcpyHtoDAsync"))?;
        Ok(DeviceMem { slice: Some(slice) })
    }

    /// Overwrites `mem` with `data`. The caller checked that the sizes match.
    pub(crate) fn write<T: KernelScalar>(&self, mem: &mut DeviceMem, data: &[T]) -> Result<()> {
        let bytes = scalars_as_bytes(data);
        match &mut mem.slice {
            Some(slice) if slice.len() == bytes.len() => self
                .stream
                .memcpy_htod(bytes, slice)
                .map_err(cuda("cuMemcpyHtoDAsync")),
            None if bytes.is_empty() => Ok(()),
            _ => Err(size_mismatch(mem.bytes(), bytes.len())),
        }
    }

    /// Copies `mem` into `out` and waits for the copy. The caller checked that the sizes match.
    pub(crate) fn read<T: KernelScalar>(&self, mem: &DeviceMem, out: &mut [T]) -> Result<()> {
        let len = std::mem::size_of_val(out);
        let Some(slice) = &mem.slice else {
            return if len == 0 {
                Ok(())
            } else {
                Err(size_mismatch(0, len))
            };
        };
        if slice.len() != len {
            return Err(size_mismatch(slice.len(), len));
        }
        if every_bit_pattern_valid(T::TYPE) {
            // SAFETY: `out` is a live, exclusively borrowed slice of `len` initialised bytes;
            // `T` is one of the sealed `KernelScalar` types for which every bit pattern is a valid
            // value, so whatever the copy writes leaves `out` valid.
            let out_bytes =
                unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) };
            self.stream
                .memcpy_dtoh(slice, out_bytes)
                .map_err(cuda("cuMemcpyDtoHAsync"))?;
        } else {
            // `bool`: the device may hold any byte; normalise to 0 or 1 before it becomes a bool.
            let mut tmp = vec![0u8; len];
            self.stream
                .memcpy_dtoh(slice, &mut tmp)
                .map_err(cuda("cuMemcpyDtoHAsync"))?;
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
        self.synchronize()
    }

    /// Copies `src` into `dst` on the stream, without waiting. The caller checked the sizes.
    pub(crate) fn copy(&self, dst: &mut DeviceMem, src: &DeviceMem) -> Result<()> {
        match (&mut dst.slice, &src.slice) {
            (Some(d), Some(s)) if d.len() == s.len() => self
                .stream
                .memcpy_dtod(s, d)
                .map_err(cuda("cuMemcpyDtoDAsync")),
            (None, None) => Ok(()),
            _ => Err(size_mismatch(dst.bytes(), src.bytes())),
        }
    }

    /// The kernel of `spec`, loaded into this device's context on first use.
    pub(crate) fn kernel(&self, spec: &'static KernelSpec) -> Result<Arc<LoadedKernel>> {
        let key = (spec.ptx.as_ptr() as usize, spec.entry);
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
                    "{message}; loading the PTX of kernel `{}`: {}",
                    spec.path,
                    log.trim()
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

    /// Assigns the next launch id and calls `submit` with it and the addresses of the abort
    /// word and the failure record, holding the device's launch lock: the launch `submit` makes
    /// (with [`CudaDevice::launch`] and [`CudaDevice::notify_when_done`]) is ordered on the stream
    /// with the ids of other launches. When the 32-bit counter wraps, this first waits for the
    /// stream to drain and zeroes the abort word and the record, so that no id from before the
    /// wrap is still in them (once every 2^32 − 1 launches).
    pub(crate) fn with_launch_id<R>(
        &self,
        submit: impl FnOnce(LaunchIds) -> Result<R>,
    ) -> Result<R> {
        let mut last = self
            .last_launch_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (launch_id, wrapped) = next_launch_id(*last);
        if wrapped {
            self.reset_abort_state()?;
        }
        *last = launch_id;
        submit(LaunchIds {
            abort_word: self.abort_word_address(),
            launch_id,
            record: self.record.device,
        })
    }

    /// The device address of the abort word.
    fn abort_word_address(&self) -> u64 {
        let (address, _no_tracking) = self.abort_word.device_ptr(&self.stream);
        address
    }

    /// Zeroes the abort word and the failure record once the stream has drained. The caller
    /// holds the launch lock, so no launch is submitted meanwhile.
    fn reset_abort_state(&self) -> Result<()> {
        self.synchronize()?;
        self.cancel_stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        self.record.clear();
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: the address is that of the 4-byte device allocation `self.abort_word`, alive
        // while `self` is; one `u32` is written. The stream is valid and its context current.
        // Ordered on the stream, the write completes before any later launch starts.
        unsafe { sys::cuMemsetD32Async(self.abort_word_address(), 0, 1, self.stream.cu_stream()) }
            .result()
            .map_err(cuda("cuMemsetD32Async"))
    }

    /// Writes `launch_id` into the abort word from the host, on the device's second stream, so
    /// that a kernel of that launch which is running now stops at its next poll of the word (the
    /// threads of a launch stop when the word holds their id). Nothing waits for the write.
    ///
    /// For cancelling a running launch; no public API uses it yet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn request_abort(&self, launch_id: u32) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: the address is that of the 4-byte device allocation `self.abort_word`, which
        // stays allocated until `self` is dropped, and the drop synchronizes `cancel_stream`
        // before freeing it; one `u32` is written. Kernels read the word concurrently with
        // volatile loads, which a 4-byte aligned store cannot tear. The stream belongs to this
        // context, which is current.
        unsafe {
            sys::cuMemsetD32Async(
                self.abort_word_address(),
                launch_id,
                1,
                self.cancel_stream.cu_stream(),
            )
        }
        .result()
        .map_err(cuda("cuMemsetD32Async"))
    }

    /// The abort word's value, read on the device's stream (for tests).
    #[cfg(test)]
    pub(crate) fn abort_word_value(&self) -> Result<u32> {
        self.cancel_stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        let mut value = [0u32];
        self.stream
            .memcpy_dtoh(&self.abort_word, &mut value)
            .map_err(cuda("cuMemcpyDtoHAsync"))?;
        self.synchronize()?;
        Ok(value[0])
    }

    /// Launches `kernel` on the stream with `blocks` blocks of `threads` threads.
    ///
    /// `params` holds one 8-byte slot per PTX parameter, the value in its first bytes; the caller
    /// checked them against the kernel's spec, which the compiler emitted with its PTX, and keeps
    /// every buffer whose address is among them alive until the launch completes.
    pub(crate) fn launch(
        &self,
        kernel: &LoadedKernel,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
        params: &mut [u64],
    ) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let mut pointers: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| (p as *mut u64).cast::<c_void>())
            .collect();
        // SAFETY: `kernel.function` belongs to a module of this context that stays loaded while
        // the device is alive (the device synchronizes its stream before unloading). `pointers`
        // has one entry per PTX parameter, each pointing to an 8-byte, 8-aligned slot of `params`
        // that is at least as large as the parameter and alive across the call; the driver
        // copies the values before returning. Addresses among them are device buffers the caller
        // keeps alive until the kernel is done. `extra` is null. The context is current.
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
                self.stream.cu_stream(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(cuda("cuLaunchKernel"))
    }

    /// Enqueues on the stream a host callback that marks `shared` complete once everything
    /// issued before it (the launch) has finished, or has failed. With `read_record`, the
    /// callback also copies the failure record into `shared` when the stream reported no error:
    /// the driver runs it after the launch and before anything issued later on the stream, so
    /// no later launch can have overwritten the record yet.
    ///
    /// This uses `cuStreamAddCallback`, not `cuLaunchHostFunc`: after a kernel fault the driver
    /// (measured with driver 580 on an H200) never runs functions enqueued with
    /// `cuLaunchHostFunc`, which would leave the launch pending forever, while it does run stream
    /// callbacks, passing them the error.
    pub(crate) fn notify_when_done(&self, shared: Arc<Shared>, read_record: bool) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let completion = Box::new(Completion {
            shared,
            record: read_record.then_some(self.record.host),
        });
        let raw = Box::into_raw(completion).cast::<c_void>();
        // SAFETY: `stream_callback` is an `extern "C"` fn of the expected signature that never
        // unwinds and calls no CUDA function. `raw` owns a `Box<Completion>` handed over to the
        // callback, which the driver calls exactly once; the record pointer in it stays valid
        // until the callback has run (see `FailureRecord`). Flags must be 0. The stream is valid
        // and its context is current.
        let status = unsafe {
            sys::cuStreamAddCallback(self.stream.cu_stream(), Some(stream_callback), raw, 0)
        };
        if let Err(err) = status.result() {
            // SAFETY: the driver did not accept the callback, so it will never run; the box
            // `raw` owns is reclaimed here, exactly once.
            drop(unsafe { Box::from_raw(raw.cast::<Completion>()) });
            return Err(driver_error("cuStreamAddCallback", err));
        }
        Ok(())
    }

    /// Records a timing event on the stream.
    pub(crate) fn record_event(&self) -> Result<TimingEvent> {
        let event = self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda("cuEventCreate"))?;
        event.record(&self.stream).map_err(cuda("cuEventRecord"))?;
        Ok(TimingEvent(event))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // Nothing may still run from the modules unloaded below (a `Launch` that was leaked
        // with `mem::forget` could otherwise leave one running), and no kernel or completion
        // callback may still use the abort word or the failure record, freed with the fields.
        // Errors cannot be reported here; when a stream cannot be synchronized, the record is
        // leaked rather than freed under a callback that may still read it.
        let main = self.stream.synchronize();
        let cancel = self.cancel_stream.synchronize();
        if main.is_err() || cancel.is_err() {
            self.record.leak = true;
        }
    }
}

/// What a completion callback owns: the launch's shared state, and where to read the failure
/// record from, if the launch follows the abort protocol.
struct Completion {
    shared: Arc<Shared>,
    record: Option<NonNull<u32>>,
}

/// The driver's completion callback of a launch; see [`CudaDevice::notify_when_done`].
unsafe extern "C" fn stream_callback(
    _stream: sys::CUstream,
    status: sys::CUresult,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the pointer `notify_when_done` produced with `Box::into_raw` from a
    // `Box<Completion>`, and the driver calls this callback exactly once, so the box is reclaimed
    // exactly once.
    let completion = unsafe { Box::from_raw(user_data.cast::<Completion>()) };
    let succeeded = status == sys::CUresult::CUDA_SUCCESS;
    let record = match completion.record {
        // SAFETY: the pointer is the host address of the device's `FailureRecord`, which is
        // freed only after the device's stream was synchronized, and that waits for this
        // callback (a stream callback is work of the stream); see `CudaDevice`'s `Drop`. The
        // launch before this callback has finished, so the GPU no longer writes it.
        Some(host) if succeeded => Some(unsafe { read_record(host) }),
        _ => None,
    };
    // A panic must not unwind into the driver (a waker could panic); there is no one to tell.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        crate::launch::complete(&completion.shared, succeeded, record)
    }));
}

/// Reads the failure record with volatile loads: word 0 (the launch id) first, then the rest,
/// which the GPU wrote before word 0 with a `fence.sc.sys` in between.
///
/// # Safety
///
/// `host` must be the host address of a live [`FailureRecord`]'s memory.
unsafe fn read_record(host: NonNull<u32>) -> Record {
    let mut record = [0u32; RECORD_WORDS];
    for (i, word) in record.iter_mut().enumerate() {
        // SAFETY: the caller guarantees `host` points to the record's `RECORD_WORDS` `u32`s,
        // 4-aligned (page-locked allocations are page-aligned), so `host + i` is in bounds.
        // Volatile, because the GPU writes this memory behind the compiler's back.
        *word = unsafe { host.as_ptr().add(i).read_volatile() };
        if i == 0 {
            // The rest of the record was written before word 0; read it after.
            fence(Ordering::Acquire);
        }
    }
    record
}

/// The failure record of a device: `RECORD_WORDS` `u32`s of page-locked host memory, mapped
/// into the device's address space (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`), zeroed
/// at creation. Kernels write it through `device`; the host reads it through `host`.
struct FailureRecord {
    ctx: Arc<CudaContext>,
    host: NonNull<u32>,
    device: u64,
    /// Set when it must not be freed: a callback may still read it.
    leak: bool,
}

// SAFETY: the record is plain memory the driver allocated for the context, usable from every
// thread; the host only touches it with volatile loads and stores of whole `u32`s (reads in
// completion callbacks, writes while no launch can run), and frees it once, on drop.
unsafe impl Send for FailureRecord {}
// SAFETY: as for `Send`; `&FailureRecord` only hands out its addresses.
unsafe impl Sync for FailureRecord {}

impl FailureRecord {
    fn new(ctx: &Arc<CudaContext>) -> Result<FailureRecord> {
        const BYTES: usize = RECORD_WORDS * std::mem::size_of::<u32>();
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
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
        // From here on, dropping `record` frees the memory.
        let mut record = FailureRecord {
            ctx: Arc::clone(ctx),
            host,
            device: 0,
            leak: false,
        };
        record.clear();
        // SAFETY: `record.host` was just allocated with DEVICEMAP in the current context;
        // `record.device` is a valid out-pointer; flags must be 0.
        unsafe {
            sys::cuMemHostGetDevicePointer_v2(
                &mut record.device,
                record.host.as_ptr().cast::<c_void>(),
                0,
            )
        }
        .result()
        .map_err(cuda("cuMemHostGetDevicePointer"))?;
        Ok(record)
    }

    /// Zeroes the record. Only while no kernel can write it.
    fn clear(&self) {
        for i in 0..RECORD_WORDS {
            // SAFETY: `host` points to `RECORD_WORDS` 4-aligned `u32`s, live while `self` is.
            unsafe { self.host.as_ptr().add(i).write_volatile(0) };
        }
    }
}

impl Drop for FailureRecord {
    fn drop(&mut self) {
        if self.leak || self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: `host` was allocated by `cuMemHostAlloc` in this context and is freed only
        // here, once. The device that owned it synchronized its streams first (or set `leak`),
        // so no kernel writes it and no completion callback reads it any more.
        let _ = unsafe { sys::cuMemFreeHost(self.host.as_ptr().cast::<c_void>()) };
    }
}

/// A CUDA event recorded on a device's stream, with timing enabled.
pub(crate) struct TimingEvent(CudaEvent);

impl TimingEvent {
    /// Milliseconds between `self` and the later event `end`; waits for both.
    pub(crate) fn elapsed_ms(&self, end: &TimingEvent) -> Result<f64> {
        self.0
            .elapsed_ms(&end.0)
            .map(f64::from)
            .map_err(cuda("cuEventElapsedTime"))
    }
}

/// Device memory of a buffer; `None` for zero bytes (the driver rejects empty allocations).
pub(crate) struct DeviceMem {
    slice: Option<CudaSlice<u8>>,
}

impl DeviceMem {
    /// The size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.slice.as_ref().map_or(0, |s| s.len())
    }

    /// The raw device address (`CUdeviceptr`); 0 for an empty buffer. Allocations of the driver
    /// are aligned to at least 256 bytes.
    pub(crate) fn address(&self) -> u64 {
        self.slice.as_ref().map_or(0, |s| {
            let (ptr, _no_tracking) = s.device_ptr(s.stream());
            ptr
        })
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
