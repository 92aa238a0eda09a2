//! Decides, when this crate is built, what the tests that use its attributes can count on: ptxas
//! (searched for as `gpu_async_compiler::ptxas::locate` does, through the same file) and an
//! NVIDIA GPU (the CUDA driver library loads, `cuInit` succeeds and reports a device). Each one
//! missing becomes the reason the attributes write into `#[ignore = "..."]`, handed to the crate
//! as an environment variable (empty when nothing is missing).
//!
//! With `GPU_ASYNC_REQUIRE_PTXAS` set (to anything but `0`), ptxas not found is a build error.
//! The decision is made again when a variable it reads changes, or the ptxas it found changes.

#[allow(dead_code)]
#[path = "../macros/compiler/src/ptxas/search.rs"]
mod search;

use search::NotFound;

fn main() {
    for var in [
        "PTXAS",
        "PATH",
        "CUDA_HOME",
        "CUDA_PATH",
        "VIRTUAL_ENV",
        "GPU_ASYNC_REQUIRE_PTXAS",
        "LD_LIBRARY_PATH",
        "CUDA_VISIBLE_DEVICES",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../macros/compiler/src/ptxas/search.rs");

    let require = std::env::var("GPU_ASYNC_REQUIRE_PTXAS")
        .ok()
        .filter(|v| !v.is_empty() && v != "0");
    let no_ptxas = match search::search(&search::Env::of_this_process()) {
        Ok(ptxas) => {
            println!("cargo:rerun-if-changed={}", ptxas.display());
            String::new()
        }
        Err(e) if require.is_some() => {
            eprintln!(
                "GPU_ASYNC_REQUIRE_PTXAS={} makes ptxas required: {e}",
                require.unwrap_or_default()
            );
            std::process::exit(1);
        }
        Err(NotFound::Nowhere) => format!(
            "needs ptxas, which was not found ({}); {}",
            search::LOOKED_IN,
            search::INSTALL
        ),
        // A PTXAS that names nothing is a mistake to report, not an absence: the tests run and
        // fail with the error.
        Err(NotFound::BadPtxasVar { .. }) => String::new(),
    };
    println!("cargo:rustc-env=GPU_ASYNC_TESTING_NO_PTXAS={no_ptxas}");

    let no_gpu = match no_gpu() {
        None => String::new(),
        Some(why) => format!(
            "needs an NVIDIA GPU (none where this was built: {why}); where there is one, run \
             with `-- --include-ignored`"
        ),
    };
    println!("cargo:rustc-env=GPU_ASYNC_TESTING_NO_GPU={no_gpu}");
}

/// Why no NVIDIA GPU can be used here, or `None` when one can.
fn no_gpu() -> Option<String> {
    let names: &[&str] = if cfg!(windows) {
        &["nvcuda.dll"]
    } else {
        &["libcuda.so.1", "libcuda.so"]
    };
    // SAFETY: loading a library runs its initialisers; the CUDA driver library is made to be
    // loaded this way (the runtime loads it the same way, through cudarc).
    let Some(lib) = names
        .iter()
        .find_map(|name| unsafe { libloading::Library::new(*name) }.ok())
    else {
        return Some(format!("{} does not load", names[0]));
    };
    type CuInit = unsafe extern "C" fn(flags: u32) -> i32;
    type CuDeviceGetCount = unsafe extern "C" fn(count: *mut i32) -> i32;
    // SAFETY: the driver API's signatures, `CUresult cuInit(unsigned int)` and
    // `CUresult cuDeviceGetCount(int *)` (`CUresult` is a C enum, an `int`); `count` points to an
    // `i32` that outlives the call.
    unsafe {
        let (Ok(init), Ok(device_count)) = (
            lib.get::<CuInit>(b"cuInit"),
            lib.get::<CuDeviceGetCount>(b"cuDeviceGetCount"),
        ) else {
            return Some("the driver library lacks cuInit or cuDeviceGetCount".to_string());
        };
        let status = init(0);
        if status != 0 {
            return Some(format!("cuInit failed (CUresult {status})"));
        }
        let mut count = 0i32;
        let status = device_count(&mut count);
        if status != 0 {
            return Some(format!("cuDeviceGetCount failed (CUresult {status})"));
        }
        if count < 1 {
            return Some("the driver reports no device".to_string());
        }
    }
    None
}
