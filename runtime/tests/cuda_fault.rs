//! A kernel that faults comes back as an `Err` from its launch future instead of hanging.
//! Its own test binary: a fault poisons the process's CUDA context. Needs a GPU.

#[path = "common/devices.rs"]
mod devices;

use gpu_async::__private::launch;
use gpu_async::{block_on, Error, Grid, KernelSpec};
use gpu_async_testing::needs_gpu;

const FAULT_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry fault()
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    mov.u64 %rd1, 8;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
"#;

static FAULT: KernelSpec = KernelSpec {
    entry: "fault",
    path: "cuda_fault::fault",
    ptx: FAULT_PTX,
    warps: 1,
    shared_bytes: 0,
    params: &[],
    roles: &[],
    sites: &[],
    abort_protocol: false,
};

#[needs_gpu]
fn kernel_fault_is_an_error_not_a_hang() {
    let device = devices::gpu();
    let r = block_on(launch(&device, &FAULT, Grid::blocks(1), |_| Ok(())));
    eprintln!("fault: {r:?}");
    assert!(
        matches!(
            r,
            Err(Error::Cuda {
                call: "kernel execution",
                ..
            })
        ),
        "{r:?}"
    );
}
