//! Operators: binary and compound assignment, unary, and `as` casts.
//!
//! Integer arithmetic wraps on the GPU; the shadow code spells the operators that could
//! overflow as `wrapping_*` calls so that the simulator computes the same.

use proc_macro2::Span;
use quote::quote_spanned;

use super::{err, mk, negation_message, Checker};
use crate::check::sig;
use crate::tir::{BinOp, Expr, ExprKind, UnOp};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `a op b` and `place op= b`: both sides of one type (a literal side takes the other's),
    /// except a shift's amount, which is any integer.
    pub(super) fn binary(
        &mut self,
        b: &mut syn::ExprBinary,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        use syn::BinOp as S;
        let (op, compound) = match b.op {
            S::Add(_) => (BinOp::Add, false),
            S::Sub(_) => (BinOp::Sub, false),
            S::Mul(_) => (BinOp::Mul, false),
            S::Div(_) => (BinOp::Div, false),
            S::Rem(_) => (BinOp::Rem, false),
            S::BitAnd(_) => (BinOp::And, false),
            S::BitOr(_) => (BinOp::Or, false),
            S::BitXor(_) => (BinOp::Xor, false),
            S::Shl(_) => (BinOp::Shl, false),
            S::Shr(_) => (BinOp::Shr, false),
            S::Eq(_) => (BinOp::Eq, false),
            S::Ne(_) => (BinOp::Ne, false),
            S::Lt(_) => (BinOp::Lt, false),
            S::Le(_) => (BinOp::Le, false),
            S::Gt(_) => (BinOp::Gt, false),
            S::Ge(_) => (BinOp::Ge, false),
            S::And(_) => (BinOp::LogicAnd, false),
            S::Or(_) => (BinOp::LogicOr, false),
            S::AddAssign(_) => (BinOp::Add, true),
            S::SubAssign(_) => (BinOp::Sub, true),
            S::MulAssign(_) => (BinOp::Mul, true),
            S::DivAssign(_) => (BinOp::Div, true),
            S::RemAssign(_) => (BinOp::Rem, true),
            S::BitAndAssign(_) => (BinOp::And, true),
            S::BitOrAssign(_) => (BinOp::Or, true),
            S::BitXorAssign(_) => (BinOp::Xor, true),
            S::ShlAssign(_) => (BinOp::Shl, true),
            S::ShrAssign(_) => (BinOp::Shr, true),
            _ => {
                self.diags
                    .error(span, "this operator is not supported in kernels");
                return err(span);
            }
        };
        if compound {
            let place = self.place(&mut b.left);
            let target = match &place.ty {
                Ty::ElemRef { elem, .. } => Ty::Scalar(*elem),
                t => t.clone(),
            };
            if !matches!(target, Ty::Scalar(_) | Ty::Error) {
                self.diags.error(
                    place.span,
                    format!(
                        "`{}=` works on a number or a `bool`, not on a `{target}`",
                        op.symbol()
                    ),
                );
                return err(span);
            }
            let rhs_expected = if matches!(op, BinOp::Shl | BinOp::Shr) {
                None
            } else {
                Some(&target)
            };
            let mut value = self.expr(&mut b.right, rhs_expected);
            value = self.auto_deref(value);
            if matches!(op, BinOp::Shl | BinOp::Shr) {
                self.shift_amount(&mut value);
            } else {
                self.expect(&mut value, &target);
            }
            if let Ty::Scalar(s) = target {
                self.check_operand_type(op, s, span);
            }
            return mk(
                ExprKind::CompoundAssign(op, Box::new(place), Box::new(value)),
                Ty::Unit,
                span,
            );
        }
        if matches!(op, BinOp::LogicAnd | BinOp::LogicOr) {
            let bool_ty = Ty::Scalar(Scalar::Bool);
            let mut l = self.expr(&mut b.left, Some(&bool_ty));
            let mut r = self.expr(&mut b.right, Some(&bool_ty));
            self.expect(&mut l, &bool_ty);
            self.expect(&mut r, &bool_ty);
            return mk(
                ExprKind::Binary(op, Box::new(l), Box::new(r)),
                bool_ty,
                span,
            );
        }
        let operand_expected = if op.is_comparison() { None } else { expected };
        let l = self.expr(&mut b.left, operand_expected);
        let mut l = self.auto_deref(l);
        let r_expected = if matches!(op, BinOp::Shl | BinOp::Shr) {
            None
        } else if let Ty::Scalar(_) = l.ty {
            Some(l.ty.clone())
        } else {
            operand_expected.cloned()
        };
        let r = self.expr(&mut b.right, r_expected.as_ref());
        let mut r = self.auto_deref(r);
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            self.shift_amount(&mut r);
            if !matches!(l.ty, Ty::Scalar(_) | Ty::IntLit | Ty::Error) {
                self.diags.error(
                    l.span,
                    format!("`{}` shifts an integer, not a `{}`", op.symbol(), l.ty),
                );
                return err(span);
            }
            if let Ty::Scalar(s) = l.ty {
                self.check_operand_type(op, s, span);
            }
            let ty = if l.ty == Ty::IntLit {
                Ty::IntLit
            } else {
                l.ty.clone()
            };
            return mk(ExprKind::Binary(op, Box::new(l), Box::new(r)), ty, span);
        }
        // Unify: a literal side takes the other side's type.
        let ty = match (&l.ty, &r.ty) {
            (Ty::Error, _) | (_, Ty::Error) => return err(span),
            (Ty::Scalar(a), Ty::Scalar(b)) if a == b => Ty::Scalar(*a),
            (Ty::Enum(a, name), Ty::Enum(b, _))
                if a == b && matches!(op, BinOp::Eq | BinOp::Ne) =>
            {
                let _ = name;
                return mk(
                    ExprKind::Binary(op, Box::new(l), Box::new(r)),
                    Ty::Scalar(Scalar::Bool),
                    span,
                );
            }
            (Ty::Scalar(a), Ty::IntLit | Ty::FloatLit) => {
                let a = *a;
                self.expect(&mut r, &Ty::Scalar(a));
                Ty::Scalar(a)
            }
            (Ty::IntLit | Ty::FloatLit, Ty::Scalar(b)) => {
                let b = *b;
                self.expect(&mut l, &Ty::Scalar(b));
                Ty::Scalar(b)
            }
            (Ty::IntLit, Ty::IntLit) => Ty::IntLit,
            (Ty::FloatLit, Ty::FloatLit) => Ty::FloatLit,
            (a, b) => {
                self.diags.error(span, format!("`{}` needs both sides of one type; found `{a}` and `{b}` (convert one with `as`)", op.symbol()));
                return err(span);
            }
        };
        if let Ty::Scalar(s) = ty {
            self.check_operand_type(op, s, span);
        }
        let result = if op.is_comparison() {
            Ty::Scalar(Scalar::Bool)
        } else {
            ty
        };
        mk(ExprKind::Binary(op, Box::new(l), Box::new(r)), result, span)
    }

    /// Checks a shift's amount: an integer (an untyped literal is a `u32`), not a negative
    /// literal.
    fn shift_amount(&mut self, r: &mut Expr) {
        if r.ty == Ty::IntLit {
            if matches!(r.kind, ExprKind::Unary(UnOp::Neg, _)) {
                self.diags.error(
                    r.span,
                    "a shift amount cannot be negative: Rust rejects `x << -3` as an overflow; shift the other way, `x >> 3`",
                );
                *r = err(r.span);
                return;
            }
            self.fix_literals(r, Scalar::U32);
        }
        if !matches!(r.ty, Ty::Scalar(s) if s.is_int()) && r.ty != Ty::Error {
            self.diags.error(
                r.span,
                format!(
                    "a shift amount is an integer, not a `{}`: convert it with `as u32`",
                    r.ty
                ),
            );
            *r = err(r.span);
        }
    }

    /// Reports `op` where it is not defined for `s` (the `half` types have arithmetic and
    /// comparisons only).
    fn check_operand_type(&mut self, op: BinOp, s: Scalar, span: Span) {
        if s.is_half()
            && !matches!(
                op,
                BinOp::Add
                    | BinOp::Sub
                    | BinOp::Mul
                    | BinOp::Div
                    | BinOp::Rem
                    | BinOp::Lt
                    | BinOp::Le
                    | BinOp::Gt
                    | BinOp::Ge
                    | BinOp::Eq
                    | BinOp::Ne
            )
        {
            self.diags.error(
                span,
                format!(
                    "`{}` is not defined for `{s}`: compute in `f32` (`x.to_f32()`)",
                    op.symbol()
                ),
            );
            return;
        }
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => s != Scalar::Bool,
            BinOp::And | BinOp::Or | BinOp::Xor => !s.is_float(),
            BinOp::Shl | BinOp::Shr => s.is_int(),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => true,
            BinOp::LogicAnd | BinOp::LogicOr => s == Scalar::Bool,
        };
        if !ok {
            self.diags
                .error(span, format!("`{}` is not defined for `{s}`", op.symbol()));
        }
    }

    /// `*r`, `-x` (which the shadow code spells `wrapping_neg` on signed integers) and `!x`.
    pub(super) fn unary(
        &mut self,
        u: &mut syn::ExprUnary,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        match u.op {
            syn::UnOp::Deref(_) => {
                let inner = self.expr(&mut u.expr, None);
                match inner.ty {
                    Ty::ElemRef { elem, .. } => {
                        mk(ExprKind::Deref(Box::new(inner)), Ty::Scalar(elem), span)
                    }
                    Ty::StructRef { id, ref name, .. } => {
                        let ty = Ty::Struct(id, name.clone());
                        mk(ExprKind::Deref(Box::new(inner)), ty, span)
                    }
                    // `*x.get_unchecked(i)`: the element (Rust's `get_unchecked` gives `&T`).
                    Ty::Scalar(_) if matches!(inner.kind, ExprKind::Unchecked(_)) => {
                        Expr { span, ..inner }
                    }
                    Ty::Error => err(span),
                    _ => {
                        self.diags
                            .error(span, format!("cannot dereference `{}`", inner.ty));
                        err(span)
                    }
                }
            }
            syn::UnOp::Neg(_) => {
                let inner = self.expr(&mut u.expr, expected);
                let inner = self.auto_deref(inner);
                match inner.ty {
                    Ty::Scalar(s) if s.is_signed() => {
                        // `-i32::MIN` wraps on the GPU; the simulator must agree.
                        let operand = &u.expr;
                        let derefs = matches!(inner.kind, ExprKind::Deref(_))
                            && !matches!(&**operand, syn::Expr::Unary(d) if matches!(d.op, syn::UnOp::Deref(_)));
                        let operand = if derefs {
                            quote::quote!((*#operand))
                        } else {
                            quote::quote!((#operand))
                        };
                        let ty_ident = syn::Ident::new(s.rust_name(), span);
                        let wrapped = quote_spanned!(span=> <#ty_ident>::wrapping_neg(#operand));
                        let out = mk(
                            ExprKind::Unary(UnOp::Neg, Box::new(inner)),
                            Ty::Scalar(s),
                            span,
                        );
                        self.pending_rewrite = Some(syn::Expr::Verbatim(wrapped));
                        out
                    }
                    Ty::Scalar(Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16)
                    | Ty::IntLit
                    | Ty::FloatLit => {
                        let ty = inner.ty.clone();
                        mk(ExprKind::Unary(UnOp::Neg, Box::new(inner)), ty, span)
                    }
                    Ty::Error => err(span),
                    Ty::Scalar(s) if s.is_int() => {
                        self.diags.error(span, negation_message(s));
                        err(span)
                    }
                    ref t => {
                        self.diags.error(span, format!("cannot negate a `{t}`"));
                        err(span)
                    }
                }
            }
            syn::UnOp::Not(_) => {
                let inner = self.expr(&mut u.expr, expected);
                let inner = self.auto_deref(inner);
                match inner.ty {
                    Ty::Scalar(s) if !s.is_float() && !s.is_half() => mk(
                        ExprKind::Unary(UnOp::Not, Box::new(inner)),
                        Ty::Scalar(s),
                        span,
                    ),
                    Ty::IntLit => mk(
                        ExprKind::Unary(UnOp::Not, Box::new(inner)),
                        Ty::IntLit,
                        span,
                    ),
                    Ty::Error => err(span),
                    ref t => {
                        self.diags
                            .error(span, format!("`!` is not defined for `{t}`"));
                        err(span)
                    }
                }
            }
            _ => {
                self.diags
                    .error(span, "this operator is not supported in kernels");
                err(span)
            }
        }
    }

    /// `x as T`: between scalars (not the `half` types), and from an enum to an integer.
    pub(super) fn cast(&mut self, c: &mut syn::ExprCast, span: Span) -> Expr {
        let target = sig::parse_type(&c.ty, self.scope, self.diags);
        let inner = self.expr(&mut c.expr, None);
        let inner = self.auto_deref(inner);
        match (&target, &inner.ty) {
            (Ty::Scalar(t), Ty::Scalar(_) | Ty::IntLit | Ty::FloatLit) => {
                let mut inner = inner;
                match inner.ty {
                    Ty::IntLit => self.fix_literals(&mut inner, Scalar::I32),
                    Ty::FloatLit => self.fix_literals(&mut inner, Scalar::F32),
                    _ => {}
                }
                if t.is_half() || inner.ty.scalar().is_some_and(Scalar::is_half) {
                    self.diags.error(span, "`as` does not convert the `half` types in Rust: write `f16::from_f32(x)` (or `bf16::`) and `x.to_f32()`");
                    return err(span);
                }
                if *t == Scalar::Bool && inner.ty != Ty::Scalar(Scalar::Bool) {
                    self.diags.error(span, "casting to `bool` is not allowed in Rust: compare with zero instead, `x != 0`");
                }
                mk(ExprKind::Cast(Box::new(inner), *t), Ty::Scalar(*t), span)
            }
            (Ty::Scalar(t), Ty::Enum(..)) if t.is_int() => {
                mk(ExprKind::Cast(Box::new(inner), *t), Ty::Scalar(*t), span)
            }
            (Ty::Error, _) | (_, Ty::Error) => err(span),
            _ => {
                self.diags.error(
                    span,
                    format!(
                        "`as` converts between scalars; cannot cast `{}` to `{}`",
                        inner.ty, target
                    ),
                );
                err(span)
            }
        }
    }
}

/// Integer arithmetic wraps on the GPU; for the simulator to compute the same (a debug build
/// panics on overflow), the shadow code spells `a + b` on integers as `<T>::wrapping_add(a, b)`
/// (likewise `-`, `*`, `<<`, `>>` and their compound assignments). The user's operand tokens are
/// kept, with a `*` where the checker read through an element reference.
pub(super) fn wrapping_form(b: &syn::ExprBinary, checked: &Expr) -> Option<syn::Expr> {
    let (op, lhs, rhs, compound) = match &checked.kind {
        ExprKind::Binary(op, l, r) => (*op, l, r, false),
        ExprKind::CompoundAssign(op, l, r) => (*op, l, r, true),
        _ => return None,
    };
    let ty = match &lhs.ty {
        Ty::Scalar(s) if s.is_int() => *s,
        Ty::ElemRef { elem, .. } if elem.is_int() => *elem,
        _ => return None,
    };
    let method = match op {
        BinOp::Add => "wrapping_add",
        BinOp::Sub => "wrapping_sub",
        BinOp::Mul => "wrapping_mul",
        BinOp::Shl => "wrapping_shl",
        BinOp::Shr => "wrapping_shr",
        _ => return None,
    };
    let operand = |syn_side: &syn::Expr, typed: &Expr| {
        // The typed side reads an element the user's tokens do not dereference (Rust's auto
        // deref of `v + 1` where `v: &i32`, or a compound assignment's `*p` place read as a
        // value): the wrapping call takes the value, so the shadow adds the `*`.
        let explicit =
            matches!(syn_side, syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)));
        let derefs = matches!(typed.kind, ExprKind::Deref(_)) && !explicit;
        if derefs || (compound && !explicit && matches!(typed.ty, Ty::ElemRef { .. })) {
            quote::quote!((*#syn_side))
        } else {
            quote::quote!((#syn_side))
        }
    };
    let span = match b.op {
        syn::BinOp::Add(t) => t.span,
        syn::BinOp::Sub(t) => t.span,
        syn::BinOp::Mul(t) => t.span,
        syn::BinOp::Shl(t) => t.spans[0],
        syn::BinOp::Shr(t) => t.spans[0],
        syn::BinOp::AddAssign(t) => t.spans[0],
        syn::BinOp::SubAssign(t) => t.spans[0],
        syn::BinOp::MulAssign(t) => t.spans[0],
        syn::BinOp::ShlAssign(t) => t.spans[0],
        syn::BinOp::ShrAssign(t) => t.spans[0],
        _ => return None,
    };
    let ty_ident = syn::Ident::new(ty.rust_name(), span);
    let method = syn::Ident::new(method, span);
    let (left, right) = (operand(&b.left, lhs), operand(&b.right, rhs));
    // The shift amount is a `u32` in the wrapping methods.
    let right = if matches!(op, BinOp::Shl | BinOp::Shr) {
        quote::quote!((#right as u32))
    } else {
        right
    };
    let call = quote_spanned!(span=> <#ty_ident>::#method(#left, #right));
    let place = &b.left;
    let tokens = if compound {
        let place = if matches!(lhs.ty, Ty::ElemRef { .. })
            && !matches!(&**place, syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)))
        {
            quote::quote!(*#place)
        } else {
            quote::quote!(#place)
        };
        quote_spanned!(span=> #place = #call)
    } else {
        call
    };
    Some(syn::Expr::Verbatim(tokens))
}
