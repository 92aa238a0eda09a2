//! Buffers in device memory: the slices kernels read and write.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr};

use crate::backend::{Backend, Device};
use crate::cuda::{CudaDevice, DeviceMem};
use crate::error::{Error, Result};
use crate::sim::{queue_copy, SimDevice, SimMem, SimQueue};
use crate::spec::KernelScalar;
use crate::stream::Stream;

/// A buffer of `T`s in a [`Device`]'s memory, passed to kernels as `&[T]` or `&mut [T]`.
///
/// Created with [`Device::upload`], [`Device::alloc`] or [`DeviceBuffer::from_cudarc`]. On the
/// simulator it is host memory that the buffer shares with the launches and copies that use it
/// (they run on the streams' worker threads, see [`Device::simulator`]); host operations on it
/// wait for the uses submitted before them as on the GPU (a download for the writes, an
/// overwrite for every use). On the CUDA backend it is global memory with a *home stream*: the
/// device's [default stream](Device::default_stream) where it was allocated (or the stream of the
/// cudarc slice it came from). Host operations on it ([`download`](Self::download),
/// [`upload_from`](Self::upload_from)) run there.
///
/// Buffers that [`Device::upload`] and [`Device::alloc`] make start on a 4 KiB boundary: the
/// driver's pool would put a buffer allocated after a small one 512 bytes into a page, where bulk
/// copies measured up to 0.8% slower on an H200. So each takes a multiple of 4 KiB of device
/// memory. A slice from cudarc keeps its address (the driver aligns it to at least 256 bytes).
///
/// **The buffer stays valid whatever happens to the launches that use it.** It remembers its
/// uses by launches and copies on every stream (the last write, and the reads since), each with
/// an event recorded on its stream right after it (on the home stream, where the stream itself
/// orders what comes later, the event is recorded only when another stream needs to wait for
/// it). A use on another stream waits for the earlier conflicting ones (`cuStreamWaitEvent`),
/// and so do the host operations. Dropping the buffer frees its memory with a *stream-ordered
/// free* on the home stream after the events of its last uses on other streams: the free never
/// overtakes a kernel that still uses the buffer, even one whose [`Launch`](crate::Launch) was
/// leaked with `mem::forget` (dropping an unfinished launch cancels it and waits, so the usual
/// case needs none of this). The host does not wait for the free.
///
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
    Sim {
        mem: Arc<SimMem<T>>,
        /// The device's default stream, where `copy_from_buffer` queues its copy.
        home: Arc<SimQueue>,
    },
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
            Backend::Sim(sim) => sim_storage(sim, data.to_vec()),
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
            Backend::Sim(sim) => sim_storage(sim, vec![T::default(); len]),
        };
        Ok(DeviceBuffer {
            device_id: self.id(),
            len,
            storage,
        })
    }
}

