//! The CUDA backend, and the one `unsafe` layer of this crate.
//!
//! Every `unsafe` block of `gpu-async` lives in this module (the crate root denies `unsafe_code`
//! everywhere else); the rest of the crate (devices, streams, buffers, launches, the simulator) is
//! safe code that reaches the driver only through the functions here. Each block says, in a
//! `// SAFETY:` comment, why it is sound. The driver is reached through `cudarc`: its safe
//! wrappers for contexts, streams and events, and its raw `sys` bindings for what it does not wrap
//! the way this crate needs it (module loading with the JIT error log, `cuLaunchKernel` with our
//! own parameter array, the completion events and `cuStreamAddCallback`, `cuStreamQuery`, the
//! mapped host memory of the failure records, `cuMemsetD32Async`, `cuTensorMapEncodeTiled` for
//! the tensor maps of matrix parameters, and the buffers' memory, whose frees this crate orders
//! itself).
//!
//! `cudarc` loads `libcuda` lazily and panics when it is missing, so [`CudaDevice::open`] checks
//! for the library before it calls anything else, and turns any panic of the driver loader into
//! [`Error::NoCudaDevice`].
//!
//! The layer is cut by concern: `device` (a device: its context, its default and cancel streams,
//! its properties, abort requests), `stream` (a stream and the abort protocol's state of its
//! launches), `records` (a stream's ring of failure records), `completion` (completion marks,
//! their events, the watcher streams and the driver's callback), `memory` (a buffer's memory: its
//! allocation, its free and the order of its uses across streams), `copy` (copies from, to and
//! between buffers), `interop` (buffers handed between this crate and cudarc) and `kernel`
//! (loading a kernel's module, encoding the tensor maps of its matrix parameters, and launching
//! it). This file holds what they share: the driver's
//! errors, binding a context to the thread, and whether the driver library is there. The layer
//! imports nothing from the rest of the runtime but the abort protocol's layout, the errors, the
//! kernels' specs and the tensor maps' specs: what it must tell the layers above (a launch's completion) it tells
//! through [`CompletionListener`].

mod completion;
mod copy;
mod device;
mod interop;
mod kernel;
mod memory;
mod records;
mod stream;

use std::sync::OnceLock;

use cudarc::driver::{sys, CudaContext, CudaStream, DriverError};

use crate::error::{Error, Result};

pub(crate) use completion::{CompletionListener, CompletionMark, EventState};
pub(crate) use device::CudaDevice;
pub(crate) use kernel::KernelParam;
pub(crate) use memory::DeviceMem;
pub(crate) use stream::{LaunchIds, StreamState};

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

/// Makes `ctx` current on this thread. cudarc keeps the error of a failed call made in a `Drop`
/// in the context and returns it, once, from the next `bind_to_thread`; a second try gets past
/// such a stale error (a real one is returned again).
fn bind(ctx: &CudaContext) -> Result<()> {
    ctx.bind_to_thread()
        .or_else(|_| ctx.bind_to_thread())
        .map_err(cuda("cuCtxSetCurrent"))
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

/// Whether two cudarc stream handles are the same CUDA stream.
fn same_stream(a: &CudaStream, b: &CudaStream) -> bool {
    a == b
}
