//! Function signatures: parameter and return types.

use syn::spanned::Spanned;

use super::consts::eval_usize;
use super::ModuleScope;
use crate::diag::Diagnostics;
use crate::target::{PARAM_LIMIT, RUNTIME_PARAM_BYTES};
use crate::tir::{KernelAttr, Signature};
use crate::types::{is_tile_elem, ArrayTy, ChanElem, ChanTy, Scalar, Ty, MAX_VALUE_SCALARS};

/// Reads a function's signature; reports what the kernel language cannot take.
pub(crate) fn signature(
    f: &syn::ItemFn,
    kernel: Option<&KernelAttr>,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Signature {
    let sig = &f.sig;
    let mut generics = Vec::new();
    for p in &sig.generics.params {
        match p {
            syn::GenericParam::Type(t) if kernel.is_none() => generics.push(t.ident.to_string()),
            syn::GenericParam::Type(t) => diags.error_at(
                t,
                "a kernel is not generic: make a generic helper and call it from one kernel per type",
            ),
            other => diags.error_at(
                other,
                "only type parameters (`<T>`) are supported on kernel helpers, instantiated with scalars",
            ),
        }
    }
    // A parameter or result of a bare type parameter's type is `Ty::Generic`.
    let generic_of = |t: &syn::Type| -> Option<Ty> {
        let syn::Type::Path(p) = t else { return None };
        let ident = p.path.get_ident()?.to_string();
        generics
            .iter()
            .position(|g| *g == ident)
            .map(|i| Ty::Generic(i as u32))
    };
    if let Some(c) = &sig.constness {
        diags.error_at(c, "`const fn` is not supported in kernels: drop `const`");
    }
    if let Some(u) = &sig.unsafety {
        diags.error_at(u, "`unsafe fn` is not supported in kernels: drop `unsafe`");
    }
    if let Some(v) = &sig.variadic {
        diags.error_at(v, "variadic functions are not supported in kernels");
    }
    if kernel.is_some() && sig.asyncness.is_none() {
        diags.error_at(
            &sig.fn_token,
            "a kernel is an `async fn`: write `pub async fn`",
        );
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => diags.error_at(
                r,
                "methods are not supported in kernels: take the value as a parameter",
            ),
            syn::FnArg::Typed(pt) => {
                let (name, mutable) = match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        (pi.ident.to_string(), pi.mutability.is_some())
                    }
                    other => {
                        diags.error_at(
                            other,
                            "a kernel parameter is a plain name: write `name: Type`",
                        );
                        continue;
                    }
                };
                let ty = match generic_of(&pt.ty) {
                    Some(g) => g,
                    None => value_type(&pt.ty, scope, diags),
                };
                if kernel.is_some()
                    && !matches!(
                        ty,
                        Ty::Scalar(_)
                            | Ty::Slice { .. }
                            | Ty::AtomicSlice(_)
                            | Ty::Matrix(..)
                            | Ty::Struct(..)
                            | Ty::Enum(..)
                            | Ty::Error
                    )
                {
                    diags.error_at(
                        &pt.ty,
                        format!("a kernel parameter is a scalar, a struct of the module, `&[T]`, `&mut [T]`, `&[AtomicU32]`, `&Matrix<T>` or `&mut Matrix<T>`; `{ty}` is created inside the kernel instead"),
                    );
                }
                params.push((name, ty, mutable, pt.pat.span()));
            }
        }
    }
    if kernel.is_some() {
        param_space(&params, &sig.inputs, scope, diags);
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => Ty::Unit,
        syn::ReturnType::Type(_, t) => {
            let ty = match generic_of(t) {
                Some(g) => g,
                None => value_type(t, scope, diags),
            };
            if !matches!(
                ty,
                Ty::Scalar(_)
                    | Ty::Tuple(_)
                    | Ty::Struct(..)
                    | Ty::Enum(..)
                    | Ty::Generic(_)
                    | Ty::Error
            ) {
                diags.error_at(
                    t,
                    "a kernel helper returns nothing, a scalar, a tuple of scalars or a struct of the module",
                );
            }
            if kernel.is_some() {
                diags.error_at(
                    t,
                    "a kernel returns nothing: write its results into a `&mut [T]` parameter",
                );
            }
            ty
        }
    };
    Signature {
        name: sig.ident.to_string(),
        is_async: sig.asyncness.is_some(),
        kernel: kernel.copied(),
        params,
        ret,
        generics,
    }
}