/// A simulator buffer of `sim` holding `data`.
fn sim_storage<T: KernelScalar>(sim: &SimDevice, data: Vec<T>) -> Storage<T> {
    Storage::Sim {
        mem: SimMem::new(data),
        home: Arc::clone(sim.default_stream().queue()),
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

    /// Copies the buffer back to the host. On CUDA the copy runs on the buffer's home stream,
    /// after every earlier write of the buffer on any stream, and this waits for it (and so for
    /// the work issued to the home stream before it). On the simulator this waits for the
    /// launches and copies submitted earlier that write the buffer, whether or not they were
    /// awaited (or kept: a launch leaked with `mem::forget` still finishes first).
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
            Storage::Sim { mem, .. } => {
                mem.host_read(|data| out.copy_from_slice(data));
                Ok(())
            }
        }
    }

    /// Overwrites the buffer with `data`, which must have the same length. On CUDA the copy is
    /// ordered on the buffer's home stream after every earlier use of the buffer on any stream;
    /// on the simulator this waits for the earlier uses.
    pub fn upload_from(&mut self, data: &[T]) -> Result<()> {
        check_len("upload_from", self.len, data.len())?;
        match &mut self.storage {
            Storage::Cuda { gpu, mem } => gpu.write(mem, data),
            Storage::Sim { mem, .. } => {
                mem.host_write(|buf| buf.copy_from_slice(data));
                Ok(())
            }
        }
    }

    /// Overwrites the buffer with the contents of `src`, a buffer of the same device and length,
    /// on the device's [default stream](Device::default_stream); see
    /// [`DeviceBuffer::copy_from_buffer_on`].
    pub fn copy_from_buffer(&mut self, src: &DeviceBuffer<T>) -> Result<()> {
        match &self.storage {
            Storage::Cuda { gpu, .. } => {
                let stream = Arc::clone(gpu.default_stream());
                self.copy_checked(src, |gpu, dst, src| gpu.copy(&stream, dst, src), None)
            }
            Storage::Sim { home, .. } => {
                let home = Arc::clone(home);
                self.copy_checked(src, |_, _, _| Ok(()), Some(&home))
            }
        }
    }

    /// Overwrites the buffer with the contents of `src`, a buffer of the same device and length,
    /// on `stream`, a stream of their device.
    ///
    /// On CUDA the copy is device-to-device and asynchronous: it is ordered on `stream` after the
    /// work issued there before it and after the earlier conflicting uses of both buffers on other
    /// streams, and the call returns without waiting for it. Later uses of the buffers on other
    /// streams, and their frees, wait for it. On the simulator the copy is a job of `stream`,
    /// ordered the same way (after the earlier uses of both buffers), and the call does not wait
    /// for it either.
    pub fn copy_from_buffer_on(&mut self, src: &DeviceBuffer<T>, stream: &Stream) -> Result<()> {
        if stream.device().id() != self.device_id {
            return Err(Error::InvalidArgument(
                "copy_from_buffer_on: the stream belongs to another device than the buffer"
                    .to_string(),
            ));
        }
        match (stream.cuda(), stream.sim()) {
            (Some((_, state)), _) => {
                self.copy_checked(src, |gpu, dst, src| gpu.copy(state, dst, src), None)
            }
            (None, sim) => self.copy_checked(src, |_, _, _| Ok(()), sim.map(|s| s.queue())),
        }
    }

    /// Checks the devices and lengths, then copies: `cuda_copy` on CUDA, a copy queued on
    /// `sim_queue` (the buffer's home stream by default) on the simulator.
    fn copy_checked(
        &mut self,
        src: &DeviceBuffer<T>,
        cuda_copy: impl FnOnce(&CudaDevice, &mut DeviceMem, &DeviceMem) -> Result<()>,
        sim_queue: Option<&Arc<SimQueue>>,
    ) -> Result<()> {
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
                cuda_copy(gpu, mem, src_mem)
            }
            (Storage::Sim { mem, home }, Storage::Sim { mem: src_mem, .. }) => {
                queue_copy(sim_queue.unwrap_or(home), mem, src_mem);
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

    /// The memory of a simulator buffer.
    pub(crate) fn sim_mem(&self) -> Option<&Arc<SimMem<T>>> {
        match &self.storage {
            Storage::Sim { mem, .. } => Some(mem),
            Storage::Cuda { .. } => None,
        }
    }

    /// The device memory, for a CUDA buffer.
    pub(crate) fn cuda_mem(&self) -> Option<&DeviceMem> {
        match &self.storage {
            Storage::Cuda { mem, .. } => Some(mem),
            Storage::Sim { .. } => None,
        }
    }
}

impl<T: KernelScalar + DeviceRepr> DeviceBuffer<T> {
    /// A buffer of `device` holding a cudarc slice of the device's CUDA context (see
    /// [`Device::from_cudarc`] and [`Device::cudarc_stream`]), without copying.
    ///
    /// The slice's stream becomes the buffer's home stream: the buffer's first use comes after
    /// the work issued there before this call (and, with cudarc's event tracking on, after the
    /// slice's pending uses on other streams), and the slice is freed there, by cudarc, when the
    /// buffer is dropped (after its uses, see [`DeviceBuffer`]). Fails with [`Error::Buffer`]
    /// on the simulator or when the slice belongs to another CUDA context.
    pub fn from_cudarc(device: &Device, slice: CudaSlice<T>) -> Result<Self> {
        let Backend::Cuda(gpu) = device.backend() else {
            return Err(Error::Buffer(
                "from_cudarc: the device is the simulator; cudarc slices live on a CUDA device"
                    .to_string(),
            ));
        };
        let len = slice.len();
        byte_size::<T>(len)?;
        let mem = gpu.adopt(slice)?;
        Ok(DeviceBuffer {
            device_id: device.id(),
            len,
            storage: Storage::Cuda {
                gpu: Arc::clone(gpu),
                mem,
            },
        })
    }

