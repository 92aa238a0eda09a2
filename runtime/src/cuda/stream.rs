//! A stream of a device and the abort protocol's state of the launches on it: launch ids, the
//! abort word and the record ring, and the stream's own driver calls.
//!
//! # Streams
//!
//! A device has a *default stream* (its own non-blocking stream, or the cudarc stream it was made
//! from) and any number of further streams
//! ([`CudaDevice::new_stream`](super::CudaDevice::new_stream)). Each stream is a
//! [`StreamState`]: the CUDA stream plus the abort protocol's state of the launches on it (see
//! [`crate::abort`]): its abort word (the first 4 bytes of 4 KiB of device memory), its *record
//! ring* (4096 failure records of 32 bytes, page-locked host memory mapped into the device's
//! address space; launch `k` writes slot `k % 4096`) and its launch-id counter. A failing launch
//! never clears another running launch's id from the abort word, since the launches of one stream
//! run one after another. A device has one more stream, the *cancel stream*, used only to write
//! abort words while kernels run
//! ([`CudaDevice::request_abort`](super::CudaDevice::request_abort)).
//!
//! The abort words and record rings live as long as their stream and are freed only after it
//! (and the cancel stream) was synchronized.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr, DriverError};

use super::completion::{LaunchEvent, Watcher};
use super::memory::BUFFER_ALIGN;
use super::records::RecordRing;
use super::{bind, cuda, driver_error, same_stream};
use crate::abort::{next_launch_id, record_slot, Record};
use crate::error::Result;

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

/// One stream of a device: the CUDA stream, the abort protocol's state of the launches on it, and
/// what observes their completion (see the module docs).
pub(crate) struct StreamState {
    pub(super) stream: Arc<CudaStream>,
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
    pub(super) counter: Mutex<LaunchCounter>,
    /// The current epoch and the ring as it was at its start; written only at a wrap.
    epochs: RwLock<Epochs>,
    /// `epoch << 32 | launch id` of the latest launch known to have finished without a driver
    /// error: every launch of the stream up to it has finished too (they run in order).
    pub(super) finished: AtomicU64,
    /// Completion events whose launches are over, for reuse (at most
    /// [`EVENT_POOL_MAX`](super::completion::EVENT_POOL_MAX)).
    pub(super) events: Mutex<Vec<LaunchEvent>>,
    /// The streams that run completion callbacks, created on first need (at most
    /// [`MAX_WATCHERS`](super::completion::MAX_WATCHERS)).
    pub(super) watchers: Mutex<Vec<Watcher>>,
    /// The priority watcher streams are created with (see
    /// [`watcher_priority`](super::device::watcher_priority)).
    pub(super) watcher_priority: i32,
}

/// The launch-id counter of a stream.
pub(super) struct LaunchCounter {
    /// The id of the last launch (0 before the first).
    pub(super) last: u32,
    /// How often the counter wrapped.
    pub(super) epoch: u32,
}

/// What the launches of the previous epoch need to read their records after a wrap.
struct Epochs {
    /// The current epoch (as [`LaunchCounter::epoch`]).
    current: u32,
    /// The ring as it was when the current epoch began (`None` in epoch 0).
    previous: Option<Box<[Record]>>,
}

impl StreamState {
    pub(super) fn new(
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
    /// stream's launch lock: the launch `submit` makes (with
    /// [`CudaDevice::launch`](super::CudaDevice::launch)) is ordered on the stream with the ids of
    /// its other launches. When the 32-bit counter wraps, this first waits for the stream to
    /// drain, keeps a copy of the ring for the launches of the ending epoch, and zeroes the abort
    /// word and the ring, so that no id from before the wrap is still in them (once every
    /// 2^32 − 1 launches).
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
    pub(super) fn abort_word_address(&self) -> u64 {
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
