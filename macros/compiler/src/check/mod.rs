//! Phase 2, check: name resolution and type inference over the kernel language, producing the
//! typed IR ([`tir`]), and rejection (with a message that says what to write instead) of every
//! construct outside it.
//!
//! The checker also edits the user's syn tree for the shadow code: it writes the types it inferred
//! for `let` bindings as ascriptions, so that rustc verifies the inference, and it rewrites
//! `join!(...)` into a call of `gpu_async::device::join_roles`.

mod consts;
mod expr;
mod nesting;
mod sig;
mod suspend;
mod uniform;

pub(crate) use uniform::children;

use std::collections::HashMap;

use crate::diag::Diagnostics;
use crate::parse::{Item, Module};
use crate::target::CONST_LIMIT;
use crate::tir::{self, FnId, Function, Lit, Program, Signature, StaticTable, StructDef};
use crate::types::{Scalar, Ty, MAX_VALUE_SCALARS};

/// A generic helper instantiated with scalars; its `FnId` follows the module's functions.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub generic: FnId,
    pub types: Vec<Scalar>,
    pub id: FnId,
    pub name: String,
}

/// At most this many instances of generic helpers per module.
const MAX_INSTANCES: usize = 256;

/// What every function's checker may look up.
pub(crate) struct ModuleScope {
    pub consts: consts::Consts,
    pub fns: HashMap<String, FnId>,
    pub sigs: Vec<Signature>,
    /// `static` tables by name: their number and type.
    pub statics: HashMap<String, (u32, Ty)>,
    /// The structs by name.
    pub structs: HashMap<String, u32>,
    /// The structs, by number.
    pub struct_defs: Vec<StructDef>,
    /// The structs and `static` tables whose definition has an error (reported there, not again
    /// at their uses).
    pub failed_items: std::collections::HashSet<String>,
    /// The enums by name: their number and their variants' names and discriminants.
    pub enums: HashMap<String, (u32, Vec<(String, i128)>)>,
    /// The generic helpers' items, by `FnId`.
    pub generic_items: HashMap<u32, syn::ItemFn>,
    /// The instances asked for so far (the checker adds to it while it checks calls).
    pub instances: std::cell::RefCell<Vec<Instance>>,
    /// The first `FnId` after the module's own functions.
    pub first_instance: u32,
}

