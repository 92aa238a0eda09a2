//! The record ring of a stream: the failure records its launches write, in page-locked host
//! memory mapped into the device's address space, and the volatile reads of them. Separate from
//! the stream because it is raw memory the GPU writes behind the compiler's back.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};

use super::{bind, cuda};
use crate::abort::{record_slot, Record, RECORD_SLOTS, RECORD_WORDS};
use crate::error::{Error, Result};

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
pub(super) struct RecordRing {
    ctx: Arc<CudaContext>,
    host: NonNull<u32>,
    device: u64,
    /// Set when it must not be freed: a kernel may still write it.
    pub(super) leak: bool,
}

// SAFETY: the ring is plain memory the driver allocated for the context, usable from every
// thread; the host only touches it with volatile loads and stores of whole `u32`s (reads of
// slots of finished launches, writes while no launch can run), and frees it once, on drop.
unsafe impl Send for RecordRing {}

// SAFETY: as for `Send`; `&RecordRing` only reads slots and hands out addresses.
unsafe impl Sync for RecordRing {}

impl RecordRing {
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<RecordRing> {
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
    pub(super) fn slot_address(&self, launch_id: u32) -> u64 {
        const SLOT_BYTES: u64 = (RECORD_WORDS * std::mem::size_of::<u32>()) as u64;
        self.device + record_slot(launch_id) as u64 * SLOT_BYTES
    }

    /// A copy of slot `slot` (taken modulo [`RECORD_SLOTS`]).
    pub(super) fn read(&self, slot: usize) -> Record {
        let slot = slot % RECORD_SLOTS as usize;
        // SAFETY: `host` points to `RING_WORDS` 4-aligned `u32`s (page-locked allocations are
        // page-aligned), live while `self` is; slot `slot < RECORD_SLOTS` starts at word
        // `slot * RECORD_WORDS`, so its `RECORD_WORDS` words are in bounds.
        unsafe { read_record(self.host.add(slot * RECORD_WORDS)) }
    }

    /// A copy of every slot. Only while no kernel can write the ring.
    pub(super) fn snapshot(&self) -> Box<[Record]> {
        (0..RECORD_SLOTS as usize)
            .map(|slot| self.read(slot))
            .collect()
    }

    /// Zeroes every slot. Only while no kernel can write the ring.
    pub(super) fn clear(&self) {
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
