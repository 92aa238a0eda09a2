//! What the compiler's integration tests share.

use gpu_async_compiler::{compile, CompiledKernel};
use proc_macro2::TokenStream;

/// The one kernel of `module`, which must compile.
pub fn one(module: TokenStream) -> CompiledKernel {
    let mut kernels = match compile(module) {
        Ok(k) => k,
        Err(d) => panic!("does not compile: {:#?}", d.messages()),
    };
    assert_eq!(kernels.len(), 1);
    kernels.remove(0)
}

/// The errors of `module`, which must not compile.
#[allow(dead_code)]
pub fn errors(module: TokenStream) -> Vec<String> {
    match compile(module) {
        Ok(_) => panic!("compiles, but an error was expected"),
        Err(d) => d.messages(),
    }
}

/// `module` does not compile, and one of its errors contains `needle`.
#[allow(dead_code)]
pub fn assert_error(module: TokenStream, needle: &str) {
    let errs = errors(module);
    assert!(
        errs.iter().any(|e| e.contains(needle)),
        "no error containing {needle:?} in {errs:#?}"
    );
}

/// `k`'s PTX assembles with ptxas (found as `gpu_async_compiler::ptxas::locate` finds it),
/// without warnings and without spilling.
#[allow(dead_code)]
pub fn assert_assembles_without_spills(k: &CompiledKernel) {
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    match gpu_async_compiler::ptxas::assemble(&ptxas, &k.name, &k.ptx) {
        Ok(r) => assert!(
            r.resources.contains("0 bytes spill stores"),
            "{}",
            r.resources
        ),
        Err(log) => panic!("ptxas rejected `{}`:\n{log}", k.name),
    }
}