/// Checks every function of `module`. Errors are collected in `diags`; the functions that have
/// errors are still returned (with `Ty::Error` in places) so that every error is found in one
/// build, but a program with errors must not be lowered.
pub fn check_module(module: &mut Module, diags: &mut Diagnostics) -> Program {
    let mut scope = ModuleScope {
        consts: consts::Consts::default(),
        fns: HashMap::new(),
        sigs: Vec::new(),
        statics: HashMap::new(),
        structs: HashMap::new(),
        struct_defs: Vec::new(),
        enums: HashMap::new(),
        failed_items: Default::default(),
        generic_items: HashMap::new(),
        instances: std::cell::RefCell::new(Vec::new()),
        first_instance: 0,
    };
    struct_defs(module, &mut scope, diags);
    enum_defs(module, &mut scope, diags);
    for item in &module.items {
        if let Item::Const(c) = item {
            let value = consts::eval_const(&c.item.expr, c.ty, &scope.consts, diags);
            scope
                .consts
                .insert(c.item.ident.to_string(), value.map(|v| (c.ty, v)));
        }
    }
    let statics = static_tables(module, &mut scope, diags);
    let mut fn_items = Vec::new();
    for item in module.items.iter_mut() {
        if let Item::Fn(f) = item {
            let id = FnId(scope.sigs.len() as u32);
            let name = f.item.sig.ident.to_string();
            if scope.fns.insert(name.clone(), id).is_some() {
                diags.error_at(&f.item.sig.ident, format!("`{name}` is defined twice"));
            }
            // Code nested too deep is reported once, and not walked further: a signature too deep
            // gives an empty one, a body too deep is not checked.
            let deep = nesting::too_deep(&f.item);
            if let Some((_, span)) = deep {
                diags.error(span, nesting::message());
            }
            let sig = match deep {
                Some((true, _)) => Signature {
                    name,
                    is_async: f.item.sig.asyncness.is_some(),
                    kernel: f.kernel,
                    params: Vec::new(),
                    ret: Ty::Error,
                    generics: Vec::new(),
                },
                _ => sig::signature(&f.item, f.kernel.as_ref(), &scope, diags),
            };
            if !sig.generics.is_empty() && deep.is_none() {
                scope.generic_items.insert(id.0, f.item.clone());
            }
            scope.sigs.push(sig);
            fn_items.push((f, deep.is_some()));
        }
    }
    scope.first_instance = scope.sigs.len() as u32;
    let mut functions = Vec::new();
    let mut kernels = Vec::new();
    let mut calls = Vec::new();
    for (index, (f, deep)) in fn_items.into_iter().enumerate() {
        let id = FnId(index as u32);
        if f.kernel.is_some() {
            kernels.push(id);
        }
        if !scope.sigs[index].generics.is_empty() || deep {
            // Checked per instance (or reported too deep); this entry keeps the numbering.
            functions.push(Function {
                name: scope.sigs[index].name.clone(),
                is_async: scope.sigs[index].is_async,
                kernel_warps: None,
                idle_warps: false,
                params: Vec::new(),
                ret: Ty::Unit,
                locals: Vec::new(),
                body: tir::Block::default(),
                has_return: false,
                par_awaits: Vec::new(),
                span: f.item.sig.ident.span(),
            });
            calls.push(expr::Calls::default());
            continue;
        }
        let (function, called) = expr::check_function(&mut f.item, id, &scope, diags);
        functions.push(function);
        calls.push(called);
    }
    // The instances the calls asked for, in the order of their numbers (an instance's own calls
    // may ask for more).
    let mut instance_items = Vec::new();
    let mut done = 0;
    loop {
        let pending: Vec<Instance> = scope.instances.borrow()[done..].to_vec();
        if pending.is_empty() {
            break;
        }
        let over = done + pending.len() > MAX_INSTANCES;
        if over {
            let span = functions[pending[0].generic.0 as usize].span;
            diags.error(span, format!("the generic helpers are instantiated with more than {MAX_INSTANCES} combinations of types: call them with fewer types, or write the helpers for the types you need"));
        }
        done += pending.len();
        for inst in pending {
            // Each instance keeps its number: one left unchecked (past the limit, or of a
            // helper reported too deep) has an empty entry.
            let generic = scope.generic_items.get(&inst.generic.0).filter(|_| !over);
            let Some(generic) = generic else {
                scope.sigs.push(Signature {
                    name: inst.name.clone(),
                    is_async: false,
                    kernel: None,
                    params: Vec::new(),
                    ret: Ty::Error,
                    generics: Vec::new(),
                });
                functions.push(Function {
                    name: inst.name.clone(),
                    is_async: false,
                    kernel_warps: None,
                    idle_warps: false,
                    params: Vec::new(),
                    ret: Ty::Error,
                    locals: Vec::new(),
                    body: tir::Block::default(),
                    has_return: false,
                    par_awaits: Vec::new(),
                    span: functions[inst.generic.0 as usize].span,
                });
                calls.push(expr::Calls::default());
                continue;
            };
            let mut item = instantiate(generic, &inst);
            let sig = sig::signature(&item, None, &scope, diags);
            scope.sigs.push(sig);
            let (function, called) = expr::check_function(&mut item, inst.id, &scope, diags);
            functions.push(function);
            calls.push(called);
            instance_items.push(item);
        }
        if over {
            break;
        }
    }
    report_recursion(&functions, &calls, diags);
    suspend::report_par_awaits(&functions, diags);
    report_joins_in_joins(&functions, &calls, diags);
    Program {
        functions,
        kernels,
        signatures: scope.sigs,
        statics,
        structs: scope.struct_defs,
        instances: instance_items,
    }
}

/// A copy of a generic helper with its type parameters replaced by the instance's scalars, under
/// the instance's name.
fn instantiate(generic: &syn::ItemFn, inst: &Instance) -> syn::ItemFn {
    use syn::visit_mut::VisitMut;
    struct Substitute<'a> {
        names: Vec<String>,
        types: &'a [Scalar],
    }
    impl VisitMut for Substitute<'_> {
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            if let syn::Type::Path(p) = t {
                if let Some(ident) = p.path.get_ident() {
                    let name = ident.to_string();
                    if let Some(i) = self.names.iter().position(|n| *n == name) {
                        let span = ident.span();
                        let scalar = syn::Ident::new(self.types[i].rust_name(), span);
                        *t = syn::parse_quote_spanned!(span=> #scalar);
                        return;
                    }
                }
            }
            syn::visit_mut::visit_type_mut(self, t);
        }
    }
    let mut item = generic.clone();
    let names: Vec<String> = item
        .sig
        .generics
        .type_params()
        .map(|t| t.ident.to_string())
        .collect();
    item.sig.generics = syn::Generics::default();
    item.sig.ident = syn::Ident::new(&inst.name, generic.sig.ident.span());
    let mut sub = Substitute {
        names,
        types: &inst.types,
    };
    sub.visit_item_fn_mut(&mut item);
    item
}