/// Reports kernel parameters past the parameter space of a kernel ([`PARAM_LIMIT`]), at the
/// first one that does not fit. Each PTX parameter is aligned to its size: a scalar takes 4 B
/// (`bool` and the narrow integers travel as 32-bit values) or 8 B, a slice its address and length
/// (16 B), a struct one parameter per component.
fn param_space(
    params: &[(String, Ty, bool, proc_macro2::Span)],
    inputs: &syn::punctuated::Punctuated<syn::FnArg, syn::Token![,]>,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) {
    let scalar_bytes = |s: Scalar| match s.size() {
        8 => 8,
        2 if s.is_half() => 2,
        _ => 4,
    };
    fn place(offset: &mut u32, bytes: u32) {
        *offset = offset.next_multiple_of(bytes) + bytes;
    }
    let mut offset: u32 = 0;
    for (k, (name, ty, _, _)) in params.iter().enumerate() {
        match ty {
            Ty::Scalar(s) => place(&mut offset, scalar_bytes(*s)),
            Ty::Enum(..) => place(&mut offset, 4),
            Ty::Slice { .. } | Ty::AtomicSlice(_) => {
                place(&mut offset, 8);
                place(&mut offset, 8);
            }
            // Its address, rows and columns, and the tensor map of (at least) one tile shape.
            Ty::Matrix(..) => {
                for _ in 0..3 {
                    place(&mut offset, 8);
                }
                offset = offset.next_multiple_of(128) + 128;
            }
            Ty::Struct(id, _) => {
                for (_, s) in &scope.struct_defs[*id as usize].fields {
                    place(&mut offset, scalar_bytes(*s));
                }
            }
            _ => {}
        }
        let total = offset.next_multiple_of(8) + RUNTIME_PARAM_BYTES;
        if total > PARAM_LIMIT {
            let at = inputs.iter().nth(k);
            let message = format!("the kernel's parameters need {total} B of parameter space with `{name}` (the runtime adds {RUNTIME_PARAM_BYTES} B), past the {PARAM_LIMIT} B a kernel has: pass fewer, or gather the values in a slice");
            match at {
                Some(a) => diags.error_at(a, message),
                None => diags.error(proc_macro2::Span::call_site(), message),
            }
            return;
        }
    }
}

const HEAP_TYPES: &[&str] = &[
    "Vec", "Box", "String", "Rc", "Arc", "HashMap", "BTreeMap", "VecDeque",
];

/// The message for heap types, shared by types and calls.
pub(crate) fn heap_message(name: &str) -> String {
    format!("heap allocation (`{name}`) is not available in kernels: there is no device allocator; take a `&mut [T]` buffer as a kernel parameter, or use a channel slot `[T; N]`")
}

/// The message for trait objects.
pub(crate) const DYN_MESSAGE: &str = "trait objects (`dyn Trait`) are not supported in kernels: the device has no vtables; use a concrete type";

/// Parses the type of a value (a parameter, a result): an array has at most
/// [`MAX_VALUE_SCALARS`] elements.
pub(crate) fn value_type(ty: &syn::Type, scope: &ModuleScope, diags: &mut Diagnostics) -> Ty {
    match parse_type(ty, scope, diags) {
        Ty::Array(_, n) if n > MAX_VALUE_SCALARS => {
            diags.error_at(
                super::array_len(ty),
                super::value_size_message("this array", n.into()),
            );
            Ty::Error
        }
        other => other,
    }
}

