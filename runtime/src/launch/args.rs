//! The parameters of a CUDA launch: what the generated code pushes, the abort protocol's hidden
//! parameters appended after them, and the check of both against the kernel's signature.

use std::marker::PhantomData;

use crate::abort::hidden_params;
use crate::buffer::DeviceBuffer;
use crate::cuda::{CudaDevice, DeviceMem, KernelParam, LaunchIds};
use crate::error::{Error, Result};
use crate::matrix::{checked_tile_maps, MatrixView, MatrixViewMut, TileScalar};
use crate::spec::{KernelScalar, KernelSpec, ParamKind, HIDDEN_PARAMS};

/// The PTX parameters of a CUDA launch, collected in declaration order.
///
/// Buffers pushed here stay borrowed for `'a`, the lifetime of the [`Launch`](crate::Launch), and
/// the launch is recorded in each of them as its latest use (see [`DeviceBuffer`]). For a kernel of
/// the abort protocol, [`launch_on`](super::launch_on) appends the [`HIDDEN_PARAMS`] itself after
/// the generated code has pushed the kernel's own parameters.
pub struct CudaArgs<'a> {
    kernel: &'static str,
    spec: &'static KernelSpec,
    device_id: u64,
    /// The launch's device, which encodes the tensor maps of matrix parameters (`None` in tests).
    gpu: Option<&'a CudaDevice>,
    /// One entry per PTX parameter: an 8-byte word (the value in its first bytes), or a
    /// 128-byte tensor map in storage of its own.
    pub(super) params: Vec<KernelParam>,
    /// The kernel parameter each group of slots came from (the hidden parameters have none).
    pub(super) kinds: Vec<ParamKind>,
    /// How many of the slots are the abort protocol's hidden parameters (at the end).
    hidden: usize,
    /// A problem found while collecting that `scalar` cannot return.
    error: Option<Error>,
    /// The buffers' memory, and whether the kernel may write it.
    pub(super) uses: Vec<(&'a DeviceMem, bool)>,
    _borrows: PhantomData<&'a mut ()>,
}

