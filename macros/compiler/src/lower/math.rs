//! The scalar methods (`sqrt`, `exp`, `powi`, `saturating_add`, ...) as IR instructions.
//!
//! The IEEE operations PTX has (`sqrt`, `floor`, `fma`, ...) are one instruction each and give
//! Rust's exact result. The transcendental `f32` functions are computed in `f64` (the H200 runs
//! `f64` at half the `f32` rate) from a logarithm and an exponential written here as series, then
//! rounded once to `f32`: their error before that rounding is below 2^-40, so the result is the
//! correctly rounded one except in rare near-halfway cases, where it may differ from the host's
//! libm by one ulp. The `f64` functions (`double`) have no wider type to lean on and carry
//! double-doubles instead; float `%` is `fmod`, exactly. `docs/language.md` has the measured
//! tables.

mod double;
mod fmod;

use proc_macro2::Span;

use super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, UnOp, Value};
use crate::tir::MathFn;
use crate::types::Scalar;

/// `2 / k` for the odd `k` of the `atanh` series of the logarithm, `ln m = 2 atanh(s)`.
const ATANH_TERMS: usize = 9;
/// Taylor terms of `e^t` for `|t| <= ln 2 / 2` in `f32`'s `exp` and `exp2`: the first term
/// left out is below 2^-42 of the result.
const EXP_TERMS: usize = 11;
/// The same for `tanh` and `powf`, whose argument carries the error of a logarithm or a
/// quotient: two more terms keep them correctly rounded as often as `exp` (with 11,
/// `tanh`'s worst case stays 1 ulp and `powf`'s goes from 0 to 1 ulp in 2,000,000 inputs).
const EXP_TERMS_LONG: usize = 13;
/// `log2(e)` and `ln(2)` in `f64`.
const LOG2_E: f64 = std::f64::consts::LOG2_E;
const LN_2: f64 = std::f64::consts::LN_2;

