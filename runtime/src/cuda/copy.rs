//! Copies of buffer memory: from the host (uploads and writes), to the host (reads), and from one
//! buffer to another, each ordered after the earlier uses of the memory it touches.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;

use super::cuda;
use super::device::CudaDevice;
use super::memory::{order_uses, DeviceMem};
use super::stream::StreamState;
use crate::error::{Error, Result};
use crate::spec::{KernelScalar, ScalarType};

// Buffers of `usize` are copied byte for byte to the device, where `usize` is 64 bits wide. CUDA
// only supports 64-bit hosts.
const _: () = assert!(std::mem::size_of::<usize>() == 8);

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

impl CudaDevice {
    /// Allocates device memory holding a copy of `data`, ordered on the default stream.
    pub(crate) fn upload<T: KernelScalar>(&self, data: &[T]) -> Result<DeviceMem> {
        let bytes = scalars_as_bytes(data);
        let mem = self.alloc(bytes.len())?;
        if !bytes.is_empty() {
            copy_htod(&mem, bytes)?;
        }
        Ok(mem)
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

pub(super) fn size_mismatch(device_bytes: usize, host_bytes: usize) -> Error {
    Error::Buffer(format!(
        "size mismatch: the device buffer holds {device_bytes} bytes, the other side \
         {host_bytes} bytes"
    ))
}
