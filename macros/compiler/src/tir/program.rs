//! A checked module: its functions in the typed IR, their signatures, and the structs and
//! `static` tables they use. The checker builds it; lowering and the shadow code read it.

use proc_macro2::Span;

use super::{FnId, Function, Lit};
use crate::types::{Scalar, Ty};

/// `#[kernel(warps = N)]`.
#[derive(Debug, Clone, Copy)]
pub struct KernelAttr {
    /// Warps per block.
    pub warps: u32,
    /// `idle_warps`: warps that run no role are intended (otherwise they are an error).
    pub idle_warps: bool,
    /// The span of the attribute, for errors about warps.
    pub span: Span,
}

/// A checked module.
pub struct Program {
    /// Every function, indexed by [`FnId`].
    pub functions: Vec<Function>,
    /// The kernels, in module order.
    pub kernels: Vec<FnId>,
    /// Every function's signature, indexed by [`FnId`] (the module's functions in order).
    pub signatures: Vec<Signature>,
    /// The module's `static` tables, indexed by `ExprKind::Static`'s number.
    pub statics: Vec<StaticTable>,
    /// The module's structs, indexed by `Ty::Struct`'s number.
    pub structs: Vec<StructDef>,
    /// The instances of generic helpers, with the checker's edits, for the shadow code (the
    /// calls are rewritten to them).
    pub instances: Vec<syn::ItemFn>,
}

/// A function's signature.
#[derive(Debug, Clone)]
pub struct Signature {
    /// The name.
    pub name: String,
    /// `async fn`.
    pub is_async: bool,
    /// `#[kernel(warps = N)]`.
    pub kernel: Option<KernelAttr>,
    /// `(name, type, mut, span)` of each parameter.
    pub params: Vec<(String, Ty, bool, Span)>,
    /// The return type.
    pub ret: Ty,
    /// The names of a generic helper's type parameters (its parameters and result may be
    /// `Ty::Generic`); each use instantiates it with scalars.
    pub generics: Vec<String>,
}

/// A `#[derive(Clone, Copy)] struct` of the module: named fields of scalars and arrays of
/// scalars. A value of it is its *components* in order: one per scalar field, `N` per array
/// field `[T; N]` (named `field[k]`).
#[derive(Debug, Clone)]
pub struct StructDef {
    /// The name.
    pub name: String,
    /// The components, in declaration order.
    pub fields: Vec<(String, Scalar)>,
    /// The declared fields: name, first component, and `Some(N)` for an array field.
    pub declared: Vec<(String, usize, Option<u32>)>,
}

impl StructDef {
    /// The declared field `name`: its first component and array length.
    pub fn field(&self, name: &str) -> Option<(usize, Option<u32>)> {
        self.declared
            .iter()
            .find(|(n, ..)| n == name)
            .map(|(_, first, len)| (*first, *len))
    }
}

/// A `static NAME: [T; N] = [..];` of the module: a table in constant memory.
#[derive(Debug, Clone)]
pub struct StaticTable {
    /// The user's name.
    pub name: String,
    /// Element type.
    pub elem: Scalar,
    /// The elements' values.
    pub values: Vec<Lit>,
}

impl Program {
    /// The function `id`.
    pub fn function(&self, id: FnId) -> &Function {
        &self.functions[id.0 as usize]
    }
}