/// Parses a type of the kernel language.
pub(crate) fn parse_type(ty: &syn::Type, scope: &ModuleScope, diags: &mut Diagnostics) -> Ty {
    let consts = &scope.consts;
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return unsupported_type(ty, diags);
            };
            let name = last.ident.to_string();
            if let Some(s) = Scalar::from_name(&name) {
                if p.path.segments.len() == 1 && last.arguments.is_empty() {
                    return Ty::Scalar(s);
                }
            }
            if let Some((id, _)) = scope.enums.get(&name) {
                if p.path.segments.len() == 1 {
                    return Ty::Enum(*id, name);
                }
            }
            if let Some(&id) = scope.structs.get(&name) {
                if p.path.segments.len() == 1 {
                    return Ty::Struct(id, name);
                }
            }
            if scope.failed_items.contains(&name) && p.path.segments.len() == 1 {
                // A struct whose error is reported at its definition.
                return Ty::Error;
            }
            if name == "SharedArray" || name == "SharedArray2d" {
                diags.error_at(&last.ident, format!("a shared array stays in the kernel body; roles take it by reference: `&{name}<..>` to read it or update its atomics, `&mut {name}<..>` to write it"));
                return Ty::Error;
            }
            if HEAP_TYPES.contains(&name.as_str()) {
                diags.error_at(&last.ident, heap_message(&name));
                return Ty::Error;
            }
            if name == "OneshotSender" || name == "OneshotReceiver" {
                let inner = match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(syn::GenericArgument::Type(t)) => parse_type(t, scope, diags),
                        _ => Ty::Error,
                    },
                    _ => Ty::Error,
                };
                return match inner {
                    Ty::Scalar(s) if name == "OneshotSender" => Ty::OneshotSender(s),
                    Ty::Scalar(s) => Ty::OneshotReceiver(s),
                    Ty::Error => {
                        diags.error_at(last, format!("write `{name}<T>` with a scalar `T`"));
                        Ty::Error
                    }
                    other => {
                        diags.error_at(
                            last,
                            format!("a one-shot value is a scalar; `{other}` is not"),
                        );
                        Ty::Error
                    }
                };
            }
            if name == "Sender" || name == "Receiver" {
                let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                    diags.error_at(last, format!("write `{name}<[T; N], DEPTH>`"));
                    return Ty::Error;
                };
                return match chan_args(
                    args.args.iter().collect::<Vec<_>>().as_slice(),
                    scope,
                    diags,
                    last,
                ) {
                    Some(c) if name == "Sender" => Ty::Sender(c),
                    Some(c) => Ty::Receiver(c),
                    None => Ty::Error,
                };
            }
            unsupported_type(ty, diags)
        }
        syn::Type::Reference(r) => {
            if let syn::Type::TraitObject(_) = &*r.elem {
                diags.error_at(&r.elem, DYN_MESSAGE);
                return Ty::Error;
            }
            if let syn::Type::Path(p) = &*r.elem {
                if let Some(last) = p.path.segments.last() {
                    if last.ident == "Barrier" && last.arguments.is_empty() {
                        return Ty::BarrierRef;
                    }
                    if last.ident == "SharedArray" || last.ident == "SharedArray2d" {
                        let two_d = last.ident == "SharedArray2d";
                        let args: Vec<&syn::GenericArgument> = match &last.arguments {
                            syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
                            _ => Vec::new(),
                        };
                        return match array_args(&args, two_d, scope, diags, last) {
                            Some(a) => Ty::SharedArrayRef(a, r.mutability.is_some()),
                            None => Ty::Error,
                        };
                    }
                    if last.ident == "Matrix" {
                        return matrix_type(r, last, scope, diags);
                    }
                    if last.ident == "Shared" {
                        if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                            if let Some(syn::GenericArgument::Type(t)) = a.args.first() {
                                if let Ty::Scalar(s) = parse_type(t, scope, diags) {
                                    return Ty::SharedRef(s);
                                }
                            }
                        }
                        diags.error_at(r, "write `&Shared<T>` with a scalar `T`");
                        return Ty::Error;
                    }
                }
            }
            if let syn::Type::Slice(s) = &*r.elem {
                if let syn::Type::Path(p) = &*s.elem {
                    let last = p.path.segments.last().map(|s| s.ident.to_string());
                    if let Some(atomic) = last.as_deref().and_then(crate::types::atomic_scalar) {
                        if r.mutability.is_some() {
                            diags.error_at(r, "atomics are updated through shared references: write `&[AtomicU32]`, not `&mut`");
                            return Ty::Error;
                        }
                        return Ty::AtomicSlice(atomic);
                    }
                }
                return match parse_type(&s.elem, scope, diags) {
                    Ty::Scalar(elem) => Ty::Slice {
                        elem,
                        mutable: r.mutability.is_some(),
                    },
                    Ty::Error => Ty::Error,
                    other => {
                        diags.error_at(
                            &s.elem,
                            format!("a slice's elements are scalars; `{other}` is not: pass a slice of scalars (`&[f32]`, its elements side by side) and index it"),
                        );
                        Ty::Error
                    }
                };
            }
            unsupported_type(ty, diags)
        }
        syn::Type::TraitObject(t) => {
            diags.error_at(t, DYN_MESSAGE);
            Ty::Error
        }
        syn::Type::Tuple(t) if !t.elems.is_empty() => {
            let mut elems = Vec::new();
            for e in &t.elems {
                match parse_type(e, scope, diags) {
                    Ty::Scalar(s) => elems.push(Ty::Scalar(s)),
                    Ty::Error => return Ty::Error,
                    other => {
                        diags.error_at(e, format!("tuple elements are scalars; `{other}` is not"));
                        return Ty::Error;
                    }
                }
            }
            Ty::Tuple(elems)
        }
        syn::Type::Array(a) => {
            let elem = parse_type(&a.elem, scope, diags);
            let len = eval_usize(&a.len, consts, diags);
            match (elem, len) {
                (Ty::Scalar(s), Some(n)) if s != Scalar::Bool || n > 0 => Ty::Array(s, n as u32),
                (Ty::Error, _) | (_, None) => Ty::Error,
                (other, _) => {
                    diags.error_at(
                        &a.elem,
                        format!("array elements are scalars; `{other}` is not"),
                    );
                    Ty::Error
                }
            }
        }
        syn::Type::ImplTrait(t) => {
            diags.error_at(
                t,
                "`impl Trait` is not supported in kernels: use a concrete type",
            );
            Ty::Error
        }
        syn::Type::Ptr(p) => {
            diags.error_at(
                p,
                "raw pointers are not supported in kernels: take `&[T]` or `&mut [T]`",
            );
            Ty::Error
        }
        syn::Type::Paren(p) => parse_type(&p.elem, scope, diags),
        syn::Type::Group(g) => parse_type(&g.elem, scope, diags),
        _ => unsupported_type(ty, diags),
    }
}

