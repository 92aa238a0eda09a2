//! One CUDA device as this crate uses it: opening it (its context, default stream and cancel
//! stream), its properties, new streams, and the abort requests written on its cancel stream.
//! Its buffers' memory, its kernels and its streams' state are in the sibling modules.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaContext, CudaStream};

use super::kernel::LoadedKernel;
use super::stream::StreamState;
use super::{cuda, driver_error, libcuda_present};
use crate::error::{Error, Result};

/// One CUDA device as this crate uses it: a context, its default stream, the kernels loaded so
/// far, and the stream that writes abort words.
pub(crate) struct CudaDevice {
    pub(super) ctx: Arc<CudaContext>,
    ordinal: usize,
    device_name: String,
    pub(super) compute_capability: (i32, i32),
    sm_count: u32,
    /// Loaded kernels by the address of their `&'static KernelSpec` (one per kernel): a key that
    /// costs no string hashing on every launch.
    pub(super) kernels: Mutex<HashMap<usize, Arc<LoadedKernel>>>,
    /// The stream launches and buffer operations use when no other is given.
    pub(super) default_stream: Arc<StreamState>,
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
pub(super) fn watcher_priority(least: i32, greatest: i32) -> i32 {
    let above_default = least.saturating_sub(1);
    if above_default > greatest {
        above_default
    } else {
        least
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchers_sit_between_the_default_and_the_greatest_priority() {
        // The H200's range: 0 (least, the default) to -5 (greatest).
        assert_eq!(watcher_priority(0, -5), -1);
        assert_eq!(watcher_priority(0, -2), -1);
        // No level between the two: the default.
        assert_eq!(watcher_priority(0, -1), 0);
        assert_eq!(watcher_priority(0, 0), 0);
    }
}
