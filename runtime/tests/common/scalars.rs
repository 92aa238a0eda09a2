//! Kernels for the differential suite (`tests/differential.rs`): one kernel per scalar type and
//! family of operations, each a single role whose parallel loop writes one output slice per
//! operation, so the simulator and the GPU can be compared element by element.

use gpu_async::gpu_async;

/// Every integer operator, compound assignment and method of one integer type.
macro_rules! int_kernel {
    ($m:ident, $t:ident) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            #[allow(clippy::too_many_arguments)]
            pub async fn ops(
                avoid: $t,
                a: &[$t],
                b: &[$t],
                arith: &mut [$t],
                bits: &mut [$t],
                shifts: &mut [$t],
                div: &mut [$t],
                sat: &mut [$t],
                counts: &mut [u32],
                cmp: &mut [u32],
                checked: &mut [$t],
            ) {
                join!(on_warps(
                    0..2,
                    body(avoid, a, b, arith, bits, shifts, div, sat, counts, cmp, checked)
                ))
                .await;
            }

            #[allow(clippy::too_many_arguments)]
            async fn body(
                avoid: $t,
                a: &[$t],
                b: &[$t],
                arith: &mut [$t],
                bits: &mut [$t],
                shifts: &mut [$t],
                div: &mut [$t],
                sat: &mut [$t],
                counts: &mut [u32],
                cmp: &mut [u32],
                checked: &mut [$t],
            ) {
                checked
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let s = x.checked_add(*y);
                        let d = x.checked_sub(*y);
                        let m = x.checked_mul(*y);
                        let q = x.checked_div(*y);
                        let r = x.checked_rem(*y);
                        let mut v = s.unwrap_or(1) ^ d.unwrap_or(2) ^ m.unwrap_or(3);
                        v ^= q.unwrap_or(4) ^ r.unwrap_or(5);
                        if s.is_none() {
                            v ^= 64;
                        }
                        if m.is_some() {
                            v ^= 32;
                        }
                        *o = v;
                    });
                arith
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let mut v = *x + *y;
                        v = v * *x - *y;
                        v += *x;
                        v *= *y;
                        v -= 3;
                        *o = v.wrapping_mul(*y).wrapping_sub(*x).wrapping_add(1);
                    });
                bits.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let mut v = (*x & *y) ^ (*x | !*y);
                        v ^= *y;
                        v |= *x & 5;
                        v &= !(*y ^ 9);
                        *o = v;
                    });
                shifts
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let k = *y as u32;
                        let mut v = (*x << k) ^ (*x >> (k + 3));
                        v <<= 1;
                        v >>= k;
                        *o = v;
                    });
                div.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let d = if *y == 0 || *y == avoid { 7 } else { *y };
                        *o = *x / d + *x % d;
                    });
                sat.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        *o = x.saturating_add(*y) ^ x.saturating_sub(*y);
                    });
                counts.par_iter_mut().zip(a.par_iter()).for_each(|(o, x)| {
                    *o = x.count_ones() + 100 * x.leading_zeros() + 10_000 * x.trailing_zeros();
                });
                cmp.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let mut v = 0u32;
                        if *x < *y {
                            v |= 1;
                        }
                        if *x <= *y {
                            v |= 2;
                        }
                        if *x > *y {
                            v |= 4;
                        }
                        if *x >= *y {
                            v |= 8;
                        }
                        if *x == *y {
                            v |= 16;
                        }
                        if *x != *y {
                            v |= 32;
                        }
                        let m = (*x).min(*y) == *x;
                        let n = (*x).max(*y) == *y;
                        if m && n {
                            v |= 64;
                        }
                        *o = v;
                    });
            }
        }
    };
}

int_kernel!(ops_i8, i8);
int_kernel!(ops_i16, i16);
int_kernel!(ops_i32, i32);
int_kernel!(ops_i64, i64);
int_kernel!(ops_isize, isize);
int_kernel!(ops_u8, u8);
int_kernel!(ops_u16, u16);
int_kernel!(ops_u32, u32);
int_kernel!(ops_u64, u64);
int_kernel!(ops_usize, usize);

/// Negation and `abs` of a signed type (they wrap at `MIN`).
macro_rules! signed_kernel {
    ($m:ident, $t:ident) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            #[kernel(warps = 1)]
            pub async fn neg(a: &[$t], out: &mut [$t]) {
                join!(on_warps(0..1, body(a, out))).await;
            }

            async fn body(a: &[$t], out: &mut [$t]) {
                out.par_iter_mut()
                    .zip(a.par_iter())
                    .for_each(|(o, x)| *o = -*x ^ x.abs());
            }
        }
    };
}

