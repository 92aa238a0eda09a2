//! Buffers in device memory: the slices kernels read and write.

use std::fmt;
use std::sync::Arc;

use crate::backend::{Backend, Device};
use crate::cuda::{CudaDevice, DeviceMem};
use crate::error::{Error, Result};
use crate::spec::KernelScalar;

/// A buffer of `T`s in a [`Device`]'s memory, passed to kernels as `&[T]` or `&mut [T]`.
///
/// Created with [`Device::upload`] or [`Device::alloc`]. On the CUDA backend it is global memory
/// (aligned to 256 bytes, freed in stream order when dropped); on the simulator it is host memory.
/// A buffer can only be used with the device that created it.
pub struct DeviceBuffer<T: KernelScalar> {
    device_id: u64,
    len: usize,
    storage: Storage<T>,
}

enum Storage<T> {
    Cuda {
        gpu: Arc<CudaDevice>,
        mem: DeviceMem,
    },
    Sim(Vec<T>),
}

impl Device {
    /// Copies `data` into a new buffer on this device.
    pub fn upload<T: KernelScalar>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        byte_size::<T>(data.len())?;
        let storage = match self.backend() {
            Backend::Cuda(gpu) => Storage::Cuda {
                gpu: Arc::clone(gpu),
                mem: gpu.upload(data)?,
            },
            Backend::Sim => Storage::Sim(data.to_vec()),
        };
        Ok(DeviceBuffer {
            device_id: self.id(),
            len: data.len(),
            storage,
        })
    }

    /// A new buffer of `len` zeroed elements (`0`, `0.0`, `false`) on this device.
    pub fn alloc<T: KernelScalar>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_size::<T>(len)?;
        let storage = match self.backend() {
            Backend::Cuda(gpu) => Storage::Cuda {
                gpu: Arc::clone(gpu),
                mem: gpu.alloc_zeroed(bytes)?,
            },
            Backend::Sim => Storage::Sim(vec![T::default(); len]),
        };
        Ok(DeviceBuffer {
            device_id: self.id(),
            len,
            storage,
        })
    }
}

/// The size in bytes of `len` elements, or an error if it overflows.
fn byte_size<T: KernelScalar>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .filter(|&bytes| isize::try_from(bytes).is_ok())
        .ok_or_else(|| {
            Error::Buffer(format!(
                "a buffer of {len} {:?} elements is too large to allocate",
                T::TYPE
            ))
        })
}

fn check_len(what: &str, buffer: usize, other: usize) -> Result<()> {
    if buffer == other {
        Ok(())
    } else {
        Err(Error::Buffer(format!(
            "{what}: length mismatch: the device buffer has {buffer} elements, the other side \
             has {other}"
        )))
    }
}

impl<T: KernelScalar> DeviceBuffer<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the buffer back to the host. On CUDA this waits for all work issued before it on
    /// the device's stream.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.len];
        self.download_into(&mut out)?;
        Ok(out)
    }

    /// Copies the buffer into `out`, which must have the same length.
    pub fn download_into(&self, out: &mut [T]) -> Result<()> {
        check_len("download_into", self.len, out.len())?;
        match &self.storage {
            Storage::Cuda { gpu, mem } => gpu.read(mem, out),
            Storage::Sim(data) => {
                out.copy_from_slice(data);
                Ok(())
            }
        }
    }

    /// Overwrites the buffer with `data`, which must have the same length.
    pub fn upload_from(&mut self, data: &[T]) -> Result<()> {
        check_len("upload_from", self.len, data.len())?;
        match &mut self.storage {
            Storage::Cuda { gpu, mem } => gpu.write(mem, data),
            Storage::Sim(buf) => {
                buf.copy_from_slice(data);
                Ok(())
            }
        }
    }

    /// Overwrites the buffer with the contents of `src`, a buffer of the same device and length.
    ///
    /// On CUDA the copy is device-to-device and asynchronous: it is ordered on the device's stream
    /// after the work issued before it, and the call returns without waiting for it.
    pub fn copy_from_buffer(&mut self, src: &DeviceBuffer<T>) -> Result<()> {
        if src.device_id != self.device_id {
            return Err(Error::Buffer(
                "copy_from_buffer: the source buffer belongs to another device; download it and \
                 upload it to this buffer's device instead"
                    .to_string(),
            ));
        }
        check_len("copy_from_buffer", self.len, src.len)?;
        match (&mut self.storage, &src.storage) {
            (Storage::Cuda { gpu, mem }, Storage::Cuda { mem: src_mem, .. }) => {
                gpu.copy(mem, src_mem)
            }
            (Storage::Sim(dst), Storage::Sim(data)) => {
                dst.copy_from_slice(data);
                Ok(())
            }
            _ => Err(Error::Buffer(
                "copy_from_buffer: the buffers live on different backends".to_string(),
            )),
        }
    }

    /// The id of the [`Device`] that owns the buffer.
    pub(crate) fn device_id(&self) -> u64 {
        self.device_id
    }

    /// The elements, for a simulator buffer.
    pub(crate) fn host_slice(&self) -> Option<&[T]> {
        match &self.storage {
            Storage::Sim(data) => Some(data),
            Storage::Cuda { .. } => None,
        }
    }

    /// The elements, mutably, for a simulator buffer.
    pub(crate) fn host_slice_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.storage {
            Storage::Sim(data) => Some(data),
            Storage::Cuda { .. } => None,
        }
    }

    /// The raw device address (`CUdeviceptr`), for a CUDA buffer.
    pub(crate) fn device_ptr(&self) -> Option<u64> {
        match &self.storage {
            Storage::Cuda { mem, .. } => Some(mem.address()),
            Storage::Sim(_) => None,
        }
    }
}

