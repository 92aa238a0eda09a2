//! Methods of numbers: math functions (`x.sqrt()`, `a.min(b)`, `checked_add`, ...), the `half`
//! conversions, and the `Option` that the `checked_*` methods give.

use proc_macro2::Span;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind, MathDomain, MathFn};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// A method of a number (or of the element a reference reads): the `half` conversions and
    /// the math functions.
    pub(super) fn number_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("to_f32" | "to_f64" | "to_bits", Ty::Scalar(h) | Ty::ElemRef { elem: h, .. })
                if h.is_half() && self.want_args(m, 0) =>
            {
                let receiver = self.auto_deref(receiver);
                match name {
                    "to_bits" => mk(
                        ExprKind::HalfBits(Box::new(receiver), Scalar::U16),
                        Ty::Scalar(Scalar::U16),
                        span,
                    ),
                    "to_f32" => mk(
                        ExprKind::Cast(Box::new(receiver), Scalar::F32),
                        Ty::Scalar(Scalar::F32),
                        span,
                    ),
                    _ => mk(
                        ExprKind::Cast(Box::new(receiver), Scalar::F64),
                        Ty::Scalar(Scalar::F64),
                        span,
                    ),
                }
            }
            (_, Ty::Scalar(_) | Ty::ElemRef { .. } | Ty::IntLit | Ty::FloatLit)
                if MathFn::lookup(name).is_some() =>
            {
                self.math_call(name, receiver, m, span)
            }
            ("par_iter" | "par_iter_mut", Ty::ElemRef { .. }) if self.want_args(m, 0) => {
                self.diags
                    .error(span, "a parallel iterator runs over a slice or a slot");
                err(span)
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// `x.sqrt()`, `x.min(y)`, `x.mul_add(a, b)`, ...: every operand has the receiver's type.
    fn math_call(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some((f, argc, domain)) = MathFn::lookup(name) else {
            return err(span);
        };
        let mut receiver = self.auto_deref(receiver);
        if m.args.len() != argc {
            self.diags.error(
                m.method.span(),
                format!(
                    "`{name}` takes {argc} argument{}",
                    if argc == 1 { "" } else { "s" }
                ),
            );
            return err(span);
        }
        let ty = match receiver.ty {
            Ty::IntLit => {
                self.diags.error(receiver.span, format!("the type of this literal is not known: write a suffix, as in `2i32.{name}(..)`"));
                return err(span);
            }
            Ty::FloatLit => {
                self.fix_literals(&mut receiver, Scalar::F32);
                Scalar::F32
            }
            Ty::Scalar(s) => s,
            _ => return err(span),
        };
        let ok = match domain {
            MathDomain::Float => ty.is_float(),
            MathDomain::F32 => ty == Scalar::F32,
            MathDomain::Int => ty.is_int(),
            MathDomain::Signed => ty.is_float() || ty.is_signed(),
            MathDomain::Number => ty != Scalar::Bool,
        };
        if !ok {
            let what = match domain {
                MathDomain::Float if ty.is_half() => {
                    let args = if argc == 0 { "" } else { ".." };
                    format!("`{name}` is not available on `{ty}`: compute in `f32` and round back, as in `{ty}::from_f32(x.to_f32().{name}({args}))`")
                }
                MathDomain::F32 => format!("`{name}` is the GPU's fast `f32` approximation, not available on `{ty}`: compute in `f32`, or use `exp2` for the correctly rounded value"),
                _ => format!("`{name}` is not available on `{ty}` in kernels"),
            };
            self.diags.error(m.method.span(), what);
            return err(span);
        }
        // Integer `abs` wraps on the device (`MIN.abs()` is `MIN`): the simulator must agree.
        if f == MathFn::Abs && ty.is_int() {
            m.method = syn::Ident::new("wrapping_abs", m.method.span());
        }
        let arg_ty = if f == MathFn::Powi { Scalar::I32 } else { ty };
        let mut args = vec![receiver];
        for a in m.args.iter_mut() {
            let e = self.expr(a, Some(&Ty::Scalar(arg_ty)));
            let mut e = self.auto_deref(e);
            self.expect(&mut e, &Ty::Scalar(arg_ty));
            args.push(e);
        }
        if matches!(
            f,
            MathFn::CheckedAdd
                | MathFn::CheckedSub
                | MathFn::CheckedMul
                | MathFn::CheckedDiv
                | MathFn::CheckedRem
        ) {
            return mk(ExprKind::Math(f, args), Ty::Opt(ty), span);
        }
        let result = match f {
            MathFn::IsNan => Scalar::Bool,
            MathFn::ToBits if ty == Scalar::F64 => Scalar::U64,
            MathFn::ToBits | MathFn::CountOnes | MathFn::LeadingZeros | MathFn::TrailingZeros => {
                Scalar::U32
            }
            _ => ty,
        };
        mk(ExprKind::Math(f, args), Ty::Scalar(result), span)
    }

    /// A method of the `Option` of a `checked_*` method: `is_some`, `unwrap`, `unwrap_or`.
    pub(super) fn option_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("is_some" | "is_none", Ty::Opt(_)) if self.want_args(m, 0) => mk(
                ExprKind::OptIsSome(Box::new(receiver), name == "is_some"),
                Ty::Scalar(Scalar::Bool),
                span,
            ),
            ("unwrap", Ty::Opt(s)) if self.want_args(m, 0) => {
                let s = *s;
                mk(
                    ExprKind::OptUnwrap(Box::new(receiver), None),
                    Ty::Scalar(s),
                    span,
                )
            }
            ("unwrap_or", Ty::Opt(s)) if self.want_args(m, 1) => {
                let want = Ty::Scalar(*s);
                let d = self.expr(&mut m.args[0], Some(&want));
                let mut d = self.auto_deref(d);
                self.expect(&mut d, &want);
                mk(
                    ExprKind::OptUnwrap(Box::new(receiver), Some(Box::new(d))),
                    want,
                    span,
                )
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }
}
