//! The parameters of a CUDA launch: what the generated code pushes, the abort protocol's hidden
//! parameters appended after them, and the check of both against the kernel's signature.

use std::marker::PhantomData;

use crate::abort::hidden_params;
use crate::buffer::DeviceBuffer;
use crate::cuda::{DeviceMem, LaunchIds};
use crate::error::{Error, Result};
use crate::spec::{KernelScalar, KernelSpec, ParamKind, HIDDEN_PARAMS};

/// The PTX parameters of a CUDA launch, collected in declaration order.
///
/// Buffers pushed here stay borrowed for `'a`, the lifetime of the [`Launch`](crate::Launch), and
/// the launch is recorded in each of them as its latest use (see [`DeviceBuffer`]). For a kernel of
/// the abort protocol, [`launch_on`](super::launch_on) appends the [`HIDDEN_PARAMS`] itself after
/// the generated code has pushed the kernel's own parameters.
pub struct CudaArgs<'a> {
    kernel: &'static str,
    device_id: u64,
    /// One 8-byte slot per PTX parameter, the value in its first bytes.
    pub(super) slots: Vec<u64>,
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
    pub(super) fn new(spec: &'static KernelSpec, device_id: u64) -> CudaArgs<'a> {
        CudaArgs {
            kernel: spec.path,
            device_id,
            slots: Vec::with_capacity(2 * spec.params.len() + HIDDEN_PARAMS),
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
        self.slots.push(u64::from_ne_bytes(slot));
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
            _ => {
                return Err(Error::InvalidLaunch {
                    kernel: self.kernel,
                    reason: format!(
                        "the buffer passed as `{name}` belongs to another device; allocate it \
                         with the device the kernel is launched on"
                    ),
                })
            }
        };
        self.slots.push(mem.address());
        self.slots.push(buf.len() as u64);
        self.uses.push((mem, mutable));
        self.kinds.push(ParamKind::Slice {
            elem: T::TYPE,
            mutable,
        });
        Ok(())
    }

    /// Appends the abort protocol's hidden parameters, after the kernel's own.
    pub(super) fn push_hidden(&mut self, params: [u64; HIDDEN_PARAMS]) {
        self.slots.extend(params);
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
        if self.slots.len() != expected
            || self.hidden != hidden
            || self.kinds.len() != spec.params.len()
        {
            return Err(mismatch(format!(
                "{} PTX parameters were passed ({} of them hidden ones of the abort protocol) \
                 but the kernel takes {expected} ({hidden} hidden); the generated launch code is \
                 out of date with the kernel, rebuild the crate",
                self.slots.len(),
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
                _ => false,
            };
            if !compatible {
                return Err(mismatch(format!(
                    "parameter `{}` is declared as {:?} but was passed as {pushed:?}",
                    param.name, param.kind
                )));
            }
        }
        Ok(())
    }
}

/// PTX parameters taken by one kernel parameter: 1 for a scalar, 2 (address, length) for a slice.
fn ptx_param_count(kind: ParamKind) -> usize {
    match kind {
        ParamKind::Scalar(_) => 1,
        ParamKind::Slice { .. } => 2,
    }
}
