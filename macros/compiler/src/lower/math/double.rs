//! The transcendental `f64` functions (`exp`, `exp2`, `ln`, `log2`, `sin`, `cos`, `tanh`,
//! `powf`) as IR. There is no wider type to compute in, so the parts that decide the accuracy are
//! carried as double-doubles (an unevaluated sum `hi + lo` of two `f64`s, built with `fma`):
//!
//! - `log_dd`: `ln x` as a double-double with a relative error near 2^-70: `x = 2^e m b`,
//!   `b` in {1, 1.5}, and `ln(m) = 2 atanh(s)`, `s = (m - 1) / (m + 1)` with `|s| <= 0.101`
//!   (fdlibm's `pow` reduction), by its series with the leading terms in double-double. `ln`
//!   and `log2` round it once; `powf` multiplies it by `y` in double-double.
//! - `exp_reduced`: `2^k e^r` for a double-double `r` with `|r| <= ln(2)/2`, from `e^r - 1` by
//!   its Taylor series (the terms below `r^2/2` in double-double) and one final rounding.
//!   `exp`, `exp2`, `powf` and `tanh` reduce their argument to it exactly (fdlibm's two-part
//!   `ln 2` for `k ln 2`).
//! - `sin`/`cos`: fdlibm's kernels (`k_sin.c`, `k_cos.c`) on a reduced argument `y0 + y1`, with
//!   fdlibm's three-step Cody–Waite reduction for `|x| < 2^20 pi/2` and a Payne–Hanek reduction
//!   (the bits of `2/pi` as integer words, products in 32-bit limbs) beyond, on a branch.
//!
//! Every operation is `.rn` and nothing is contracted, so the GPU computes exactly what the IR
//! says; `tests/math_ir.rs` runs this IR on the host over millions of inputs and measures the
//! error (`docs/language.md` has the table).

use super::super::Lowerer;
use crate::ir::{BinOp, Block, Imm, Inst, UnOp, Value};
use crate::types::Scalar;

const F: Scalar = Scalar::F64;

/// `ln 2` as a double-double (`LN2_HI` is `f64`'s nearest).
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = f64::from_bits(0x3C7A_BC9E_3B39_803F);
/// fdlibm's split of `ln 2`: 32 significant bits, so `k * LN2_HI32` is exact for `|k| < 2^21`.
const LN2_HI32: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO32: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
/// `1 / ln 2` as a double-double.
const INV_LN2_HI: f64 = std::f64::consts::LOG2_E;
const INV_LN2_LO: f64 = f64::from_bits(0x3C77_77D0_FFDA_0D24);
/// `ln 1.5` as a double-double.
const LN_1P5_HI: f64 = f64::from_bits(0x3FD9_F323_ECBF_984C);
const LN_1P5_LO: f64 = f64::from_bits(0xBC4A_92E5_1321_7F5C);
/// `2/3` as a double-double.
const TWO_THIRDS_HI: f64 = f64::from_bits(0x3FE5_5555_5555_5555);
const TWO_THIRDS_LO: f64 = f64::from_bits(0x3C85_5555_5555_5555);
/// `pi/2` as a double-double.
const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = f64::from_bits(0x3C91_A626_3314_5C07);
/// The odd terms `2/(2n+5)` of `(ln m - 2s - 2s^3/3) / s^5` in `z = s^2`, `n = 0..10`: with
/// `|s| <= 0.101` the first term left out is below 2^-72 of the logarithm.
const ATANH_TAIL_TERMS: u32 = 10;
/// Taylor terms `r^n / n!` of `e^r - 1` kept, `n <= 15`: the first left out is below 2^-66 of
/// the result for `|r| <= 0.35`.
const EXPM1_LAST_TERM: u32 = 15;

/// fdlibm's `__rem_pio2` (medium case): 53 bits of `2/pi`, then `pi/2` in three parts of 33 bits,
/// each with the tail after it.
const INV_PIO2: f64 = f64::from_bits(0x3FE4_5F30_6DC9_C883);
const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
const PIO2_1T: f64 = f64::from_bits(0x3DD0_B461_1A62_6331);
const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
const PIO2_2T: f64 = f64::from_bits(0x3BA3_198A_2E03_7073);
const PIO2_3: f64 = f64::from_bits(0x3BA3_198A_2E00_0000);
const PIO2_3T: f64 = f64::from_bits(0x397B_839A_2520_49C1);
/// Below this, the medium reduction is exact (`n < 2^20`): fdlibm's `0x413921fb` high word.
const MEDIUM_LIMIT: f64 = f64::from_bits(0x4139_21FB_0000_0000);

/// fdlibm's `k_sin.c` coefficients: `sin x ~ x + S1 x^3 + ... + S6 x^13` on `[-pi/4, pi/4]`.
const SIN: [u64; 6] = [
    0xBFC5_5555_5555_5549,
    0x3F81_1111_1110_F8A6,
    0xBF2A_01A0_19C1_61D5,
    0x3EC7_1DE3_57B1_FE7D,
    0xBE5A_E5E6_8A2B_9CEB,
    0x3DE5_D93A_5ACF_D57C,
];
/// fdlibm's `k_cos.c` coefficients: `cos x ~ 1 - x^2/2 + C1 x^4 + ... + C6 x^14`.
const COS: [u64; 6] = [
    0x3FA5_5555_5555_554C,
    0xBF56_C16C_16C1_5177,
    0x3EFA_01A0_19CB_1590,
    0xBE92_7E4F_809C_52AD,
    0x3E21_EE9E_BDB4_B1C4,
    0xBDA8_FAE9_BE88_38D4,
];