/// Whether `#[derive(..)]` among `attrs` derives `Copy`.
fn derives_copy(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split(',').any(|t| t.trim() == "Copy"))
    })
}

/// Registers the module's enums: variants without payloads, whose discriminants fit a `u32`
/// (Rust's, including explicit `= value`s), `Clone` and `Copy`.
fn enum_defs(module: &Module, scope: &mut ModuleScope, diags: &mut Diagnostics) {
    for item in &module.items {
        let Item::Enum(e) = item else { continue };
        let name = e.ident.to_string();
        if !derives_copy(&e.attrs) {
            diags.error_at(&e.ident, format!("an enum of a #[gpu_async] module is a plain value: add `#[derive(Clone, Copy)]` to `{name}`"));
        }
        let mut variants = Vec::new();
        let mut next: i128 = 0;
        for v in &e.variants {
            if !matches!(v.fields, syn::Fields::Unit) {
                diags.error_at(&v.fields, "enum variants with data are not in the kernel language: use a struct, or an enum without payloads and the data beside it");
                continue;
            }
            let value = match &v.discriminant {
                Some((_, expr)) => {
                    match consts::eval_const(expr, Scalar::U32, &scope.consts, diags) {
                        Some(Lit::Int(d)) => d as i128,
                        _ => continue,
                    }
                }
                None => next,
            };
            next = value + 1;
            variants.push((v.ident.to_string(), value));
        }
        let id = scope.enums.len() as u32;
        scope.enums.insert(name, (id, variants));
    }
}

/// Registers the module's structs: named fields of scalars, `Clone` and `Copy` (kernel values
/// are copied, as on the GPU, where they are registers).
fn struct_defs(module: &Module, scope: &mut ModuleScope, diags: &mut Diagnostics) {
    for item in &module.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        if s.generics.lifetimes().next().is_some() {
            diags.error_at(&s.generics, "references stored in structs are not in the kernel language: pass the slice as a kernel or helper parameter of its own");
            scope.failed_items.insert(name);
            continue;
        }
        if !s.generics.params.is_empty() {
            diags.error_at(
                &s.generics,
                "generic structs are not supported in kernels: write the field types out",
            );
            scope.failed_items.insert(name);
            continue;
        }
        let syn::Fields::Named(named) = &s.fields else {
            diags.error_at(
                &s.fields,
                "give the struct's fields names, as in `struct P { x: f32, y: f32 }`",
            );
            scope.failed_items.insert(name);
            continue;
        };
        let mut fields = Vec::new();
        let mut declared = Vec::new();
        let mut failed = false;
        for f in &named.named {
            let field = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
            match sig::parse_type(&f.ty, scope, diags) {
                Ty::Scalar(t) => {
                    declared.push((field.clone(), fields.len(), None));
                    fields.push((field, t));
                }
                Ty::Array(_, 0) => {
                    diags.error_at(
                        array_len(&f.ty),
                        format!("the array field `{field}` has no elements: give it at least one, or leave the field out"),
                    );
                    failed = true;
                }
                Ty::Array(_, n) if n > MAX_VALUE_SCALARS => {
                    diags.error_at(
                        array_len(&f.ty),
                        value_size_message(&format!("the array field `{field}`"), n.into()),
                    );
                    failed = true;
                }
                Ty::Array(_, n) if fields.len() + n as usize > MAX_VALUE_SCALARS as usize => {
                    diags.error_at(
                        &f.ty,
                        value_size_message(
                            &format!("`{name}` with its field `{field}`"),
                            (fields.len() + n as usize) as u64,
                        ),
                    );
                    failed = true;
                    break;
                }
                Ty::Array(t, n) => {
                    declared.push((field.clone(), fields.len(), Some(n)));
                    for k in 0..n {
                        fields.push((format!("{field}[{k}]"), t));
                    }
                }
                Ty::Error => failed = true,
                Ty::Sender(_) | Ty::Receiver(_) | Ty::OneshotSender(_) | Ty::OneshotReceiver(_) => {
                    diags.error_at(&f.ty, "a channel end is not a struct field: each end moves into the one role that owns it, so pass it to that role by name");
                    failed = true;
                }
                other => {
                    diags.error_at(&f.ty, format!("a struct field in a kernel is a scalar or an array of scalars; `{other}` is not (slices are kernel parameters of their own)"));
                    failed = true;
                }
            }
        }
        if failed {
            scope.failed_items.insert(name);
            continue;
        }
        if !derives_copy(&s.attrs) {
            diags.error_at(&s.ident, format!("a struct of a #[gpu_async] module is a plain value: add `#[derive(Clone, Copy)]` to `{name}`"));
        }
        let id = scope.struct_defs.len() as u32;
        scope.structs.insert(name.clone(), id);
        scope.struct_defs.push(StructDef {
            name,
            fields,
            declared,
        });
    }
}

