//! The math lowerings checked without a GPU: the simulator runs the host's `std` functions, so
//! it never executes the IR that `lower/math` builds. This test does: a small interpreter of the
//! scalar IR (every instruction these expansions use, with the PTX writer's semantics: `.rn`
//! float operations, `fma`, Rust's `as`, wrapping integers, shifts modulo the width) runs the
//! parallel-loop body of a compiled kernel on host values. Float `%` is compared bit for bit
//! with Rust's `%`; the `f32` and `f64` functions are compared in ulps with the host's `f64`
//! functions (glibc's, within about half an ulp of the correctly rounded result).
//!
//! `GPU_ASYNC_MATH_SAMPLES=N` sets the random inputs per function (default 20,000). The numbers
//! in `docs/language.md` come from `cargo test --release -p gpu-async-compiler --test math_ir`
//! with N = 2,000,000 (against the host), and with N = 500,000 and `GPU_ASYNC_MATH_DUMP=DIR`,
//! which writes every `f64` function's inputs and results there (`NAME.txt`, hex bits per line)
//! for `scripts/math-ulps.py DIR`: the error against mpmath's correctly rounded result.

use std::collections::HashMap;

use gpu_async_compiler::compile;
use gpu_async_compiler::ir::{BinOp, Block, Imm, Inst, Kernel, LoopId, ParFor, UnOp, Value};
use gpu_async_compiler::types::Scalar;
use quote::quote;

// ---------------------------------------------------------------------------------------------
// The interpreter.

/// What a block ended with.
enum Flow {
    Next,
    Break(LoopId),
    Continue(LoopId),
}

