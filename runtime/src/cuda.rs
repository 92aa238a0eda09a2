//! The CUDA backend, and the one `unsafe` layer of this crate.
//!
//! Every `unsafe` block of `gpu-async` lives in this file; the rest of the crate (devices, buffers,
//! launches, the simulator) is safe code that reaches the driver only through the functions here.
//! Each block says, in a `// SAFETY:` comment, why it is sound. The driver is reached through
//! `cudarc`: its safe wrappers for contexts, streams, memory and events, and its raw `sys`
//! bindings for the few calls it does not wrap the way this crate needs them (module loading with
//! the JIT error log, `cuLaunchKernel` with our own parameter array, `cuStreamAddCallback`,
//! `cuStreamQuery`).
//!
//! `cudarc` loads `libcuda` lazily and panics when it is missing, so [`CudaDevice::open`] checks
//! for the library before it calls anything else, and turns any panic of the driver loader into
//! [`Error::NoCudaDevice`].
//!
//! Ordering: a device owns one non-default stream and every operation (allocation, copies,
//! launches, frees, timing events) is issued on it, so the stream orders them all. cudarc's
//! per-buffer event tracking is therefore switched off for the device's context handle.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DriverError};

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

/// One CUDA device as this crate uses it: a context, one stream, and the kernels loaded so far.
pub(crate) struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    device_name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    kernels: Mutex<HashMap<(usize, &'static str), Arc<LoadedKernel>>>,
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
        Ok(CudaDevice {
            ctx,
            stream,
            ordinal,
            device_name,
            compute_capability,
            sm_count: u32::try_from(sm_count).unwrap_or(0),
            kernels: Mutex::new(HashMap::new()),
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
    /// issued before it (the launch) has finished, or has failed.
    ///
    /// This uses `cuStreamAddCallback`, not `cuLaunchHostFunc`: after a kernel fault the driver
    /// (measured with driver 580 on an H200) never runs functions enqueued with
    /// `cuLaunchHostFunc`, which would leave the launch pending forever, while it does run stream
    /// callbacks, passing them the error.
    pub(crate) fn notify_when_done(&self, shared: Arc<Shared>) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let raw = Arc::into_raw(shared).cast_mut().cast::<c_void>();
        // SAFETY: `stream_callback` is an `extern "C"` fn of the expected signature that never
        // unwinds and calls no CUDA function. `raw` is a strong count of an `Arc<Shared>` handed
        // over to the callback, which the driver calls exactly once. Flags must be 0. The stream
        // is valid and its context is current.
        let status = unsafe {
            sys::cuStreamAddCallback(self.stream.cu_stream(), Some(stream_callback), raw, 0)
        };
        if let Err(err) = status.result() {
            // SAFETY: the driver did not accept the callback, so it will never run; the strong
            // count `raw` carries is reclaimed here, exactly once.
            drop(unsafe { Arc::from_raw(raw.cast_const().cast::<Shared>()) });
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
        // with `mem::forget` could otherwise leave one running). Errors cannot be reported here.
        let _ = self.stream.synchronize();
    }
}

/// The driver's completion callback of a launch; see [`CudaDevice::notify_when_done`].
unsafe extern "C" fn stream_callback(
    _stream: sys::CUstream,
    status: sys::CUresult,
    user_data: *mut c_void,
) {
    // SAFETY: `user_data` is the pointer `notify_when_done` produced with `Arc::into_raw` from an
    // `Arc<Shared>`, and the driver calls this callback exactly once, so the count is reclaimed
    // exactly once.
    let shared = unsafe { Arc::from_raw(user_data.cast_const().cast::<Shared>()) };
    let succeeded = status == sys::CUresult::CUDA_SUCCESS;
    // A panic must not unwind into the driver (a waker could panic); there is no one to tell.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        crate::launch::complete(&shared, succeeded)
    }));
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
