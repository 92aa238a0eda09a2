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