    /// The buffer's memory as a cudarc slice, without copying (except in one rare case: a
    /// buffer the driver could only place on a 4 KiB boundary by allocating more than it holds,
    /// which happens when other code allocates around this crate, is handed over as a copy).
    /// Work cudarc issues on the
    /// slice's stream (the buffer's home stream) comes after every use of the buffer by this
    /// crate; with cudarc's event tracking on, so does its work on other streams. Fails with
    /// [`Error::Buffer`] on the simulator (the buffer is dropped then).
    pub fn into_cudarc(self) -> Result<CudaSlice<T>> {
        let len = self.len;
        match self.storage {
            Storage::Cuda { gpu, mem } => gpu.release(mem, len),
            Storage::Sim { .. } => Err(Error::Buffer(
                "into_cudarc: the buffer lives in the simulator, not on a CUDA device".to_string(),
            )),
        }
    }
}

impl<T: KernelScalar> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match self.storage {
            Storage::Cuda { .. } => "cuda",
            Storage::Sim { .. } => "simulator",
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
        assert!(buf.sim_mem().is_some());
        assert!(buf.cuda_mem().is_none());

        let zeros = device.alloc::<bool>(4)?;
        assert_eq!(zeros.download()?, vec![false; 4]);
        let empty = device.alloc::<usize>(0)?;
        assert!(empty.is_empty());
        assert_eq!(empty.download()?, Vec::<usize>::new());

        let mut copy = device.alloc::<f32>(3)?;
        copy.copy_from_buffer(&buf)?;
        assert_eq!(copy.download()?, [4.0, 5.0, 6.0]);
        copy.upload_from(&[1.0; 3])?;
        assert_eq!(copy.download()?, [1.0; 3]);
        assert_eq!(buf.download()?, [4.0, 5.0, 6.0]);
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

    #[gpu_async_testing::needs_gpu]
    fn uses_on_other_streams_are_remembered() -> Result<()> {
        let device = Device::cuda(0)?;
        let away = |buf: &DeviceBuffer<u32>| buf.cuda_mem().map(|m| m.uses_away_from_home());
        let stream = device.new_stream()?;
        let src = device.upload(&[1u32, 2, 3])?;
        let mut dst = device.alloc::<u32>(3)?;
        assert_eq!((away(&src), away(&dst)), (Some(0), Some(0)));
        dst.copy_from_buffer_on(&src, &stream)?;
        // A read of `src` and a write of `dst` on the other stream.
        assert_eq!((away(&src), away(&dst)), (Some(1), Some(1)));
        // The download (on the home stream) waits for the copy's write.
        assert_eq!(dst.download()?, [1, 2, 3]);
        // A write on the home stream comes after everything before it.
        dst.upload_from(&[4, 5, 6])?;
        assert_eq!(away(&dst), Some(0));
        assert_eq!(dst.download()?, [4, 5, 6]);
        // Copies on the default stream are home-stream uses.
        dst.copy_from_buffer(&src)?;
        assert_eq!(away(&dst), Some(0));
        assert_eq!(dst.download()?, [1, 2, 3]);
        // A stream of another device is rejected.
        let other = Device::simulator().default_stream();
        assert!(matches!(
            dst.copy_from_buffer_on(&src, &other),
            Err(Error::InvalidArgument(_))
        ));
        drop(stream);
        drop(src);
        drop(dst);
        device.synchronize()
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<DeviceBuffer<f32>>();
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