impl<T: KernelScalar> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match self.storage {
            Storage::Cuda { .. } => "cuda",
            Storage::Sim(_) => "simulator",
        };
        f.debug_struct("DeviceBuffer")
            .field("elem", &T::TYPE)
            .field("len", &self.len)
            .field("backend", &backend)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulator_round_trip() -> Result<()> {
        let device = Device::simulator();
        let data = [1.5f32, -2.0, 3.25];
        let mut buf = device.upload(&data)?;
        assert_eq!(buf.len(), 3);
        assert!(!buf.is_empty());
        assert_eq!(buf.download()?, data);

        buf.upload_from(&[4.0, 5.0, 6.0])?;
        let mut out = [0.0f32; 3];
        buf.download_into(&mut out)?;
        assert_eq!(out, [4.0, 5.0, 6.0]);
        assert_eq!(buf.host_slice(), Some(&[4.0f32, 5.0, 6.0][..]));
        assert_eq!(buf.device_ptr(), None);

        let zeros = device.alloc::<bool>(4)?;
        assert_eq!(zeros.download()?, vec![false; 4]);
        let empty = device.alloc::<usize>(0)?;
        assert!(empty.is_empty());
        assert_eq!(empty.download()?, Vec::<usize>::new());

        let mut copy = device.alloc::<f32>(3)?;
        copy.copy_from_buffer(&buf)?;
        assert_eq!(copy.download()?, [4.0, 5.0, 6.0]);
        copy.host_slice_mut()
            .into_iter()
            .flatten()
            .for_each(|x| *x = 1.0);
        assert_eq!(copy.download()?, [1.0; 3]);
        Ok(())
    }

    #[test]
    fn length_mismatch_names_both_lengths() -> Result<()> {
        let device = Device::simulator();
        let mut buf = device.alloc::<u32>(4)?;
        let mut out = [0u32; 3];
        for err in [
            buf.download_into(&mut out).err(),
            buf.upload_from(&[1, 2, 3, 4, 5]).err(),
            buf.copy_from_buffer(&device.alloc::<u32>(2)?).err(),
        ] {
            let msg = match err {
                Some(Error::Buffer(msg)) => msg,
                other => panic!("expected a buffer error, got {other:?}"),
            };
            assert!(msg.contains('4'), "{msg}");
            assert!(
                msg.contains('3') || msg.contains('5') || msg.contains('2'),
                "{msg}"
            );
        }
        Ok(())
    }

    #[test]
    fn copy_between_devices_rejected() -> Result<()> {
        let (a, b) = (Device::simulator(), Device::simulator());
        let mut dst = a.alloc::<i32>(2)?;
        let src = b.upload(&[1, 2])?;
        assert!(matches!(dst.copy_from_buffer(&src), Err(Error::Buffer(_))));
        // A clone is the same device.
        let src = a.clone().upload(&[1, 2])?;
        dst.copy_from_buffer(&src)?;
        assert_eq!(dst.download()?, [1, 2]);
        Ok(())
    }
}