signed_kernel!(neg_i8, i8);
signed_kernel!(neg_i16, i16);
signed_kernel!(neg_i32, i32);
signed_kernel!(neg_i64, i64);
signed_kernel!(neg_isize, isize);

/// `x as T` from one source type to every numeric type.
macro_rules! cast_kernel {
    ($m:ident, $t:ident) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            #[allow(clippy::too_many_arguments)]
            pub async fn casts(
                x: &[$t],
                o_i8: &mut [i8],
                o_i16: &mut [i16],
                o_i32: &mut [i32],
                o_i64: &mut [i64],
                o_isize: &mut [isize],
                o_u8: &mut [u8],
                o_u16: &mut [u16],
                o_u32: &mut [u32],
                o_u64: &mut [u64],
                o_usize: &mut [usize],
                o_f32: &mut [f32],
                o_f64: &mut [f64],
            ) {
                join!(on_warps(
                    0..2,
                    body(
                        x, o_i8, o_i16, o_i32, o_i64, o_isize, o_u8, o_u16, o_u32, o_u64, o_usize,
                        o_f32, o_f64
                    )
                ))
                .await;
            }

            #[allow(clippy::too_many_arguments)]
            async fn body(
                x: &[$t],
                o_i8: &mut [i8],
                o_i16: &mut [i16],
                o_i32: &mut [i32],
                o_i64: &mut [i64],
                o_isize: &mut [isize],
                o_u8: &mut [u8],
                o_u16: &mut [u16],
                o_u32: &mut [u32],
                o_u64: &mut [u64],
                o_usize: &mut [usize],
                o_f32: &mut [f32],
                o_f64: &mut [f64],
            ) {
                o_i8.par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as i8);
                o_i16
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as i16);
                o_i32
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as i32);
                o_i64
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as i64);
                o_isize
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as isize);
                o_u8.par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as u8);
                o_u16
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as u16);
                o_u32
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as u32);
                o_u64
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as u64);
                o_usize
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as usize);
                o_f32
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as f32);
                o_f64
                    .par_iter_mut()
                    .zip(x.par_iter())
                    .for_each(|(o, v)| *o = *v as f64);
            }
        }
    };
}

cast_kernel!(casts_i8, i8);
cast_kernel!(casts_i16, i16);
cast_kernel!(casts_i32, i32);
cast_kernel!(casts_i64, i64);
cast_kernel!(casts_isize, isize);
cast_kernel!(casts_u8, u8);
cast_kernel!(casts_u16, u16);
cast_kernel!(casts_u32, u32);
cast_kernel!(casts_u64, u64);
cast_kernel!(casts_usize, usize);
cast_kernel!(casts_f32, f32);
cast_kernel!(casts_f64, f64);

/// The exactly rounded float operations and methods of one float type.
macro_rules! float_kernel {
    ($m:ident, $t:ident, $bits:ident) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            #[allow(clippy::too_many_arguments)]
            pub async fn ops(
                a: &[$t],
                b: &[$t],
                n: &[i32],
                arith: &mut [$t],
                rounding: &mut [$t],
                methods: &mut [$t],
                powi: &mut [$t],
                bits: &mut [$bits],
                cmp: &mut [u32],
            ) {
                join!(on_warps(
                    0..2,
                    body(a, b, n, arith, rounding, methods, powi, bits, cmp)
                ))
                .await;
            }

            #[allow(clippy::too_many_arguments)]
            async fn body(
                a: &[$t],
                b: &[$t],
                n: &[i32],
                arith: &mut [$t],
                rounding: &mut [$t],
                methods: &mut [$t],
                powi: &mut [$t],
                bits: &mut [$bits],
                cmp: &mut [u32],
            ) {
                arith
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let mut v = (*x + *y) * *x - *y / (*x - 1.5);
                        v += 0.25;
                        v *= -*y;
                        v /= 3.0;
                        v -= *x;
                        *o = v + x.mul_add(*y, v);
                    });
                rounding
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .for_each(|(o, x)| {
                        *o = x.floor() * 8.0 + x.ceil() * 4.0 - x.trunc() * 2.0 + x.round();
                    });
                methods
                    .par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let r = x.abs().sqrt() + x.abs().rsqrt();
                        *o = r.min(*y).max(-1e30) + x.copysign(*y) + x.clamp(-2.0, 3.0);
                    });
                powi.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(n.par_iter())
                    .for_each(|((o, x), k)| *o = x.powi(*k));
                bits.par_iter_mut()
                    .zip(a.par_iter())
                    .for_each(|(o, x)| *o = x.to_bits());
                cmp.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let mut v = 0u32;
                        if *x < *y {
                            v |= 1;
                        }
                        if *x <= *y {
                            v |= 2;
                        }
                        if *x > *y {
                            v |= 4;
                        }
                        if *x >= *y {
                            v |= 8;
                        }
                        if *x == *y {
                            v |= 16;
                        }
                        if *x != *y {
                            v |= 32;
                        }
                        if x.is_nan() {
                            v |= 64;
                        }
                        *o = v;
                    });
            }
        }
    };
}