impl<'a> CudaArgs<'a> {
    /// The parameters of a launch of `spec` on the device `device_id`, which is `gpu`.
    pub(super) fn new(
        spec: &'static KernelSpec,
        device_id: u64,
        gpu: Option<&'a CudaDevice>,
    ) -> CudaArgs<'a> {
        CudaArgs {
            kernel: spec.path,
            spec,
            device_id,
            gpu,
            params: Vec::with_capacity(2 * spec.params.len() + HIDDEN_PARAMS),
            kinds: Vec::with_capacity(spec.params.len()),
            hidden: 0,
            error: None,
            uses: Vec::with_capacity(spec.params.len()),
            _borrows: PhantomData,
        }
    }

    /// Pushes a scalar parameter: one PTX parameter holding [`KernelScalar::param_bytes`].
    pub fn scalar<T: KernelScalar>(&mut self, value: T) {
        let bytes = value.param_bytes();
        let mut slot = [0u8; 8];
        match slot.get_mut(..bytes.len()) {
            Some(dst) => dst.copy_from_slice(&bytes),
            None => {
                self.error.get_or_insert(Error::InvalidLaunch {
                    kernel: self.kernel,
                    reason: format!(
                        "a {:?} parameter takes {} bytes; at most 8 are supported",
                        T::TYPE,
                        bytes.len()
                    ),
                });
            }
        }
        self.params
            .push(KernelParam::Word(u64::from_ne_bytes(slot)));
        self.kinds.push(ParamKind::Scalar(T::TYPE));
    }

    /// Pushes a `&[T]` parameter: two PTX parameters, the buffer's address and its length.
    pub fn slice<T: KernelScalar>(
        &mut self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
    ) -> Result<()> {
        self.push_buffer(name, buf, false)
    }

    /// Pushes a `&mut [T]` parameter: two PTX parameters, the buffer's address and its length.
    pub fn slice_mut<T: KernelScalar>(
        &mut self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.push_buffer(name, buf, true)
    }

    fn push_buffer<T: KernelScalar>(
        &mut self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
        mutable: bool,
    ) -> Result<()> {
        let mem = match buf.cuda_mem() {
            Some(mem) if buf.device_id() == self.device_id => mem,
            _ => return Err(self.foreign_buffer(name)),
        };
        self.params.push(KernelParam::Word(mem.address()));
        self.params.push(KernelParam::Word(buf.len() as u64));
        self.uses.push((mem, mutable));
        self.kinds.push(ParamKind::Slice {
            elem: T::TYPE,
            mutable,
        });
        Ok(())
    }

    /// The error of a buffer passed as `name` that is not memory of the launch's device.
    fn foreign_buffer(&self, name: &str) -> Error {
        Error::InvalidLaunch {
            kernel: self.kernel,
            reason: format!(
                "the buffer passed as `{name}` belongs to another device; allocate it with the \
                 device the kernel is launched on"
            ),
        }
    }

    /// Pushes a `&Matrix<T>` parameter: its address, rows and columns, then one tensor map
    /// (`CUtensorMap`, 128 bytes) per box the kernel's spec declares for it
    /// ([`ParamKind::Matrix`]), in order.
    ///
    /// Each box's map is checked before it is encoded ([`TileMapSpec::check`]): a matrix the
    /// driver would reject fails with [`Error::TensorMap`], naming `name` and the rule. A buffer
    /// of another device or of the simulator fails with [`Error::InvalidLaunch`], as for a
    /// slice, and so does a parameter the kernel does not declare as a matrix of `T` (generated
    /// code out of date). The buffer is read by the launch.
    ///
    /// [`TileMapSpec::check`]: crate::tensor_map::TileMapSpec::check
    pub fn matrix<T: TileScalar>(
        &mut self,
        name: &'static str,
        m: MatrixView<'a, T>,
    ) -> Result<()> {
        self.push_matrix(name, m.buffer(), (m.rows(), m.cols()), false)
    }

    /// Pushes a `&mut Matrix<T>` parameter, as [`CudaArgs::matrix`] pushes a `&Matrix<T>`;
    /// the buffer is written by the launch.
    pub fn matrix_mut<T: TileScalar>(
        &mut self,
        name: &'static str,
        m: MatrixViewMut<'a, T>,
    ) -> Result<()> {
        let (rows, cols) = (m.rows(), m.cols());
        self.push_matrix(name, m.into_buffer(), (rows, cols), true)
    }

    fn push_matrix<T: TileScalar>(
        &mut self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
        (rows, cols): (usize, usize),
        mutable: bool,
    ) -> Result<()> {
        let index = self.kinds.len();
        let declared = self.spec.params.get(index).map(|p| p.kind);
        let boxes = match declared {
            Some(ParamKind::Matrix {
                elem,
                mutable: m,
                boxes,
            }) if elem == T::TYPE && m == mutable => boxes,
            _ => {
                return Err(Error::InvalidLaunch {
                    kernel: self.kernel,
                    reason: format!(
                        "a {}{} matrix was passed as `{name}`, parameter {index} of the launch, \
                         which the kernel declares as {declared:?}; the generated launch code is \
                         out of date with the kernel, rebuild the crate",
                        if mutable { "mutable " } else { "" },
                        T::TYPE
                    ),
                })
            }
        };
        let (gpu, mem) = match (self.gpu, buf.cuda_mem()) {
            (Some(gpu), Some(mem)) if buf.device_id() == self.device_id => (gpu, mem),
            _ => return Err(self.foreign_buffer(name)),
        };
        let specs = checked_tile_maps::<T>(self.kernel, name, (rows, cols), boxes, mem.address())?;
        let maps = specs
            .iter()
            .map(|spec| gpu.encode_tensor_map(spec))
            .collect::<Result<Vec<_>>>()?;
        self.params.extend([
            KernelParam::Word(mem.address()),
            KernelParam::Word(rows as u64),
            KernelParam::Word(cols as u64),
        ]);
        self.params
            .extend(maps.into_iter().map(KernelParam::TensorMap));
        self.uses.push((mem, mutable));
        self.kinds.push(ParamKind::Matrix {
            elem: T::TYPE,
            mutable,
            boxes,
        });
        Ok(())
    }

    /// Appends the abort protocol's hidden parameters, after the kernel's own.
    pub(super) fn push_hidden(&mut self, params: [u64; HIDDEN_PARAMS]) {
        self.params.extend(params.map(KernelParam::Word));
        self.hidden += HIDDEN_PARAMS;
    }

    /// Completes the parameters of a launch with the given ids (the hidden parameters, when the
    /// kernel follows the abort protocol) and checks them against the kernel's signature.
    pub(super) fn finish(
        &mut self,
        spec: &KernelSpec,
        ids: LaunchIds,
        watchdog_ns: u64,
    ) -> Result<()> {
        if spec.abort_protocol {
            self.push_hidden(hidden_params(
                ids.abort_word,
                ids.launch_id,
                ids.record,
                watchdog_ns,
            ));
        }
        self.check(spec)
    }

    /// Checks the collected parameters against the kernel's signature: the kernel's own
    /// parameters, then the [`HIDDEN_PARAMS`] when it follows the abort protocol.
    pub(super) fn check(&self, spec: &KernelSpec) -> Result<()> {
        if let Some(err) = &self.error {
            return Err(Error::InvalidLaunch {
                kernel: spec.path,
                reason: err.to_string(),
            });
        }
        let hidden = if spec.abort_protocol {
            HIDDEN_PARAMS
        } else {
            0
        };
        let expected: usize = spec
            .params
            .iter()
            .map(|p| ptx_param_count(p.kind))
            .sum::<usize>()
            + hidden;
        let mismatch = |reason: String| Error::InvalidLaunch {
            kernel: spec.path,
            reason,
        };
        if self.params.len() != expected
            || self.hidden != hidden
            || self.kinds.len() != spec.params.len()
        {
            return Err(mismatch(format!(
                "{} PTX parameters were passed ({} of them hidden ones of the abort protocol) \
                 but the kernel takes {expected} ({hidden} hidden); the generated launch code is \
                 out of date with the kernel, rebuild the crate",
                self.params.len(),
                self.hidden
            )));
        }
        for (param, &pushed) in spec.params.iter().zip(&self.kinds) {
            let compatible = match (param.kind, pushed) {
                (ParamKind::Scalar(want), ParamKind::Scalar(got)) => want == got,
                (
                    ParamKind::Slice {
                        elem: want,
                        mutable: want_mut,
                    },
                    ParamKind::Slice {
                        elem: got,
                        mutable: got_mut,
                    },
                ) => want == got && (got_mut || !want_mut),
                (
                    ParamKind::Matrix {
                        elem: want,
                        mutable: want_mut,
                        boxes: want_boxes,
                    },
                    ParamKind::Matrix {
                        elem: got,
                        mutable: got_mut,
                        boxes: got_boxes,
                    },
                ) => want == got && want_mut == got_mut && want_boxes == got_boxes,
                _ => false,
            };
            if !compatible {
                return Err(mismatch(format!(
                    "parameter `{}` is declared as {:?} but was passed as {pushed:?}",
                    param.name, param.kind
                )));
            }
        }
        // Each PTX parameter's storage is as large as the parameter: a tensor map where the
        // kernel takes one (the launch hands the driver a pointer to each, and the driver
        // copies as many bytes as the parameter has), a word everywhere else.
        let maps = spec.params.iter().flat_map(|p| {
            let count = ptx_param_count(p.kind);
            let maps = tensor_map_count(p.kind);
            (0..count).map(move |i| i >= count - maps)
        });
        let hidden_maps = std::iter::repeat_n(false, hidden);
        for (i, (param, map)) in self.params.iter().zip(maps.chain(hidden_maps)).enumerate() {
            if matches!(param, KernelParam::TensorMap(_)) != map {
                return Err(mismatch(format!(
                    "PTX parameter {i} is {} but was passed as {}",
                    if map { "a tensor map" } else { "a word" },
                    if map { "a word" } else { "a tensor map" }
                )));
            }
        }
        Ok(())
    }
}

/// The tensor maps among the PTX parameters of one kernel parameter (at their end).
fn tensor_map_count(kind: ParamKind) -> usize {
    match kind {
        ParamKind::Scalar(_) | ParamKind::Slice { .. } => 0,
        ParamKind::Matrix { boxes, .. } => boxes.len(),
    }
}

/// PTX parameters taken by one kernel parameter: 1 for a scalar, 2 (address, length) for a
/// slice, 3 (address, rows, columns) and one tensor map per box for a matrix.
pub(super) fn ptx_param_count(kind: ParamKind) -> usize {
    match kind {
        ParamKind::Scalar(_) => 1,
        ParamKind::Slice { .. } => 2,
        ParamKind::Matrix { boxes, .. } => 3 + boxes.len(),
    }
}
