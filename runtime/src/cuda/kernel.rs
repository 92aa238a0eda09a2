//! Kernels on a device: loading a kernel's PTX module (with the driver's JIT error log), once
//! per device, encoding the tensor maps of its matrix parameters, and launching it with the
//! parameters the launch collected.

use std::ffi::{c_void, CString};
use std::sync::{Arc, PoisonError};

use cudarc::driver::{sys, CudaContext};

use super::device::CudaDevice;
use super::memory::{order_uses, DeviceMem};
use super::stream::StreamState;
use super::{cuda, driver_error};
use crate::error::{Error, Result};
use crate::spec::KernelSpec;
use crate::tensor_map::{Swizzle, TileElem, TileMapSpec};

/// The value of one PTX parameter of a launch, which [`CudaDevice::launch`] points the driver at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KernelParam {
    /// A parameter of at most 8 bytes (a scalar, an address, a length), in the first bytes.
    Word(u64),
    /// A tensor map (`.param .align 128 .b8 NAME[128]`), boxed: its own 128-byte aligned
    /// storage, which stays put while the list of parameters grows, and keeps the list's
    /// entries small.
    TensorMap(Box<TensorMapParam>),
}

/// The 128 bytes of a `CUtensorMap`, 128-byte aligned as a kernel's tensor-map parameter is.
#[repr(C, align(128))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TensorMapParam(pub(crate) [u64; 16]);

const _: () = assert!(std::mem::size_of::<TensorMapParam>() == 128);
const _: () = assert!(std::mem::size_of::<sys::CUtensorMap>() == 128);

/// A loaded module and the kernel function of one [`KernelSpec`].
pub(crate) struct LoadedKernel {
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
    function: sys::CUfunction,
}

// SAFETY: module and function handles are plain driver handles; the driver API is thread-safe and
// they stay valid on every thread while the module is loaded, which `LoadedKernel` owns (it holds
// the context, and unloads the module only on drop).
unsafe impl Send for LoadedKernel {}

// SAFETY: as for `Send`; `&LoadedKernel` only hands the function handle to `cuLaunchKernel`.
unsafe impl Sync for LoadedKernel {}

impl Drop for LoadedKernel {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `module` was loaded by `CudaDevice::load` in this context and is unloaded
            // only here, once. Kernels are dropped with their device, after its stream was
            // synchronized, so none of its functions is running. Errors cannot be reported here.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

impl CudaDevice {
    /// The kernel of `spec`, loaded into this device's context on first use.
    pub(crate) fn kernel(&self, spec: &'static KernelSpec) -> Result<Arc<LoadedKernel>> {
        let key = std::ptr::from_ref(spec) as usize;
        let mut cache = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kernel) = cache.get(&key) {
            return Ok(Arc::clone(kernel));
        }
        let kernel = Arc::new(self.load(spec)?);
        cache.insert(key, Arc::clone(&kernel));
        Ok(kernel)
    }