/// Registers hold a value's bits: integers as their type's bits (no extension), floats as
/// their IEEE bits, `bool` as 0 or 1.
struct Machine<'k> {
    k: &'k Kernel,
    regs: Vec<u64>,
    defined: Vec<bool>,
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl<'k> Machine<'k> {
    fn new(k: &'k Kernel) -> Self {
        Machine {
            k,
            regs: vec![0; k.values.len()],
            defined: vec![false; k.values.len()],
        }
    }

    fn ty(&self, v: Value) -> Scalar {
        self.k.ty(v)
    }

    fn get(&self, v: Value) -> u64 {
        assert!(self.defined[v.0 as usize], "v{} read before it is set", v.0);
        self.regs[v.0 as usize]
    }

    fn set(&mut self, v: Value, bits: u64) {
        self.regs[v.0 as usize] = bits & mask(self.ty(v).bits().max(1));
        self.defined[v.0 as usize] = true;
    }

    /// An integer register as `i128`, sign-extended for the signed types.
    fn int(&self, v: Value) -> i128 {
        int_of(self.ty(v), self.get(v))
    }

    fn f64(&self, v: Value) -> f64 {
        f64::from_bits(self.get(v))
    }

    fn f32(&self, v: Value) -> f32 {
        f32::from_bits(self.get(v) as u32)
    }

    fn float(&self, v: Value) -> f64 {
        match self.ty(v) {
            Scalar::F64 => self.f64(v),
            Scalar::F32 => f64::from(self.f32(v)),
            t => panic!("not a float: {t:?}"),
        }
    }

    fn block(&mut self, b: &Block) -> Flow {
        for inst in &b.0 {
            match self.inst(inst) {
                Flow::Next => {}
                other => return other,
            }
        }
        Flow::Next
    }

    fn inst(&mut self, inst: &Inst) -> Flow {
        match inst {
            Inst::Const { dst, imm } => {
                let bits = match *imm {
                    Imm::Int(v) => v,
                    Imm::F32(f) => u64::from(f.to_bits()),
                    Imm::F64(f) => f.to_bits(),
                    Imm::Bool(b) => u64::from(b),
                };
                self.set(*dst, bits);
            }
            Inst::Copy { dst, src } => {
                let v = self.get(*src);
                self.set(*dst, v);
            }
            Inst::Unary { dst, op, src } => {
                let v = self.unary(*op, *src);
                self.set(*dst, v);
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                let v = self.binary(*op, *lhs, *rhs);
                self.set(*dst, v);
            }
            Inst::Fma { dst, a, b, c } => {
                let v = match self.ty(*dst) {
                    Scalar::F64 => self.f64(*a).mul_add(self.f64(*b), self.f64(*c)).to_bits(),
                    Scalar::F32 => {
                        u64::from(self.f32(*a).mul_add(self.f32(*b), self.f32(*c)).to_bits())
                    }
                    t => panic!("fma of {t:?}"),
                };
                self.set(*dst, v);
            }
            Inst::Cast { dst, src } => {
                let v = cast(self.ty(*src), self.get(*src), self.ty(*dst));
                self.set(*dst, v);
            }
            Inst::Bitcast { dst, src } => {
                assert_eq!(self.ty(*src).bits(), self.ty(*dst).bits(), "bitcast sizes");
                let v = self.get(*src);
                self.set(*dst, v);
            }
            Inst::Select {
                dst,
                cond,
                if_true,
                if_false,
            } => {
                let v = if self.get(*cond) != 0 {
                    self.get(*if_true)
                } else {
                    self.get(*if_false)
                };
                self.set(*dst, v);
            }
            Inst::If { cond, then, else_ } => {
                let taken = if self.get(*cond) != 0 { then } else { else_ };
                return self.block(taken);
            }
            Inst::Loop { id, body } => loop {
                match self.block(body) {
                    Flow::Break(l) if l == *id => break,
                    Flow::Continue(l) if l == *id => {}
                    Flow::Next => {}
                    other => return other,
                }
            },
            Inst::Break(id) => return Flow::Break(*id),
            Inst::Continue(id) => return Flow::Continue(*id),
            other => panic!("the interpreter does not run {other:?}"),
        }
        Flow::Next
    }

    fn unary(&self, op: UnOp, src: Value) -> u64 {
        let ty = self.ty(src);
        if ty == Scalar::Bool {
            assert_eq!(op, UnOp::Not);
            return u64::from(self.get(src) == 0);
        }
        if ty.is_int() {
            let v = self.int(src);
            let r = match op {
                UnOp::Neg => v.wrapping_neg(),
                UnOp::Not => !v,
                UnOp::Abs => v.abs(),
                _ => panic!("{op:?} of {ty:?}"),
            };
            return r as u64;
        }
        let f = |x: f64| -> f64 {
            match op {
                UnOp::Neg => -x,
                UnOp::Abs => x.abs(),
                UnOp::Sqrt => x.sqrt(),
                UnOp::Floor => x.floor(),
                UnOp::Ceil => x.ceil(),
                UnOp::Trunc => x.trunc(),
                _ => panic!("{op:?} of a float"),
            }
        };
        match ty {
            Scalar::F64 => f(self.f64(src)).to_bits(),
            Scalar::F32 => {
                let x = self.f32(src);
                // sqrt of an f32 widened is exactly rounded back; the others are exact.
                u64::from((f(f64::from(x)) as f32).to_bits())
            }
            t => panic!("{op:?} of {t:?}"),
        }
    }

    fn binary(&self, op: BinOp, a: Value, b: Value) -> u64 {
        let ty = self.ty(a);
        if ty == Scalar::Bool {
            let (x, y) = (self.get(a) != 0, self.get(b) != 0);
            return u64::from(match op {
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor | BinOp::Ne => x ^ y,
                BinOp::Eq => x == y,
                _ => panic!("{op:?} of bools"),
            });
        }
        if ty.is_int() {
            let bits = ty.bits();
            let (x, y) = (self.int(a), self.int(b));
            let r: i128 = match op {
                BinOp::Add => x.wrapping_add(y),
                BinOp::Sub => x.wrapping_sub(y),
                BinOp::Mul => x.wrapping_mul(y),
                BinOp::Div => {
                    assert!(y != 0, "integer division by zero");
                    x / y
                }
                BinOp::Rem => {
                    assert!(y != 0, "integer remainder by zero");
                    x % y
                }
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl | BinOp::Shr => {
                    let amount = (self.get(b) & u64::from(bits - 1)) as u32;
                    let raw = self.get(a);
                    let out = if op == BinOp::Shl {
                        raw << amount
                    } else if ty.is_signed() {
                        (int_of(ty, raw) >> amount) as u64
                    } else {
                        raw >> amount
                    };
                    return out & mask(bits);
                }
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::Eq => i128::from(x == y),
                BinOp::Ne => i128::from(x != y),
                BinOp::Lt => i128::from(x < y),
                BinOp::Le => i128::from(x <= y),
                BinOp::Gt => i128::from(x > y),
                BinOp::Ge => i128::from(x >= y),
                BinOp::CopySign => panic!("copysign of integers"),
            };
            return r as u64;
        }
        // Floats: computed in the operands' type (an `f32` operation widened to `f64` and
        // rounded back is exactly rounded: f64 holds more than twice f32's digits).
        let (x, y) = (self.float(a), self.float(b));
        let cmp = |c: bool| u64::from(c);
        let r = match op {
            BinOp::Eq => return cmp(x == y),
            BinOp::Ne => return cmp(x != y),
            BinOp::Lt => return cmp(x < y),
            BinOp::Le => return cmp(x <= y),
            BinOp::Gt => return cmp(x > y),
            BinOp::Ge => return cmp(x >= y),
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::CopySign => x.copysign(y),
            // PTX's min/max: a NaN operand gives the other one; -0 is below +0.
            BinOp::Min | BinOp::Max => {
                if x.is_nan() {
                    y
                } else if y.is_nan() {
                    x
                } else if x == y {
                    let neg = if op == BinOp::Min {
                        x.is_sign_negative() || y.is_sign_negative()
                    } else {
                        x.is_sign_negative() && y.is_sign_negative()
                    };
                    x.abs().copysign(if neg { -1.0 } else { 1.0 })
                } else if (op == BinOp::Min) == (x < y) {
                    x
                } else {
                    y
                }
            }
            _ => panic!("{op:?} of floats"),
        };
        match ty {
            Scalar::F64 => r.to_bits(),
            Scalar::F32 => {
                if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
                    let (x, y) = (self.f32(a), self.f32(b));
                    let v = match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        _ => x / y,
                    };
                    u64::from(v.to_bits())
                } else {
                    u64::from((r as f32).to_bits())
                }
            }
            t => panic!("{op:?} of {t:?}"),
        }
    }
}

