//! # gpu-async-compiler
//!
//! The compiler behind `#[gpu_async]`, as a plain library over `proc_macro2` so that every phase
//! can be unit-tested, snapshot-tested and driven by tools.
//!
//! The data every phase shares sits at the crate root: [`target`] (the facts of sm_90),
//! [`types`] (the kernel language's types), [`tir`] (the typed IR and the checked program),
//! [`ir`] (the role/channel IR) and [`diag`] (collected errors). The phases, one folder each, in
//! pipeline order; each imports only the data modules and the phases before it:
//!
//! 1. [`parse`]: the module's items, sorted into kernels, helpers, constants and uses.
//! 2. [`check`]: name resolution, type inference and rejection of what the kernel language does
//!    not have, producing the typed IR ([`tir`]) and editing the shadow code.
//! 3. [`lower`]: the typed IR of each kernel to the role/channel IR ([`ir`]).
//! 4. [`licm`]: loop invariants computed once, before their loops.
//! 5. [`bounds`]: the checks proven never to fire (a tile's slice bounds), removed.
//! 6. [`registers`]: the roles' register budgets and the blocks per SM registers are sized for.
//! 7. [`verify`]: the IR's invariants, before anything is emitted; only a kernel it verified
//!    ([`verify::Verified`]) reaches the writer.
//! 8. [`ptx`]: the PTX writer.
//! 9. [`shadow`]: the Rust the macro expands to: the shadow code and the typed launchers.
//!
//! What the generated code and the runtime exchange (scalar and parameter kinds, the hidden
//! parameters, the failure record) is defined once, in the `gpu-async-wire` crate.
//!
//! Errors are collected across phases ([`diag::Diagnostics`]), each on the user's own span, and
//! the expansion always contains something, so that the rest of the crate keeps type-checking.

pub mod bounds;
pub mod check;
pub mod diag;
pub mod ir;
pub mod licm;
pub mod lower;
pub mod parse;
pub mod ptx;
pub mod ptxas;
pub mod registers;
pub mod shadow;
pub mod target;
pub mod tir;
pub mod types;
pub mod verify;

use proc_macro2::TokenStream;
use quote::quote;

use diag::Diagnostics;

/// One kernel, compiled.
pub struct CompiledKernel {
    /// The kernel's name.
    pub name: String,
    /// Its role/channel IR.
    pub ir: ir::Kernel,
    /// The IR as text.
    pub ir_text: String,
    /// The PTX module.
    pub ptx: String,
    /// The PTX module with tracing: the same kernel, recording its roles' runs, waits and copies
    /// for a traced launch (see [`ptx::write_kernel_traced`]).
    pub ptx_traced: String,
    /// Why the kernel has no register budgets (`ir.registers` is `None`), in words.
    pub registers_note: Option<String>,
}

/// Compiles the kernels of a `#[gpu_async]` module given as tokens (`mod name { ... }`), without
/// expanding it: for tests and tools.
pub fn compile(module: TokenStream) -> Result<Vec<CompiledKernel>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let item: syn::ItemMod = match syn::parse2(module) {
        Ok(m) => m,
        Err(e) => {
            diags.push(e);
            return Err(diags);
        }
    };
    let (_, _, kernels) = compile_module(item, &mut diags);
    if diags.is_empty() {
        Ok(kernels)
    } else {
        Err(diags)
    }
}

fn compile_module(
    item: syn::ItemMod,
    diags: &mut Diagnostics,
) -> (parse::Module, tir::Program, Vec<CompiledKernel>) {
    let mut module = parse::parse_module(item, diags);
    let program = check::check_module(&mut module, diags);
    let mut kernels = Vec::new();
    if !diags.is_empty() {
        return (module, program, kernels);
    }
    for &id in &program.kernels {
        let f = program.function(id);
        let Some(mut kernel) = lower::lower_kernel(&program, id, diags) else {
            continue;
        };
        licm::hoist_loop_invariants(&mut kernel);
        bounds::remove_proven_checks(&mut kernel);
        let options = kernel_options(&module, &f.name);
        let min_blocks = options.and_then(|o| o.min_blocks_per_sm);
        let Some(min_blocks_per_sm) = registers::occupancy(&kernel, min_blocks, diags) else {
            continue;
        };
        kernel.min_blocks_per_sm = min_blocks_per_sm;
        let registers_attr = options.and_then(|o| o.registers.as_ref());
        let registers_note = match registers::plan(&kernel, registers_attr, min_blocks, diags) {
            registers::Plan::Budgets(b) => {
                kernel.registers = Some(b);
                None
            }
            registers::Plan::Uniform(why) => {
                if let Err(message) = registers::accumulators_fit(&kernel) {
                    diags.error(f.span, message);
                    continue;
                }
                Some(why)
            }
            registers::Plan::Invalid => continue,
        };
        let verified = match verify::verify(&kernel) {
            Ok(verified) => verified,
            Err(problems) => {
                let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
                diags.error(
                    f.span,
                    format!(
                        "internal compiler error: the IR of `{}` is invalid ({}); please report this with the kernel",
                        f.name,
                        problems.join("; ")
                    ),
                );
                continue;
            }
        };
        match ptx::write_kernel_both(&verified) {
            Ok((ptx, ptx_traced)) => kernels.push(CompiledKernel {
                name: f.name.clone(),
                ir_text: kernel.to_string(),
                ir: kernel,
                ptx,
                ptx_traced,
                registers_note,
            }),
            Err(_) => diags.error(
                f.span,
                format!("internal compiler error: PTX could not be written for `{}`; please report this with the kernel", f.name),
            ),
        }
    }
    (module, program, kernels)
}