    fn load(&self, spec: &'static KernelSpec) -> Result<LoadedKernel> {
        let invalid = |reason: &str| Error::InvalidLaunch {
            kernel: spec.path,
            reason: reason.to_string(),
        };
        let ptx =
            CString::new(spec.ptx).map_err(|_| invalid("its PTX text contains a NUL byte"))?;
        let entry =
            CString::new(spec.entry).map_err(|_| invalid("its entry name contains a NUL byte"))?;
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;

        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [
            log.as_mut_ptr().cast::<c_void>(),
            std::ptr::without_provenance_mut(log.len()),
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `ptx` is a NUL-terminated PTX image that lives across the call; `module` is a
        // valid out-pointer; `options` and `values` both have 2 entries: the error log buffer
        // (`log`, alive and writable for its whole length across the call) and its size, which
        // the driver takes by value in the pointer slot. The context is current on this thread.
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                ptx.as_ptr().cast::<c_void>(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(err) = status.result() {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let log = String::from_utf8_lossy(&log[..end]);
            let Error::Cuda { call, message } = driver_error("cuModuleLoadDataEx", err) else {
                return Err(invalid("the driver rejected its PTX"));
            };
            return Err(Error::Cuda {
                call,
                message: format!(
                    "{message}; loading the PTX of kernel `{}`: {}{}",
                    spec.path,
                    log.trim(),
                    arch_specific_note(spec.ptx, self.compute_capability)
                ),
            });
        }
        // From here on, dropping `kernel` unloads the module.
        let mut kernel = LoadedKernel {
            ctx: Arc::clone(&self.ctx),
            module,
            function: std::ptr::null_mut(),
        };
        // SAFETY: `kernel.module` was just loaded in the current context; `entry` is
        // NUL-terminated and lives across the call; `kernel.function` is a valid out-pointer.
        unsafe { sys::cuModuleGetFunction(&mut kernel.function, kernel.module, entry.as_ptr()) }
            .result()
            .map_err(cuda("cuModuleGetFunction"))?;
        if spec.shared_bytes > 48 * 1024 {
            let bytes = i32::try_from(spec.shared_bytes)
                .map_err(|_| invalid("its dynamic shared memory size does not fit an i32"))?;
            // SAFETY: `kernel.function` is a valid function handle of a loaded module.
            unsafe {
                sys::cuFuncSetAttribute(
                    kernel.function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes,
                )
            }
            .result()
            .map_err(cuda("cuFuncSetAttribute"))?;
        }
        Ok(kernel)
    }

    /// Launches `kernel` on `stream` with `blocks` blocks of `threads` threads, after the earlier
    /// uses of its buffers `uses` (`(memory, written)`) on other streams, and records the launch
    /// as their latest use.
    ///
    /// `params` holds one entry per PTX parameter: an 8-byte word, the value in its first bytes,
    /// or a 128-byte tensor map; the caller checked them against the kernel's spec, which the
    /// compiler emitted with its PTX. The buffers whose addresses are among them (in words or in
    /// tensor maps) are the ones in `uses`; their frees wait for this launch (see the module
    /// docs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        stream: &StreamState,
        kernel: &LoadedKernel,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
        params: &mut [KernelParam],
        uses: &[(&DeviceMem, bool)],
    ) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // The parameters' addresses, on the stack for the usual kernels (no allocation per
        // launch), in a vector beyond that.
        let mut on_stack = [std::ptr::null_mut::<c_void>(); 32];
        let mut on_heap = Vec::new();
        let pointers: &mut [*mut c_void] = match on_stack.get_mut(..params.len()) {
            Some(slots) => slots,
            None => {
                on_heap.resize(params.len(), std::ptr::null_mut());
                &mut on_heap
            }
        };
        for (pointer, param) in pointers.iter_mut().zip(params.iter_mut()) {
            *pointer = match param {
                KernelParam::Word(word) => (word as *mut u64).cast::<c_void>(),
                KernelParam::TensorMap(map) => (&mut **map as *mut TensorMapParam).cast::<c_void>(),
            };
        }
        order_uses(&stream.stream, uses, || {
            // SAFETY: `kernel.function` belongs to a module of this context that stays loaded
            // while the device is alive (the device outlives its streams, which synchronize
            // before they go, and synchronizes its own before unloading). `pointers` has one
            // entry per PTX parameter, each pointing to its own storage in `params`, alive across
            // the call and at least as large and as aligned as the parameter: an 8-byte, 8-aligned
            // word for a parameter of at most 8 bytes, a 128-byte, 128-aligned tensor map for a
            // `.align 128 .b8 [128]` one (the spec the caller checked says which is which); the
            // driver copies the values before returning. Addresses among them (tensor maps hold
            // one too) are the device buffers of `uses`, whose frees `order_uses` orders after
            // this launch. `extra` is null. The stream belongs to this context, which is
            // current.
            unsafe {
                sys::cuLaunchKernel(
                    kernel.function,
                    blocks,
                    1,
                    1,
                    threads,
                    1,
                    1,
                    shared_bytes,
                    stream.stream.cu_stream(),
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(cuda("cuLaunchKernel"))
        })
    }
}

impl CudaDevice {
    /// The tensor map of `spec` (`cuTensorMapEncodeTiled`), which [`TileMapSpec::check`] accepted:
    /// rank 2, innermost dimension first, no interleave, the spec's swizzle, L2 promotion of 128
    /// bytes, and elements past the matrix's edges read as zero (`OOB_FILL_NONE`).
    pub(crate) fn encode_tensor_map(&self, spec: &TileMapSpec) -> Result<Box<TensorMapParam>> {
        use sys::{
            CUtensorMapDataType as Data, CUtensorMapFloatOOBfill as OobFill,
            CUtensorMapInterleave as Interleave, CUtensorMapL2promotion as L2,
            CUtensorMapSwizzle as Swz,
        };
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let data = match spec.elem {
            TileElem::Bf16 => Data::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            TileElem::F16 => Data::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            TileElem::F32 => Data::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        };
        let swizzle = match spec.swizzle {
            Swizzle::None => Swz::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B32 => Swz::CU_TENSOR_MAP_SWIZZLE_32B,
            Swizzle::B64 => Swz::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::B128 => Swz::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let (dims, strides, box_dims, element_strides) = spec.encode_args();
        let address = usize::try_from(spec.address).map_err(|_| Error::Cuda {
            call: "cuTensorMapEncodeTiled",
            message: format!("the address {:#x} does not fit a pointer", spec.address),
        })?;
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        // SAFETY: `map` is a writable, 128-byte aligned `CUtensorMap` (the driver needs 64) that
        // lives across the call; `dims` (2 entries), `strides` (rank - 1 = 1), `box_dims` (2)
        // and `element_strides` (2) are arrays of the lengths rank 2 reads, alive across the
        // call. The driver only stores the address in the map (it is a device address, never
        // dereferenced on the host). The context is current on this thread.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data,
                2,
                std::ptr::without_provenance_mut(address),
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                Interleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                OobFill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
        .result()
        .map_err(cuda("cuTensorMapEncodeTiled"))?;
        Ok(Box::new(TensorMapParam(map.opaque)))
    }
}

/// Why PTX for `sm_90a` (kernels with register budgets: `setmaxnreg`) may not load on a device
/// of compute capability `cc`: architecture-specific PTX runs on compute capability 9.0 only,
/// where plain `sm_90` PTX is also compiled for later devices.
fn arch_specific_note(ptx: &str, cc: (i32, i32)) -> String {
    let specific = ptx.lines().any(|l| l.trim() == ".target sm_90a");
    if !specific || cc == (9, 0) {
        return String::new();
    }
    format!(
        " (the kernel targets sm_90a for its register budgets, which only devices of compute capability 9.0 run, and this one is {}.{}: `#[kernel(.., registers(off))]` makes it plain sm_90)",
        cc.0, cc.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_90a_ptx_on_another_device_says_why_it_may_not_load() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
        assert_eq!(arch_specific_note(ptx, (9, 0)), "");
        assert_eq!(arch_specific_note(".target sm_90\n", (10, 0)), "");
        assert!(arch_specific_note(ptx, (10, 0)).contains(
            "only devices of compute capability 9.0 run, and this one is 10.0: `#[kernel(.., registers(off))]`"
        ));
    }
}
