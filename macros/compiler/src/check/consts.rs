//! Constant evaluation of `const` items and of the array lengths and depths in types.

use std::collections::{HashMap, HashSet};

use crate::diag::Diagnostics;
use crate::tir::Lit;
use crate::tir::MAX_NESTING;
use crate::types::Scalar;

/// The module's `const`s: the value of each one that evaluated, and the names of those that did
/// not (their error is reported once, at their definition, not again at each use).
#[derive(Debug, Default)]
pub(crate) struct Consts {
    values: HashMap<String, (Scalar, Lit)>,
    failed: HashSet<String>,
}

impl Consts {
    /// The type and value of `const name`.
    pub(crate) fn get(&self, name: &str) -> Option<&(Scalar, Lit)> {
        self.values.get(name)
    }

    /// Whether `const name` was defined and its value reported as an error.
    pub(crate) fn failed(&self, name: &str) -> bool {
        self.failed.contains(name)
    }

    /// Records `const name`'s value, or its failure.
    pub(crate) fn insert(&mut self, name: String, value: Option<(Scalar, Lit)>) {
        match value {
            Some(v) => {
                self.values.insert(name, v);
            }
            None => {
                self.failed.insert(name);
            }
        }
    }
}

/// Why a constant has no value.
enum Failure {
    /// An error to report.
    Error(syn::Error),
    /// It names a `const` whose own error is reported already.
    Reported,
}

impl From<syn::Error> for Failure {
    fn from(e: syn::Error) -> Self {
        Failure::Error(e)
    }
}

/// Evaluates a constant expression of type `ty`.
pub(crate) fn eval_const(
    expr: &syn::Expr,
    ty: Scalar,
    consts: &Consts,
    diags: &mut Diagnostics,
) -> Option<Lit> {
    // An `f32` constant is computed as rustc computes it: every literal and every operation
    // rounded to `f32` (computing in `f64` and rounding once can differ: `16777217.0 + 1.0`).
    match eval_in(expr, consts, ty == Scalar::F32, 0) {
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
        Err(Failure::Error(e)) => {
            diags.push(e);
            None
        }
        Err(Failure::Reported) => None,
    }
}

/// Evaluates a constant `usize` below 2^32 (array lengths, channel depths, warp numbers);
/// reports why not.
pub(crate) fn eval_usize(
    expr: &syn::Expr,
    consts: &Consts,
    diags: &mut Diagnostics,
) -> Option<u64> {
    match eval(expr, consts) {
        Ok(Lit::Int(v)) if v <= u128::from(u32::MAX) => Some(v as u64),
        Ok(_) => {
            diags.error_at(expr, "expected a constant integer below 2^32 here");
            None
        }
        Err(Failure::Error(e)) => {
            diags.push(e);
            None
        }
        Err(Failure::Reported) => None,
    }
}

fn fits(v: u128, ty: Scalar) -> bool {
    let v = v as i128;
    ty.int_range()
        .is_some_and(|(lo, hi)| (lo..=hi).contains(&v))
}

/// Integers are evaluated as `i128` carried in a `u128`; a `const` must fit its type.
fn eval(expr: &syn::Expr, consts: &Consts) -> Result<Lit, Failure> {
    eval_in(expr, consts, false, 0)
}

/// [`eval`], rounding every float to `f32` when `single`; `depth` is the nesting of `expr`.
fn eval_in(expr: &syn::Expr, consts: &Consts, single: bool, depth: usize) -> Result<Lit, Failure> {
    if depth > MAX_NESTING {
        return Err(syn::Error::new_spanned(
            expr,
            format!("constant expressions nested deeper than {MAX_NESTING} levels are not supported: give parts of it names, as `const`s of the module"),
        )
        .into());
    }
    match eval_step(expr, consts, single, depth)? {
        Lit::Float(v) if single => Ok(Lit::Float(f64::from(v as f32))),
        other => Ok(other),
    }
}

