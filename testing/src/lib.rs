//! Test attributes for gpu-async's own tests (a dev-dependency, never built for users), so that a
//! test summary says what it did not check: a test that needs ptxas or an NVIDIA GPU is
//! `#[ignore = "<reason>"]` where none was found when the test was built (see `build.rs`), and
//! shows up as `test foo ... ignored, <reason>`, never as passed.
//!
//! - `#[needs_ptxas]`: a test that assembles PTX with ptxas, which it gets from
//!   `gpu_async_compiler::ptxas::locate()`. Where ptxas was not found the test is ignored
//!   (`GPU_ASYNC_REQUIRE_PTXAS=1` makes that a build error instead); a `PTXAS` that names nothing
//!   is not an absence: the test runs and fails with the error.
//! - `#[needs_gpu]`: a test that runs on CUDA device 0. Test executables built where there is no
//!   GPU run on a GPU machine with `--include-ignored`; without a device such a run must fail,
//!   which the test's own `Device::cuda(0)` does (`runtime/tests/common/devices.rs`'s `gpu()`).
//! - `#[on_each_device]` on `fn name(dev: Device)` (or `&Device`): the tests `name::simulator`,
//!   always run, and `name::gpu`, a `#[needs_gpu]` test that fails without a device. With
//!   `dev: fn() -> Device` the test makes the device itself, when it is ready to (after taking
//!   a lock, say).
//!
//! `#[needs_ptxas]` and `#[needs_gpu]` add `#[test]` unless another test attribute (such as
//! `#[tokio::test]`) follows them, and keep an `#[ignore]` the test already has.
//!
//! The build script looks again when `PTXAS`, `PATH`, `CUDA_HOME`, `CUDA_PATH`, `VIRTUAL_ENV`,
//! `GPU_ASYNC_REQUIRE_PTXAS`, `LD_LIBRARY_PATH` or `CUDA_VISIBLE_DEVICES` change, or the ptxas it
//! found changes; after installing ptxas or a driver with none of those changed,
//! `cargo clean -p gpu-async-testing` makes it look again.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{parse_macro_input, spanned::Spanned, Attribute, FnArg, ItemFn, Type};

/// Why the tests that need ptxas are ignored; empty when it was found.
const NO_PTXAS: &str = env!("GPU_ASYNC_TESTING_NO_PTXAS");

/// Why the tests that need a GPU are ignored; empty when there was one.
const NO_GPU: &str = env!("GPU_ASYNC_TESTING_NO_GPU");

/// A test that needs ptxas; ignored, with the reason, where it was not found.
#[proc_macro_attribute]
pub fn needs_ptxas(args: TokenStream, item: TokenStream) -> TokenStream {
    needing(args.into(), parse_macro_input!(item as ItemFn), NO_PTXAS).into()
}

/// A test that needs an NVIDIA GPU; ignored, with the reason, where there was none.
#[proc_macro_attribute]
pub fn needs_gpu(args: TokenStream, item: TokenStream) -> TokenStream {
    needing(args.into(), parse_macro_input!(item as ItemFn), NO_GPU).into()
}

/// `fn name(dev: Device)` as two tests: `name::simulator` on the simulator and `name::gpu` on
/// CUDA device 0, which is ignored like a `#[needs_gpu]` test and fails, saying why, when run
/// without a device.
#[proc_macro_attribute]
pub fn on_each_device(args: TokenStream, item: TokenStream) -> TokenStream {
    on_each(args.into(), parse_macro_input!(item as ItemFn))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The last segment of the attribute's path is `test` (`#[test]`, `#[tokio::test]`).
fn is_test(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "test")
}

/// `#[test]` unless the item has a test attribute, and `#[ignore = reason]` when the reason is
/// not empty and the item has no `#[ignore]` of its own.
fn test_attrs(attrs: &[Attribute], reason: &str) -> TokenStream2 {
    let test = (!attrs.iter().any(is_test)).then(|| quote!(#[::core::prelude::v1::test]));
    let ignore = (!reason.is_empty() && !attrs.iter().any(|a| a.path().is_ident("ignore")))
        .then(|| quote!(#[ignore = #reason]));
    quote!(#test #ignore)
}

fn needing(args: TokenStream2, item: ItemFn, reason: &str) -> TokenStream2 {
    if !args.is_empty() {
        return syn::Error::new(args.span(), "this attribute takes no arguments")
            .into_compile_error();
    }
    if let Some(arg) = item.sig.inputs.first() {
        return syn::Error::new(arg.span(), "a test takes no arguments").into_compile_error();
    }
    let attrs = test_attrs(&item.attrs, reason);
    quote!(#attrs #item)
}

fn on_each(args: TokenStream2, item: ItemFn) -> syn::Result<TokenStream2> {
    if !args.is_empty() {
        return Err(syn::Error::new(
            args.span(),
            "this attribute takes no arguments",
        ));
    }
    let sig = &item.sig;
    if let Some(asyncness) = sig.asyncness {
        return Err(syn::Error::new(
            asyncness.span(),
            "an async fn cannot be a plain test",
        ));
    }
    let mut inputs = sig.inputs.iter();
    let (Some(FnArg::Typed(dev)), None) = (inputs.next(), inputs.next()) else {
        return Err(syn::Error::new(
            sig.inputs.span(),
            "expected one argument, the device: `dev: Device`, `dev: &Device` or \
             `dev: fn() -> Device`",
        ));
    };
    let gpu = quote! {
        ::gpu_async::Device::cuda(0)
            .unwrap_or_else(|e| ::core::panic!("this test needs an NVIDIA GPU: {e}"))
    };
    let (sim, gpu) = match &*dev.ty {
        Type::Reference(_) => (quote!(&::gpu_async::Device::simulator()), quote!(&#gpu)),
        Type::BareFn(_) => (quote!(::gpu_async::Device::simulator), quote!(|| #gpu)),
        _ => (quote!(::gpu_async::Device::simulator()), gpu),
    };
    let name = &sig.ident;
    let output = &sig.output;
    let gpu_attrs = test_attrs(&[], NO_GPU);
    Ok(quote! {
        #item

        mod #name {
            #[allow(unused_imports)]
            use super::*;

            #[::core::prelude::v1::test]
            fn simulator() #output {
                super::#name(#sim)
            }

            #gpu_attrs
            fn gpu() #output {
                super::#name(#gpu)
            }
        }
    })
}