fn unsupported_type(ty: &syn::Type, diags: &mut Diagnostics) -> Ty {
    if names_accumulator(ty) {
        diags.error_at(
            ty,
            "an accumulator stays in the role code that makes it: a helper fn cannot take or return one yet; call `mma` and `store` on it in the role",
        );
        return Ty::Error;
    }
    diags.error_at(
        ty,
        "this type is not in the kernel language: use a scalar (bool, i8..i64, u8..u64, isize, usize, f32, f64), `&[T]`, `&mut [T]`, `&[AtomicU32]`, `Sender<[T; N], D>` or `Receiver<[T; N], D>`",
    );
    Ty::Error
}

/// The generic arguments of a shared array, `<T, N>` (or `<T, R, C>` for `two_d`): `T` a scalar
/// or an atomic type (`AtomicU32`, `AtomicF32`, ..), the sizes constants.
pub(crate) fn array_args(
    args: &[&syn::GenericArgument],
    two_d: bool,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
    whole: &dyn quote::ToTokens,
) -> Option<ArrayTy> {
    let example = if two_d {
        "`shared_array_2d::<f32, 32, 32>()`: the element type, the rows and the columns"
    } else {
        "`shared_array::<u32, 256>()`: the element type and the length"
    };
    if args.len() != if two_d { 3 } else { 2 } {
        diags.error_at(whole, format!("name the array's shape: {example}"));
        return None;
    }
    let syn::GenericArgument::Type(t) = args[0] else {
        diags.error_at(
            args[0],
            format!("the first argument is the element type: {example}"),
        );
        return None;
    };
    let atomic = match t {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .and_then(|s| crate::types::atomic_scalar(&s.ident.to_string())),
        _ => None,
    };
    let (elem, atomic) = match atomic {
        Some(s) => (s, true),
        None => match parse_type(t, scope, diags) {
            Ty::Scalar(s) => (s, false),
            Ty::Error => return None,
            other => {
                diags.error_at(t, format!("a shared array's elements are scalars or atomics (`AtomicU32`, `AtomicF32`, ..); `{other}` is not"));
                return None;
            }
        },
    };
    let mut dims = Vec::new();
    for a in &args[1..] {
        let Some(e) = const_arg(a) else {
            diags.error_at(
                a,
                format!("a shared array's sizes are constants: {example}"),
            );
            return None;
        };
        match eval_usize(&e, &scope.consts, diags) {
            Some(0) => {
                diags.error_at(&e, "a shared array needs at least one element");
                return None;
            }
            Some(n) => dims.push(n as u32),
            None => return None,
        }
    }
    Some(match dims.as_slice() {
        [r, c] => ArrayTy {
            elem,
            atomic,
            rows: Some(*r),
            cols: *c,
        },
        [n] => ArrayTy {
            elem,
            atomic,
            rows: None,
            cols: *n,
        },
        _ => return None,
    })
}