/// The options of kernel `name`'s `#[kernel(..)]` that later phases read, if it has any.
fn kernel_options<'m>(module: &'m parse::Module, name: &str) -> Option<&'m parse::KernelOptions> {
    module
        .options
        .iter()
        .find(|(kernel, _)| kernel == name)
        .map(|(_, r)| r)
}

/// The `#[gpu_async]` attribute: `attr` are its arguments, `item` the module.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    // syn's parser recurses on nested groups, on rustc's stack: input nested past what it can
    // take there is answered from its tokens, before parsing.
    if let Some(out) = parse::too_deep(&item) {
        return out;
    }
    let mut diags = Diagnostics::new();
    if !attr.is_empty() {
        diags.push(syn::Error::new_spanned(
            &attr,
            "#[gpu_async] takes no arguments",
        ));
    }
    let module: syn::ItemMod = match syn::parse2(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &item,
                "#[gpu_async] goes on an inline module of kernels: `#[gpu_async] mod kernels { ... }`",
            );
            let err = e.to_compile_error();
            return quote!(#err #item);
        }
    };
    // The module without its items (copying them would copy the whole syntax tree).
    let shell = syn::ItemMod {
        attrs: module.attrs.clone(),
        vis: module.vis.clone(),
        unsafety: module.unsafety,
        mod_token: module.mod_token,
        ident: module.ident.clone(),
        content: None,
        semi: None,
    };
    let (parsed, program, kernels) = compile_module(module, &mut diags);
    let ok = diags.is_empty();
    let mut items = Vec::new();
    let mut launchers = Vec::new();
    // The checker's signatures, in the order of the module's functions.
    let mut signatures = program.signatures.iter();
    for it in &parsed.items {
        match it {
            // With errors the functions are left out, so their imports may go unused.
            parse::Item::Use(u) if ok => items.push(quote!(#u)),
            parse::Item::Use(u) => items.push(quote!(#[allow(unused_imports)] #u)),
            parse::Item::Const(c) => {
                let c = &c.item;
                items.push(quote!(#c));
            }
            parse::Item::Static(s) => items.push(quote!(#s)),
            parse::Item::Struct(s) => {
                items.push(quote!(#s));
                // With errors (a struct without `Copy`, say) it would only add rustc's own.
                if ok {
                    items.push(shadow::payload_elem_impl(s));
                }
            }
            parse::Item::Enum(e) => items.push(quote!(#e)),
            parse::Item::Fn(f) => {
                let Some(sig) = signatures.next() else {
                    continue;
                };
                if ok && !sig.generics.is_empty() {
                    // Its calls go to the instances below; rustc still checks it.
                    let item = &f.item;
                    items.push(quote!(#[allow(dead_code)] #item));
                } else if ok {
                    let mut item = f.item.clone();
                    let compiled = kernels.iter().find(|k| k.name == sig.name);
                    if let Some(k) = compiled.filter(|_| f.kernel.is_some()) {
                        // A kernel's own page shows its role and channel graph too.
                        let graph = shadow::graph_doc(&k.ir);
                        item.attrs.push(syn::parse_quote!(#[doc = ""]));
                        item.attrs.push(syn::parse_quote!(#[doc = #graph]));
                    }
                    items.push(quote!(#item));
                }
                if f.kernel.is_some() {
                    let compiled = kernels.iter().find(|k| k.name == sig.name);
                    launchers.push(shadow::launcher(&shadow::LauncherInput {
                        item: &f.item,
                        sig,
                        structs: &program.structs,
                        compiled: compiled.filter(|_| ok).map(|k| shadow::Compiled {
                            kernel: &k.ir,
                            ptx: &k.ptx,
                            ir: &k.ir_text,
                            ptx_traced: &k.ptx_traced,
                        }),
                    }));
                }
            }
        }
    }
    if ok {
        for instance in &program.instances {
            items.push(quote!(#[allow(clippy::all, non_snake_case)] #instance));
        }
    }
    let errors = diags.to_compile_errors();
    let syn::ItemMod {
        attrs,
        vis,
        unsafety,
        mod_token,
        ident,
        ..
    } = shell;
    quote! {
        #errors
        #(#attrs)*
        #vis #unsafety #mod_token #ident {
            #(#items)*
            #(#launchers)*
        }
    }
}
