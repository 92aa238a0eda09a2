//! Phase 1, parse: the `#[gpu_async]` module's items, sorted into what the compiler knows.
//!
//! The syn nodes are kept, so that later phases report errors on the user's own tokens and the
//! shadow code re-emits them with their spans.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::spanned::Spanned;

use crate::diag::Diagnostics;
use crate::target::{MAX_WARPS, WARPGROUP};
use crate::tir::{KernelAttr, MAX_NESTING};
use crate::types::Scalar;

/// A parsed `#[gpu_async] mod`.
pub struct Module {
    /// The module item itself, without its content.
    pub item: syn::ItemMod,
    /// Its items, in order.
    pub items: Vec<Item>,
    /// The options of each kernel's `#[kernel(...)]` that later phases read (`registers(..)`,
    /// `min_blocks_per_sm`), by the kernel's name.
    pub options: Vec<(String, KernelOptions)>,
}

/// The options of a `#[kernel(...)]` that take effect after lowering.
#[derive(Debug, Clone, Default)]
pub struct KernelOptions {
    /// `registers(..)`.
    pub registers: Option<RegistersAttr>,
    /// `min_blocks_per_sm = N`.
    pub min_blocks_per_sm: Option<MinBlocksAttr>,
}

/// `min_blocks_per_sm = N`: the blocks that an SM must be able to hold at once; registers are
/// allocated so that N blocks' threads fit the register file (PTX `.minnctapersm`, as CUDA's
/// `__launch_bounds__(threads, N)`). Checked against the kernel's warps and shared memory once
/// it is lowered (`crate::registers::occupancy`).
#[derive(Debug, Clone, Copy)]
pub struct MinBlocksAttr {
    /// N.
    pub blocks: u32,
    /// The number's span, for errors.
    pub span: Span,
}

/// One item of the module.
pub enum Item {
    /// `use ...;`, kept as is in the shadow code.
    Use(syn::ItemUse),
    /// `const NAME: T = expr;` with a scalar type.
    Const(ConstItem),
    /// `static NAME: [T; N] = [..];`: a table in constant memory.
    Static(syn::ItemStatic),
    /// `#[derive(Clone, Copy)] struct Name { field: T, .. }` of scalars.
    Struct(syn::ItemStruct),
    /// `#[derive(Clone, Copy)] enum Name { A, B = 3, .. }` without payloads.
    Enum(syn::ItemEnum),
    /// A function: a kernel (with `#[kernel]`), or a helper.
    Fn(FnItem),
}

/// A `const` item.
pub struct ConstItem {
    /// The syn node.
    pub item: syn::ItemConst,
    /// Its scalar type.
    pub ty: Scalar,
}

/// A function item.
pub struct FnItem {
    /// The syn node, with the `#[kernel]` attribute removed.
    pub item: syn::ItemFn,
    /// `#[kernel(...)]`, for kernels.
    pub kernel: Option<KernelAttr>,
}

/// `registers(role = N, ..)` or `registers(off)` in `#[kernel(...)]`.
#[derive(Debug, Clone)]
pub struct RegistersAttr {
    /// The `registers` token, for errors about the budgets as a whole.
    pub span: Span,
    /// `registers(off)`: no budgets, whatever the roles are.
    pub off: bool,
    /// `role = N`, in order: registers per thread for every role that runs the async fn `role`.
    pub budgets: Vec<RoleBudget>,
}

/// One `role = N` of `registers(..)`.
#[derive(Debug, Clone)]
pub struct RoleBudget {
    /// The role's async fn.
    pub role: String,
    /// Registers per thread: a multiple of 8 in 24..=256 (checked here).
    pub registers: u32,
    /// The role's name token.
    pub span: Span,
}

/// The deepest nesting of delimited groups (`(..)`, `[..]`, `{..}`) the attribute's input may
/// have. Parsing recurses on it (syn's parser, on rustc's stack, before any phase can count
/// levels: in a debug build of the macro it overflows rustc's stack near 300 levels of nested
/// `if`s), and code within [`MAX_NESTING`] levels of expressions stays within it (an expression
/// level opens at most two groups, as a call with a closure does, and the module, its function
/// and the body three more).
pub const MAX_GROUP_NESTING: usize = 2 * MAX_NESTING + 16;

