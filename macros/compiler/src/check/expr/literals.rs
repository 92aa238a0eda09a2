//! Literals and names: numbers and booleans, paths (locals, constants, statics, enum
//! variants), and the literals of arrays, tuples and structs.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::check::{consts, sig::heap_message, value_size_message};
use crate::tir::{Expr, ExprKind, Lit};
use crate::types::{Scalar, Ty, MAX_VALUE_SCALARS};

impl Checker<'_> {
    /// An integer, float or `bool` literal. An unsuffixed number takes the expected type where
    /// that is a type of its kind, and stays untyped otherwise.
    pub(super) fn literal(&mut self, lit: &syn::Lit, expected: Option<&Ty>) -> Expr {
        let span = lit.span();
        match lit {
            syn::Lit::Int(i) => {
                let Ok(v) = i.base10_parse::<u128>() else {
                    self.diags.error(span, "this integer literal is too large");
                    return err(span);
                };
                let ty = match i.suffix() {
                    "" => match expected {
                        Some(Ty::Scalar(s)) if s.is_int() => Ty::Scalar(*s),
                        _ => Ty::IntLit,
                    },
                    suffix => match Scalar::from_name(suffix) {
                        Some(s) if s.is_int() => Ty::Scalar(s),
                        Some(s) if s.is_float() => {
                            return mk(ExprKind::Lit(Lit::Float(v as f64)), Ty::Scalar(s), span)
                        }
                        _ => {
                            self.diags.error(span, format!("`{suffix}` is not a literal suffix of the kernel language: use one of i8..i64, isize, u8..u64, usize, f32, f64"));
                            return err(span);
                        }
                    },
                };
                mk(ExprKind::Lit(Lit::Int(v)), ty, span)
            }
            syn::Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    self.diags.error(span, "this float literal cannot be read");
                    return err(span);
                };
                match f.suffix() {
                    "" => mk(
                        ExprKind::Lit(Lit::Float(v)),
                        match expected {
                            Some(Ty::Scalar(s)) if s.is_float() => Ty::Scalar(*s),
                            _ => Ty::FloatLit,
                        },
                        span,
                    ),
                    "f32" => mk(ExprKind::Lit(Lit::Float(v)), Ty::Scalar(Scalar::F32), span),
                    "f64" => mk(ExprKind::Lit(Lit::Float(v)), Ty::Scalar(Scalar::F64), span),
                    s => {
                        self.diags.error(
                            span,
                            format!("`{s}` is not a float literal suffix: write `f32` or `f64`"),
                        );
                        err(span)
                    }
                }
            }
            syn::Lit::Bool(b) => mk(
                ExprKind::Lit(Lit::Bool(b.value)),
                Ty::Scalar(Scalar::Bool),
                span,
            ),
            _ => {
                self.diags.error(
                    span,
                    "only integer, float and bool literals are supported in kernels",
                );
                err(span)
            }
        }
    }

    /// A name: an enum variant, an associated constant (`u32::MAX`), a local, or a `const` or
    /// `static` of the module.
    pub(super) fn path_expr(&mut self, p: &syn::ExprPath) -> Expr {
        // The first token's, as rustc's stable proc-macro spans give: syn's `span()` would print
        // the path to join its tokens, on every use of a local.
        let span = super::path_span(p.qself.as_ref(), &p.path);
        if let Some(e) = self.enum_value(&p.path) {
            return e;
        }
        if let Some((ty, value)) = consts::assoc_const(&p.path) {
            return mk(ExprKind::Lit(value), Ty::Scalar(ty), span);
        }
        let Some(ident) = p.path.get_ident() else {
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            if let Some(first) = p.path.segments.first() {
                let first = first.ident.to_string();
                if ["Vec", "Box", "String"].contains(&first.as_str()) {
                    self.diags.error(span, heap_message(&first));
                    return err(span);
                }
            }
            self.diags.error(span, format!("paths such as `{}` are not supported in kernels yet: use a local, a parameter or a `const` of the module (found `{last}`)", quote::quote!(#p)));
            return err(span);
        };
        let name = ident.to_string();
        if let Some(id) = self.lookup(&name) {
            let ty = self.locals[id.0 as usize].ty.clone();
            return mk(ExprKind::Local(id), ty, span);
        }
        if let Some((ty, value)) = self.scope.consts.get(&name) {
            return mk(ExprKind::Lit(*value), Ty::Scalar(*ty), span);
        }
        if self.scope.consts.failed(&name) {
            // Its error is reported at its definition.
            return err(span);
        }
        if let Some((id, ty)) = self.scope.statics.get(&name) {
            return mk(ExprKind::Static(*id), ty.clone(), span);
        }
        if self.scope.failed_items.contains(&name) {
            // A `static` whose error is reported at its definition.
            return err(span);
        }
        self.diags.error(span, format!("cannot find `{name}` in this kernel: a kernel sees its parameters, its locals and the `const`s of its module"));
        err(span)
    }

    /// `Enum::Variant` of an enum of the module: its discriminant, typed as the enum.
    pub(super) fn enum_value(&mut self, path: &syn::Path) -> Option<Expr> {
        if path.segments.len() != 2 {
            return None;
        }
        let enum_name = path.segments[0].ident.to_string();
        let (id, variants) = self.scope.enums.get(&enum_name)?;
        let variant = path.segments[1].ident.to_string();
        let span = path.segments[1].ident.span();
        match variants.iter().find(|(n, _)| *n == variant) {
            Some((_, d)) => Some(mk(
                ExprKind::Lit(Lit::Int(*d as u128)),
                Ty::Enum(*id, enum_name),
                span,
            )),
            None => {
                self.diags
                    .error(span, format!("`{enum_name}` has no variant `{variant}`"));
                Some(err(span))
            }
        }
    }

    /// `[a, b, ..]`: scalars of one type.
    pub(super) fn array_list(
        &mut self,
        a: &mut syn::ExprArray,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        if a.elems.len() > MAX_VALUE_SCALARS as usize {
            self.diags
                .error(span, value_size_message("this array", a.elems.len() as u64));
            return err(span);
        }
        let mut elem_ty = match expected {
            Some(Ty::Array(s, _)) => Some(Ty::Scalar(*s)),
            _ => None,
        };
        let mut elems = Vec::new();
        for x in a.elems.iter_mut() {
            let e = self.expr(x, elem_ty.as_ref());
            if elem_ty.is_none() && matches!(e.ty, Ty::Scalar(_)) {
                elem_ty = Some(e.ty.clone());
            }
            elems.push(e);
        }
        let mut out = Vec::new();
        for e in elems {
            let mut e = self.auto_deref(e);
            if let Some(t) = &elem_ty {
                self.expect(&mut e, t);
            }
            let Some(e) = self.array_element(e) else {
                return err(span);
            };
            out.push(e);
        }
        let s = out
            .first()
            .and_then(|e| e.ty.scalar())
            .unwrap_or(Scalar::I32);
        let n = out.len() as u32;
        mk(ExprKind::ArrayList(out), Ty::Array(s, n), span)
    }

    /// `[value; N]` with a constant `N`.
    pub(super) fn array_repeat(
        &mut self,
        r: &mut syn::ExprRepeat,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let elem_expected = match expected {
            Some(Ty::Array(s, _)) => Some(Ty::Scalar(*s)),
            _ => None,
        };
        let value = self.expr(&mut r.expr, elem_expected.as_ref());
        let Some(value) = self.array_element(value) else {
            return err(span);
        };
        let Some(n) = consts::eval_usize(&r.len, &self.scope.consts, self.diags) else {
            return err(span);
        };
        if n > u64::from(MAX_VALUE_SCALARS) {
            self.diags
                .error_at(&r.len, value_size_message("this array", n));
            return err(span);
        }
        let n = n as u32;
        let s = value.ty.scalar().unwrap_or(Scalar::I32);
        mk(
            ExprKind::ArrayRepeat(Box::new(value), n),
            Ty::Array(s, n),
            span,
        )
    }

    /// An array element: a scalar (an untyped literal takes its default type).
    fn array_element(&mut self, value: Expr) -> Option<Expr> {
        let mut value = self.auto_deref(value);
        match value.ty {
            Ty::IntLit => self.fix_literals(&mut value, Scalar::I32),
            Ty::FloatLit => self.fix_literals(&mut value, Scalar::F32),
            Ty::Scalar(_) => {}
            Ty::Error => return None,
            ref other => {
                self.diags.error(
                    value.span,
                    format!("array elements are scalars; this is a `{other}`"),
                );
                return None;
            }
        }
        Some(value)
    }

    /// `(a, b, ..)` of scalars.
    pub(super) fn tuple_lit(
        &mut self,
        t: &mut syn::ExprTuple,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let want: Vec<Option<Ty>> = match expected {
            Some(Ty::Tuple(ts)) if ts.len() == t.elems.len() => {
                ts.iter().cloned().map(Some).collect()
            }
            _ => vec![None; t.elems.len()],
        };
        let mut elems = Vec::new();
        for (x, w) in t.elems.iter_mut().zip(&want) {
            let e = self.expr(x, w.as_ref());
            let mut e = self.auto_deref(e);
            if let Some(w) = w {
                self.expect(&mut e, w);
            }
            match e.ty {
                Ty::Scalar(_) | Ty::IntLit | Ty::FloatLit => {}
                Ty::Error => return err(span),
                ref other => {
                    let hint = match other {
                        Ty::Sender(_)
                        | Ty::Receiver(_)
                        | Ty::OneshotSender(_)
                        | Ty::OneshotReceiver(_) => {
                            "; a channel end travels on its own: pass it by name to the one role that owns it"
                        }
                        _ => "",
                    };
                    self.diags.error(
                        e.span,
                        format!("tuple elements are scalars; this is a `{other}`{hint}"),
                    );
                    return err(span);
                }
            }
            elems.push(e);
        }
        let ty = Ty::Tuple(elems.iter().map(|e| e.ty.clone()).collect());
        mk(ExprKind::TupleLit(elems), ty, span)
    }

    /// `Name { field: value, .. }` of a struct of the module: every field once, in any order.
    pub(super) fn struct_lit(&mut self, st: &mut syn::ExprStruct, span: Span) -> Expr {
        let name = st
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        let Some(&id) = self.scope.structs.get(&name) else {
            if self.scope.failed_items.contains(&name) {
                // Its error is reported at its definition.
                return err(span);
            }
            self.diags
                .error_at(&st.path, format!("`{name}` is not a struct of this module"));
            return err(span);
        };
        if let Some(rest) = &st.rest {
            self.diags.error_at(
                rest,
                "`..base` is not supported in kernels: write every field",
            );
            return err(span);
        }
        let def = self.scope.struct_defs[id as usize].clone();
        // One expression per declared field (an array field's value is an array; the lowering
        // flattens it into its components).
        let mut values: Vec<Option<Expr>> = vec![None; def.declared.len()];
        for fv in st.fields.iter_mut() {
            let syn::Member::Named(field) = &fv.member else {
                self.diags.error_at(&fv.member, "name the field");
                continue;
            };
            let field = field.to_string();
            let Some(i) = def.declared.iter().position(|(n, ..)| *n == field) else {
                self.diags
                    .error_at(&fv.member, format!("`{name}` has no field `{field}`"));
                continue;
            };
            let (_, first, len) = def.declared[i];
            let elem = def.fields[first].1;
            let ty = match len {
                Some(n) => Ty::Array(elem, n),
                None => Ty::Scalar(elem),
            };
            let e = self.expr(&mut fv.expr, Some(&ty));
            let mut e = self.auto_deref(e);
            self.expect(&mut e, &ty);
            values[i] = Some(e);
        }
        let mut elems = Vec::new();
        for (v, (field, ..)) in values.into_iter().zip(&def.declared) {
            match v {
                Some(v) => elems.push(v),
                None => {
                    self.diags
                        .error(span, format!("missing field `{field}` of `{name}`"));
                    return err(span);
                }
            }
        }
        mk(ExprKind::TupleLit(elems), Ty::Struct(id, name), span)
    }
}