/// The bits of `2/pi` after the binary point, 64 per word, most significant first (1280 bits:
/// enough for the largest `f64` exponent, 971, plus the 256-bit window `rem_pio2_large` takes).
const TWO_OVER_PI: [u64; 20] = [
    0xA2F9_836E_4E44_1529,
    0xFC27_57D1_F534_DDC0,
    0xDB62_9599_3C43_9041,
    0xFE51_63AB_DEBB_C561,
    0xB724_6E3A_424D_D2E0,
    0x0649_2EEA_09D1_921C,
    0xFE1D_EB1C_B129_A73E,
    0xE882_35F5_2EBB_4484,
    0xE99C_7026_B45F_7E41,
    0x3991_D639_8353_39F4,
    0x9C84_5F8B_BDF9_283B,
    0x1FF8_97FF_DE05_980F,
    0xEF2F_118B_5A0A_6D1F,
    0x6D36_7ECF_27CB_09B7,
    0x4F46_3F66_9E5F_EA2D,
    0x7527_BAC7_EBE5_F17B,
    0x3D07_39F7_8A52_92EA,
    0x6BFB_5FB1_1F8D_5D08,
    0x5603_3046_FC7B_6BAB,
    0xF0CF_BC20_9AF4_361D,
];

impl Lowerer<'_> {
    pub(super) fn fadd(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Add, a, b)
    }

    pub(super) fn fsub(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Sub, a, b)
    }

    pub(super) fn fmul(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Mul, a, b)
    }

    pub(super) fn fdiv(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Div, a, b)
    }

    /// `a * k` for a constant `k`.
    pub(super) fn fmul_k(&mut self, a: Value, k: f64) -> Value {
        let kv = self.fconst(F, k);
        self.fmul(a, kv)
    }

    /// `if cond { a } else { b }`, as a new value.
    pub(super) fn pick(&mut self, cond: Value, a: Value, b: Value) -> Value {
        let ty = self.values[a.0 as usize].ty;
        let dst = self.new_value(ty, None);
        self.emit(Inst::Select {
            dst,
            cond,
            if_true: a,
            if_false: b,
        });
        dst
    }

    /// `if cond { a } else { b }` of two constants.
    pub(super) fn pick_k(&mut self, cond: Value, a: f64, b: f64) -> Value {
        let (av, bv) = (self.fconst(F, a), self.fconst(F, b));
        self.pick(cond, av, bv)
    }

    fn u64k(&mut self, v: u64) -> Value {
        self.konst(Scalar::U64, Imm::Int(v))
    }

    fn i32k(&mut self, v: i32) -> Value {
        self.konst(Scalar::I32, Imm::Int(u64::from(v as u32)))
    }

    fn u32k(&mut self, v: u32) -> Value {
        self.konst(Scalar::U32, Imm::Int(u64::from(v)))
    }

    /// `a op k` for an integer constant `k` of `a`'s type.
    fn int_op(&mut self, op: BinOp, a: Value, k: i128) -> Value {
        let ty = self.values[a.0 as usize].ty;
        let kv = self.konst(ty, Imm::Int(ty.int_bits(k)));
        self.binary(op, a, kv)
    }

    /// Knuth's two-sum: `s + e == a + b` exactly, `s` the rounded sum.
    fn two_sum(&mut self, a: Value, b: Value) -> (Value, Value) {
        let s = self.fadd(a, b);
        let bb = self.fsub(s, a);
        let ab = self.fsub(s, bb);
        let ea = self.fsub(a, ab);
        let eb = self.fsub(b, bb);
        (s, self.fadd(ea, eb))
    }

    /// Dekker's two-sum for `|a| >= |b|` (or `a` zero): `s + e == a + b` exactly.
    fn fast_two_sum(&mut self, a: Value, b: Value) -> (Value, Value) {
        let s = self.fadd(a, b);
        let sa = self.fsub(s, a);
        (s, self.fsub(b, sa))
    }

    /// `p + e == a * b` exactly (barring underflow), `p` the rounded product.
    fn two_prod(&mut self, a: Value, b: Value) -> (Value, Value) {
        let p = self.fmul(a, b);
        let np = self.unary(UnOp::Neg, p);
        (p, self.fma(a, b, np))
    }

    /// `k * c` exactly as a double-double, for a constant `c`.
    fn two_prod_k(&mut self, a: Value, c: f64) -> (Value, Value) {
        let cv = self.fconst(F, c);
        self.two_prod(a, cv)
    }

    /// `a * (c_hi + c_lo)` as a double-double, for a double-double constant.
    fn mul_dd_k(&mut self, a: Value, c_hi: f64, c_lo: f64) -> (Value, Value) {
        let (p, e) = self.two_prod_k(a, c_hi);
        let t = self.fmul_k(a, c_lo);
        (p, self.fadd(e, t))
    }

    /// The biased exponent field of an `f64`, as `i32`.
    fn exponent_field(&mut self, x: Value) -> Value {
        let bits = self.bitcast(x, Scalar::U64);
        let sh = self.u32k(52);
        let e = self.binary(BinOp::Shr, bits, sh);
        let e = self.int_op(BinOp::And, e, 0x7FF);
        self.cast_to(e, Scalar::I32)
    }

    /// `2^k` for an `i32` `k` in `[-1022, 1023]`.
    fn pow2(&mut self, k: Value) -> Value {
        let biased = self.int_op(BinOp::Add, k, 1023);
        let biased = self.cast_to(biased, Scalar::U64);
        let sh = self.u32k(52);
        let bits = self.binary(BinOp::Shl, biased, sh);
        self.bitcast(bits, F)
    }

    /// `|x|`'s natural logarithm as a double-double `hi + lo`, for a finite positive `x`
    /// (subnormals included); other inputs give meaningless numbers that callers replace.
    pub(super) fn log_dd(&mut self, x: Value) -> (Value, Value) {
        let ax = self.unary(UnOp::Abs, x);
        // Subnormals: scaled by 2^54 (exact), the exponent corrected.
        let min_pos = self.fconst(F, f64::MIN_POSITIVE);
        let sub = self.binary(BinOp::Lt, ax, min_pos);
        let scaled = self.fmul_k(ax, 2f64.powi(54));
        let axs = self.pick(sub, scaled, ax);
        let field = self.exponent_field(axs);
        let e = self.int_op(BinOp::Sub, field, 1023);
        let e_sub = self.int_op(BinOp::Sub, e, 54);
        let e = self.pick(sub, e_sub, e);
        // m in [1, 2), then in [sqrt(3)/2, sqrt(3)).
        let bits = self.bitcast(axs, Scalar::U64);
        let mant = self.int_op(BinOp::And, bits, 0x000F_FFFF_FFFF_FFFF);
        let m_bits = self.int_op(BinOp::Or, mant, 0x3FF0_0000_0000_0000);
        let m = self.bitcast(m_bits, F);
        let sqrt3 = self.fconst(F, 1.732_050_807_568_877_2);
        let big = self.binary(BinOp::Gt, m, sqrt3);
        let m_half = self.fmul_k(m, 0.5);
        let m = self.pick(big, m_half, m);
        let e_up = self.int_op(BinOp::Add, e, 1);
        let e = self.pick(big, e_up, e);
        // b = 1.5 above sqrt(3/2), so that |s| <= 0.101.
        let sqrt_1p5 = self.fconst(F, 1.224_744_871_391_589);
        let upper = self.binary(BinOp::Gt, m, sqrt_1p5);
        let b = self.pick_k(upper, 1.5, 1.0);
        let lb_hi = self.pick_k(upper, LN_1P5_HI, 0.0);
        let lb_lo = self.pick_k(upper, LN_1P5_LO, 0.0);
        // s = (m - b) / (m + b) as a double-double: m - b is exact (Sterbenz), and so are
        // m + b = vh + vl and the remainder of the division.
        let u = self.fsub(m, b);
        let vh = self.fadd(m, b);
        let vb = self.fsub(vh, b);
        let vl = self.fsub(m, vb);
        let sh = self.fdiv(u, vh);
        let nsh = self.unary(UnOp::Neg, sh);
        let r = self.fma(nsh, vh, u);
        let t = self.fmul(sh, vl);
        let r = self.fsub(r, t);
        let sl = self.fdiv(r, vh);
        // s^2 and s^3 as double-doubles.
        let (z_hi, z_e) = self.two_prod(sh, sh);
        let cross = self.fmul(sh, sl);
        let cross2 = self.fadd(cross, cross);
        let z_lo = self.fadd(z_e, cross2);
        let (c_hi, c_e) = self.two_prod(sh, z_hi);
        let t1 = self.fmul(sh, z_lo);
        let t2 = self.fmul(sl, z_hi);
        let t12 = self.fadd(t1, t2);
        let c_lo = self.fadd(c_e, t12);
        // Q(z) = 2/3 + z (2/5 + 2z/7 + ...), its leading term in double-double.
        let coeffs: Vec<f64> = (0..ATANH_TAIL_TERMS)
            .rev()
            .map(|n| 2.0 / f64::from(2 * n + 5))
            .collect();
        let q1 = self.horner(z_hi, &coeffs);
        let zq = self.fmul(z_hi, q1);
        let two_thirds = self.fconst(F, TWO_THIRDS_HI);
        let (q_hi, q_e) = self.fast_two_sum(two_thirds, zq);
        let tt_lo = self.fconst(F, TWO_THIRDS_LO);
        let q_lo = self.fadd(q_e, tt_lo);
        // T = s^3 Q, so that ln(m / b) = 2s + T.
        let (t_hi, t_e) = self.two_prod(c_hi, q_hi);
        let t3 = self.fmul(c_hi, q_lo);
        let t4 = self.fmul(c_lo, q_hi);
        let t34 = self.fadd(t3, t4);
        let t_lo = self.fadd(t_e, t34);
        let s2_hi = self.fadd(sh, sh);
        let s2_lo = self.fadd(sl, sl);
        let (a, a_e) = self.fast_two_sum(s2_hi, t_hi);
        let a_lo = self.fadd(t_lo, s2_lo);
        let a_lo = self.fadd(a_e, a_lo);
        // + e ln 2 + ln b.
        let ef = self.cast_to(e, F);
        let (k_hi, k_lo) = self.mul_dd_k(ef, LN2_HI, LN2_LO);
        let (c, c_e) = self.two_sum(k_hi, lb_hi);
        let (s, s_e) = self.two_sum(c, a);
        let lo = self.fadd(c_e, s_e);
        let lo2 = self.fadd(k_lo, lb_lo);
        let lo = self.fadd(lo, lo2);
        let lo = self.fadd(lo, a_lo);
        self.fast_two_sum(s, lo)
    }

    /// `e^r - 1` as a double-double for `r = rh + rl`, `|rh| <= 0.35`: its Taylor series, with
    /// `r + r^2/2` exact.
    fn expm1_dd(&mut self, rh: Value, rl: Value) -> (Value, Value) {
        let (p, pe) = self.two_prod(rh, rh);
        let h_hi = self.fmul_k(p, 0.5);
        let h_lo = self.fmul_k(pe, 0.5);
        // r^3 (1/3! + r/4! + ... + r^12/15!).
        let mut fact = 1.0f64;
        let mut inv = Vec::new();
        for n in 1..=EXPM1_LAST_TERM {
            fact *= f64::from(n);
            if n >= 3 {
                inv.push(1.0 / fact);
            }
        }
        inv.reverse();
        let poly = self.horner(rh, &inv);
        let cube = self.fmul(rh, p);
        let c = self.fmul(cube, poly);
        let (s, se) = self.fast_two_sum(rh, h_hi);
        // e^(rh + rl) - 1 = (e^rh - 1) + rl e^rh, and rl e^rh ~ rl + rl rh.
        let rlrh = self.fmul(rl, rh);
        let tail = self.fadd(rl, rlrh);
        let low = self.fadd(h_lo, c);
        let low = self.fadd(low, tail);
        let low = self.fadd(se, low);
        self.fast_two_sum(s, low)
    }

    /// `2^k e^(rh + rl)` rounded, for an integral `f64` `k` in `[-1080, 1024]` and
    /// `|rh| <= 0.35`: overflow gives infinity, and small results round once to subnormals or
    /// zero.
    fn exp_reduced(&mut self, k: Value, rh: Value, rl: Value) -> Value {
        let (mh, ml) = self.expm1_dd(rh, rl);
        let one = self.fconst(F, 1.0);
        let (v, ve) = self.fast_two_sum(one, mh);
        let w = self.fadd(ve, ml);
        // 2^k in two factors, each a normal number: 2^k1 exactly, then s2, which rounds a
        // result below the normal range.
        let ki = self.cast_to(k, Scalar::I32);
        let k_big = self.int_op(BinOp::Sub, ki, 1);
        let k_small = self.int_op(BinOp::Add, ki, 1000);
        let thousand = self.i32k(1000);
        let big = self.binary(BinOp::Gt, ki, thousand);
        let minus_thousand = self.i32k(-1000);
        let small = self.binary(BinOp::Lt, ki, minus_thousand);
        let k1 = self.pick(small, k_small, ki);
        let k1 = self.pick(big, k_big, k1);
        let s2 = self.pick_k(small, 2f64.powi(-1000), 1.0);
        let two = self.fconst(F, 2.0);
        let s2 = self.pick(big, two, s2);
        let p1 = self.pow2(k1);
        // s + rho = 2^k1 (v + w) exactly; s is the sum rounded to 53 bits.
        let vs = self.fmul(v, p1);
        let ws = self.fmul(w, p1);
        let (s, rho) = self.fast_two_sum(vs, ws);
        let r = self.fmul(s, s2);
        // Below the normal range, r rounded s to fewer bits. Where s lies exactly halfway
        // between two subnormals, the tie goes to even, but the exact value s + rho is on one
        // side: step to it (so the result is rounded once, not twice).
        let back = self.fmul_k(r, 2f64.powi(1000));
        let diff = self.fsub(s, back);
        let zero = self.fconst(F, 0.0);
        let half_up = self.fconst(F, 2f64.powi(-75));
        let tie_below = self.binary(BinOp::Eq, diff, half_up);
        let rho_pos = self.binary(BinOp::Gt, rho, zero);
        let up = self.binary(BinOp::And, tie_below, rho_pos);
        let up = self.binary(BinOp::And, up, small);
        let half_down = self.fconst(F, -(2f64.powi(-75)));
        let tie_above = self.binary(BinOp::Eq, diff, half_down);
        let rho_neg = self.binary(BinOp::Lt, rho, zero);
        let down = self.binary(BinOp::And, tie_above, rho_neg);
        let down = self.binary(BinOp::And, down, small);
        let unit = self.fconst(F, f64::from_bits(1));
        let r_up = self.fadd(r, unit);
        let r = self.pick(up, r_up, r);
        let r_down = self.fsub(r, unit);
        self.pick(down, r_down, r)
    }

    /// `x - k ln 2` for `k = round(x / ln 2)`, as `(k, rh, rl)`: `x - k LN2_HI32` is exact, the
    /// rest carried in `rl`. `x` in `[-1080, 1080]`.
    fn reduce_ln2(&mut self, x: Value) -> (Value, Value, Value) {
        let q = self.fmul_k(x, INV_LN2_HI);
        let half = self.fconst(F, 0.5);
        let qh = self.fadd(q, half);
        let k = self.unary(UnOp::Floor, qh);
        let nk = self.unary(UnOp::Neg, k);
        let c = self.fconst(F, LN2_HI32);
        let hi = self.fma(nk, c, x);
        let (lo, lo_e) = self.two_prod_k(k, LN2_LO32);
        let rh = self.fsub(hi, lo);
        let d = self.fsub(hi, rh);
        let d = self.fsub(d, lo);
        let rl = self.fsub(d, lo_e);
        (k, rh, rl)
    }

    /// `max(lo, min(x, hi))` (a NaN `x` gives a bound: callers handle NaN).
    fn clamp_k(&mut self, x: Value, lo: f64, hi: f64) -> Value {
        let l = self.fconst(F, lo);
        let h = self.fconst(F, hi);
        let x = self.binary(BinOp::Max, x, l);
        self.binary(BinOp::Min, x, h)
    }

    /// `exp`/`exp2` of an `f64`: NaN stays NaN, overflow gives infinity, underflow zero.
    pub(super) fn exp_f64(&mut self, base2: bool, x: Value) -> Value {
        let r = if base2 {
            let xc = self.clamp_k(x, -1080.0, 1024.25);
            let half = self.fconst(F, 0.5);
            let xh = self.fadd(xc, half);
            let k = self.unary(UnOp::Floor, xh);
            let f = self.fsub(xc, k);
            let (th, tl) = self.mul_dd_k(f, LN2_HI, LN2_LO);
            let (rh, rl) = self.fast_two_sum(th, tl);
            self.exp_reduced(k, rh, rl)
        } else {
            let xc = self.clamp_k(x, -746.0, 710.0);
            let (k, rh, rl) = self.reduce_ln2(xc);
            self.exp_reduced(k, rh, rl)
        };
        let nan = self.is_nan(x);
        self.pick(nan, x, r)
    }

    /// `ln`/`log2` of an `f64`: `-inf` at zero, NaN below, `inf` at `inf`.
    pub(super) fn ln_f64(&mut self, base2: bool, x: Value) -> Value {
        let (lh, ll) = self.log_dd(x);
        let r = if base2 {
            let (ph, pe) = self.two_prod_k(lh, INV_LN2_HI);
            let t1 = self.fmul_k(lh, INV_LN2_LO);
            let t2 = self.fmul_k(ll, INV_LN2_HI);
            let t = self.fadd(t1, t2);
            let pl = self.fadd(pe, t);
            self.fadd(ph, pl)
        } else {
            self.fadd(lh, ll)
        };
        let zero = self.fconst(F, 0.0);
        let is_zero = self.binary(BinOp::Eq, x, zero);
        let neg_inf = self.fconst(F, f64::NEG_INFINITY);
        let r = self.pick(is_zero, neg_inf, r);
        let inf = self.fconst(F, f64::INFINITY);
        let is_inf = self.binary(BinOp::Eq, x, inf);
        let r = self.pick(is_inf, inf, r);
        let negative = self.binary(BinOp::Lt, x, zero);
        let nan = self.fconst(F, f64::NAN);
        let r = self.pick(negative, nan, r);
        let x_nan = self.is_nan(x);
        self.pick(x_nan, x, r)
    }

    /// `powf` of `f64`s: `|x|^y = e^(y ln|x|)` with `y ln|x|` a double-double, and C's special
    /// cases (which Rust's `powf` follows), as the `f32` version has them.
    pub(super) fn pow_f64(&mut self, x: Value, y: Value) -> Value {
        let (lh, ll) = self.log_dd(x);
        let (ph, pe) = self.two_prod(y, lh);
        let yl = self.fmul(y, ll);
        let pl = self.fadd(pe, yl);
        // Beyond the clamp the result is 0 or infinite whatever `pl` is (and `pl` may be NaN
        // when `y ln|x|` overflowed).
        let pc = self.clamp_k(ph, -746.0, 710.0);
        let kept = self.binary(BinOp::Eq, pc, ph);
        let zero = self.fconst(F, 0.0);
        let pl = self.pick(kept, pl, zero);
        let (k, a, b) = self.reduce_ln2(pc);
        let b = self.fadd(b, pl);
        let (rh, rl) = self.two_sum(a, b);
        let mag = self.exp_reduced(k, rh, rl);
        // Magnitudes at zero, infinity, and for infinite exponents.
        let one = self.fconst(F, 1.0);
        let inf = self.fconst(F, f64::INFINITY);
        let ax = self.unary(UnOp::Abs, x);
        let ay = self.unary(UnOp::Abs, y);
        let y_neg = self.binary(BinOp::Lt, y, zero);
        let x_zero = self.binary(BinOp::Eq, ax, zero);
        let at_zero = self.pick(y_neg, inf, zero);
        let mag = self.pick(x_zero, at_zero, mag);
        let x_inf = self.binary(BinOp::Eq, ax, inf);
        let at_inf = self.pick(y_neg, zero, inf);
        let mag = self.pick(x_inf, at_inf, mag);
        let y_inf = self.binary(BinOp::Eq, ay, inf);
        let below_one = self.binary(BinOp::Lt, ax, one);
        let grows = self.binary(BinOp::Eq, below_one, y_neg);
        let by_inf = self.pick(grows, inf, zero);
        let ax_one = self.binary(BinOp::Eq, ax, one);
        let by_inf = self.pick(ax_one, one, by_inf);
        let mag = self.pick(y_inf, by_inf, mag);
        // The sign: negative for a negative `x` (-0 included) and an odd integer `y`.
        let ty = self.unary(UnOp::Trunc, y);
        let y_int = self.binary(BinOp::Eq, ty, y);
        let yh = self.fmul_k(y, 0.5);
        let tyh = self.unary(UnOp::Trunc, yh);
        let y_even = self.binary(BinOp::Eq, tyh, yh);
        let y_not_even = self.not(y_even);
        let y_odd = self.binary(BinOp::And, y_int, y_not_even);
        let sign = self.binary(BinOp::CopySign, one, x);
        let x_signed = self.binary(BinOp::Lt, sign, zero);
        let flip = self.binary(BinOp::And, x_signed, y_odd);
        let neg = self.unary(UnOp::Neg, mag);
        let out = self.pick(flip, neg, mag);
        // A negative finite base and a non-integer exponent: NaN; NaN operands: NaN.
        let x_neg = self.binary(BinOp::Lt, x, zero);
        let neg_inf = self.fconst(F, f64::NEG_INFINITY);
        let x_finite = self.binary(BinOp::Gt, x, neg_inf);
        let y_frac = self.not(y_int);
        let bad = self.binary(BinOp::And, x_neg, x_finite);
        let bad = self.binary(BinOp::And, bad, y_frac);
        let nan = self.fconst(F, f64::NAN);
        let out = self.pick(bad, nan, out);
        let x_nan = self.is_nan(x);
        let y_nan = self.is_nan(y);
        let any_nan = self.binary(BinOp::Or, x_nan, y_nan);
        let out = self.pick(any_nan, nan, out);
        // x^0 = 1^y = 1, NaN included.
        let x_one = self.binary(BinOp::Eq, x, one);
        let out = self.pick(x_one, one, out);
        let y_zero = self.binary(BinOp::Eq, y, zero);
        self.pick(y_zero, one, out)
    }

    /// `tanh` of an `f64`: `(E - 1) / (E + 1)` for `E = e^(2|x|) = 2^k (1 + m)`, with `m`,
    /// numerator and denominator as double-doubles (so small arguments keep their digits), and
    /// `x`'s sign. From `|x| = 22` on the result is 1.
    pub(super) fn tanh_f64(&mut self, x: Value) -> Value {
        let ax = self.unary(UnOp::Abs, x);
        let lim = self.fconst(F, 22.0);
        let axc = self.binary(BinOp::Min, ax, lim);
        let t = self.fadd(axc, axc);
        let (k, rh, rl) = self.reduce_ln2(t);
        let (mh, ml) = self.expm1_dd(rh, rl);
        let ki = self.cast_to(k, Scalar::I32);
        let pk = self.pow2(ki);
        let a = self.fmul(pk, mh);
        let b = self.fmul(pk, ml);
        let (s, se) = self.fast_two_sum(pk, a);
        let low = self.fadd(se, b);
        let minus_one = self.fconst(F, -1.0);
        let (nh, ne) = self.two_sum(s, minus_one);
        let nl = self.fadd(ne, low);
        let one = self.fconst(F, 1.0);
        let (dh, de) = self.two_sum(s, one);
        let dl = self.fadd(de, low);
        // (nh + nl) / (dh + dl), with the remainder of the first division.
        let qh = self.fdiv(nh, dh);
        let nqh = self.unary(UnOp::Neg, qh);
        let rem = self.fma(nqh, dh, nh);
        let qdl = self.fmul(qh, dl);
        let corr = self.fsub(nl, qdl);
        let rem = self.fadd(rem, corr);
        let ql = self.fdiv(rem, dh);
        let r = self.fadd(qh, ql);
        let r = self.binary(BinOp::CopySign, r, x);
        let nan = self.is_nan(x);
        self.pick(nan, x, r)
    }

    /// `sin`/`cos` of an `f64` as fdlibm computes them: the argument reduced to `y0 + y1` in
    /// `[-pi/4, pi/4]` and a quadrant `n`, then the kernel of the quadrant.
    pub(super) fn sin_cos_f64(&mut self, cos: bool, x: Value) -> Value {
        let (y0, y1, n) = self.rem_pio2(x);
        let s = self.sin_kernel(y0, y1);
        let c = self.cos_kernel(y0, y1);
        // Quadrant q of sin: 0 sin, 1 cos, 2 -sin, 3 -cos; cos is sin a quadrant on.
        let q = if cos {
            let one = self.u32k(1);
            self.binary(BinOp::Add, n, one)
        } else {
            n
        };
        let zero = self.u32k(0);
        let odd_bit = self.int_op(BinOp::And, q, 1);
        let odd = self.binary(BinOp::Ne, odd_bit, zero);
        let neg_bit = self.int_op(BinOp::And, q, 2);
        let negate = self.binary(BinOp::Ne, neg_bit, zero);
        let r = self.pick(odd, c, s);
        let nr = self.unary(UnOp::Neg, r);
        let r = self.pick(negate, nr, r);
        // Infinities and NaN give NaN.
        let ax = self.unary(UnOp::Abs, x);
        let inf = self.fconst(F, f64::INFINITY);
        let finite = self.binary(BinOp::Lt, ax, inf);
        let not_finite = self.not(finite);
        let nan = self.fconst(F, f64::NAN);
        self.pick(not_finite, nan, r)
    }

    /// fdlibm's `__sin(x, y, 1)`: `sin(x + y)` for `|x| <= pi/4`, `y` the tail of `x`.
    fn sin_kernel(&mut self, x: Value, y: Value) -> Value {
        let s: Vec<f64> = SIN.iter().map(|&b| f64::from_bits(b)).collect();
        let z = self.fmul(x, x);
        let w = self.fmul(z, z);
        // r = S2 + z (S3 + z S4) + z w (S5 + z S6)
        let p1 = self.horner(z, &[s[3], s[2]]);
        let p1 = self.fmul(z, p1);
        let s2 = self.fconst(F, s[1]);
        let r = self.fadd(s2, p1);
        let p2 = self.horner(z, &[s[5], s[4]]);
        let zw = self.fmul(z, w);
        let p2 = self.fmul(zw, p2);
        let r = self.fadd(r, p2);
        let v = self.fmul(z, x);
        // x - ((z (y/2 - v r) - y) - v S1)
        let hy = self.fmul_k(y, 0.5);
        let vr = self.fmul(v, r);
        let t = self.fsub(hy, vr);
        let t = self.fmul(z, t);
        let t = self.fsub(t, y);
        let vs1 = self.fmul_k(v, s[0]);
        let t = self.fsub(t, vs1);
        self.fsub(x, t)
    }

    /// fdlibm's `__cos(x, y)`: `cos(x + y)` for `|x| <= pi/4`.
    fn cos_kernel(&mut self, x: Value, y: Value) -> Value {
        let c: Vec<f64> = COS.iter().map(|&b| f64::from_bits(b)).collect();
        let z = self.fmul(x, x);
        let w = self.fmul(z, z);
        // r = z (C1 + z (C2 + z C3)) + w^2 (C4 + z (C5 + z C6))
        let p1 = self.horner(z, &[c[2], c[1], c[0]]);
        let p1 = self.fmul(z, p1);
        let p2 = self.horner(z, &[c[5], c[4], c[3]]);
        let ww = self.fmul(w, w);
        let p2 = self.fmul(ww, p2);
        let r = self.fadd(p1, p2);
        let hz = self.fmul_k(z, 0.5);
        let one = self.fconst(F, 1.0);
        let w = self.fsub(one, hz);
        // w + (((1 - w) - hz) + (z r - x y))
        let t = self.fsub(one, w);
        let t = self.fsub(t, hz);
        let zr = self.fmul(z, r);
        let xy = self.fmul(x, y);
        let u = self.fsub(zr, xy);
        let t = self.fadd(t, u);
        self.fadd(w, t)
    }

    /// `x = n pi/2 + y0 + y1`, `|y0 + y1| <= pi/4`; `n` mod 4 as `u32`. fdlibm's medium case
    /// (three steps of Cody–Waite, the later ones when the earlier cancelled) below
    /// `2^20 pi/2`, Payne–Hanek on a branch above. Not finite `x`: meaningless values.
    fn rem_pio2(&mut self, x: Value) -> (Value, Value, Value) {
        // n = rint(x 2/pi) by the 1.5 2^52 trick.
        let toint = self.fconst(F, 1.5 * 2f64.powi(52));
        let q = self.fmul_k(x, INV_PIO2);
        let q = self.fadd(q, toint);
        let fnv = self.fsub(q, toint);
        let nfn = self.unary(UnOp::Neg, fnv);
        let p1 = self.fconst(F, PIO2_1);
        let r1 = self.fma(nfn, p1, x);
        let w1 = self.fmul_k(fnv, PIO2_1T);
        let y0_1 = self.fsub(r1, w1);
        let j = self.exponent_field(x);
        // One more step of pi/2: (r, w) -> (r', w', y0').
        let step = |l: &mut Self, r: Value, part: f64, tail: f64| {
            let w = l.fmul_k(fnv, part);
            let r2 = l.fsub(r, w);
            let d = l.fsub(r, r2);
            let d = l.fsub(d, w);
            let wt = l.fmul_k(fnv, tail);
            let w2 = l.fsub(wt, d);
            let y0 = l.fsub(r2, w2);
            (r2, w2, y0)
        };
        let (r2, w2, y0_2) = step(self, r1, PIO2_2, PIO2_2T);
        let (r3, w3, y0_3) = step(self, r2, PIO2_3, PIO2_3T);
        let ey1 = self.exponent_field(y0_1);
        let i1 = self.fsub_i(j, ey1);
        let ey2 = self.exponent_field(y0_2);
        let i2 = self.fsub_i(j, ey2);
        let sixteen = self.i32k(16);
        let second = self.binary(BinOp::Gt, i1, sixteen);
        let forty_nine = self.i32k(49);
        let third = self.binary(BinOp::Gt, i2, forty_nine);
        let third = self.binary(BinOp::And, second, third);
        let y0 = self.pick(second, y0_2, y0_1);
        let y0 = self.pick(third, y0_3, y0);
        let r = self.pick(second, r2, r1);
        let r = self.pick(third, r3, r);
        let w = self.pick(second, w2, w1);
        let w = self.pick(third, w3, w);
        let d = self.fsub(r, y0);
        let y1 = self.fsub(d, w);
        let n = self.cast_to(fnv, Scalar::I32);
        let n = self.cast_to(n, Scalar::U32);
        let y0 = self.var(y0);
        let y1 = self.var(y1);
        let n = self.var(n);
        // Beyond the medium range (and finite): Payne–Hanek.
        let ax = self.unary(UnOp::Abs, x);
        let limit = self.fconst(F, MEDIUM_LIMIT);
        let beyond = self.binary(BinOp::Ge, ax, limit);
        let inf = self.fconst(F, f64::INFINITY);
        let finite = self.binary(BinOp::Lt, ax, inf);
        let large = self.binary(BinOp::And, beyond, finite);
        let then = self.sub_block(|l| {
            let (a, b, m) = l.rem_pio2_large(x);
            l.emit(Inst::Copy { dst: y0, src: a });
            l.emit(Inst::Copy { dst: y1, src: b });
            l.emit(Inst::Copy { dst: n, src: m });
        });
        self.emit(Inst::If {
            cond: large,
            then,
            else_: Block::default(),
        });
        (y0, y1, n)
    }

    /// `a - b` of integers.
    fn fsub_i(&mut self, a: Value, b: Value) -> Value {
        self.binary(BinOp::Sub, a, b)
    }

    /// Payne–Hanek for a finite `|x| >= 2^20 pi/2`: `x = M 2^E` (`M` a 53-bit integer), and
    /// `x 2/pi mod 4 = M W 2^-254 mod 4` for the 256-bit window `W` of the bits of `2/pi` from
    /// bit `E - 1` on (earlier bits give multiples of 4). The product's bits 255..128 give the
    /// quadrant and the fraction `f` to 2^-126, which becomes `y0 + y1 = f pi/2`.
    fn rem_pio2_large(&mut self, x: Value) -> (Value, Value, Value) {
        let u64_ = Scalar::U64;
        let field = self.exponent_field(x);
        let bits = self.bitcast(x, u64_);
        let mant = self.int_op(BinOp::And, bits, 0x000F_FFFF_FFFF_FFFF);
        let m = self.int_op(BinOp::Or, mant, 1 << 52);
        // Bit E - 1 of 2/pi sits at position E + 62 of the table behind a zero word
        // (E = field - 1075 >= -32 here, so the position is at least 30).
        let pos = self.int_op(BinOp::Sub, field, 1075 - 62);
        let six = self.u32k(6);
        let word = self.binary(BinOp::Shr, pos, six);
        let shift = self.int_op(BinOp::And, pos, 63);
        let shift = self.cast_to(shift, Scalar::U32);
        // Table words word..word+4 (word <= 16), by a chain of selects.
        let table: Vec<u64> = std::iter::once(0).chain(TWO_OVER_PI).collect();
        let mut words: Vec<Value> = (0..5).map(|t| self.u64k(table[t])).collect();
        for cand in 1..=16 {
            let c = self.i32k(cand as i32);
            let hit = self.binary(BinOp::Eq, word, c);
            for (t, w) in words.iter_mut().enumerate() {
                let v = self.u64k(table[cand + t]);
                *w = self.pick(hit, v, *w);
            }
        }
        let zero_u = self.u32k(0);
        let aligned = self.binary(BinOp::Eq, shift, zero_u);
        let sixty_four = self.u32k(64);
        let back = self.binary(BinOp::Sub, sixty_four, shift);
        // The window as eight 32-bit limbs, least significant first.
        let mut limbs = Vec::new();
        for t in (0..4).rev() {
            let hi = self.binary(BinOp::Shl, words[t], shift);
            let lo = self.binary(BinOp::Shr, words[t + 1], back);
            let joined = self.binary(BinOp::Or, hi, lo);
            let w = self.pick(aligned, words[t], joined);
            let low = self.int_op(BinOp::And, w, 0xFFFF_FFFF);
            let sh32 = self.u32k(32);
            let high = self.binary(BinOp::Shr, w, sh32);
            limbs.push(low);
            limbs.push(high);
        }
        let m0 = self.int_op(BinOp::And, m, 0xFFFF_FFFF);
        let sh32 = self.u32k(32);
        let m1 = self.binary(BinOp::Shr, m, sh32);
        // M W in limbs: row m0 W, then m1 W one limb up (sums stay below 2^64).
        let mut row = Vec::new();
        let mut carry = self.u64k(0);
        for &l in &limbs {
            let p = self.binary(BinOp::Mul, m0, l);
            let t = self.binary(BinOp::Add, p, carry);
            row.push(self.int_op(BinOp::And, t, 0xFFFF_FFFF));
            carry = self.binary(BinOp::Shr, t, sh32);
        }
        row.push(carry);
        let mut prod = vec![row[0]];
        let mut carry = self.u64k(0);
        for (b, &l) in limbs.iter().enumerate() {
            let p = self.binary(BinOp::Mul, m1, l);
            let t = self.binary(BinOp::Add, p, row[b + 1]);
            let t = self.binary(BinOp::Add, t, carry);
            prod.push(self.int_op(BinOp::And, t, 0xFFFF_FFFF));
            carry = self.binary(BinOp::Shr, t, sh32);
        }
        let join = |l: &mut Self, hi: Value, lo: Value| {
            let h = l.binary(BinOp::Shl, hi, sh32);
            l.binary(BinOp::Or, h, lo)
        };
        let h = join(self, prod[7], prod[6]);
        let lo = join(self, prod[5], prod[4]);
        // Round to the nearest quadrant: f = (d + lo 2^-64) 2^-62 in [-1/2, 1/2).
        let g = self.int_op(BinOp::Add, h, 1 << 61);
        let sh62 = self.u32k(62);
        let n = self.binary(BinOp::Shr, g, sh62);
        let n = self.cast_to(n, Scalar::U32);
        let frac = self.int_op(BinOp::And, g, (1 << 62) - 1);
        let frac = self.cast_to(frac, Scalar::I64);
        let d = self.int_op(BinOp::Sub, frac, 1 << 61);
        // A small d (x very near a multiple of pi/2): shift 40 more bits of lo in.
        let lim = 1i128 << 21;
        let below = self.int_op(BinOp::Lt, d, lim);
        let above = self.int_op(BinOp::Gt, d, -lim);
        let small = self.binary(BinOp::And, below, above);
        let sh40 = self.u32k(40);
        let d40 = self.binary(BinOp::Shl, d, sh40);
        let sh24 = self.u32k(24);
        let top = self.binary(BinOp::Shr, lo, sh24);
        let top = self.cast_to(top, Scalar::I64);
        let d40 = self.binary(BinOp::Or, d40, top);
        let d = self.pick(small, d40, d);
        let lo40 = self.binary(BinOp::Shl, lo, sh40);
        let lo = self.pick(small, lo40, lo);
        let scale = self.pick_k(small, 2f64.powi(-102), 2f64.powi(-62));
        // d + lo 2^-64 as a double-double (fh exact up to its rounding, the rest in fl).
        let fh = self.cast_to(d, F);
        let back_i = self.cast_to(fh, Scalar::I64);
        let resid = self.binary(BinOp::Sub, d, back_i);
        let resid = self.cast_to(resid, F);
        let lof = self.cast_to(lo, F);
        let lof = self.fmul_k(lof, 2f64.powi(-64));
        let fl = self.fadd(resid, lof);
        // (fh + fl) pi/2, scaled.
        let (rh, re) = self.two_prod_k(fh, PIO2_HI);
        let t1 = self.fmul_k(fh, PIO2_LO);
        let t2 = self.fmul_k(fl, PIO2_HI);
        let t = self.fadd(t1, t2);
        let rl = self.fadd(re, t);
        let rh = self.fmul(rh, scale);
        let rl = self.fmul(rl, scale);
        let (y0, y1) = self.fast_two_sum(rh, rl);
        // x < 0: everything negated.
        let zero = self.fconst(F, 0.0);
        let neg = self.binary(BinOp::Lt, x, zero);
        let ny0 = self.unary(UnOp::Neg, y0);
        let y0 = self.pick(neg, ny0, y0);
        let ny1 = self.unary(UnOp::Neg, y1);
        let y1 = self.pick(neg, ny1, y1);
        let nn = self.binary(BinOp::Sub, zero_u, n);
        let nn = self.int_op(BinOp::And, nn, 3);
        let n = self.pick(neg, nn, n);
        (y0, y1, n)
    }
}