/// The expansion for an input nested past [`MAX_GROUP_NESTING`] groups (a run of prefix tokens
/// counting as that many groups), found without recursing:
/// the nesting error at the group past the limit, and the module without its items (so that
/// rustc adds no errors of its own about it). `None` for any other input, which can be parsed.
pub fn too_deep(item: &TokenStream) -> Option<TokenStream> {
    // An explicit stack of the groups being walked, with the run of `return`, `break` and
    // `yield` keywords at each level: syn's parser recurses through several frames per keyword
    // of such a run (`return return return ..`), as it does per group.
    let mut stack = vec![(item.clone().into_iter(), 0usize)];
    let mut past = None;
    loop {
        let depth = stack.len();
        let Some((top, run)) = stack.last_mut() else {
            break;
        };
        match top.next() {
            Some(TokenTree::Group(g)) => {
                *run = 0;
                if depth > MAX_GROUP_NESTING {
                    past = Some(g.span_open());
                    break;
                }
                stack.push((g.stream().into_iter(), 0));
            }
            Some(tt) => {
                let prefix = matches!(&tt, TokenTree::Ident(i) if i == "return" || i == "break" || i == "yield");
                *run = if prefix { *run + 1 } else { 0 };
                if prefix && depth + *run > MAX_GROUP_NESTING {
                    past = Some(tt.span());
                    break;
                }
            }
            None => {
                stack.pop();
            }
        }
    }
    let span = past?;
    let error = syn::Error::new(
        span,
        format!("expressions nested deeper than {MAX_NESTING} levels are not supported in kernels: give inner parts names with `let`, or move them into a helper fn"),
    )
    .to_compile_error();
    // The module's attributes, visibility, `mod` and name, then an empty body.
    let mut shell = Vec::new();
    let mut saw_mod = false;
    for tt in item.clone() {
        match &tt {
            TokenTree::Ident(i) if i == "mod" => saw_mod = true,
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                if saw_mod {
                    shell.push(TokenTree::Group(Group::new(
                        Delimiter::Brace,
                        TokenStream::new(),
                    )));
                }
                break;
            }
            _ => {}
        }
        shell.push(tt);
    }
    if !saw_mod {
        return Some(error);
    }
    let shell: TokenStream = shell.into_iter().collect();
    Some(quote::quote!(#error #shell))
}

/// Parses the module. Items the compiler does not support are reported and left out.
pub fn parse_module(mut item: syn::ItemMod, diags: &mut Diagnostics) -> Module {
    let mut items = Vec::new();
    let mut options = Vec::new();
    let content = item.content.take();
    match content {
        None => diags.error(
            item.ident.span(),
            "#[gpu_async] needs the module's items inline: write `mod name { ... }`, not `mod name;`",
        ),
        Some((_, content)) => {
            for it in content {
                if let Some(parsed) = parse_item(it, &mut options, diags) {
                    items.push(parsed);
                }
            }
        }
    }
    Module {
        item,
        items,
        options,
    }
}

fn parse_item(
    item: syn::Item,
    options: &mut Vec<(String, KernelOptions)>,
    diags: &mut Diagnostics,
) -> Option<Item> {
    match item {
        syn::Item::Use(u) => Some(Item::Use(u)),
        syn::Item::Const(c) => {
            let ty = match &*c.ty {
                syn::Type::Path(p) if p.qself.is_none() => p
                    .path
                    .get_ident()
                    .and_then(|i| Scalar::from_name(&i.to_string())),
                _ => None,
            };
            match ty {
                Some(ty) => Some(Item::Const(ConstItem { item: c, ty })),
                None => {
                    diags.error_at(
                        &c.ty,
                        "a `const` in a #[gpu_async] module has a scalar type (bool, i8..i64, u8..u64, isize, usize, f32, f64); a table is a `static NAME: [T; N] = [..];`",
                    );
                    None
                }
            }
        }
        syn::Item::Fn(mut f) => {
            let mut kernel = None;
            let mut kernel_options = KernelOptions::default();
            let mut kept = Vec::new();
            for attr in std::mem::take(&mut f.attrs) {
                if attr.path().is_ident("kernel") {
                    if kernel.is_some() {
                        diags.error_at(&attr, "a kernel takes one `#[kernel(...)]` attribute");
                        continue;
                    }
                    kernel = parse_kernel_attr(&attr, &mut kernel_options, diags);
                    if kernel.is_none() {
                        // Still a kernel for the next phases, so that its body gets checked.
                        kernel = Some(KernelAttr {
                            warps: 1,
                            idle_warps: true,
                            span: attr.span(),
                        });
                    }
                } else {
                    kept.push(attr);
                }
            }
            f.attrs = kept;
            if kernel_options.registers.is_some() || kernel_options.min_blocks_per_sm.is_some() {
                options.push((f.sig.ident.to_string(), kernel_options));
            }
            Some(Item::Fn(FnItem { item: f, kernel }))
        }
        syn::Item::Static(s) => {
            if let syn::StaticMutability::Mut(m) = &s.mutability {
                diags.error_at(
                    m,
                    "a `static mut` cannot be shared by every thread safely: kernel tables are read-only, write results into a `&mut [T]` parameter",
                );
                return None;
            }
            Some(Item::Static(s))
        }
        syn::Item::Struct(s) => Some(Item::Struct(s)),
        syn::Item::Enum(e) => Some(Item::Enum(e)),
        other => {
            diags.error_at(
                &other,
                "this item is not supported in a #[gpu_async] module: it may hold `use` items, scalar `const`s, `static` tables, `#[kernel]` async fns and helper fns",
            );
            None
        }
    }
}

fn parse_kernel_attr(
    attr: &syn::Attribute,
    options: &mut KernelOptions,
    diags: &mut Diagnostics,
) -> Option<KernelAttr> {
    let span = attr.span();
    if let syn::Meta::Path(_) = attr.meta {
        diags.error_at(
            attr,
            "a kernel needs its warp count: write `#[kernel(warps = N)]` (or `#[kernel(warpgroups = N)]`, 4 warps each)",
        );
        return None;
    }
    let mut warps = None;
    let mut idle_warps = false;
    let mut regs = None;
    let mut min_blocks = None;
    let result = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("idle_warps") {
            idle_warps = true;
            Ok(())
        } else if meta.path.is_ident("warps") || meta.path.is_ident("warpgroups") {
            let groups = meta.path.is_ident("warpgroups");
            if warps.is_some() {
                return Err(meta.error(
                    "the kernel's size is given already: write either `warps = N` or `warpgroups = N` (4 warps each), once",
                ));
            }
            let lit: syn::LitInt = meta.value()?.parse()?;
            let n = if groups {
                let most = MAX_WARPS / WARPGROUP;
                WARPGROUP * number_in(&lit, 1, most, || {
                    format!("a block has 1 to {most} warpgroups of 4 warps (at most 1024 threads)")
                })?
            } else {
                number_in(&lit, 1, MAX_WARPS, || {
                    format!("a block has 1 to {MAX_WARPS} warps (at most 1024 threads)")
                })?
            };
            warps = Some(n);
            Ok(())
        } else if meta.path.is_ident("registers") {
            regs = Some(parse_registers(&meta)?);
            Ok(())
        } else if meta.path.is_ident("min_blocks_per_sm") {
            let lit: syn::LitInt = meta.value()?.parse()?;
            let n = number_in(&lit, 1, crate::target::SM_BLOCKS, || {
                format!("an SM holds 1 to {} blocks", crate::target::SM_BLOCKS)
            })?;
            min_blocks = Some(MinBlocksAttr {
                blocks: n,
                span: lit.span(),
            });
            Ok(())
        } else {
            Err(meta.error("unknown kernel option: the options are `warps = N` (or `warpgroups = N`), `idle_warps`, `registers(role = N, ..)` and `min_blocks_per_sm = N`"))
        }
    });
    if let Err(e) = result {
        diags.push(e);
        return None;
    }
    match warps {
        Some(warps) => {
            options.registers = regs;
            options.min_blocks_per_sm = min_blocks;
            Some(KernelAttr {
                warps,
                idle_warps,
                span,
            })
        }
        None => {
            diags.error(
                span,
                "a kernel needs its warp count: write `#[kernel(warps = N)]` (or `#[kernel(warpgroups = N)]`, 4 warps each)",
            );
            None
        }
    }
}