fn int_of(ty: Scalar, raw: u64) -> i128 {
    let bits = ty.bits();
    if ty.is_signed() {
        let shift = 64 - bits;
        i128::from(((raw << shift) as i64) >> shift)
    } else {
        i128::from(raw & mask(bits))
    }
}

/// Rust's `as` between the scalars these expansions use.
fn cast(from: Scalar, raw: u64, to: Scalar) -> u64 {
    let as_f64 = |x: f64| -> u64 {
        match to {
            Scalar::F64 => x.to_bits(),
            Scalar::F32 => u64::from((x as f32).to_bits()),
            Scalar::I8 => x as i8 as u64,
            Scalar::I16 => x as i16 as u64,
            Scalar::I32 => x as i32 as u64,
            Scalar::I64 | Scalar::Isize => x as i64 as u64,
            Scalar::U8 => u64::from(x as u8),
            Scalar::U16 => u64::from(x as u16),
            Scalar::U32 => u64::from(x as u32),
            Scalar::U64 | Scalar::Usize => x as u64,
            t => panic!("cast to {t:?}"),
        }
    };
    match from {
        Scalar::F64 => as_f64(f64::from_bits(raw)),
        // Every f32 is an f64, and every cast of it goes through the same value.
        Scalar::F32 => as_f64(f64::from(f32::from_bits(raw as u32))),
        f if f.is_int() => {
            let v = int_of(f, raw);
            match to {
                Scalar::F64 => (v as f64).to_bits(),
                Scalar::F32 => u64::from((v as f32).to_bits()),
                t if t.is_int() => v as u64,
                t => panic!("cast to {t:?}"),
            }
        }
        f => panic!("cast from {f:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels: each writes `f(a, b)` for one function into `o`.

/// A compiled function: its parallel loop's body and where its operands and result live.
struct Func {
    kernel: Kernel,
    par: ParFor,
    a: Value,
    b: Value,
    out: Value,
}

impl Func {
    /// `f(a, b)` on bits, by running the body.
    fn eval(&self, m: &mut Machine<'_>, a: u64, b: u64) -> u64 {
        m.set(self.a, a);
        m.set(self.b, b);
        match m.block(&self.par.body) {
            Flow::Next => {}
            _ => panic!("the body left a loop it is not in"),
        }
        m.get(self.out)
    }
}

/// Compiles one kernel per expression over `x` (and `y`) of type `ty`, keyed by name.
fn functions(ty: &str, exprs: &[(&str, &str)]) -> HashMap<String, Func> {
    let t: proc_macro2::TokenStream = ty.parse().expect("type");
    let mut kernels = Vec::new();
    for (name, expr) in exprs {
        let name = quote::format_ident!("{}", name);
        let body = quote::format_ident!("{}_body", name);
        let e: proc_macro2::TokenStream = expr.parse().expect("expression");
        kernels.push(quote! {
            #[kernel(warps = 1)]
            pub async fn #name(a: &[#t], b: &[#t], o: &mut [#t]) {
                join!(on_warps(0..1, #body(a, b, o))).await;
            }
            async fn #body(a: &[#t], b: &[#t], o: &mut [#t]) {
                o.par_iter_mut()
                    .zip(a.par_iter())
                    .zip(b.par_iter())
                    .for_each(|((o, x), y)| {
                        let (x, y) = (*x, *y);
                        *o = #e;
                    });
            }
        });
    }
    let module = quote! {
        mod math {
            use gpu_async::device::*;
            #(#kernels)*
        }
    };
    let compiled = match compile(module) {
        Ok(k) => k,
        Err(d) => panic!("the kernels do not compile: {d:?}"),
    };
    compiled
        .into_iter()
        .map(|c| {
            let kernel = c.ir;
            let par = kernel.roles[0]
                .body
                .0
                .iter()
                .find_map(|i| match i {
                    Inst::ParFor(p) => Some(p.clone()),
                    _ => None,
                })
                .expect("a parallel loop");
            let src = |n: usize| par.sources[n].elem_value;
            let f = Func {
                a: src(1),
                b: src(2),
                out: src(0),
                par,
                kernel,
            };
            (c.name, f)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Inputs and distances.

/// SplitMix64: a small deterministic generator (the compiler crate has no `rand`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// A random `f64` bit pattern.
    fn bits(&mut self) -> f64 {
        f64::from_bits(self.next())
    }
}

fn samples() -> usize {
    std::env::var("GPU_ASYNC_MATH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

/// Distance in ulps between two `f64`s (0 for two NaNs, `u64::MAX` for NaN and a number).
fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| {
        let b = x.to_bits() as i128;
        if b & (1 << 63) != 0 {
            -(b & 0x7FFF_FFFF_FFFF_FFFF)
        } else {
            b
        }
    };
    key(a).abs_diff(key(b)) as u64
}

fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f32| {
        let b = i64::from(x.to_bits());
        if b & (1 << 31) != 0 {
            -(b & 0x7FFF_FFFF)
        } else {
            b
        }
    };
    key(a).abs_diff(key(b))
}

/// Writes `(a, b, result)` bits for the mpmath script when `GPU_ASYNC_MATH_DUMP` is set.
struct Dump(Option<std::io::BufWriter<std::fs::File>>);

impl Dump {
    fn new(name: &str) -> Dump {
        Dump(std::env::var_os("GPU_ASYNC_MATH_DUMP").map(|dir| {
            let path = std::path::Path::new(&dir).join(format!("{name}.txt"));
            std::io::BufWriter::new(std::fs::File::create(path).expect("dump file"))
        }))
    }

    fn line(&mut self, a: u64, b: u64, r: u64) {
        use std::io::Write;
        if let Some(w) = self.0.as_mut() {
            writeln!(w, "{a:016x} {b:016x} {r:016x}").expect("dump");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `%`.

fn f64_edges() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.5,
        6.25,
        1e-300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE * 1.5,
        1e-310,
        -5e-324,
        5e-324,
        9_007_199_254_740_993.0,
        std::f64::consts::PI,
        1e300,
        -7.0,
    ]
}

#[test]
fn float_remainder_is_bit_exact() {
    let f64s = functions(
        "f64",
        &[
            ("rem", "x % y"),
            ("rem_assign", "{ let mut v = x; v %= y; v }"),
        ],
    );
    let f32s = functions(
        "f32",
        &[
            ("rem", "x % y"),
            ("rem_assign", "{ let mut v = x; v %= y; v }"),
        ],
    );
    let mut r = Rng(3);
    let n = samples();
    let mut pairs64: Vec<(f64, f64)> = Vec::new();
    let edges = f64_edges();
    for &x in &edges {
        for &y in &edges {
            pairs64.push((x, y));
        }
    }
    for i in 0..n {
        let (x, y) = match i % 5 {
            0 => (r.bits(), r.bits()),
            // Huge exponent differences and subnormal divisors.
            1 => (r.bits().abs() * 1e300, f64::from_bits(r.next() % (1 << 53))),
            2 => (r.range(-1e6, 1e6), r.range(-10.0, 10.0)),
            3 => (
                f64::MAX * r.range(-1.0, 1.0),
                f64::from_bits(r.next() & 0x00FF_FFFF_FFFF_FFFF),
            ),
            _ => {
                // Near multiples: x = k y + small.
                let y = r.range(0.1, 100.0);
                let k = (r.next() % 1_000_000) as f64;
                (k * y + r.range(-1e-9, 1e-9), y)
            }
        };
        pairs64.push((x, y));
    }
    pairs64.push((f64::MAX, 5e-324));
    pairs64.push((f64::MAX, f64::MIN_POSITIVE));
    for (name, f) in &f64s {
        let mut m = Machine::new(&f.kernel);
        for &(x, y) in &pairs64 {
            let got = f64::from_bits(f.eval(&mut m, x.to_bits(), y.to_bits()));
            let want = x % y;
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "f64 {name}: {x:e} % {y:e} = {got:e} ({:#x}), Rust {want:e} ({:#x})",
                got.to_bits(),
                want.to_bits()
            );
        }
    }
    // f32: the same inputs rounded, and f32-specific ones (f32::MAX % 1e-45 is the brief's).
    let mut pairs32: Vec<(f32, f32)> = pairs64.iter().map(|&(x, y)| (x as f32, y as f32)).collect();
    for _ in 0..n {
        pairs32.push((
            f32::from_bits(r.next() as u32),
            f32::from_bits(r.next() as u32),
        ));
        pairs32.push((
            f32::from_bits(r.next() as u32),
            f32::from_bits((r.next() as u32) & 0x807F_FFFF),
        ));
    }
    pairs32.extend([
        (f32::MAX, 1e-45),
        (f32::MAX, -f32::MIN_POSITIVE),
        (-f32::MAX, 3.0),
        (1e-45, 1e-45),
        (16_777_217.0, 3.0),
    ]);
    for (name, f) in &f32s {
        let mut m = Machine::new(&f.kernel);
        for &(x, y) in &pairs32 {
            let bits = f.eval(&mut m, u64::from(x.to_bits()), u64::from(y.to_bits()));
            let got = f32::from_bits(bits as u32);
            let want = x % y;
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "f32 {name}: {x:e} % {y:e} = {got:e} ({:#x}), Rust {want:e} ({:#x})",
                got.to_bits(),
                want.to_bits()
            );
        }
    }
    println!(
        "% is bit-exact over {} f64 and {} f32 pairs",
        pairs64.len(),
        pairs32.len()
    );
}

// ---------------------------------------------------------------------------------------------
// The `f64` functions.

type Host = fn(f64, f64) -> f64;

/// The measured bounds (ulps from the host's function) the test holds the IR to; the host is
/// itself within about half an ulp of the correctly rounded result (glibc's `tanh` within 2).
const F64_FUNCTIONS: [(&str, &str, Host, u64); 8] = [
    ("exp", "x.exp()", |x, _| x.exp(), 1),
    ("exp2", "x.exp2()", |x, _| x.exp2(), 1),
    ("ln", "x.ln()", |x, _| x.ln(), 1),
    ("log2", "x.log2()", |x, _| x.log2(), 1),
    ("sin", "x.sin()", |x, _| x.sin(), 1),
    ("cos", "x.cos()", |x, _| x.cos(), 1),
    ("tanh", "x.tanh()", |x, _| x.tanh(), 2),
    ("powf", "x.powf(y)", |x, y| x.powf(y), 1),
];

/// Inputs for one function: edge values (and pairs of them for `powf`), then random values
/// over the ranges that matter.
fn f64_inputs(name: &str, n: usize) -> Vec<(f64, f64)> {
    let mut r = Rng(name.bytes().fold(17, |h, b| h * 31 + u64::from(b)));
    let edges = f64_edges();
    let mut v: Vec<(f64, f64)> = if name == "powf" {
        edges
            .iter()
            .flat_map(|&x| edges.iter().map(move |&y| (x, y)))
            .collect()
    } else {
        edges.iter().map(|&x| (x, 0.0)).collect()
    };
    for i in 0..n {
        let x = match name {
            "exp" => match i % 5 {
                0 => r.range(-746.0, 710.0),
                1 => r.range(-1.0, 1.0),
                2 => r.range(-745.2, -708.0),
                3 => r.range(709.0, 709.8),
                _ => r.bits(),
            },
            "exp2" => match i % 4 {
                0 => r.range(-1076.0, 1025.0),
                1 => r.range(-1.0, 1.0),
                2 => r.range(-1075.0, -1020.0),
                _ => r.bits(),
            },
            "ln" | "log2" => match i % 4 {
                0 => r.bits().abs(),
                1 => r.range(0.5, 2.0),
                2 => 1.0 + r.range(-1e-6, 1e-6),
                _ => r.range(0.0, 1e6),
            },
            "sin" | "cos" => match i % 6 {
                0 => r.range(-4.0, 4.0),
                1 => r.range(-1e3, 1e3),
                2 => r.range(-1.6e6, 1.6e6),
                3 => {
                    // Near multiples of pi/2.
                    let k = (r.next() % 1_000_000) as f64;
                    let x = k * std::f64::consts::FRAC_PI_2;
                    f64::from_bits(x.to_bits().wrapping_add(r.next() % 8).wrapping_sub(4))
                }
                4 => r.range(-1e18, 1e18),
                _ => r.bits(),
            },
            "tanh" => match i % 4 {
                0 => r.range(-1.0, 1.0),
                1 => r.range(-25.0, 25.0),
                2 => r.range(-1e-5, 1e-5),
                _ => r.bits(),
            },
            _ => 0.0,
        };
        if name == "powf" {
            let (x, y) = match i % 6 {
                0 => (r.range(0.0, 10.0), r.range(-100.0, 100.0)),
                1 => (1.0 + r.range(-1e-3, 1e-3), r.range(-5e5, 5e5)),
                2 => (r.bits().abs(), r.range(-2.0, 2.0)),
                3 => (-r.range(0.0, 10.0), (r.next() % 61) as f64 - 30.0),
                4 => (r.range(0.0, 2.0), r.range(-1100.0, 1100.0)),
                _ => (r.bits(), r.bits()),
            };
            v.push((x, y));
        } else {
            v.push((x, 0.0));
        }
    }
    v
}

/// Arguments whose reduction is hard, with the correctly rounded `sin` and `cos` (mpmath,
/// 3000 bits). The first is the `f64` closest to a multiple of pi/2 (Muller's table), where
/// glibc 2.36's `cos` is 8 ulps off.
const HARD_TRIG: [(f64, u64, u64); 10] = [
    (
        5.319372648326541e255,
        0x3FF0_0000_0000_0000,
        0xBC21_4AE7_2E6B_A22F,
    ),
    (1e22, 0xBFEB_453A_B76B_F397, 0x3FE0_BE2C_EF01_C8F4),
    (1647099.0, 0xBFD4_B02E_5BE9_1E9E, 0x3FEE_4831_257A_62DA),
    (1647099.5, 0x3FC5_C2B9_1142_32E8, 0x3FEF_88C0_2FFC_9F9E),
    (
        1647099.3291652855,
        0xBDD1_A626_3314_5C07,
        0x3FF0_0000_0000_0000,
    ),
    (
        std::f64::consts::FRAC_PI_2,
        0x3FF0_0000_0000_0000,
        0x3C91_A626_3314_5C07,
    ),
    (
        std::f64::consts::PI,
        0x3CA1_A626_3314_5C07,
        0xBFF0_0000_0000_0000,
    ),
    (355.0, 0xBEFF_9BD0_307D_1DE3, 0xBFEF_FFFF_FFC1_8E4C),
    (103993.0, 0xBEF4_0EFD_F1EB_8DE7, 0x3FEF_FFFF_FFE6_DA77),
    (f64::MAX, 0x3F74_52FC_98B3_4E97, 0xBFEF_FFE6_2ECF_AB75),
];

#[test]
fn sin_and_cos_reduce_hard_arguments_correctly() {
    let funcs = functions("f64", &[("sin", "x.sin()"), ("cos", "x.cos()")]);
    let mut failures = Vec::new();
    for (name, f) in &funcs {
        let mut m = Machine::new(&f.kernel);
        for (x, sin, cos) in HARD_TRIG {
            for sign in [1.0, -1.0] {
                let want = if name == "sin" {
                    sign * f64::from_bits(sin)
                } else {
                    f64::from_bits(cos)
                };
                let arg = sign * x;
                let got = f64::from_bits(f.eval(&mut m, arg.to_bits(), 0));
                let d = ulps64(got, want);
                println!("{name}({arg:e}) = {got:e}: {d} ulp from the correctly rounded {want:e}");
                if d > 1 {
                    failures.push(format!("{name}({arg:e}) = {got:e}, want {want:e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_f64_functions_are_within_their_ulp_bound_of_the_host() {
    let exprs: Vec<(&str, &str)> = F64_FUNCTIONS.iter().map(|(n, e, _, _)| (*n, *e)).collect();
    let funcs = functions("f64", &exprs);
    let n = samples();
    let mut failures = Vec::new();
    for (name, _, host, bound) in F64_FUNCTIONS {
        let f = &funcs[name];
        let mut m = Machine::new(&f.kernel);
        let mut dump = Dump::new(name);
        let inputs = f64_inputs(name, n);
        let (mut worst, mut at, mut differ) = (0u64, (0.0, 0.0), 0usize);
        for &(x, y) in &inputs {
            let bits = f.eval(&mut m, x.to_bits(), y.to_bits());
            dump.line(x.to_bits(), y.to_bits(), bits);
            let got = f64::from_bits(bits);
            let d = ulps64(got, host(x, y));
            if d > 0 {
                differ += 1;
            }
            if d > worst {
                worst = d;
                at = (x, y);
            }
        }
        println!(
            "{name}: {worst} ulp max from the host's f64 {name} (at x = {:e}, y = {:e}), {differ} of {} not bit-identical",
            at.0,
            at.1,
            inputs.len()
        );
        if worst > bound {
            failures.push(format!(
                "{name}: {worst} ulp from the host at x = {:e} ({:#x}), y = {:e}: IR {:e}, host {:e}",
                at.0,
                at.0.to_bits(),
                at.1,
                f64::from_bits(f.eval(&mut m, at.0.to_bits(), at.1.to_bits())),
                host(at.0, at.1)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The `f32` functions (computed in `f64`, rounded once): the same check without a GPU.

#[test]
fn the_f32_functions_are_within_an_ulp_of_the_correctly_rounded_result() {
    let names: [(&str, &str, Host); 8] = [
        ("exp", "x.exp()", |x, _| x.exp()),
        ("exp2", "x.exp2()", |x, _| x.exp2()),
        ("ln", "x.ln()", |x, _| x.ln()),
        ("log2", "x.log2()", |x, _| x.log2()),
        ("sin", "x.sin()", |x, _| x.sin()),
        ("cos", "x.cos()", |x, _| x.cos()),
        ("tanh", "x.tanh()", |x, _| x.tanh()),
        ("powf", "x.powf(y)", |x, y| x.powf(y)),
    ];
    let exprs: Vec<(&str, &str)> = names.iter().map(|(n, e, _)| (*n, *e)).collect();
    let funcs = functions("f32", &exprs);
    let n = samples();
    let mut failures = Vec::new();
    for (name, _, host) in names {
        let f = &funcs[name];
        let mut m = Machine::new(&f.kernel);
        let mut r = Rng(99);
        let (mut worst, mut at) = (0u64, 0.0f32);
        for i in 0..n {
            let x = match i % 4 {
                0 => r.range(-1.0, 1.0) as f32,
                1 => r.range(-110.0, 110.0) as f32,
                2 => r.range(0.0, 1e6) as f32,
                _ => f32::from_bits(r.next() as u32),
            };
            let y = match name {
                "powf" => r.range(-30.0, 30.0) as f32,
                _ => 0.0,
            };
            if matches!(name, "sin" | "cos") && x.abs() >= (1u64 << 40) as f32 {
                continue;
            }
            let bits = f.eval(&mut m, u64::from(x.to_bits()), u64::from(y.to_bits()));
            let got = f32::from_bits(bits as u32);
            let want = host(f64::from(x), f64::from(y)) as f32;
            let d = ulps32(got, want);
            if d > worst {
                worst = d;
                at = x;
            }
        }
        println!("f32 {name}: {worst} ulp max from the correctly rounded result (x = {at:e})");
        if worst > 1 {
            failures.push(format!("f32 {name}: {worst} ulp at x = {at:e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// What stays out.

#[test]
fn what_float_remainder_and_the_functions_do_not_take_is_an_error_that_says_why() {
    let cases = [
        // `%` is a loop, and a reduction's combining closure must not loop.
        (
            quote! { let s = x.par_iter().reduce(|| 0.0, |a, b| a % b); },
            "float `%`, `powi` and the bit counts are loops too",
        ),
        (
            quote! { y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| *o = *v % 2.0f32); },
            "`%` needs both sides of one type; found `f64` and `f32`",
        ),
        (
            quote! { y.par_iter_mut().zip(h.par_iter()).for_each(|(o, v)| *o = v.ln().to_f64()); },
            "`ln` is not available on `f16`: compute in `f32` and round back, as in `f16::from_f32(x.to_f32().ln())`",
        ),
        (
            quote! { y.par_iter_mut().zip(h.par_iter()).for_each(|(o, v)| *o = v.powf(*v).to_f64()); },
            "`f16::from_f32(x.to_f32().powf(..))`",
        ),
    ];
    for (body, needle) in cases {
        let module = quote! {
            mod k {
                use gpu_async::device::*;
                #[kernel(warps = 1)]
                pub async fn f(x: &[f64], h: &[f16], y: &mut [f64]) {
                    join!(on_warps(0..1, g(x, h, y))).await;
                }
                async fn g(x: &[f64], h: &[f16], y: &mut [f64]) { #body }
            }
        };
        let errs = match compile(module) {
            Ok(_) => Vec::new(),
            Err(d) => d.messages(),
        };
        assert!(
            errs.iter().any(|e| e.contains(needle)),
            "no error containing {needle:?} in {errs:#?}"
        );
    }
}
