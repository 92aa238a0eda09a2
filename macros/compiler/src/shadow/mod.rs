//! Phase 9, shadow: the shadow code and the typed host launchers.
//!
//! The shadow code is the user's module as written, with the checker's edits (inferred types as
//! ascriptions, `join!` as `join_roles`), over the real types of `gpu_async::device`. rustc type-
//! and borrow-checks it, which is how ownership across warps is proved, and the simulator runs
//! it. Next to each kernel fn, a module of the same name holds the PTX, the IR, the kernel's
//! `KernelSpec` and its typed `launch` function.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

use crate::ir::{Kernel, SiteKind};
use crate::tir::Signature;
use crate::types::{Scalar, Ty};
use gpu_async_wire::{ParamKind, TileBox};

/// What the launcher of one kernel needs.
pub struct LauncherInput<'a> {
    /// The kernel fn (for its name, visibility and parameter spans).
    pub item: &'a syn::ItemFn,
    /// Its signature.
    pub sig: &'a Signature,
    /// The module's structs (a struct parameter travels as one kernel parameter per field).
    pub structs: &'a [crate::tir::StructDef],
    /// The lowered kernel, its PTX, IR text and traced PTX; `None` when compilation failed (a
    /// stub is emitted).
    pub compiled: Option<Compiled<'a>>,
}

/// What the launcher of a compiled kernel shows and loads.
pub struct Compiled<'a> {
    /// The lowered kernel.
    pub kernel: &'a Kernel,
    /// Its PTX module.
    pub ptx: &'a str,
    /// Its IR as text.
    pub ir: &'a str,
    /// Its PTX module with tracing.
    pub ptx_traced: &'a str,
}

/// `text` as a raw string literal (`r#"..."#`, with more `#`s than any run that follows a `"`
/// in it): unlike an escaped literal it is written without looking at each character, and the
/// PTX and IR text of a large kernel are megabytes. An escaped literal where a raw one cannot
/// say it: a carriage return (which a raw string may not hold alone), more than 255 `#`s, or a
/// literal that does not lex.
fn raw_string(text: &str) -> TokenStream {
    let escaped = || proc_macro2::Literal::string(text).into_token_stream();
    let mut hashes = 0;
    for (i, _) in text.match_indices('"') {
        let run = text[i + 1..].bytes().take_while(|&b| b == b'#').count();
        hashes = hashes.max(run + 1);
    }
    if hashes > 255 || text.contains('\r') {
        return escaped();
    }
    let fence = "#".repeat(hashes);
    format!("r{fence}\"{text}\"{fence}")
        .parse()
        .unwrap_or_else(|_| escaped())
}