impl Lowerer<'_> {
    pub(super) fn fconst(&mut self, ty: Scalar, v: f64) -> Value {
        let imm = if ty == Scalar::F64 {
            Imm::F64(v)
        } else {
            Imm::F32(v as f32)
        };
        self.konst(ty, imm)
    }

    fn iconst(&mut self, ty: Scalar, v: i128) -> Value {
        self.konst(ty, Imm::Int(ty.int_bits(v)))
    }

    fn unary(&mut self, op: UnOp, src: Value) -> Value {
        let ty = self.values[src.0 as usize].ty;
        let dst = self.new_value(ty, None);
        self.emit(Inst::Unary { dst, op, src });
        dst
    }

    fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        let ty = self.values[a.0 as usize].ty;
        let dst = self.new_value(ty, None);
        self.emit(Inst::Fma { dst, a, b, c });
        dst
    }

    pub(super) fn cast_to(&mut self, src: Value, ty: Scalar) -> Value {
        let dst = self.new_value(ty, None);
        self.emit(Inst::Cast { dst, src });
        dst
    }

    fn bitcast(&mut self, src: Value, ty: Scalar) -> Value {
        let dst = self.new_value(ty, None);
        self.emit(Inst::Bitcast { dst, src });
        dst
    }

    /// `dst = value` when `cond` holds (`dst` keeps its value otherwise), without a branch.
    fn set_if(&mut self, cond: Value, dst: Value, value: Value) {
        self.emit(Inst::Select {
            dst,
            cond,
            if_true: value,
            if_false: dst,
        });
    }

    /// A fresh copy of `v` that later code may overwrite.
    fn var(&mut self, v: Value) -> Value {
        let ty = self.values[v.0 as usize].ty;
        let dst = self.new_value(ty, None);
        self.emit(Inst::Copy { dst, src: v });
        dst
    }

    fn is_nan(&mut self, x: Value) -> Value {
        self.binary(BinOp::Ne, x, x)
    }

    /// Lowers a scalar method; `args[0]` is the receiver.
    pub(super) fn math(&mut self, f: MathFn, args: &[Value], span: Span) -> Value {
        use MathFn as M;
        let x = args[0];
        let ty = self.values[x.0 as usize].ty;
        match f {
            M::Sqrt => self.unary(UnOp::Sqrt, x),
            M::Exp2Approx => self.unary(UnOp::Ex2Approx, x),
            M::Rsqrt => {
                let root = self.unary(UnOp::Sqrt, x);
                let one = self.fconst(ty, 1.0);
                self.binary(BinOp::Div, one, root)
            }
            M::Abs => self.unary(UnOp::Abs, x),
            M::Floor => self.unary(UnOp::Floor, x),
            M::Ceil => self.unary(UnOp::Ceil, x),
            M::Trunc => self.unary(UnOp::Trunc, x),
            M::Round => self.round(x),
            M::Min => self.binary(BinOp::Min, x, args[1]),
            M::Max => self.binary(BinOp::Max, x, args[1]),
            M::CopySign => self.binary(BinOp::CopySign, x, args[1]),
            M::MulAdd => self.fma(x, args[1], args[2]),
            M::Clamp => self.clamp(x, args[1], args[2], span),
            M::Powi => self.powi(x, args[1]),
            M::IsNan => self.is_nan(x),
            M::ToBits => {
                let bits = if ty == Scalar::F64 {
                    Scalar::U64
                } else {
                    Scalar::U32
                };
                self.bitcast(x, bits)
            }
            // Integer arithmetic wraps on the device anyway.
            M::WrappingAdd => self.binary(BinOp::Add, x, args[1]),
            M::WrappingSub => self.binary(BinOp::Sub, x, args[1]),
            M::WrappingMul => self.binary(BinOp::Mul, x, args[1]),
            M::SaturatingAdd | M::SaturatingSub => {
                self.saturating(f == M::SaturatingAdd, x, args[1])
            }
            // The `checked_*` methods are lowered by `checked` (they give two values).
            M::CheckedAdd | M::CheckedSub | M::CheckedMul | M::CheckedDiv | M::CheckedRem => x,
            M::CountOnes | M::LeadingZeros | M::TrailingZeros => self.bit_count(f, x),
            M::Exp | M::Exp2 if ty == Scalar::F64 => self.exp_f64(f == M::Exp2, x),
            M::Ln | M::Log2 if ty == Scalar::F64 => self.ln_f64(f == M::Log2, x),
            M::Sin | M::Cos if ty == Scalar::F64 => self.sin_cos_f64(f == M::Cos, x),
            M::Tanh if ty == Scalar::F64 => self.tanh_f64(x),
            M::Powf if ty == Scalar::F64 => self.pow_f64(x, args[1]),
            M::Exp | M::Exp2 => {
                // Clamped in `f32` (beyond +-150 every `e^x` and `2^x` of `f32` is 0 or
                // infinite): `f32` comparisons run at the full rate, the `f64` ones at half.
                let bound = if f == M::Exp { 150.0 } else { 200.0 };
                let lo = self.fconst(Scalar::F32, -bound);
                let hi = self.fconst(Scalar::F32, bound);
                let xc = self.binary(BinOp::Max, x, lo);
                let xc = self.binary(BinOp::Min, xc, hi);
                let xd = self.cast_to(xc, Scalar::F64);
                let r = if f == M::Exp {
                    let k = self.fconst(Scalar::F64, LOG2_E);
                    let p = self.binary(BinOp::Mul, xd, k);
                    self.exp2_reduced(p, Some(xd), EXP_TERMS)
                } else {
                    self.exp2_reduced(xd, None, EXP_TERMS)
                };
                let r = self.cast_to(r, Scalar::F32);
                let nan = self.is_nan(x);
                let out = self.var(r);
                self.set_if(nan, out, x);
                out
            }
            M::Ln | M::Log2 => {
                let xd = self.cast_to(x, Scalar::F64);
                let l = self.log2_f64(xd);
                let l = if f == M::Ln {
                    let k = self.fconst(Scalar::F64, LN_2);
                    self.binary(BinOp::Mul, l, k)
                } else {
                    l
                };
                let r = self.cast_to(l, Scalar::F32);
                // Negative arguments (not -0) give NaN, as Rust's do.
                let zero = self.fconst(Scalar::F32, 0.0);
                let negative = self.binary(BinOp::Lt, x, zero);
                let out = self.var(r);
                let nan = self.fconst(Scalar::F32, f64::NAN);
                self.set_if(negative, out, nan);
                out
            }
            M::Sin | M::Cos => self.sin_cos(f == M::Cos, x),
            M::Tanh => self.tanh(x),
            M::Powf => self.powf(x, args[1]),
        }
    }

    /// Rust's `clamp`: a NaN `x` stays NaN (comparisons, not `min`/`max`), and bounds out of
    /// order (or NaN) panic.
    fn clamp(&mut self, x: Value, lo: Value, hi: Value, span: Span) -> Value {
        let ordered = self.binary(BinOp::Le, lo, hi);
        let bad = self.not(ordered);
        self.panic_if(bad, "clamp: min > max, or either was NaN", span);
        let r = self.var(x);
        for (op, bound) in [(BinOp::Lt, lo), (BinOp::Gt, hi)] {
            let cond = self.binary(op, r, bound);
            self.set_if(cond, r, bound);
        }
        r
    }

    /// Half away from zero: `trunc(x)`, plus one unit towards `x`'s sign when the dropped part
    /// is at least one half (`x - trunc(x)` is exact).
    fn round(&mut self, x: Value) -> Value {
        let ty = self.values[x.0 as usize].ty;
        let t = self.unary(UnOp::Trunc, x);
        let frac = self.binary(BinOp::Sub, x, t);
        let frac = self.unary(UnOp::Abs, frac);
        let half = self.fconst(ty, 0.5);
        let up = self.binary(BinOp::Ge, frac, half);
        let one = self.fconst(ty, 1.0);
        let step = self.binary(BinOp::CopySign, one, x);
        let bumped = self.binary(BinOp::Add, t, step);
        let out = self.var(t);
        self.set_if(up, out, bumped);
        out
    }

    /// compiler-rt's `__powisf2`/`__powidf2`, which the host's `powi` calls: the same
    /// multiplications in the same order, so the results are identical.
    fn powi(&mut self, x: Value, n: Value) -> Value {
        let ty = self.values[x.0 as usize].ty;
        let zero = self.iconst(Scalar::I32, 0);
        let recip = self.binary(BinOp::Lt, n, zero);
        let a = self.var(x);
        let b = self.var(n);
        let one = self.fconst(ty, 1.0);
        let r = self.var(one);
        let id = self.new_loop();
        let body = self.sub_block(|l| {
            let one_i = l.iconst(Scalar::I32, 1);
            let low = l.binary(BinOp::And, b, one_i);
            let odd = l.binary(BinOp::Ne, low, zero);
            let prod = l.binary(BinOp::Mul, r, a);
            l.set_if(odd, r, prod);
            let two = l.iconst(Scalar::I32, 2);
            let half = l.binary(BinOp::Div, b, two);
            l.emit(Inst::Copy { dst: b, src: half });
            let done = l.binary(BinOp::Eq, b, zero);
            l.break_if(done, id);
            let sq = l.binary(BinOp::Mul, a, a);
            l.emit(Inst::Copy { dst: a, src: sq });
        });
        self.emit(Inst::Loop { id, body });
        let inv = self.binary(BinOp::Div, one, r);
        self.set_if(recip, r, inv);
        r
    }

    /// `saturating_add`/`saturating_sub`: the wrapped result, replaced by the bound it crossed.
    fn saturating(&mut self, add: bool, a: Value, b: Value) -> Value {
        let ty = self.values[a.0 as usize].ty;
        let (lo, hi) = ty.int_range().unwrap_or((0, 0));
        let (wrapped, up, down) = self.add_sub_overflow(add, a, b);
        let out = self.var(wrapped);
        if let Some(up) = up {
            let max = self.iconst(ty, hi);
            self.set_if(up, out, max);
        }
        if let Some(down) = down {
            let min = self.iconst(ty, lo);
            self.set_if(down, out, min);
        }
        out
    }

    /// `a + b` (or `a - b`) wrapped, and whether it overflowed up past `MAX` and down past
    /// `MIN`, for the directions the type allows.
    fn add_sub_overflow(
        &mut self,
        add: bool,
        a: Value,
        b: Value,
    ) -> (Value, Option<Value>, Option<Value>) {
        let ty = self.values[a.0 as usize].ty;
        let op = if add { BinOp::Add } else { BinOp::Sub };
        let wrapped = self.binary(op, a, b);
        if ty.is_signed() {
            // Overflow only when the operands' signs make it possible and the result's sign
            // is wrong: a + b with b > 0 overflows up when the result is below a.
            let zero = self.iconst(ty, 0);
            let b_pos = self.binary(BinOp::Gt, b, zero);
            let b_neg = self.binary(BinOp::Lt, b, zero);
            let (up_when, down_when) = if add { (b_pos, b_neg) } else { (b_neg, b_pos) };
            let below = self.binary(BinOp::Lt, wrapped, a);
            let above = self.binary(BinOp::Gt, wrapped, a);
            let up = self.binary(BinOp::And, up_when, below);
            let down = self.binary(BinOp::And, down_when, above);
            (wrapped, Some(up), Some(down))
        } else if add {
            let over = self.binary(BinOp::Lt, wrapped, a);
            (wrapped, Some(over), None)
        } else {
            let under = self.binary(BinOp::Lt, a, b);
            (wrapped, None, Some(under))
        }
    }

    /// `checked_add/sub/mul/div/rem`: whether the result fits (`Some`), and the wrapped result
    /// (the value of `Some`). Division and remainder by zero, and signed `MIN / -1`, are `None`
    /// and never divide.
    pub(super) fn checked(&mut self, f: MathFn, a: Value, b: Value) -> (Value, Value) {
        use MathFn as M;
        let ty = self.values[a.0 as usize].ty;
        let (lo, hi) = ty.int_range().unwrap_or((0, 0));
        let zero = self.iconst(ty, 0);
        let one = self.iconst(ty, 1);
        let signed = ty.is_signed();
        match f {
            M::CheckedAdd | M::CheckedSub => {
                let (wrapped, up, down) = self.add_sub_overflow(f == M::CheckedAdd, a, b);
                let bad = match (up, down) {
                    (Some(u), Some(d)) => self.binary(BinOp::Or, u, d),
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => self.binary(BinOp::Ne, zero, zero),
                };
                (self.not(bad), wrapped)
            }
            M::CheckedMul if ty.size() <= 4 => {
                // Exactly, in 64 bits.
                let wrapped = self.binary(BinOp::Mul, a, b);
                let wide = if signed { Scalar::I64 } else { Scalar::U64 };
                let (wa, wb) = (self.cast_to(a, wide), self.cast_to(b, wide));
                let p = self.binary(BinOp::Mul, wa, wb);
                let (l, h) = (self.iconst(wide, lo), self.iconst(wide, hi));
                let under = self.binary(BinOp::Lt, p, l);
                let over = self.binary(BinOp::Gt, p, h);
                let bad = self.binary(BinOp::Or, under, over);
                (self.not(bad), wrapped)
            }
            M::CheckedMul => {
                // 64 bits: the product overflowed when dividing it back by `b` does not give
                // `a`. `b` = 0 never overflows; `b` = -1 overflows only for `a` = MIN (and is
                // not divided by, so that MIN / -1 never runs).
                let wrapped = self.binary(BinOp::Mul, a, b);
                let b_zero = self.binary(BinOp::Eq, b, zero);
                let safe = self.var(b);
                self.set_if(b_zero, safe, one);
                let divides = self.not(b_zero);
                let mut bad_special = self.binary(BinOp::Ne, zero, zero);
                let mut divides = divides;
                if signed {
                    let minus_one = self.iconst(ty, -1);
                    let min = self.iconst(ty, lo);
                    let b_m1 = self.binary(BinOp::Eq, b, minus_one);
                    let a_min = self.binary(BinOp::Eq, a, min);
                    bad_special = self.binary(BinOp::And, b_m1, a_min);
                    self.set_if(b_m1, safe, one);
                    let not_m1 = self.not(b_m1);
                    divides = self.binary(BinOp::And, divides, not_m1);
                }
                let q = self.binary(BinOp::Div, wrapped, safe);
                let differs = self.binary(BinOp::Ne, q, a);
                let bad = self.binary(BinOp::And, differs, divides);
                let bad = self.binary(BinOp::Or, bad, bad_special);
                (self.not(bad), wrapped)
            }
            _ => {
                // Division and remainder: None for a zero divisor and for signed MIN / -1.
                let b_zero = self.binary(BinOp::Eq, b, zero);
                let mut bad = b_zero;
                let safe = self.var(b);
                self.set_if(b_zero, safe, one);
                if signed {
                    let minus_one = self.iconst(ty, -1);
                    let min = self.iconst(ty, lo);
                    let b_m1 = self.binary(BinOp::Eq, b, minus_one);
                    let a_min = self.binary(BinOp::Eq, a, min);
                    let ov = self.binary(BinOp::And, b_m1, a_min);
                    bad = self.binary(BinOp::Or, bad, ov);
                    self.set_if(ov, safe, one);
                }
                let op = if f == M::CheckedDiv {
                    BinOp::Div
                } else {
                    BinOp::Rem
                };
                let r = self.binary(op, a, safe);
                (self.not(bad), r)
            }
        }
    }

    /// `count_ones`, `leading_zeros`, `trailing_zeros` as loops over the bits: portable IR that
    /// the PTX writer needs no new instructions for (ptxas keeps them short).
    fn bit_count(&mut self, f: MathFn, x: Value) -> Value {
        let ty = self.values[x.0 as usize].ty;
        let bits = ty.bits();
        let count = self.iconst(Scalar::U32, 0);
        let count = self.var(count);
        let i = self.iconst(Scalar::U32, 0);
        let i = self.var(i);
        let one_u = self.iconst(Scalar::U32, 1);
        let zero_x = self.iconst(ty, 0);
        let one_x = self.iconst(ty, 1);
        let id = self.new_loop();
        let end = self.iconst(Scalar::U32, i128::from(bits));
        let body = self.sub_block(|l| {
            let done = l.binary(BinOp::Ge, i, end);
            l.break_if(done, id);
            // The bit examined: from the top for leading zeros, from the bottom otherwise.
            let shift = if f == MathFn::LeadingZeros {
                let top = l.iconst(Scalar::U32, i128::from(bits - 1));
                l.binary(BinOp::Sub, top, i)
            } else {
                i
            };
            let shifted = l.binary(BinOp::Shr, x, shift);
            let bit = l.binary(BinOp::And, shifted, one_x);
            let set = l.binary(BinOp::Ne, bit, zero_x);
            if f == MathFn::CountOnes {
                let more = l.binary(BinOp::Add, count, one_u);
                l.set_if(set, count, more);
            } else {
                l.break_if(set, id);
                let more = l.binary(BinOp::Add, count, one_u);
                l.emit(Inst::Copy {
                    dst: count,
                    src: more,
                });
            }
            let next = l.binary(BinOp::Add, i, one_u);
            l.emit(Inst::Copy { dst: i, src: next });
        });
        self.emit(Inst::Loop { id, body });
        count
    }

    /// `a * b + c` in `f64` through a list of coefficients (Horner), highest first.
    fn horner(&mut self, z: Value, coeffs: &[f64]) -> Value {
        let mut acc = self.fconst(Scalar::F64, coeffs[0]);
        for &c in &coeffs[1..] {
            let k = self.fconst(Scalar::F64, c);
            acc = self.fma(acc, z, k);
        }
        acc
    }

    /// `log2(x)` in `f64` for an `f64` `x` that came from an `f32` (so is normal): `x = m 2^e`
    /// with `m` in `[sqrt(1/2), sqrt(2))`, and `ln m = 2 atanh(s)`, `s = (m - 1) / (m + 1)`,
    /// `|s| < 0.172`, by its series. `0` gives `-inf`, `inf` gives `inf`, NaN and negative
    /// numbers give NaN.
    fn log2_f64(&mut self, x: Value) -> Value {
        let f64_ = Scalar::F64;
        let bits = self.bitcast(x, Scalar::U64);
        let sh = self.iconst(Scalar::U32, 52);
        let exp_field = self.binary(BinOp::Shr, bits, sh);
        let mask11 = self.iconst(Scalar::U64, 0x7FF);
        let exp_field = self.binary(BinOp::And, exp_field, mask11);
        let exp_i = self.cast_to(exp_field, Scalar::I32);
        let bias = self.iconst(Scalar::I32, 1023);
        let e = self.binary(BinOp::Sub, exp_i, bias);
        let mant_mask = self.iconst(Scalar::U64, 0x000F_FFFF_FFFF_FFFF);
        let mant = self.binary(BinOp::And, bits, mant_mask);
        let one_bits = self.iconst(Scalar::U64, 0x3FF0_0000_0000_0000);
        let m_bits = self.binary(BinOp::Or, mant, one_bits);
        let m = self.bitcast(m_bits, f64_);
        let m = self.var(m);
        let e = self.var(e);
        let sqrt2 = self.fconst(f64_, std::f64::consts::SQRT_2);
        let big = self.binary(BinOp::Gt, m, sqrt2);
        let half = self.fconst(f64_, 0.5);
        let m_half = self.binary(BinOp::Mul, m, half);
        self.set_if(big, m, m_half);
        let one_i = self.iconst(Scalar::I32, 1);
        let e_up = self.binary(BinOp::Add, e, one_i);
        self.set_if(big, e, e_up);
        let one = self.fconst(f64_, 1.0);
        let f = self.binary(BinOp::Sub, m, one);
        let den = self.binary(BinOp::Add, m, one);
        let s = self.binary(BinOp::Div, f, den);
        let z = self.binary(BinOp::Mul, s, s);
        // ln m = 2 s (1 + z/3 + z^2/5 + ...): coefficients 2/(2k+1), highest first.
        let coeffs: Vec<f64> = (0..ATANH_TERMS)
            .rev()
            .map(|k| 2.0 / (2 * k + 1) as f64)
            .collect();
        let p = self.horner(z, &coeffs);
        let ln_m = self.binary(BinOp::Mul, s, p);
        let inv_ln2 = self.fconst(f64_, LOG2_E);
        let ed = self.cast_to(e, f64_);
        let log2 = self.fma(ln_m, inv_ln2, ed);
        let out = self.var(log2);
        // Special values: 0 and -0 give -inf, inf gives inf, NaN and negatives NaN.
        let zero = self.fconst(f64_, 0.0);
        let is_zero = self.binary(BinOp::Eq, x, zero);
        let neg_inf = self.fconst(f64_, f64::NEG_INFINITY);
        self.set_if(is_zero, out, neg_inf);
        let inf = self.fconst(f64_, f64::INFINITY);
        let is_inf = self.binary(BinOp::Eq, x, inf);
        self.set_if(is_inf, out, inf);
        let negative = self.binary(BinOp::Lt, x, zero);
        let nan_in = self.is_nan(x);
        let bad = self.binary(BinOp::Or, negative, nan_in);
        let nan = self.fconst(f64_, f64::NAN);
        self.set_if(bad, out, nan);
        out
    }

    /// `2^p` in `f64` for the `f32` functions: `p` is clamped to `[-200, 200]` (beyond which
    /// every `f32` result is 0 or infinite), then as [`Self::exp2_reduced`]. A NaN `p` gives a
    /// meaningless number: callers handle NaN.
    fn exp2_f64(&mut self, p: Value) -> Value {
        let f64_ = Scalar::F64;
        let lo = self.fconst(f64_, -200.0);
        let hi = self.fconst(f64_, 200.0);
        let p = self.binary(BinOp::Max, p, lo);
        let p = self.binary(BinOp::Min, p, hi);
        self.exp2_reduced(p, None, EXP_TERMS_LONG)
    }

    /// `2^p` in `f64` for a `p` in `[-217, 217]`: `p = n + f` with `n` an integer and
    /// `|f| <= 1/2`, `2^f = e^t` for `t = f ln 2` by `terms` terms of its Taylor series, and `n` added to the
    /// result's exponent field. `e_arg` is `x` where `p = x log2(e)`: then `t = x - n ln 2`
    /// with one `fma`, which is as exact and one instruction shorter.
    ///
    /// `n` is `p` rounded to the nearest integer by adding `1.5 * 2^52`: the sum's low 32 bits
    /// are `n` in two's complement, so neither the rounding nor `n` as an integer takes a
    /// conversion instruction, which the H200 runs at a fraction of its `f64` rate. The series
    /// lies in `[0.7, 1.42]`, so adding `n` to its exponent field is its exact product by `2^n`.
    fn exp2_reduced(&mut self, p: Value, e_arg: Option<Value>, terms: usize) -> Value {
        let f64_ = Scalar::F64;
        let magic = self.fconst(f64_, 6_755_399_441_055_744.0);
        let shifted = self.binary(BinOp::Add, p, magic);
        let n = self.binary(BinOp::Sub, shifted, magic);
        let t = match e_arg {
            Some(x) => {
                let minus_ln2 = self.fconst(f64_, -LN_2);
                self.fma(n, minus_ln2, x)
            }
            None => {
                let f = self.binary(BinOp::Sub, p, n);
                let ln2 = self.fconst(f64_, LN_2);
                self.binary(BinOp::Mul, f, ln2)
            }
        };
        let mut fact = 1.0f64;
        let mut coeffs = vec![1.0f64];
        for k in 1..terms {
            fact *= k as f64;
            coeffs.push(1.0 / fact);
        }
        coeffs.reverse();
        let r = self.horner(t, &coeffs);
        let n_bits = self.bitcast(shifted, Scalar::U64);
        let low = self.cast_to(n_bits, Scalar::I32);
        let ni = self.cast_to(low, Scalar::I64);
        let sh = self.iconst(Scalar::U32, 52);
        let exponent = self.binary(BinOp::Shl, ni, sh);
        let r_bits = self.bitcast(r, Scalar::I64);
        let scaled = self.binary(BinOp::Add, r_bits, exponent);
        self.bitcast(scaled, f64_)
    }

    /// `sin`/`cos` of an `f32`, as musl computes them: the argument is reduced by multiples of
    /// pi/2 in `f64` (with a two-part pi/2 and `fma`: exact for `|x| < 2^40`), then a minimax
    /// polynomial in `f64` for the quadrant.
    fn sin_cos(&mut self, cos: bool, x: Value) -> Value {
        let f64_ = Scalar::F64;
        let xd = self.cast_to(x, f64_);
        let inv_pio2 = self.fconst(f64_, std::f64::consts::FRAC_2_PI);
        let q = self.binary(BinOp::Mul, xd, inv_pio2);
        let half = self.fconst(f64_, 0.5);
        let qh = self.binary(BinOp::Add, q, half);
        let n = self.unary(UnOp::Floor, qh);
        let neg_n = self.unary(UnOp::Neg, n);
        let pio2_hi = self.fconst(f64_, std::f64::consts::FRAC_PI_2);
        let pio2_lo = self.fconst(f64_, 6.123_233_995_736_766e-17);
        let y = self.fma(neg_n, pio2_hi, xd);
        let y = self.fma(neg_n, pio2_lo, y);
        // Quadrant: n mod 4, from the low bits of n as an integer (n is below 2^62 here, or
        // the argument is not finite and the result NaN anyway).
        let ni = self.cast_to(n, Scalar::I64);
        let ni = self.cast_to(ni, Scalar::U32);
        let three = self.iconst(Scalar::U32, 3);
        let quadrant = self.binary(BinOp::And, ni, three);
        let quadrant = if cos {
            let one = self.iconst(Scalar::U32, 1);
            let shifted = self.binary(BinOp::Add, quadrant, one);
            self.binary(BinOp::And, shifted, three)
        } else {
            quadrant
        };
        // sin(y) and cos(y) for |y| <= pi/4 (musl's __sindf and __cosdf coefficients).
        let z = self.binary(BinOp::Mul, y, y);
        let sin_p = self.horner(
            z,
            &[
                2.718_311_493_989_822e-6,
                -1.983_933_483_609_663_2e-4,
                8.333_329_385_889_463e-3,
                -1.666_666_664_162_652_4e-1,
            ],
        );
        let yz = self.binary(BinOp::Mul, y, z);
        let sin_y = self.fma(yz, sin_p, y);
        let cos_p = self.horner(
            z,
            &[
                2.439_044_879_627_741e-5,
                -1.388_676_377_460_993e-3,
                4.166_662_332_373_906e-2,
                -4.999_999_972_510_31e-1,
            ],
        );
        let one = self.fconst(f64_, 1.0);
        let cos_y = self.fma(z, cos_p, one);
        // Quadrant k (of sin): 0 sin, 1 cos, 2 -sin, 3 -cos; cos is sin a quadrant on.
        let one_u = self.iconst(Scalar::U32, 1);
        let two_u = self.iconst(Scalar::U32, 2);
        let odd_bit = self.binary(BinOp::And, quadrant, one_u);
        let zero_u = self.iconst(Scalar::U32, 0);
        let odd = self.binary(BinOp::Ne, odd_bit, zero_u);
        let neg_bit = self.binary(BinOp::And, quadrant, two_u);
        let negate = self.binary(BinOp::Ne, neg_bit, zero_u);
        let r = self.var(sin_y);
        self.set_if(odd, r, cos_y);
        let neg_r = self.unary(UnOp::Neg, r);
        self.set_if(negate, r, neg_r);
        self.cast_to(r, Scalar::F32)
    }

    /// `tanh` of an `f32` in `f64`: its Taylor series for `|x| < 0.55`, else
    /// `1 - 2 / (e^(2|x|) + 1)`, with `x`'s sign.
    fn tanh(&mut self, x: Value) -> Value {
        let f64_ = Scalar::F64;
        let xd = self.cast_to(x, f64_);
        let ax = self.unary(UnOp::Abs, xd);
        // Taylor coefficients of tanh(x)/x in z = x^2, highest first.
        let z = self.binary(BinOp::Mul, xd, xd);
        let series = self.horner(
            z,
            &[
                -443_861_162.0 / 1_856_156_927_625.0,
                6_404_582.0 / 10_854_718_875.0,
                -929_569.0 / 638_512_875.0,
                21_844.0 / 6_081_075.0,
                -1_382.0 / 155_925.0,
                62.0 / 2_835.0,
                -17.0 / 315.0,
                2.0 / 15.0,
                -1.0 / 3.0,
                1.0,
            ],
        );
        let small = self.binary(BinOp::Mul, xd, series);
        let two = self.fconst(f64_, 2.0);
        let p = self.binary(BinOp::Mul, ax, two);
        let log2e = self.fconst(f64_, LOG2_E);
        let p = self.binary(BinOp::Mul, p, log2e);
        let e = self.exp2_f64(p);
        let one = self.fconst(f64_, 1.0);
        let e1 = self.binary(BinOp::Add, e, one);
        let q = self.binary(BinOp::Div, two, e1);
        let big = self.binary(BinOp::Sub, one, q);
        let big = self.binary(BinOp::CopySign, big, xd);
        let limit = self.fconst(f64_, 0.55);
        let is_small = self.binary(BinOp::Lt, ax, limit);
        let r = self.var(big);
        self.set_if(is_small, r, small);
        let out = self.cast_to(r, Scalar::F32);
        let nan = self.is_nan(x);
        self.set_if(nan, out, x);
        out
    }

    /// `powf` of `f32`s with C's special cases (which Rust's `powf` follows):
    /// `|x|^y = 2^(y log2 |x|)` in `f64`, negative when `x` is negative and `y` an odd integer,
    /// NaN for a negative finite `x` and a non-integer `y`; `x^0 = 1^y = 1` even for NaN, and
    /// `(-1)^(+-inf) = 1`.
    fn powf(&mut self, x: Value, y: Value) -> Value {
        let f32_ = Scalar::F32;
        let f64_ = Scalar::F64;
        let ax = self.unary(UnOp::Abs, x);
        let axd = self.cast_to(ax, f64_);
        let l = self.log2_f64(axd);
        let yd = self.cast_to(y, f64_);
        let p = self.binary(BinOp::Mul, yd, l);
        let r = self.exp2_f64(p);
        let r = self.cast_to(r, f32_);
        let out = self.var(r);
        // y an integer, and odd (every float of magnitude 2^24 or more is even).
        let ty_ = self.unary(UnOp::Trunc, y);
        let y_int = self.binary(BinOp::Eq, ty_, y);
        let half = self.fconst(f32_, 0.5);
        let yh = self.binary(BinOp::Mul, y, half);
        let tyh = self.unary(UnOp::Trunc, yh);
        let y_even = self.binary(BinOp::Eq, tyh, yh);
        let y_not_even = self.not(y_even);
        let y_odd = self.binary(BinOp::And, y_int, y_not_even);
        let one = self.fconst(f32_, 1.0);
        let sign = self.binary(BinOp::CopySign, one, x);
        let zero = self.fconst(f32_, 0.0);
        let x_neg_sign = self.binary(BinOp::Lt, sign, zero);
        let flip = self.binary(BinOp::And, x_neg_sign, y_odd);
        let neg = self.unary(UnOp::Neg, out);
        self.set_if(flip, out, neg);
        // A negative finite base and a non-integer exponent: NaN.
        let x_neg = self.binary(BinOp::Lt, x, zero);
        let neg_inf = self.fconst(f32_, f64::NEG_INFINITY);
        let x_finite = self.binary(BinOp::Gt, x, neg_inf);
        let y_frac = self.not(y_int);
        let bad = self.binary(BinOp::And, x_neg, x_finite);
        let bad = self.binary(BinOp::And, bad, y_frac);
        let nan = self.fconst(f32_, f64::NAN);
        self.set_if(bad, out, nan);
        let x_nan = self.is_nan(x);
        let y_nan = self.is_nan(y);
        let any_nan = self.binary(BinOp::Or, x_nan, y_nan);
        self.set_if(any_nan, out, nan);
        let inf = self.fconst(f32_, f64::INFINITY);
        let ay = self.unary(UnOp::Abs, y);
        let y_inf = self.binary(BinOp::Eq, ay, inf);
        let ax_one = self.binary(BinOp::Eq, ax, one);
        let unit = self.binary(BinOp::And, ax_one, y_inf);
        self.set_if(unit, out, one);
        let x_one = self.binary(BinOp::Eq, x, one);
        self.set_if(x_one, out, one);
        let y_zero = self.binary(BinOp::Eq, y, zero);
        self.set_if(y_zero, out, one);
        out
    }
}

/// The bytes of a constant of type `ty` in memory (little-endian, as the GPU stores it).
pub(super) fn lit_bytes(lit: crate::tir::Lit, ty: Scalar) -> Vec<u8> {
    use crate::tir::Lit;
    let bits: u64 = match (lit, ty) {
        (Lit::Bool(b), _) => u64::from(b),
        (Lit::Float(f), Scalar::F64) => f.to_bits(),
        (Lit::Float(f), _) => u64::from((f as f32).to_bits()),
        (Lit::Int(v), Scalar::F64) => (v as i128 as f64).to_bits(),
        (Lit::Int(v), Scalar::F32) => u64::from((v as i128 as f32).to_bits()),
        (Lit::Int(v), _) => v as u64,
    };
    bits.to_le_bytes()[..ty.size() as usize].to_vec()
}
