//! The simulator's side of a launch's buffer parameters: the host views of the buffers that the
//! generated code hands the kernel's shadow code. Here rather than in the simulator, which knows
//! nothing of buffers, as [`CudaArgs`](super::CudaArgs) is the CUDA side.

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::sim::{AtomicScalar, AtomicView, SimTarget};
use crate::spec::KernelScalar;

impl SimTarget {
    fn check_device<T: KernelScalar>(&self, name: &str, buf: &DeviceBuffer<T>) -> Result<()> {
        if buf.device_id() != self.device_id {
            return Err(Error::InvalidLaunch {
                kernel: self.spec.path,
                reason: format!(
                    "the buffer passed as `{name}` belongs to another device; upload it to the launch's device"
                ),
            });
        }
        Ok(())
    }

    fn not_simulated(&self, name: &str) -> Error {
        Error::InvalidLaunch {
            kernel: self.spec.path,
            reason: format!("the buffer passed as `{name}` does not live in the simulator"),
        }
    }

    /// The host view of a read-only slice parameter.
    pub fn view<'a, T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
    ) -> Result<&'a [T]> {
        self.check_device(name, buf)?;
        buf.host_slice().ok_or_else(|| self.not_simulated(name))
    }

    /// The host view of a mutable slice parameter.
    pub fn view_mut<'a, T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> Result<&'a mut [T]> {
        self.check_device(name, buf)?;
        let err = self.not_simulated(name);
        buf.host_slice_mut().ok_or(err)
    }

    /// The host view of an atomic slice parameter.
    pub fn view_atomic<'a, T: AtomicScalar>(
        &self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> Result<AtomicView<'a, T>> {
        let values = self.view_mut(name, buf)?;
        Ok(AtomicView::new(values))
    }
}
