//! The `#[gpu_async]` attribute. This crate is a thin entry: the compiler is the
//! `gpu-async-compiler` library. Use it through the `gpu-async` crate, which re-exports it.

use proc_macro::TokenStream;

/// Compiles an inline module of GPU kernels written as `async fn`s.
///
/// Each `#[kernel(warps = N)]` async fn becomes a PTX kernel whose roles (`on_warps` calls in its
/// `join!`) run on their own warps and talk through typed shared-memory channels. Next to each
/// kernel fn, the macro adds a module of the same name with the kernel's `PTX`, `IR`, `SPEC` and
/// a typed `launch` function. See the `gpu-async` crate for the programming model.
#[proc_macro_attribute]
pub fn gpu_async(attr: TokenStream, item: TokenStream) -> TokenStream {
    gpu_async_compiler::expand(attr.into(), item.into()).into()
}