fn eval_step(
    expr: &syn::Expr,
    consts: &Consts,
    single: bool,
    depth: usize,
) -> Result<Lit, Failure> {
    let eval = |e: &syn::Expr, c: &Consts| eval_in(e, c, single, depth + 1);
    let unsupported = || {
        Failure::Error(syn::Error::new_spanned(
            expr,
            "a constant here must be a literal, another `const` of the module, or + - * / % << >> of them",
        ))
    };
    match expr {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => Ok(Lit::Int(i.base10_parse::<u128>()?)),
            syn::Lit::Float(f) => Ok(Lit::Float(f.base10_parse::<f64>()?)),
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            _ => Err(unsupported()),
        },
        syn::Expr::Path(p) if p.path.get_ident().is_none() => {
            assoc_const(&p.path).map(|(_, v)| v).ok_or_else(unsupported)
        }
        syn::Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .ok_or_else(unsupported)?;
            if consts.failed(&name) {
                return Err(Failure::Reported);
            }
            consts.get(&name).map(|(_, v)| *v).ok_or_else(|| {
                syn::Error::new_spanned(p, format!("`{name}` is not a `const` of this module"))
                    .into()
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
                            .into()
                    })
                }
                (Lit::Float(l), Lit::Float(r)) => Ok(Lit::Float(match b.op {
                    syn::BinOp::Add(_) => l + r,
                    syn::BinOp::Sub(_) => l - r,
                    syn::BinOp::Mul(_) => l * r,
                    syn::BinOp::Div(_) => l / r,
                    // Exact, as Rust's float `%` is.
                    syn::BinOp::Rem(_) => l % r,
                    _ => return Err(unsupported()),
                })),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

