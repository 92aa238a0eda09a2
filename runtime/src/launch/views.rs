//! The simulator's side of a launch's buffer parameters: the uses of the buffers that the
//! generated code registers when it launches and moves into the kernel's job. Here rather than in
//! the simulator, which knows nothing of buffers, as [`CudaArgs`](super::CudaArgs) is the CUDA
//! side.

use crate::buffer::DeviceBuffer;
use crate::device::Matrix;
use crate::error::{Error, Result};
use crate::matrix::{checked_tile_maps, MatrixView, MatrixViewMut, TileScalar};
use crate::sim::{SimMem, SimRead, SimTarget, SimWrite};
use crate::spec::{KernelScalar, ParamKind};
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

    /// The launch reads `m`, a matrix parameter (`&Matrix<T>`): its job takes the matrix with
    /// [`SimMatrixRead::matrix`] once the earlier writes of the buffer are over.
    ///
    /// Checks the matrix against the tensor map of every box the kernel declares for the
    /// parameter, as a CUDA launch does ([`Error::TensorMap`]; the simulator has no addresses,
    /// so only the address's alignment goes unchecked, which a whole buffer always meets).
    pub fn read_matrix<T: TileScalar>(
        &self,
        name: &'static str,
        m: MatrixView<'_, T>,
    ) -> Result<SimMatrixRead<T>> {
        self.matrix_boxes::<T>(name, (m.rows(), m.cols()), false)?;
        let memory = self.memory(name, m.buffer())?;
        Ok(SimMatrixRead {
            read: memory.register_read(),
            name,
            rows: m.rows(),
            cols: m.cols(),
        })
    }

    /// The launch writes `m`, a matrix parameter `&mut Matrix<T>`: its job takes the matrix with
    /// [`SimMatrixWrite::matrix`] once the earlier uses of the buffer are over. Checked as
    /// [`SimTarget::read_matrix`] checks a matrix it reads.
    pub fn write_matrix<T: TileScalar>(
        &self,
        name: &'static str,
        mut m: MatrixViewMut<'_, T>,
    ) -> Result<SimMatrixWrite<T>> {
        let (rows, cols) = (m.rows(), m.cols());
        self.matrix_boxes::<T>(name, (rows, cols), true)?;
        let memory = self.memory(name, m.buffer())?;
        Ok(SimMatrixWrite {
            write: memory.register_write(),
            name,
            rows,
            cols,
        })
    }

    /// Checks a matrix passed as `name` against the kernel's declaration of the parameter and
    /// the tensor map of each box it declares.
    fn matrix_boxes<T: TileScalar>(
        &self,
        name: &'static str,
        (rows, cols): (usize, usize),
        mutable: bool,
    ) -> Result<()> {
        let declared = self.spec.params.iter().find(|p| p.name == name);
        let boxes = match declared.map(|p| p.kind) {
            Some(ParamKind::Matrix {
                elem,
                mutable: m,
                boxes,
            }) if elem == T::TYPE && m == mutable => boxes,
            kind => {
                return Err(Error::InvalidLaunch {
                    kernel: self.spec.path,
                    reason: format!(
                        "a {}{} matrix was passed as `{name}`, which the kernel declares as \
                         {kind:?}; the generated launch code is out of date with the kernel, \
                         rebuild the crate",
                        if mutable { "mutable " } else { "" },
                        T::TYPE
                    ),
                })
            }
        };
        checked_tile_maps::<T>(self.spec.path, name, (rows, cols), boxes, 0)?;
        Ok(())
    }
}

/// A read of a matrix parameter by a submitted simulator job: the job turns it into the
/// kernel's [`Matrix`] with [`SimMatrixRead::matrix`] when it runs.
pub struct SimMatrixRead<T: TileScalar> {
    read: SimRead<T>,
    name: &'static str,
    rows: usize,
    cols: usize,
}

impl<T: TileScalar> SimMatrixRead<T> {
    /// Waits for the earlier writes of the buffer, then shares its elements as the kernel's
    /// `&Matrix<T>` argument until dropped.
    pub fn matrix(self) -> Matrix<T> {
        Matrix::new(self.name, self.read.slice(), self.rows, self.cols)
    }
}

/// A write of a matrix parameter (`&mut Matrix<T>`) by a submitted simulator job: the job turns
/// it into the kernel's [`Matrix`] with [`SimMatrixWrite::matrix`] when it runs.
pub struct SimMatrixWrite<T: TileScalar> {
    write: SimWrite<T>,
    name: &'static str,
    rows: usize,
    cols: usize,
}

impl<T: TileScalar> SimMatrixWrite<T> {
    /// Waits for the earlier uses of the buffer, then lends its elements as the kernel's
    /// `&mut Matrix<T>` argument until dropped.
    pub fn matrix(self) -> Matrix<T> {
        Matrix::new_mut(self.name, self.write.slice_mut(), self.rows, self.cols)
    }
}
