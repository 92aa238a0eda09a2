//! The device kernels run on: a CUDA GPU, or the CPU simulator.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::abort::{watchdog_ns, DEFAULT_WATCHDOG};
use crate::cuda::CudaDevice;
use crate::error::Result;
use crate::schedule::Schedule;
use crate::sim::{SimConfig, SimDevice, SimOptions};

/// Which backend a [`Device`] runs kernels on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// An NVIDIA GPU, through the CUDA driver.
    Cuda,
    /// The CPU simulator: every role of every block runs on the host, with the same channel and
    /// barrier semantics as on the GPU.
    Simulator,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cuda => "CUDA",
            BackendKind::Simulator => "simulator",
        })
    }
}

/// A device to allocate buffers on and launch kernels on.
///
/// Cheap to clone: clones share the device (its streams, its loaded kernels), and buffers of one
/// are buffers of the others. Two devices made by separate constructor calls are distinct, even on
/// the same GPU: a buffer of one cannot be passed to a kernel launched on the other.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    backend: Backend,
    fallback_reason: Option<String>,
    /// The watchdog bound in nanoseconds, 0 when off (as the launch passes it).
    watchdog_ns: AtomicU64,
}

/// What a [`Device`] runs on.
pub(crate) enum Backend {
    Cuda(Arc<CudaDevice>),
    /// The simulator: its schedule and its streams.
    Sim(SimDevice),
}

