//! `%` on floats: Rust's remainder is C's `fmod`, `x - trunc(x / y) y` computed exactly (the
//! result is always representable, so it is exact, with the sign of `x`).
//!
//! With `|x| = mx 2^ex` and `|y| = my 2^ey` (integer significands, subnormals with exponent 1
//! and no implicit bit), `|x| >= |y|` implies `ex >= ey`, and
//! `|x| mod |y| = ((mx 2^(ex - ey)) mod my) 2^ey`. The integer remainder is taken in `u64`, a
//! chunk of the exponent difference at a time (`r = (r << k) % my` with `k` at most 11 bits for
//! `f64`, 40 for `f32`, so `r << k` stays below 2^64), after a first `mx % my`: at most 186
//! steps for `f64` (`ex - ey <= 2045`) and 7 for `f32`, each one `rem.u64`; `|x| < 2^11 |y|`
//! takes one step, `|x| < 2 |y|` none. The remainder,
//! below `my`, converts exactly, and the scaling by `2^ey` is exact. `f16`/`bf16` compute in
//! `f32` and round back, exactly (the `half` crate's `Rem`, and exact since the result is
//! representable in the half type too).

use super::super::Lowerer;
use crate::ir::{BinOp, Imm, Inst, UnOp, Value};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `a % b` (and `a %= b`) on any float type; other operands are `Rem` as they are.
    pub(in crate::lower) fn rem_op(&mut self, a: Value, b: Value) -> Value {
        let ty = self.values[a.0 as usize].ty;
        if ty.is_half() {
            let fa = self.cast_to(a, Scalar::F32);
            let fb = self.cast_to(b, Scalar::F32);
            let r = self.fmod(fa, fb);
            self.cast_to(r, ty)
        } else if ty.is_float() {
            self.fmod(a, b)
        } else {
            self.binary(BinOp::Rem, a, b)
        }
    }

    /// `fmod` of two `f32`s or two `f64`s.
    fn fmod(&mut self, x: Value, y: Value) -> Value {
        let ty = self.values[x.0 as usize].ty;
        let wide = ty == Scalar::F64;
        let (bits_ty, mant_bits, chunk) = if wide {
            (Scalar::U64, 52, 11)
        } else {
            (Scalar::U32, 23, 40)
        };
        let u64_ = Scalar::U64;
        let i32_ = Scalar::I32;
        let k64 = |l: &mut Self, v: u64| l.konst(u64_, Imm::Int(v));
        let k32 = |l: &mut Self, v: i32| l.konst(i32_, Imm::Int(u64::from(v as u32)));
        let ax = self.unary(UnOp::Abs, x);
        let ay = self.unary(UnOp::Abs, y);
        // Significand and exponent of each, in u64 and i32.
        let parts = |l: &mut Self, a: Value| {
            let b = l.bitcast(a, bits_ty);
            let b = l.cast_to(b, u64_);
            let sh = l.konst(Scalar::U32, Imm::Int(mant_bits));
            let e = l.binary(BinOp::Shr, b, sh);
            let e = l.cast_to(e, i32_);
            let mask = k64(l, (1 << mant_bits) - 1);
            let m = l.binary(BinOp::And, b, mask);
            let implicit = k64(l, 1 << mant_bits);
            let with_one = l.binary(BinOp::Or, m, implicit);
            let zero = k32(l, 0);
            let normal = l.binary(BinOp::Ne, e, zero);
            let m = l.pick(normal, with_one, m);
            let one = k32(l, 1);
            let e = l.pick(normal, e, one);
            (m, e)
        };
        let (mx, ex) = parts(self, ax);
        let (my, ey) = parts(self, ay);
        // NaN for y = 0, a NaN, or an infinite x; x itself when |x| < |y| (y infinite too).
        let zero_f = self.fconst(ty, 0.0);
        let y_zero = self.binary(BinOp::Eq, ay, zero_f);
        let inf = self.fconst(ty, f64::INFINITY);
        let x_finite = self.binary(BinOp::Lt, ax, inf);
        let x_bad = self.not(x_finite);
        let y_nan = self.is_nan(y);
        let special = self.binary(BinOp::Or, y_zero, x_bad);
        let special = self.binary(BinOp::Or, special, y_nan);
        let smaller = self.binary(BinOp::Lt, ax, ay);
        let skip = self.binary(BinOp::Or, special, smaller);
        // The loop runs only for the general case, and never divides by zero.
        let zero_i = k32(self, 0);
        let diff = self.binary(BinOp::Sub, ex, ey);
        let diff = self.pick(skip, zero_i, diff);
        let d = self.var(diff);
        let zero_u = k64(self, 0);
        let my_zero = self.binary(BinOp::Eq, my, zero_u);
        let one_u = k64(self, 1);
        let div = self.pick(my_zero, one_u, my);
        let r0 = self.binary(BinOp::Rem, mx, div);
        let r = self.var(r0);
        let id = self.new_loop();
        let body = self.sub_block(|l| {
            let done = l.binary(BinOp::Le, d, zero_i);
            l.break_if(done, id);
            let most = k32(l, chunk);
            let k = l.binary(BinOp::Min, d, most);
            let shifted = l.binary(BinOp::Shl, r, k);
            let next = l.binary(BinOp::Rem, shifted, div);
            l.emit(Inst::Copy { dst: r, src: next });
            let rest = l.binary(BinOp::Sub, d, k);
            l.emit(Inst::Copy { dst: d, src: rest });
        });
        self.emit(Inst::Loop { id, body });
        // r 2^(ey - bias - mant_bits): 2^.. from its bits, a subnormal power below the normal
        // range (ey <= mant_bits).
        let mb = k32(self, mant_bits as i32);
        let normal_scale = self.binary(BinOp::Gt, ey, mb);
        let e_norm = self.binary(BinOp::Sub, ey, mb);
        let e_norm = self.cast_to(e_norm, u64_);
        let sh = self.konst(Scalar::U32, Imm::Int(mant_bits));
        let norm_bits = self.binary(BinOp::Shl, e_norm, sh);
        let one_i = k32(self, 1);
        let e_sub = self.binary(BinOp::Sub, ey, one_i);
        let sub_bits = self.binary(BinOp::Shl, one_u, e_sub);
        let scale_bits = self.pick(normal_scale, norm_bits, sub_bits);
        let scale_bits = self.cast_to(scale_bits, bits_ty);
        let scale = self.bitcast(scale_bits, ty);
        let rf = self.cast_to(r, ty);
        let mag = self.binary(BinOp::Mul, rf, scale);
        let out = self.binary(BinOp::CopySign, mag, x);
        let out = self.pick(smaller, x, out);
        let nan = self.fconst(ty, f64::NAN);
        self.pick(special, nan, out)
    }
}
