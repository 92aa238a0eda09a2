//! Constant evaluation of `const` items and of the array lengths and depths in types.

use std::collections::HashMap;

use super::tir::Lit;
use super::types::Scalar;
use crate::diag::Diagnostics;

/// Evaluates a constant expression of type `ty`.
pub(crate) fn eval_const(
    expr: &syn::Expr,
    ty: Scalar,
    consts: &HashMap<String, (Scalar, Lit)>,
    diags: &mut Diagnostics,
) -> Option<Lit> {
    match eval(expr, consts) {
        Ok(Lit::Int(v)) if ty.is_int() => {
            if fits(v, ty) {
                Some(Lit::Int(v))
            } else {
                diags.error_at(expr, format!("{} does not fit in `{ty}`", v as i128));
                None
            }
        }
        Ok(Lit::Float(v)) if ty.is_float() => Some(Lit::Float(v)),
        Ok(Lit::Int(v)) if ty.is_float() => Some(Lit::Float(v as i128 as f64)),
        Ok(Lit::Bool(b)) if ty == Scalar::Bool => Some(Lit::Bool(b)),
        Ok(_) => {
            diags.error_at(expr, format!("this constant is not a `{ty}`"));
            None
        }
        Err(e) => {
            diags.push(e);
            None
        }
    }
}

/// Evaluates a constant `usize` (array lengths, channel depths).
pub(crate) fn eval_usize(
    expr: &syn::Expr,
    consts: &HashMap<String, (Scalar, Lit)>,
) -> Result<u64, syn::Error> {
    match eval(expr, consts)? {
        Lit::Int(v) if v <= u128::from(u32::MAX) => Ok(v as u64),
        _ => Err(syn::Error::new_spanned(
            expr,
            "expected a constant integer below 2^32 here",
        )),
    }
}

fn fits(v: u128, ty: Scalar) -> bool {
    let v = v as i128;
    ty.int_range()
        .is_some_and(|(lo, hi)| (lo..=hi).contains(&v))
}

/// Integers are evaluated as `i128` carried in a `u128`; a `const` must fit its type.
fn eval(expr: &syn::Expr, consts: &HashMap<String, (Scalar, Lit)>) -> Result<Lit, syn::Error> {
    let unsupported = || {
        syn::Error::new_spanned(
            expr,
            "a constant here must be a literal, another `const` of the module, or + - * / % << >> of them",
        )
    };
    match expr {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<u128>().map(Lit::Int),
            syn::Lit::Float(f) => f.base10_parse::<f64>().map(Lit::Float),
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            _ => Err(unsupported()),
        },
        syn::Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .ok_or_else(unsupported)?;
            consts.get(&name).map(|(_, v)| *v).ok_or_else(|| {
                syn::Error::new_spanned(p, format!("`{name}` is not a `const` of this module"))
            })
        }
        syn::Expr::Paren(p) => eval(&p.expr, consts),
        syn::Expr::Group(g) => eval(&g.expr, consts),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match eval(&u.expr, consts)? {
            Lit::Int(v) => Ok(Lit::Int((v as i128).wrapping_neg() as u128)),
            Lit::Float(v) => Ok(Lit::Float(-v)),
            Lit::Bool(_) => Err(unsupported()),
        },
        syn::Expr::Binary(b) => {
            let (l, r) = (eval(&b.left, consts)?, eval(&b.right, consts)?);
            match (l, r) {
                (Lit::Int(l), Lit::Int(r)) => {
                    let (l, r) = (l as i128, r as i128);
                    let v = match b.op {
                        syn::BinOp::Add(_) => l.checked_add(r),
                        syn::BinOp::Sub(_) => l.checked_sub(r),
                        syn::BinOp::Mul(_) => l.checked_mul(r),
                        syn::BinOp::Div(_) => l.checked_div(r),
                        syn::BinOp::Rem(_) => l.checked_rem(r),
                        syn::BinOp::Shl(_) => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)),
                        syn::BinOp::Shr(_) => u32::try_from(r).ok().and_then(|r| l.checked_shr(r)),
                        _ => return Err(unsupported()),
                    };
                    v.map(|v| Lit::Int(v as u128)).ok_or_else(|| {
                        syn::Error::new_spanned(expr, "this constant overflows or divides by zero")
                    })
                }
                (Lit::Float(l), Lit::Float(r)) => Ok(Lit::Float(match b.op {
                    syn::BinOp::Add(_) => l + r,
                    syn::BinOp::Sub(_) => l - r,
                    syn::BinOp::Mul(_) => l * r,
                    syn::BinOp::Div(_) => l / r,
                    _ => return Err(unsupported()),
                })),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}