impl Device {
    fn new(backend: Backend, fallback_reason: Option<String>) -> Device {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Device {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                backend,
                fallback_reason,
                watchdog_ns: AtomicU64::new(watchdog_ns(Some(DEFAULT_WATCHDOG))),
            }),
        }
    }

    fn new_simulator(config: SimConfig, fallback_reason: Option<String>) -> Device {
        Device::new(Backend::Sim(SimDevice::new(config)), fallback_reason)
    }

    /// CUDA device 0 when the CUDA driver loads and has a device, else the simulator; see
    /// [`Device::fallback_reason`] for why CUDA was not used.
    ///
    /// Never fails in practice: the simulator is always available.
    #[allow(clippy::should_implement_trait)]
    pub fn default() -> Result<Device> {
        Ok(Device::cuda(0).unwrap_or_else(|err| {
            Device::new_simulator(SimConfig::from_env(), Some(err.to_string()))
        }))
    }

    /// CUDA device `ordinal`, with a new stream of its own.
    ///
    /// Fails with [`Error::NoCudaDevice`](crate::Error::NoCudaDevice) when the driver cannot be
    /// loaded or the device does not exist, and with [`Error::Cuda`](crate::Error::Cuda) when the
    /// driver fails to set it up.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        let gpu = CudaDevice::open(ordinal)?;
        Ok(Device::new(Backend::Cuda(Arc::new(gpu)), None))
    }

    /// A CUDA device on the context of a cudarc stream, whose default stream is that stream:
    /// launches of the typed `launch` functions, uploads and downloads are ordered with the work
    /// the caller issues to it through cudarc. The device creates what the abort protocol needs
    /// (for that stream and for the streams it makes later) and a stream of its own for
    /// cancelling launches. cudarc's per-buffer event tracking is left as the context's owner set
    /// it.
    ///
    /// Use [`DeviceBuffer::from_cudarc`](crate::DeviceBuffer::from_cudarc) and
    /// [`DeviceBuffer::into_cudarc`](crate::DeviceBuffer::into_cudarc) to pass buffers between
    /// the two libraries. Fails with [`Error::Cuda`](crate::Error::Cuda) when the driver cannot
    /// set up the device's state.
    pub fn from_cudarc(stream: Arc<CudaStream>) -> Result<Device> {
        let gpu = CudaDevice::from_cudarc(stream)?;
        Ok(Device::new(Backend::Cuda(Arc::new(gpu)), None))
    }

    /// The CPU simulator, with the schedule of [`SimOptions::from_env`]: the one in the
    /// environment variable [`SCHEDULE_ENV`](crate::SCHEDULE_ENV) when it is set (to replay a
    /// schedule a deadlock reported), else `Random` with [`SimOptions::DEFAULT_SEED`], so that
    /// its runs are reproducible. When the variable holds something that is not a schedule,
    /// every launch on the device fails with
    /// [`Error::InvalidLaunch`](crate::Error::InvalidLaunch) saying so.
    ///
    /// It behaves like the GPU where a program can see it:
    ///
    /// - **A launch returns before its kernel has run.** Each stream of the device (the default
    ///   one and each of [`Device::new_stream`]) has a worker thread that runs the stream's
    ///   launches and copies one after another, in the order they were issued; work on
    ///   different streams runs at the same time, ordered by the buffers it shares (a use waits
    ///   for the earlier conflicting uses, as on the GPU) and by events
    ///   ([`Stream::wait_event`](crate::Stream::wait_event)). The blocks of a launch still run
    ///   one after another, deterministically, under the device's [`Schedule`]. The
    ///   [`Launch`](crate::Launch) future is woken when the work is done (any executor; no
    ///   thread that awaits or issues work runs a kernel), [`Launch::progress`] tells how many
    ///   blocks have run, [`Launch::cancel`] stops the kernel at its next block, await or loop
    ///   iteration, and dropping an unfinished launch cancels it and waits until it has
    ///   stopped.
    /// - **Host operations on buffers wait for the work submitted before them** (a download for
    ///   the launches and copies that write the buffer, an overwrite for every use), also when
    ///   the launches were never awaited or were leaked with `mem::forget`.
    /// - **The watchdog** ([`Device::set_watchdog`], 5 s by default) stops a role that runs
    ///   longer than the bound without waiting while another role of its block is unfinished
    ///   (a loop that spins on a value another role would set, say, which the simulator, running
    ///   one role at a time, would never let that role set): the launch returns
    ///   [`Error::Deadlock`](crate::Error::Deadlock) naming the role, its loop's line and what
    ///   the other roles are doing. A deadlock of waits is found at once, without the watchdog.
    ///
    /// [`Launch::progress`]: crate::Launch::progress
    /// [`Launch::cancel`]: crate::Launch::cancel
    pub fn simulator() -> Device {
        Device::new_simulator(SimConfig::from_env(), None)
    }

    /// The CPU simulator with `options` (a [`Schedule`] converts into them); the environment is
    /// not read. See [`Device::simulator`] for how it runs launches.
    pub fn simulator_with(options: impl Into<SimOptions>) -> Device {
        Device::new_simulator(SimConfig::new(options.into()), None)
    }

    /// The simulator's schedule; `None` on CUDA (and on a simulator whose environment variable
    /// does not hold a schedule).
    pub fn simulator_schedule(&self) -> Option<Schedule> {
        self.sim()?.config.schedule().cloned()
    }

    /// The simulator's state, on the simulator.
    pub(crate) fn sim(&self) -> Option<&SimDevice> {
        match &self.inner.backend {
            Backend::Sim(sim) => Some(sim),
            Backend::Cuda(_) => None,
        }
    }

    /// Which backend this device runs kernels on.
    pub fn kind(&self) -> BackendKind {
        match self.inner.backend {
            Backend::Cuda(_) => BackendKind::Cuda,
            Backend::Sim(_) => BackendKind::Simulator,
        }
    }

    /// Why [`Device::default`] fell back to the simulator; `None` when it did not.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.inner.fallback_reason.as_deref()
    }

    /// A human-readable name, e.g. `NVIDIA H200 (sm_90, CUDA device 0)` or `simulator (CPU)`.
    pub fn name(&self) -> String {
        match &self.inner.backend {
            Backend::Cuda(gpu) => gpu.name(),
            Backend::Sim(_) => "simulator (CPU)".to_string(),
        }
    }

    /// Waits until all work issued to the device so far, on all of its streams, has finished
    /// (on CUDA: all work of its context, `cuCtxSynchronize`); returns an error of that work (a
    /// kernel fault) if there was one. Kernel panics, deadlocks and cancellations are not errors
    /// of the device: their launches report them.
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Cuda(gpu) => gpu.synchronize(),
            Backend::Sim(sim) => {
                sim.synchronize();
                Ok(())
            }
        }
    }

    /// The number of streaming multiprocessors (1 for the simulator): a launch of this many
    /// blocks, or a multiple, fills the device.
    pub fn sm_count(&self) -> Result<u32> {
        match &self.inner.backend {
            Backend::Cuda(gpu) => Ok(gpu.sm_count()),
            Backend::Sim(_) => Ok(1),
        }
    }

    /// Sets the watchdog of the kernels launched from now on (by this device and its clones):
    /// `Some(bound)` stops a kernel when any single wait on the GPU (a channel `.await`, a role
    /// barrier) takes longer than `bound`, and its launch returns
    /// [`Error::Deadlock`](crate::Error::Deadlock) naming the block, the role and the wait;
    /// `None` turns it off. The default is 5 seconds.
    ///
    /// It is for finding deadlocks, which would otherwise hang the GPU: the bound is on one wait,
    /// not on the whole kernel, so a long kernel whose waits are short is never stopped. Checking
    /// the clock costs a little inside waits; benchmarks may turn it off. The bound is kept in
    /// whole nanoseconds (at least 1).
    ///
    /// The simulator finds deadlocks of waits exactly, without it; there the bound stops a role
    /// that runs longer than it without waiting while another role of its block is unfinished
    /// (on the GPU, that role's wait would time out), and the launch returns
    /// [`Error::Deadlock`](crate::Error::Deadlock) naming the role and its loop (see
    /// [`Device::simulator`]).
    pub fn set_watchdog(&self, bound: Option<Duration>) {
        self.inner
            .watchdog_ns
            .store(watchdog_ns(bound), Ordering::Relaxed);
    }

    /// The watchdog bound of kernels launched now; see [`Device::set_watchdog`].
    pub fn watchdog(&self) -> Option<Duration> {
        match self.inner.watchdog_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// A process-unique id of this device; clones share it.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// What this device runs on.
    pub(crate) fn backend(&self) -> &Backend {
        &self.inner.backend
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            BackendKind::Cuda => write!(f, "CUDA: {}", self.name())?,
            BackendKind::Simulator => f.write_str(&self.name())?,
        }
        if let Some(reason) = self.fallback_reason() {
            write!(f, ", because CUDA is unavailable: {reason}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.inner.id)
            .field("kind", &self.kind())
            .field("name", &self.name())
            .field("fallback_reason", &self.inner.fallback_reason)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn default_picks_the_gpu_or_says_why_not() -> Result<()> {
        let device = Device::default()?;
        match Device::cuda(0) {
            Ok(_) => {
                assert_eq!(device.kind(), BackendKind::Cuda);
                assert_eq!(device.fallback_reason(), None);
            }
            Err(err) => {
                assert!(matches!(err, Error::NoCudaDevice(_)), "{err}");
                assert_eq!(device.kind(), BackendKind::Simulator);
                let reason = device.fallback_reason().unwrap_or_default();
                assert!(!reason.is_empty());
                assert!(device.to_string().contains(reason), "{device}");
                if !crate::cuda::libcuda_present() {
                    assert!(reason.contains("libcuda"), "{reason}");
                }
                assert_eq!(device.sm_count()?, 1);
                device.synchronize()?;
            }
        }
        Ok(())
    }

    #[test]
    fn simulator_identity() -> Result<()> {
        let a = Device::simulator();
        let b = Device::simulator();
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), a.clone().id());
        assert_eq!(a.fallback_reason(), None);
        assert_eq!(a.name(), "simulator (CPU)");
        assert_eq!(a.to_string(), "simulator (CPU)");
        assert_eq!(BackendKind::Cuda.to_string(), "CUDA");
        let ms = a.start_timer()?.stop()?;
        assert!(ms >= 0.0);
        Ok(())
    }

    #[test]
    fn watchdog_setting() {
        let a = Device::simulator();
        assert_eq!(a.watchdog(), Some(Duration::from_secs(5)));
        let b = a.clone();
        b.set_watchdog(Some(Duration::from_millis(50)));
        assert_eq!(a.watchdog(), Some(Duration::from_millis(50)));
        a.set_watchdog(None);
        assert_eq!(b.watchdog(), None);
        a.set_watchdog(Some(Duration::ZERO));
        assert_eq!(a.watchdog(), Some(Duration::from_nanos(1)));
        assert_eq!(Device::simulator().watchdog(), Some(Duration::from_secs(5)));
    }

    #[gpu_async_testing::needs_gpu]
    fn request_abort_writes_the_abort_word() -> Result<()> {
        let device = Device::cuda(0)?;
        let Backend::Cuda(gpu) = device.backend() else {
            panic!("Device::cuda(0) made a {} device", device.kind());
        };
        let stream = gpu.default_stream();
        assert_eq!(stream.abort_word_value()?, 0);
        gpu.request_abort(stream, 0x1234_5678)?;
        assert_eq!(stream.abort_word_value()?, 0x1234_5678);
        // Each stream has its own abort word.
        let other = gpu.new_stream()?;
        assert_eq!(other.abort_word_value()?, 0);
        gpu.request_abort(&other, 7)?;
        assert_eq!(other.abort_word_value()?, 7);
        assert_eq!(stream.abort_word_value()?, 0x1234_5678);
        Ok(())
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Device>();
    }
}