/// `registers(role = N, ..)` or `registers(off)`: the numbers are checked here, the role names
/// and the total against the kernel's roles once it is lowered (`crate::registers`).
fn parse_registers(meta: &syn::meta::ParseNestedMeta) -> syn::Result<RegistersAttr> {
    let span = meta.path.span();
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "write the register budgets per role, `registers(load = 40, compute = 232)`, or turn the derived ones off with `registers(off)`",
        ));
    }
    let mut off = false;
    let mut budgets: Vec<RoleBudget> = Vec::new();
    meta.parse_nested_meta(|entry| {
        let Some(name) = entry.path.get_ident() else {
            return Err(entry.error("a register budget names a role by its async fn: `registers(load = 40)`"));
        };
        if name == "off" && !entry.input.peek(syn::Token![=]) {
            off = true;
            return Ok(());
        }
        let lit: syn::LitInt = entry.value()?.parse()?;
        let what = || "a register budget is registers per thread, a multiple of 8 from 24 to 256 (what `setmaxnreg` takes)".to_string();
        let n = number_in(&lit, 24, 256, what)?;
        if n % 8 != 0 {
            return Err(syn::Error::new(
                lit.span(),
                format!("{}; got {n}", what()),
            ));
        }
        let role = name.to_string();
        if budgets.iter().any(|b| b.role == role) {
            return Err(syn::Error::new(
                name.span(),
                format!("`{role}` has a register budget already: give each role one"),
            ));
        }
        budgets.push(RoleBudget {
            role,
            registers: n,
            span: name.span(),
        });
        Ok(())
    })?;
    if off && !budgets.is_empty() {
        return Err(syn::Error::new(
            span,
            "`registers(off)` turns the budgets off: leave out the roles' numbers, or `off`",
        ));
    }
    if !off && budgets.is_empty() {
        return Err(syn::Error::new(
            span,
            "write the register budgets per role, `registers(load = 40, compute = 232)`, or turn the derived ones off with `registers(off)`",
        ));
    }
    Ok(RegistersAttr { span, off, budgets })
}

/// The value of `lit`, an unsuffixed or `u32` number from `lo` to `hi`; otherwise an error on it
/// that says `what` the number is, and the number as written (which may not fit any integer
/// type).
fn number_in(lit: &syn::LitInt, lo: u32, hi: u32, what: impl Fn() -> String) -> syn::Result<u32> {
    match lit.base10_parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("{}; got {}", what(), lit.base10_digits()),
        )),
    }
}