/// The constants of the scalar types a kernel may name by path: `i32::MIN`, `u64::MAX`,
/// `u8::BITS`, `f32::INFINITY`, `f64::NAN`, `f32::EPSILON`, ... and the mathematical
/// constants `f32::consts::PI` (also through `std::` or `core::`), with their type.
pub(crate) fn assoc_const(path: &syn::Path) -> Option<(Scalar, Lit)> {
    // `f32::MAX` to `std::f32::consts::PI`: most paths (locals) are one segment, and are not.
    if !(2..=4).contains(&path.segments.len()) {
        return None;
    }
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let names = match names.as_slice() {
        ["std" | "core", rest @ ..] => rest,
        all => all,
    };
    match names {
        [ty, name] => {
            let ty = Scalar::from_name(ty)?;
            let lit = if let Some((lo, hi)) = ty.int_range() {
                match *name {
                    "MIN" => Lit::Int(lo as u128),
                    "MAX" => Lit::Int(hi as u128),
                    "BITS" => return Some((Scalar::U32, Lit::Int(u128::from(ty.bits())))),
                    _ => return None,
                }
            } else if ty == Scalar::F32 {
                Lit::Float(f64::from(match *name {
                    "MIN" => f32::MIN,
                    "MAX" => f32::MAX,
                    "INFINITY" => f32::INFINITY,
                    "NEG_INFINITY" => f32::NEG_INFINITY,
                    "NAN" => f32::NAN,
                    "EPSILON" => f32::EPSILON,
                    "MIN_POSITIVE" => f32::MIN_POSITIVE,
                    _ => return None,
                }))
            } else if ty == Scalar::F64 {
                Lit::Float(match *name {
                    "MIN" => f64::MIN,
                    "MAX" => f64::MAX,
                    "INFINITY" => f64::INFINITY,
                    "NEG_INFINITY" => f64::NEG_INFINITY,
                    "NAN" => f64::NAN,
                    "EPSILON" => f64::EPSILON,
                    "MIN_POSITIVE" => f64::MIN_POSITIVE,
                    _ => return None,
                })
            } else {
                return None;
            };
            Some((ty, lit))
        }
        [ty @ ("f32" | "f64"), "consts", name] => {
            use std::f64::consts as c;
            let v = match *name {
                "PI" => c::PI,
                "TAU" => c::TAU,
                "E" => c::E,
                "SQRT_2" => c::SQRT_2,
                "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
                "FRAC_PI_2" => c::FRAC_PI_2,
                "FRAC_PI_3" => c::FRAC_PI_3,
                "FRAC_PI_4" => c::FRAC_PI_4,
                "FRAC_PI_6" => c::FRAC_PI_6,
                "FRAC_PI_8" => c::FRAC_PI_8,
                "FRAC_1_PI" => c::FRAC_1_PI,
                "FRAC_2_PI" => c::FRAC_2_PI,
                "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
                "LN_2" => c::LN_2,
                "LN_10" => c::LN_10,
                "LOG2_E" => c::LOG2_E,
                "LOG10_E" => c::LOG10_E,
                "LOG2_10" => c::LOG2_10,
                "LOG10_2" => c::LOG10_2,
                _ => return None,
            };
            let ty = Scalar::from_name(ty)?;
            // The f32 constant is the f64 one rounded once, as std's f32 constants are.
            let v = if ty == Scalar::F32 {
                f64::from(v as f32)
            } else {
                v
            };
            Some((ty, Lit::Float(v)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(path: &str) -> (Scalar, Lit) {
        let p: syn::Path = syn::parse_str(path).unwrap();
        assoc_const(&p).unwrap_or_else(|| panic!("{path}"))
    }

    #[test]
    fn f32_constants_round_every_step_as_rustc_does() {
        let consts = Consts::default();
        let mut diags = Diagnostics::default();
        let e: syn::Expr = syn::parse_str("16777217.0 + 1.0").unwrap();
        let v = eval_const(&e, Scalar::F32, &consts, &mut diags);
        const RUSTC: f32 = 16777217.0 + 1.0;
        assert!(
            matches!(v, Some(Lit::Float(v)) if v as f32 == RUSTC),
            "{v:?}"
        );
        let e: syn::Expr = syn::parse_str("0.1 + 0.2").unwrap();
        let v = eval_const(&e, Scalar::F64, &consts, &mut diags);
        assert!(matches!(v, Some(Lit::Float(v)) if v == 0.1 + 0.2), "{v:?}");
        let e: syn::Expr = syn::parse_str("7.5 % 2.0").unwrap();
        let v = eval_const(&e, Scalar::F32, &consts, &mut diags);
        assert!(matches!(v, Some(Lit::Float(v)) if v == 1.5), "{v:?}");
    }

    #[test]
    fn scalar_constants_have_std_values() {
        assert!(
            matches!(value("i32::MIN"), (Scalar::I32, Lit::Int(v)) if v as i128 == i32::MIN as i128)
        );
        assert!(
            matches!(value("u64::MAX"), (Scalar::U64, Lit::Int(v)) if v == u128::from(u64::MAX))
        );
        assert!(matches!(value("i8::BITS"), (Scalar::U32, Lit::Int(8))));
        assert!(
            matches!(value("f32::MIN_POSITIVE"), (Scalar::F32, Lit::Float(v)) if v as f32 == f32::MIN_POSITIVE)
        );
        assert!(matches!(value("std::f64::NAN"), (Scalar::F64, Lit::Float(v)) if v.is_nan()));
        let f32s = [
            ("PI", std::f32::consts::PI),
            ("TAU", std::f32::consts::TAU),
            ("E", std::f32::consts::E),
            ("SQRT_2", std::f32::consts::SQRT_2),
            ("FRAC_1_SQRT_2", std::f32::consts::FRAC_1_SQRT_2),
            ("FRAC_PI_2", std::f32::consts::FRAC_PI_2),
            ("FRAC_PI_3", std::f32::consts::FRAC_PI_3),
            ("FRAC_PI_4", std::f32::consts::FRAC_PI_4),
            ("FRAC_PI_6", std::f32::consts::FRAC_PI_6),
            ("FRAC_PI_8", std::f32::consts::FRAC_PI_8),
            ("FRAC_1_PI", std::f32::consts::FRAC_1_PI),
            ("FRAC_2_PI", std::f32::consts::FRAC_2_PI),
            ("FRAC_2_SQRT_PI", std::f32::consts::FRAC_2_SQRT_PI),
            ("LN_2", std::f32::consts::LN_2),
            ("LN_10", std::f32::consts::LN_10),
            ("LOG2_E", std::f32::consts::LOG2_E),
            ("LOG10_E", std::f32::consts::LOG10_E),
            ("LOG2_10", std::f32::consts::LOG2_10),
            ("LOG10_2", std::f32::consts::LOG10_2),
        ];
        for (name, want) in f32s {
            let (ty, lit) = value(&format!("core::f32::consts::{name}"));
            assert_eq!(ty, Scalar::F32);
            assert!(
                matches!(lit, Lit::Float(v) if (v as f32).to_bits() == want.to_bits()),
                "{name}"
            );
        }
        assert!(
            matches!(value("f64::consts::PI"), (Scalar::F64, Lit::Float(v)) if v == std::f64::consts::PI)
        );
        let p: syn::Path = syn::parse_str("f32::BITS").unwrap();
        assert!(assoc_const(&p).is_none());
    }
}