/// The tokens of an array type's length (where an error about its size goes), or the type.
pub(crate) fn array_len(ty: &syn::Type) -> &dyn quote::ToTokens {
    match ty {
        syn::Type::Array(a) => &a.len,
        syn::Type::Paren(p) => array_len(&p.elem),
        syn::Type::Group(g) => array_len(&g.elem),
        other => other,
    }
}

/// The error for `what`, a value of `n` scalars, past [`MAX_VALUE_SCALARS`].
pub(crate) fn value_size_message(what: &str, n: u64) -> String {
    format!("{what} has {n} elements, past the {MAX_VALUE_SCALARS} a kernel value may hold (a thread's values live in its registers or its local memory, and are copied element by element): put large data in a `&[T]` parameter or a channel slot")
}

/// Evaluates the module's `static` tables (arrays of constants), and checks that they fit the
/// 64 KiB of constant memory together.
fn static_tables(
    module: &Module,
    scope: &mut ModuleScope,
    diags: &mut Diagnostics,
) -> Vec<StaticTable> {
    let mut tables = Vec::new();
    let mut sizes = Vec::new();
    let mut first_span = None;
    for item in &module.items {
        let Item::Static(s) = item else { continue };
        first_span.get_or_insert(s.ident.span());
        let name = s.ident.to_string();
        let Some((elem, values)) = static_table(s, scope, diags) else {
            scope.failed_items.insert(name);
            continue;
        };
        let len = values.len();
        sizes.push(format!("`{name}` {} B", len * elem.size() as usize));
        scope.statics.insert(
            name.clone(),
            (tables.len() as u32, Ty::Array(elem, len as u32)),
        );
        tables.push(StaticTable { name, elem, values });
    }
    let total: usize = tables
        .iter()
        .map(|t| t.values.len() * t.elem.size() as usize)
        .sum();
    if total > CONST_LIMIT {
        diags.error(
            first_span.unwrap_or_else(proc_macro2::Span::call_site),
            format!("the module's `static` tables need {total} B of constant memory, past the {CONST_LIMIT} B (64 KiB) a kernel can address: {}; put large tables in a `&[T]` parameter instead", sizes.join(", ")),
        );
    }
    tables
}

/// One `static` table's element type and values; `None` after reporting why it has none.
fn static_table(
    s: &syn::ItemStatic,
    scope: &ModuleScope,
    diags: &mut Diagnostics,
) -> Option<(Scalar, Vec<Lit>)> {
    let name = s.ident.to_string();
    let (elem, len) = match sig::parse_type(&s.ty, scope, diags) {
        Ty::Array(elem, len) => (elem, len as usize),
        Ty::Error => return None,
        other => {
            diags.error_at(&s.ty, format!("a `static` in a #[gpu_async] module is a table, `[T; N]`; for a single `{other}` write a `const`"));
            return None;
        }
    };
    // Checked before the table's values are made.
    let bytes = len as u64 * u64::from(elem.size());
    if bytes > CONST_LIMIT as u64 {
        diags.error_at(
            array_len(&s.ty),
            format!("`{name}` needs {len} × {} B = {bytes} B of constant memory, past the {CONST_LIMIT} B (64 KiB) a kernel can address; put large tables in a `&[T]` parameter instead", elem.size()),
        );
        return None;
    }
    let values: Vec<Lit> = match &*s.expr {
        syn::Expr::Array(a) => a
            .elems
            .iter()
            .filter_map(|e| consts::eval_const(e, elem, &scope.consts, diags))
            .collect(),
        syn::Expr::Repeat(r) => vec![consts::eval_const(&r.expr, elem, &scope.consts, diags)?; len],
        other => {
            diags.error_at(
                other,
                "a table's value is written out: `[a, b, c]` or `[value; N]` of constants",
            );
            return None;
        }
    };
    if values.len() != len {
        diags.error_at(
            &s.expr,
            format!(
                "`{name}` is declared with {len} elements and given {}",
                values.len()
            ),
        );
        return None;
    }
    Some((elem, values))
}