/// Reads `[T; N], DEPTH` of a channel type or of `channel::<..>()`.
pub(crate) fn chan_args(
    args: &[&syn::GenericArgument],
    scope: &ModuleScope,
    diags: &mut Diagnostics,
    whole: &dyn quote::ToTokens,
) -> Option<ChanTy> {
    let consts = &scope.consts;
    if args.len() != 2 {
        diags.error_at(whole, "a channel takes two arguments: the payload `[T; N]` and the depth, as in `channel::<[f32; 1024], 3>()`");
        return None;
    }
    let (elem, len) = match args[0] {
        syn::GenericArgument::Type(syn::Type::Array(a)) => {
            let name = match &*a.elem {
                syn::Type::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            let scalar = name.as_deref().and_then(Scalar::from_name);
            let strukt = name.as_ref().and_then(|n| scope.structs.get(n).copied());
            if name
                .as_ref()
                .is_some_and(|n| scope.failed_items.contains(n))
            {
                // A struct whose error is reported at its definition.
                return None;
            }
            let elem = match (scalar, strukt, name) {
                (Some(s), _, _) => ChanElem::Scalar(s),
                (None, Some(id), Some(name)) => ChanElem::Struct {
                    id,
                    name,
                    fields: scope.struct_defs[id as usize]
                        .fields
                        .iter()
                        .map(|f| f.1)
                        .collect(),
                },
                _ => {
                    diags.error_at(
                        &a.elem,
                        "a channel payload's elements are scalars (integers, `bool`, `f32`, `f64`) or `#[derive(Clone, Copy)]` structs of the module",
                    );
                    return None;
                }
            };
            match eval_usize(&a.len, consts, diags) {
                Some(0) => {
                    diags.error_at(&a.len, "a channel payload needs at least one element");
                    return None;
                }
                Some(n) => (elem, n as u32),
                None => return None,
            }
        }
        syn::GenericArgument::Type(ty) if tile_path(ty).is_some() => {
            let (elem, rows, cols) = tile_args(tile_path(ty)?, scope, diags)?;
            (ChanElem::Tile { elem, rows, cols }, rows * cols)
        }
        syn::GenericArgument::Type(syn::Type::Tuple(t))
            if t.elems.iter().any(|e| tile_path(e).is_some()) =>
        {
            if t.elems.len() != 2 {
                diags.error_at(t, "a payload of tiles is one tile, `Tile<T, R, C>`, or a pair of them, `(Tile<..>, Tile<..>)`");
                return None;
            }
            let mut parts = Vec::new();
            for e in &t.elems {
                let Some(p) = tile_path(e) else {
                    diags.error_at(
                        e,
                        "both parts of a pair of tiles are tiles, `Tile<T, R, C>`",
                    );
                    return None;
                };
                parts.push(tile_args(p, scope, diags)?);
            }
            let len = parts.iter().map(|(_, r, c)| r * c).sum();
            (ChanElem::Tiles(parts), len)
        }
        syn::GenericArgument::Type(syn::Type::Reference(r)) => {
            diags.error_at(r, "a reference cannot travel through a channel: it would point into one role's memory; send the values themselves, as an array `[T; N]`");
            return None;
        }
        syn::GenericArgument::Type(other) => {
            let heap = match other {
                syn::Type::Path(p) => p
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .filter(|n| HEAP_TYPES.contains(&n.as_str())),
                _ => None,
            };
            match heap {
                Some(name) => diags.error_at(other, format!("`{name}` cannot travel through a channel: a payload lives in shared memory, so it is an array of scalars `[T; N]`")),
                None => diags.error_at(other, "a channel payload is an array of scalars, `[T; N]`, or a tile, `Tile<T, R, C>`"),
            }
            return None;
        }
        other => {
            diags.error_at(
                other,
                "a channel payload is an array of scalars, `[T; N]`, or a tile, `Tile<T, R, C>`",
            );
            return None;
        }
    };
    let Some(depth_expr) = const_arg(args[1]) else {
        diags.error_at(args[1], "a channel's depth is a constant number of slots");
        return None;
    };
    let depth = match eval_usize(&depth_expr, consts, diags) {
        Some(d) if (1..=32).contains(&d) => d as u32,
        Some(d) => {
            diags.error_at(&depth_expr, format!("a channel has 1 to 32 slots; got {d}"));
            return None;
        }
        None => return None,
    };
    Some(ChanTy { elem, len, depth })
}

/// `&Matrix<T>` or `&mut Matrix<T>`: a matrix parameter, `T` one of the tile element types.
/// Tile loads read it; tile stores write a `&mut Matrix<T>`.
fn matrix_type(
    r: &syn::TypeReference,
    last: &syn::PathSegment,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Ty {
    let mutable = r.mutability.is_some();
    let elem = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
            syn::GenericArgument::Type(t) => Some((t, parse_type(t, scope, diags))),
            _ => None,
        },
        _ => None,
    };
    match elem {
        Some((_, Ty::Scalar(s))) if is_tile_elem(s) => Ty::Matrix(s, mutable),
        Some((_, Ty::Error)) => Ty::Error,
        Some((t, other)) => {
            diags.error_at(t, format!("a matrix holds `bf16`, `f16` or `f32` (what tile loads and the tensor cores take); `{other}` is not one"));
            Ty::Error
        }
        None => {
            diags.error_at(
                last,
                "write `&Matrix<T>` with `T` one of `bf16`, `f16`, `f32`",
            );
            Ty::Error
        }
    }
}

