//! The memory of a buffer: its allocation, its free, and the order of its uses across streams.
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

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cudarc::driver::{sys, CudaEvent, CudaStream};

use super::device::CudaDevice;
use super::{cuda, same_stream};
use crate::error::{Error, Result};

/// Where every buffer this crate allocates starts: a multiple of 4 KiB ([`CudaDevice::alloc`]).
///
/// Measured on an H200 (`docs/design.md`, "Buffers start on 4 KiB boundaries"): the pipeline example's bulk copies
/// from and to buffers 256 or 512 bytes past a 4 KiB boundary, where the driver's pool put them
/// after a small allocation, ran 0.1-0.2% slower on its default grid and 0.6-0.8% slower at 2
/// blocks per multiprocessor, in the hand-written peer as in the generated kernel; offsets of 1,
/// 2 and 4 KiB cost nothing.
pub(super) const BUFFER_ALIGN: usize = 4096;

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

impl CudaDevice {
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

    /// Allocates `bytes` bytes on the default stream, contents unspecified, for the kernel to
    /// write and the host to read back (a traced launch's trace buffer).
    pub(crate) fn alloc_scratch(&self, bytes: usize) -> Result<DeviceMem> {
        self.alloc(bytes)
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
    pub(super) fn alloc(&self, bytes: usize) -> Result<DeviceMem> {
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
}

/// Orders `submit`, which issues work on `stream` using the buffers `uses` (`(memory,
/// written)`), after their earlier conflicting uses on other streams, and records it as their
/// latest use: a read waits for the last write, a write for the last write and the reads since.
/// The event recorded for this use (only when some buffer's home stream is not `stream`, see the
/// module docs) is recorded right after `submit`. Nothing is recorded when `submit` fails.
pub(super) fn order_uses(
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
pub(super) enum Owner {
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
    pub(super) ptr: u64,
    pub(super) bytes: usize,
    pub(super) home: Arc<CudaStream>,
    pub(super) owner: Owner,
    uses: Mutex<Uses>,
}

impl DeviceMem {
    pub(super) fn new(ptr: u64, bytes: usize, home: Arc<CudaStream>, owner: Owner) -> DeviceMem {
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
    pub(super) fn order_home_after_other_streams(&mut self) -> Result<()> {
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
