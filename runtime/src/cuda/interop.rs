//! Buffers handed between this crate and cudarc: a cudarc slice taken over as a buffer's memory,
//! and a buffer's memory handed back as a cudarc slice, each ordered with the uses of the memory
//! on both sides.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, DevicePtrMut, DeviceRepr};

use super::copy::size_mismatch;
use super::cuda;
use super::device::CudaDevice;
use super::memory::{DeviceMem, Owner};
use crate::error::{Error, Result};

impl CudaDevice {
    /// Whether `slice` lives in this device's CUDA context.
    fn same_context<T>(&self, slice: &CudaSlice<T>) -> bool {
        slice.context().cu_ctx() == self.ctx.cu_ctx()
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
}
