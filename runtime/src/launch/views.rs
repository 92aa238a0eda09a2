//! The simulator's side of a launch's buffer parameters: the uses of the buffers that the
//! generated code registers when it launches and moves into the kernel's job. Here rather than in
//! the simulator, which knows nothing of buffers, as [`CudaArgs`](super::CudaArgs) is the CUDA
//! side.

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::sim::{SimMem, SimRead, SimTarget, SimWrite};
use crate::spec::KernelScalar;
use std::sync::Arc;

impl SimTarget {
    /// The memory of the buffer passed as `name`, when it is a simulator buffer of the launch's
    /// device.
    fn memory<'b, T: KernelScalar>(
        &self,
        name: &str,
        buf: &'b DeviceBuffer<T>,
    ) -> Result<&'b Arc<SimMem<T>>> {
        if buf.device_id() != self.device_id {
            return Err(Error::InvalidLaunch {
                kernel: self.spec.path,
                reason: format!(
                    "the buffer passed as `{name}` belongs to another device; upload it to the launch's device"
                ),
            });
        }
        buf.sim_mem().ok_or_else(|| Error::InvalidLaunch {
            kernel: self.spec.path,
            reason: format!("the buffer passed as `{name}` does not live in the simulator"),
        })
    }

    /// The launch reads `buf`, a slice parameter: its job takes the elements with
    /// [`SimRead::slice`] once the earlier writes of the buffer are over.
    pub fn read<T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &DeviceBuffer<T>,
    ) -> Result<SimRead<T>> {
        Ok(self.memory(name, buf)?.register_read())
    }

    /// The launch writes `buf`, a mutable or atomic slice parameter: its job takes the elements
    /// with [`SimWrite::slice_mut`] or [`SimWrite::atomics`] once the earlier uses of the buffer
    /// are over. The `&mut` says that the launch is the buffer's only user while it holds it.
    pub fn write<T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &mut DeviceBuffer<T>,
    ) -> Result<SimWrite<T>> {
        Ok(self.memory(name, buf)?.register_write())
    }
}