float_kernel!(ops_f32, f32, u32);
float_kernel!(ops_f64, f64, u64);

/// The `f32` functions computed through `f64` series (within an ulp of the host's libm).
#[gpu_async]
pub mod transcendental {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    #[allow(clippy::too_many_arguments)]
    pub async fn funcs(
        a: &[f32],
        b: &[f32],
        exp: &mut [f32],
        exp2: &mut [f32],
        ln: &mut [f32],
        log2: &mut [f32],
        sin: &mut [f32],
        cos: &mut [f32],
        tanh: &mut [f32],
        powf: &mut [f32],
    ) {
        join!(on_warps(
            0..2,
            body(a, b, exp, exp2, ln, log2, sin, cos, tanh, powf)
        ))
        .await;
    }

    #[allow(clippy::too_many_arguments)]
    async fn body(
        a: &[f32],
        b: &[f32],
        exp: &mut [f32],
        exp2: &mut [f32],
        ln: &mut [f32],
        log2: &mut [f32],
        sin: &mut [f32],
        cos: &mut [f32],
        tanh: &mut [f32],
        powf: &mut [f32],
    ) {
        exp.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.exp());
        exp2.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.exp2());
        ln.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.ln());
        log2.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.log2());
        sin.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.sin());
        cos.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.cos());
        tanh.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.tanh());
        powf.par_iter_mut()
            .zip(a.par_iter())
            .zip(b.par_iter())
            .for_each(|((o, x), y)| *o = x.powf(*y));
    }
}

/// Float `%` (the exact `fmod`) of one float type: `x % y`, and `%=` on the output element
/// (which starts as a copy of `x`).
macro_rules! rem_kernel {
    ($m:ident, $t:ident) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn rem(a: &[$t], b: &[$t], rem: &mut [$t], assign: &mut [$t]) {
                join!(on_warps(0..2, body(a, b, rem, assign))).await;
            }

            async fn body(a: &[$t], b: &[$t], rem: &mut [$t], assign: &mut [$t]) {
                rem.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| *o = *x % *y);
                assign
                    .par_iter_mut()
                    .zip(b.par_iter())
                    .for_each(|(o, y)| *o %= *y);
            }
        }
    };
}

rem_kernel!(rem_f32, f32);
rem_kernel!(rem_f64, f64);
rem_kernel!(rem_f16, f16);
rem_kernel!(rem_bf16, bf16);

/// The GPU's fast `f32` approximations (`ex2.approx.ftz`).
#[gpu_async]
pub mod approx {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn exp2(a: &[f32], out: &mut [f32]) {
        join!(on_warps(0..2, body(a, out))).await;
    }

    async fn body(a: &[f32], out: &mut [f32]) {
        out.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.exp2_approx());
    }
}

/// The `f64` functions (fdlibm's algorithms with double-double steps, `lower/math/double.rs`).
#[gpu_async]
pub mod transcendental64 {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    #[allow(clippy::too_many_arguments)]
    pub async fn funcs(
        a: &[f64],
        b: &[f64],
        exp: &mut [f64],
        exp2: &mut [f64],
        ln: &mut [f64],
        log2: &mut [f64],
        sin: &mut [f64],
        cos: &mut [f64],
        tanh: &mut [f64],
        powf: &mut [f64],
    ) {
        join!(on_warps(
            0..2,
            body(a, b, exp, exp2, ln, log2, sin, cos, tanh, powf)
        ))
        .await;
    }

    #[allow(clippy::too_many_arguments)]
    async fn body(
        a: &[f64],
        b: &[f64],
        exp: &mut [f64],
        exp2: &mut [f64],
        ln: &mut [f64],
        log2: &mut [f64],
        sin: &mut [f64],
        cos: &mut [f64],
        tanh: &mut [f64],
        powf: &mut [f64],
    ) {
        exp.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.exp());
        exp2.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.exp2());
        ln.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.ln());
        log2.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.log2());
        sin.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.sin());
        cos.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.cos());
        tanh.par_iter_mut()
            .zip(a.par_iter())
            .for_each(|(o, x)| *o = x.tanh());
        powf.par_iter_mut()
            .zip(a.par_iter())
            .zip(b.par_iter())
            .for_each(|((o, x), y)| *o = x.powf(*y));
    }
}