/// The most rows or columns of a tile: a TMA box's limit per dimension.
const MAX_TILE_DIM: u64 = 256;

/// `Tile<T, R, C>` of a channel payload: `T` a tile element type, `R` and `C` in 1..=256, a row
/// a multiple of 16 bytes (the TMA copies rows in 16-byte units).
fn tile_args(
    p: &syn::TypePath,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Option<(Scalar, u32, u32)> {
    let last = p.path.segments.last()?;
    let example = "`Tile<bf16, 64, 64>` (the element type, rows, columns)";
    let args: Vec<&syn::GenericArgument> = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
        _ => Vec::new(),
    };
    let [t, r, c] = args.as_slice() else {
        diags.error_at(last, format!("a tile takes three arguments: {example}"));
        return None;
    };
    let elem = match t {
        syn::GenericArgument::Type(ty) => match parse_type(ty, scope, diags) {
            Ty::Scalar(s) if is_tile_elem(s) => s,
            Ty::Error => return None,
            other => {
                diags.error_at(ty, format!("a tile holds `bf16`, `f16` or `f32` (what tile loads and the tensor cores take); `{other}` is not one"));
                return None;
            }
        },
        other => {
            diags.error_at(
                other,
                format!("the first argument is the element type: {example}"),
            );
            return None;
        }
    };
    let mut dims = [0u32; 2];
    for (k, (a, what)) in [(r, "rows"), (c, "columns")].into_iter().enumerate() {
        let Some(e) = const_arg(a) else {
            diags.error_at(a, format!("a tile's sizes are constants: {example}"));
            return None;
        };
        match eval_usize(&e, &scope.consts, diags) {
            Some(n) if (1..=MAX_TILE_DIM).contains(&n) => dims[k] = n as u32,
            Some(n) => {
                diags.error_at(
                    &e,
                    format!("a tile has 1 to {MAX_TILE_DIM} {what} (a tile load's limit); got {n}"),
                );
                return None;
            }
            None => return None,
        }
    }
    let [rows, cols] = dims;
    let row_bytes = cols * elem.size();
    if row_bytes % 16 != 0 {
        let per = 16 / elem.size();
        diags.error_at(c, format!("a tile's row is a multiple of 16 bytes (a tile load moves rows in 16-byte units): {cols} columns of `{elem}` are {row_bytes} B; make the columns a multiple of {per}"));
        return None;
    }
    Some((elem, rows, cols))
}