/// Helpers are inlined into their roles, so a call cycle can never be compiled.
fn report_recursion(functions: &[Function], calls: &[expr::Calls], diags: &mut Diagnostics) {
    // Depth-first search from each function; a call that reaches back to the root is reported
    // once, at the call site that closes the cycle.
    for root in 0..functions.len() {
        let mut stack = vec![root];
        let mut seen = vec![false; functions.len()];
        while let Some(f) = stack.pop() {
            for &(callee, span, _) in &calls[f].calls {
                let c = callee.0 as usize;
                if c == root {
                    if f == root || !seen[root] {
                        diags.error(
                            span,
                            format!(
                                "recursion is not supported in kernels: `{}` calls itself{}; helpers are inlined into their roles and GPU threads have almost no stack, so rewrite it as a loop",
                                functions[root].name,
                                if f == root { String::new() } else { format!(" through `{}`", functions[f].name) }
                            ),
                        );
                        seen[root] = true;
                    }
                } else if !seen[c] {
                    seen[c] = true;
                    stack.push(c);
                }
            }
        }
    }
}

/// Helpers are inlined, so a helper that runs a `join!` (itself, or through the helpers it calls),
/// called in a branch of a `join!`, would be a `join!` inside a `join!`, which is not supported.
fn report_joins_in_joins(functions: &[Function], calls: &[expr::Calls], diags: &mut Diagnostics) {
    // Whether each function runs a `join!`, through its callees too; a cycle (an error already)
    // counts only its own joins.
    let n = functions.len();
    let mut joins: Vec<Option<bool>> = vec![None; n];
    for root in 0..n {
        // Post-order over the call graph with an explicit stack: (function, callees visited).
        let mut stack = vec![(root, false)];
        let mut on_stack = vec![false; n];
        while let Some((f, visited)) = stack.pop() {
            if joins[f].is_some() {
                continue;
            }
            if visited {
                on_stack[f] = false;
                let any = calls[f].joins
                    || calls[f]
                        .calls
                        .iter()
                        .any(|&(c, _, _)| joins.get(c.0 as usize).copied().flatten() == Some(true));
                joins[f] = Some(any);
                continue;
            }
            on_stack[f] = true;
            stack.push((f, true));
            for &(c, _, _) in &calls[f].calls {
                let c = c.0 as usize;
                if c < n && joins[c].is_none() && !on_stack[c] {
                    stack.push((c, false));
                }
            }
        }
    }
    for f in calls {
        for &(callee, span, in_join) in &f.calls {
            let c = callee.0 as usize;
            if in_join && joins.get(c).copied().flatten() == Some(true) {
                diags.error(
                    span,
                    format!("`{}` runs a `join!`, and this call runs in a branch of a `join!`, where another `join!` is not supported yet: join all the futures in one `join!`", functions[c].name),
                );
            }
        }
    }
}

/// Whether `ty` may be passed where `expected` is wanted (after literal inference).
pub(crate) fn assignable(ty: &Ty, expected: &Ty) -> bool {
    match (ty, expected) {
        (Ty::Error, _) | (_, Ty::Error) | (Ty::Never, _) => true,
        (Ty::IntLit, Ty::Scalar(s)) => s.is_int(),
        (Ty::FloatLit, Ty::Scalar(s)) => s.is_float(),
        (Ty::Array(a, n), Ty::Array(b, m)) => a == b && n == m,
        (Ty::Tuple(a), Ty::Tuple(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| assignable(x, y))
        }
        (
            Ty::Slice {
                elem: a,
                mutable: ma,
            },
            Ty::Slice {
                elem: b,
                mutable: mb,
            },
        ) => a == b && (*ma || !*mb),
        (Ty::SharedArrayRef(a, ma), Ty::SharedArrayRef(b, mb)) => a == b && (*ma || !*mb),
        (Ty::Matrix(a, ma), Ty::Matrix(b, mb)) => a == b && (*ma || !*mb),
        _ => ty == expected,
    }
}