fn scalar_tokens(s: Scalar, span: Span) -> TokenStream {
    let ident = syn::Ident::new(s.rust_name(), span);
    quote_spanned!(span=> #ident)
}

fn spec_scalar(s: Scalar) -> TokenStream {
    let v = format_ident!("{}", s.variant_name());
    quote!(::gpu_async::ScalarType::#v)
}

/// A `::gpu_async::ParamSpec` of `kind`, spelled from the contract's own type so that a change
/// of its shape cannot go unnoticed here.
fn param_spec(name: &syn::LitStr, kind: ParamKind) -> TokenStream {
    let kind = match kind {
        ParamKind::Scalar(s) => {
            let st = spec_scalar(s);
            quote!(::gpu_async::ParamKind::Scalar(#st))
        }
        ParamKind::Slice { elem, mutable } => {
            let st = spec_scalar(elem);
            quote!(::gpu_async::ParamKind::Slice { elem: #st, mutable: #mutable })
        }
        ParamKind::Matrix {
            elem,
            mutable,
            boxes,
        } => matrix_kind(elem, mutable, boxes),
    };
    quote!(::gpu_async::ParamSpec { name: #name, kind: #kind })
}

/// A `::gpu_async::ParamKind::Matrix` with its tensor maps' boxes.
fn matrix_kind(elem: crate::types::Scalar, mutable: bool, boxes: &[TileBox]) -> TokenStream {
    let st = spec_scalar(elem);
    let boxes = boxes
        .iter()
        .map(|TileBox { rows, cols }| quote!(::gpu_async::TileBox { rows: #rows, cols: #cols }));
    quote!(::gpu_async::ParamKind::Matrix { elem: #st, mutable: #mutable, boxes: &[#(#boxes),*] })
}

/// A `::gpu_async::SiteKind`.
fn site_kind(kind: SiteKind) -> TokenStream {
    match kind {
        SiteKind::Panic => quote!(::gpu_async::SiteKind::Panic),
        SiteKind::Wait => quote!(::gpu_async::SiteKind::Wait),
    }
}

/// What a launcher makes of the kernel's parameters: the argument tuple's types and names, the
/// pushes of the CUDA launch, the simulator's buffer uses (registered at the launch), views
/// (taken by the job when it runs) and arguments of the shadow call, and the parameters' specs.
#[derive(Default)]
struct LaunchArgs {
    arg_types: Vec<TokenStream>,
    arg_names: Vec<syn::Ident>,
    cuda_pushes: Vec<TokenStream>,
    sim_uses: Vec<TokenStream>,
    sim_views: Vec<TokenStream>,
    sim_args: Vec<TokenStream>,
    param_specs: Vec<TokenStream>,
}

/// The [`LaunchArgs`] of `input`'s parameters, in their order.
fn launch_args(input: &LauncherInput<'_>) -> LaunchArgs {
    let LaunchArgs {
        mut arg_types,
        mut arg_names,
        mut cuda_pushes,
        mut sim_uses,
        mut sim_views,
        mut sim_args,
        mut param_specs,
    } = LaunchArgs::default();
    for (i, (pname, ty, _, span)) in input.sig.params.iter().enumerate() {
        let span = *span;
        let arg = format_ident!("__gpu_async_arg_{}", i);
        let pname_lit = syn::LitStr::new(pname, span);
        arg_names.push(arg.clone());
        match ty {
            Ty::Scalar(s) => {
                arg_types.push(scalar_tokens(*s, span));
                cuda_pushes.push(quote!(__gpu_async_cuda.scalar(#arg);));
                sim_args.push(quote!(#arg));
                param_specs.push(param_spec(&pname_lit, ParamKind::Scalar(*s)));
            }
            Ty::Slice { elem, mutable } => {
                let e = scalar_tokens(*elem, span);
                if *mutable {
                    arg_types.push(quote_spanned!(span=> &'a mut ::gpu_async::DeviceBuffer<#e>));
                    cuda_pushes.push(quote!(__gpu_async_cuda.slice_mut(#pname_lit, #arg)?;));
                    sim_uses.push(quote!(let #arg = __gpu_async_sim.write(#pname_lit, #arg)?;));
                    sim_views.push(quote!(let mut #arg = #arg.slice_mut();));
                    sim_args.push(quote!(&mut *#arg));
                } else {
                    arg_types.push(quote_spanned!(span=> &'a ::gpu_async::DeviceBuffer<#e>));
                    cuda_pushes.push(quote!(__gpu_async_cuda.slice(#pname_lit, #arg)?;));
                    sim_uses.push(quote!(let #arg = __gpu_async_sim.read(#pname_lit, #arg)?;));
                    sim_views.push(quote!(let #arg = #arg.slice();));
                    sim_args.push(quote!(&*#arg));
                }
                let kind = ParamKind::Slice {
                    elem: *elem,
                    mutable: *mutable,
                };
                param_specs.push(param_spec(&pname_lit, kind));
            }
            Ty::Enum(_, name) => {
                let ident = syn::Ident::new(name, span);
                arg_types.push(quote_spanned!(span=> #ident));
                sim_args.push(quote!(#arg));
                // The discriminant, as a `u32` parameter.
                cuda_pushes.push(quote!(__gpu_async_cuda.scalar(#arg as u32);));
                param_specs.push(param_spec(&pname_lit, ParamKind::Scalar(Scalar::U32)));
            }
            Ty::Struct(id, name) => {
                let ident = syn::Ident::new(name, span);
                arg_types.push(quote_spanned!(span=> #ident));
                sim_args.push(quote!(#arg));
                // One parameter per component: a scalar field, or each element of an array field.
                if let Some(def) = input.structs.get(*id as usize) {
                    for (field, first, len) in &def.declared {
                        let f = syn::Ident::new(field, span);
                        let s = def.fields[*first].1;
                        let accesses: Vec<(TokenStream, String)> = match len {
                            None => vec![(quote!(#arg.#f), field.clone())],
                            Some(n) => (0..*n as usize)
                                .map(|k| (quote!(#arg.#f[#k]), format!("{field}[{k}]")))
                                .collect(),
                        };
                        for (access, name) in accesses {
                            cuda_pushes.push(quote!(__gpu_async_cuda.scalar(#access);));
                            let full = syn::LitStr::new(&format!("{pname}.{name}"), span);
                            param_specs.push(param_spec(&full, ParamKind::Scalar(s)));
                        }
                    }
                }
            }
            Ty::Matrix(elem, mutable) => {
                let e = scalar_tokens(*elem, span);
                if *mutable {
                    arg_types.push(quote_spanned!(span=> ::gpu_async::MatrixViewMut<'a, #e>));
                    cuda_pushes.push(quote!(__gpu_async_cuda.matrix_mut(#pname_lit, #arg)?;));
                    sim_uses
                        .push(quote!(let #arg = __gpu_async_sim.write_matrix(#pname_lit, #arg)?;));
                    sim_views.push(quote!(let mut #arg = #arg.matrix();));
                    sim_args.push(quote!(&mut #arg));
                } else {
                    arg_types.push(quote_spanned!(span=> ::gpu_async::MatrixView<'a, #e>));
                    cuda_pushes.push(quote!(__gpu_async_cuda.matrix(#pname_lit, #arg)?;));
                    sim_uses
                        .push(quote!(let #arg = __gpu_async_sim.read_matrix(#pname_lit, #arg)?;));
                    sim_views.push(quote!(let #arg = #arg.matrix();));
                    sim_args.push(quote!(&#arg));
                }
                // The tensor maps its loads use, from the lowered kernel.
                let boxes = input
                    .compiled
                    .as_ref()
                    .and_then(|c| c.kernel.params.iter().find(|p| p.name == *pname))
                    .and_then(|p| match &p.kind {
                        crate::ir::ParamKind::Matrix { boxes, .. } => Some(boxes.as_slice()),
                        _ => None,
                    })
                    .unwrap_or(&[]);
                let kind = matrix_kind(*elem, *mutable, boxes);
                param_specs.push(quote!(::gpu_async::ParamSpec { name: #pname_lit, kind: #kind }));
            }
            Ty::AtomicSlice(elem) => {
                let e = scalar_tokens(*elem, span);
                arg_types.push(quote_spanned!(span=> &'a mut ::gpu_async::DeviceBuffer<#e>));
                cuda_pushes.push(quote!(__gpu_async_cuda.slice_mut(#pname_lit, #arg)?;));
                sim_uses.push(quote!(let #arg = __gpu_async_sim.write(#pname_lit, #arg)?;));
                sim_views.push(quote!(let #arg = #arg.atomics();));
                sim_args.push(quote!(#arg.atoms()));
                let kind = ParamKind::Slice {
                    elem: *elem,
                    mutable: true,
                };
                param_specs.push(param_spec(&pname_lit, kind));
            }
            _ => {
                arg_types.push(quote!(()));
                sim_args.push(quote!(()));
            }
        }
    }
    LaunchArgs {
        arg_types,
        arg_names,
        cuda_pushes,
        sim_uses,
        sim_views,
        sim_args,
        param_specs,
    }
}

/// The `mod <kernel> { PTX, IR, SPEC, launch }` of one kernel.
pub fn launcher(input: &LauncherInput<'_>) -> TokenStream {
    let item = input.item;
    let name = &item.sig.ident;
    let vis = &item.vis;
    let name_str = name.to_string();
    let LaunchArgs {
        arg_types,
        arg_names,
        cuda_pushes,
        sim_uses,
        sim_views,
        sim_args,
        param_specs,
    } = launch_args(input);
    let args_ty = quote!((#(#arg_types,)*));
    let args_pat = quote!((#(#arg_names,)*));
    let Some(Compiled {
        kernel,
        ptx,
        ir,
        ptx_traced,
    }) = input.compiled
    else {
        // The kernel did not compile: the errors are reported; keep the launcher's signature so
        // that the host code that calls it still type-checks.
        return quote! {
            #[allow(unused_variables, dead_code, clippy::all)]
            #vis mod #name {
                use super::*;
                /// The kernel did not compile; see the errors above.
                pub fn launch<'a>(device: &'a ::gpu_async::Device, grid: ::gpu_async::Grid, args: #args_ty) -> ::gpu_async::Launch<'a> {
                    ::gpu_async::__private::not_compiled(device, #name_str)
                }
                /// The kernel did not compile; see the errors above.
                pub fn launch_traced<'a>(device: &'a ::gpu_async::Device, grid: ::gpu_async::Grid, args: #args_ty, options: ::gpu_async::trace::TraceOptions) -> ::gpu_async::trace::TracedLaunch<'a> {
                    ::gpu_async::__private::not_compiled_traced(device, #name_str)
                }
            }
        };
    };
    let roles: Vec<TokenStream> = kernel
        .roles
        .iter()
        .map(|r| {
            let (n, a, b) = (&r.name, r.first_warp, r.end_warp);
            quote!(::gpu_async::RoleSpec { name: #n, first_warp: #a, end_warp: #b })
        })
        .collect();
    // `line!()` and friends, spanned at the user's tokens, report the user's location.
    let sites: Vec<TokenStream> = kernel
        .sites
        .iter()
        .map(|site| {
            let kind = site_kind(site.kind);
            let message = &site.message;
            let span = site.span;
            let file = quote_spanned!(span=> ::core::file!());
            let line = quote_spanned!(span=> ::core::line!());
            let column = quote_spanned!(span=> ::core::column!());
            quote!(::gpu_async::SiteSpec { kind: #kind, message: #message, file: #file, line: #line, column: #column })
        })
        .collect();
    let warps = kernel.warps;
    let shared = kernel.shared_bytes;
    let doc = launcher_doc(kernel);
    let kernel_doc =
        format!(" The compiled kernel `{name_str}`: its PTX, IR, spec and typed launcher.");
    // The launch body, shared by `launch` and `launch_on`: push the arguments for CUDA; on the
    // simulator, register the buffers' uses and hand over a job that owns them and the scalars
    // (it runs later, on the stream's worker thread), takes the buffers' elements and runs the
    // shadow code block by block.
    let body = quote! {
        move |__gpu_async_target| match __gpu_async_target {
            ::gpu_async::__private::Target::Cuda(__gpu_async_cuda) => {
                #(#cuda_pushes)*
                ::core::result::Result::Ok(())
            }
            ::gpu_async::__private::Target::Sim(__gpu_async_sim) => {
                #(#sim_uses)*
                __gpu_async_sim.run(move |__gpu_async_run| {
                    #(#sim_views)*
                    __gpu_async_run.run_blocks(|__gpu_async_block| __gpu_async_block.run(super::#name(#(#sim_args),*)))
                })
            }
        }
    };
    // Literals made directly: `syn::LitStr::new` would also read each one back, and the PTX of a
    // large kernel is megabytes.
    let mermaid_lit = proc_macro2::Literal::string(&kernel.mermaid());
    let graph_doc = graph_doc(kernel);
    let ptx_lit = raw_string(ptx);
    let ptx_traced_lit = raw_string(ptx_traced);
    let ir_lit = raw_string(ir);
    let launch_fns = launch_fns(&doc, &args_ty, &args_pat, &body);
    quote! {
        #[doc = #kernel_doc]
        #[doc = ""]
        #[doc = #graph_doc]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// The kernel's PTX module (`.target sm_90`, or `sm_90a` with register budgets), as
            /// `#[gpu_async]` generated it.
            pub const PTX: &str = #ptx_lit;

            /// The kernel's role/channel IR after lowering, as text.
            pub const IR: &str = #ir_lit;

            /// The kernel's role and channel graph, as a Mermaid flowchart (the docs draw it as
            /// an SVG picture).
            pub const MERMAID: &str = #mermaid_lit;

            /// The kernel's PTX module with tracing, which [`launch_traced`] loads: [`PTX`]
            /// taking the trace's parameters after its own and recording, in the blocks traced,
            /// each role's run, waits and bulk copies.
            pub const PTX_TRACED: &str = #ptx_traced_lit;

            /// What the runtime needs to launch the kernel.
            pub static SPEC: ::gpu_async::KernelSpec = ::gpu_async::KernelSpec {
                entry: #name_str,
                path: ::core::module_path!(),
                ptx: PTX,
                warps: #warps,
                shared_bytes: #shared,
                params: &[#(#param_specs),*],
                roles: &[#(#roles),*],
                sites: &[#(#sites),*],
                abort_protocol: true,
            };

            /// [`SPEC`] with [`PTX_TRACED`]: what a traced launch loads.
            pub static TRACED_SPEC: ::gpu_async::KernelSpec = ::gpu_async::KernelSpec {
                ptx: PTX_TRACED,
                ..SPEC
            };

            #launch_fns
        }
    }
}

/// The launchers of a kernel: `launch`, `launch_on`, `launch_traced` and `launch_traced_on`,
/// each taking `args_ty` (destructured as `args_pat`) and handing `body` the target.
fn launch_fns(
    doc: &str,
    args_ty: &TokenStream,
    args_pat: &TokenStream,
    body: &TokenStream,
) -> TokenStream {
    quote! {
        #[doc = #doc]
        pub fn launch<'a>(
            device: &'a ::gpu_async::Device,
            grid: ::gpu_async::Grid,
            args: #args_ty,
        ) -> ::gpu_async::Launch<'a> {
            let #args_pat = args;
            ::gpu_async::__private::launch(device, &SPEC, grid, #body)
        }

        /// Launches the kernel like [`launch`], on `stream` (ordered after the work already
        /// queued there; order it against other streams with events).
        pub fn launch_on<'a>(
            stream: &'a ::gpu_async::Stream,
            grid: ::gpu_async::Grid,
            args: #args_ty,
        ) -> ::gpu_async::Launch<'a> {
            let #args_pat = args;
            ::gpu_async::__private::launch_on(stream, &SPEC, grid, #body)
        }

        /// Launches the kernel like [`launch`], with [`PTX_TRACED`] on the GPU, and records
        /// what each role of the blocks `options` chooses does when: its run, its waits and
        /// its bulk copies (on the simulator, in scheduler steps). The future resolves to a
        /// [`Traced`](::gpu_async::trace::Traced): the launch's outcome and the trace, which
        /// a launch that failed (a deadlock, a watchdog stop) still carries up to its failure.
        pub fn launch_traced<'a>(
            device: &'a ::gpu_async::Device,
            grid: ::gpu_async::Grid,
            args: #args_ty,
            options: ::gpu_async::trace::TraceOptions,
        ) -> ::gpu_async::trace::TracedLaunch<'a> {
            let #args_pat = args;
            ::gpu_async::__private::launch_traced(device, &TRACED_SPEC, grid, options, #body)
        }

        /// Launches the kernel like [`launch_traced`], on `stream`.
        pub fn launch_traced_on<'a>(
            stream: &'a ::gpu_async::Stream,
            grid: ::gpu_async::Grid,
            args: #args_ty,
            options: ::gpu_async::trace::TraceOptions,
        ) -> ::gpu_async::trace::TracedLaunch<'a> {
            let #args_pat = args;
            ::gpu_async::__private::launch_traced_on(stream, &TRACED_SPEC, grid, options, #body)
        }
    }
}

/// The role and channel graph of `k` for its docs: the self-contained SVG picture
/// ([`Kernel::role_graph_svg`]) in an HTML block of its own, which Markdown passes through
/// unchanged, so that the page shows it offline as online; on a white ground of its own, so
/// that its black labels stay readable in rustdoc's dark themes.
pub fn graph_doc(k: &Kernel) -> String {
    format!(
        " Roles and channels:\n\n <div class=\"gpu-async-roles\" style=\"background: #fff; display: inline-block\">\n {}\n </div>\n",
        k.role_graph_svg()
    )
}

fn launcher_doc(k: &Kernel) -> String {
    let mut doc = format!(
        " Launches `{}` on `device` with `grid` blocks of {} warps ({} threads) and {} B of shared memory per block.\n\n The returned future resolves when the kernel has finished.\n\n Roles:\n",
        k.name,
        k.warps,
        32 * k.warps,
        k.shared_bytes
    );
    for r in &k.roles {
        doc.push_str(&format!(
            " - `{}` on warps {}..{}\n",
            r.name, r.first_warp, r.end_warp
        ));
    }
    if !k.channels.is_empty() {
        doc.push_str("\n Channels:\n");
        for c in &k.channels {
            let role = |r: Option<crate::ir::RoleId>| {
                r.map_or("?".to_string(), |r| k.roles[r.0 as usize].name.clone())
            };
            doc.push_str(&format!(
                " - `{}`: `{}` x {} slots, `{}` → `{}`\n",
                c.name,
                c.ty.payload(),
                c.ty.depth,
                role(c.producer),
                c.consumers
                    .iter()
                    .map(|r| role(Some(*r)))
                    .collect::<Vec<_>>()
                    .join("`, `")
            ));
        }
    }
    doc
}

/// `impl PayloadElem` for a struct of the module, so that arrays of it can travel through the
/// simulator's channels (a slot starts with every field zero, as on the GPU).
pub fn payload_elem_impl(s: &syn::ItemStruct) -> TokenStream {
    let syn::Fields::Named(named) = &s.fields else {
        return TokenStream::new();
    };
    if !s.generics.params.is_empty() {
        return TokenStream::new();
    }
    let name = &s.ident;
    let fields = named.named.iter().filter_map(|f| f.ident.as_ref());
    quote! {
        impl gpu_async::device::PayloadElem for #name {
            fn zeroed() -> Self {
                #name { #(#fields: gpu_async::device::PayloadElem::zeroed()),* }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::raw_string;

    /// The string a literal's tokens say.
    fn value(tokens: proc_macro2::TokenStream) -> String {
        let lit: syn::LitStr = syn::parse2(tokens).expect("a string literal");
        lit.value()
    }

    #[test]
    fn a_raw_string_says_its_text_whatever_quotes_and_hashes_it_holds() {
        for text in [
            "",
            "plain",
            "a \"quote\" and \\ backslash",
            "\"#, \"##, then \"### inside",
            "ends with a quote\"",
            "# leading hash and unicode é →",
        ] {
            let tokens = raw_string(text);
            assert!(tokens.to_string().starts_with('r'), "{text:?} was not raw");
            assert_eq!(value(tokens), text);
        }
    }

    #[test]
    fn what_a_raw_string_cannot_hold_is_escaped() {
        let long_fence = format!("\"{}", "#".repeat(300));
        for text in ["a carriage return\r alone", "\r\n", long_fence.as_str()] {
            let tokens = raw_string(text);
            assert!(
                tokens.to_string().starts_with('"'),
                "{text:?} was not escaped"
            );
            assert_eq!(value(tokens), text);
        }
    }
}