/// A constant generic argument as an expression: `N` in `[T; N]`-like positions is written as
/// a literal or block (`Const`) or as a bare path (`TILE`, which syn parses as a type).
/// The `M` and `N` of `Accumulator<M, N>` (the type's path segment), each reported where it
/// is not an accumulator's.
pub(crate) fn accumulator_args(
    seg: &syn::PathSegment,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Option<(u32, u32)> {
    let example = "name its rows and columns: `Accumulator::<128, 256>`";
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        diags.error_at(seg, example);
        return None;
    };
    let dims: Vec<syn::Expr> = args.args.iter().filter_map(const_arg).collect();
    if dims.len() != 2 || args.args.len() != 2 {
        diags.error_at(args, example);
        return None;
    }
    let m = eval_usize(&dims[0], &scope.consts, diags)?;
    let n = eval_usize(&dims[1], &scope.consts, diags)?;
    if let Some(message) = crate::types::accumulator_shape_error(m, n) {
        diags.error_at(args, message);
        return None;
    }
    Some((m as u32, n as u32))
}

/// `Rows::<M>`'s rows, `M` a multiple of 64 from 64 to 256 (an accumulator's `M`).
pub(crate) fn rows_arg(
    seg: &syn::PathSegment,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Option<u32> {
    let example = "name the rows: `Rows::<128>`, an accumulator's `M`";
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        diags.error_at(seg, example);
        return None;
    };
    let dims: Vec<syn::Expr> = args.args.iter().filter_map(const_arg).collect();
    if dims.len() != 1 || args.args.len() != 1 {
        diags.error_at(args, example);
        return None;
    }
    let m = eval_usize(&dims[0], &scope.consts, diags)?;
    if m == 0 || m % 64 != 0 || m > 256 {
        diags.error_at(args, format!("rows are an accumulator's, 64 per warpgroup: `M` is 64, 128, 192 or 256; found {m}"));
        return None;
    }
    Some(m as u32)
}

fn const_arg(a: &syn::GenericArgument) -> Option<syn::Expr> {
    match a {
        syn::GenericArgument::Const(e) => Some(e.clone()),
        syn::GenericArgument::Type(syn::Type::Path(p)) => Some(syn::Expr::Path(syn::ExprPath {
            attrs: Vec::new(),
            qself: None,
            path: p.path.clone(),
        })),
        _ => None,
    }
}

/// Whether `ty` is `Accumulator<..>`, or a reference to one.
fn names_accumulator(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => names_accumulator(&r.elem),
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Accumulator"),
        _ => false,
    }
}

/// `Tile<..>` (a path whose last segment is `Tile`) as a type: its path.
fn tile_path(ty: &syn::Type) -> Option<&syn::TypePath> {
    match ty {
        syn::Type::Path(p)
            if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Tile") =>
        {
            Some(p)
        }
        _ => None,
    }
}
