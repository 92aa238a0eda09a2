//! A small grammar of kernels: a module with a kernel, its roles, maybe a channel, helpers and
//! constants, and role bodies of random statements over typed expressions. Most of what it
//! writes is valid; some of it is not, on purpose (mixed types, odd lengths).

use crate::rng::Rng;

const SCALARS: &[&str] = &[
    "u32", "i32", "f32", "f64", "u8", "i16", "u64", "i64", "usize", "bool",
];

/// A local of the body being written.
struct Var {
    name: String,
    ty: &'static str,
    mutable: bool,
}

struct Gen<'a> {
    rng: &'a mut Rng,
    vars: Vec<Var>,
    next: usize,
    depth: usize,
    in_loop: usize,
    out: String,
}

fn is_float(ty: &str) -> bool {
    ty == "f32" || ty == "f64"
}

fn is_int(ty: &str) -> bool {
    !is_float(ty) && ty != "bool"
}

fn is_signed(ty: &str) -> bool {
    ty.starts_with('i')
}

impl Gen<'_> {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("v{}", self.next)
    }

    fn lit(&mut self, ty: &str) -> String {
        if ty == "bool" {
            return (if self.rng.one_in(2) { "true" } else { "false" }).to_string();
        }
        if is_float(ty) {
            let v = *self
                .rng
                .pick(&["0.0", "1.0", "0.5", "-2.25", "3.0e10", "1.0e-7", "100.0"]);
            return format!("{v}{ty}");
        }
        let v = *self
            .rng
            .pick(&["0", "1", "2", "3", "7", "31", "100", "127"]);
        if self.rng.one_in(3) {
            format!("{v}{ty}")
        } else {
            v.to_string()
        }
    }

    /// An expression of type `ty`.
    fn expr(&mut self, ty: &'static str) -> String {
        self.depth += 1;
        let e = if self.depth > 5 {
            self.leaf(ty)
        } else {
            self.compound(ty)
        };
        self.depth -= 1;
        e
    }

    fn leaf(&mut self, ty: &'static str) -> String {
        let candidates: Vec<String> = self
            .vars
            .iter()
            .filter(|v| v.ty == ty)
            .map(|v| v.name.clone())
            .collect();
        if !candidates.is_empty() && self.rng.one_in(2) {
            return self.rng.pick(&candidates).clone();
        }
        self.lit(ty)
    }

    fn compound(&mut self, ty: &'static str) -> String {
        match self.rng.below(12) {
            0 | 1 => self.leaf(ty),
            2 if ty == "bool" => {
                let t = *self.rng.pick(SCALARS);
                let op = *self.rng.pick(&["==", "!=", "<", "<=", ">", ">="]);
                let (a, b) = (self.expr(t), self.expr(t));
                format!("({a} {op} {b})")
            }
            2 | 3 => {
                let ops: &[&str] = if ty == "bool" {
                    &["&", "|", "^", "&&", "||"]
                } else if is_float(ty) {
                    &["+", "-", "*", "/", "%"]
                } else {
                    &["+", "-", "*", "/", "%", "&", "|", "^"]
                };
                let op = *self.rng.pick(ops);
                let (a, b) = (self.expr(ty), self.expr(ty));
                format!("({a} {op} {b})")
            }
            4 if is_int(ty) => {
                let op = *self.rng.pick(&["<<", ">>"]);
                let a = self.expr(ty);
                let amount = self.rng.pick(&["u32", "usize", "i32", "u8"]);
                let b = self.expr(amount);
                format!("({a} {op} {b})")
            }
            5 if ty != "bool" => {
                let from = *self.rng.pick(SCALARS);
                let a = self.expr(from);
                format!("(({a}) as {ty})")
            }
            6 => {
                let c = self.expr("bool");
                let (a, b) = (self.expr(ty), self.expr(ty));
                format!("(if {c} {{ {a} }} else {{ {b} }})")
            }
            7 if is_int(ty) => {
                let s = self.expr(ty);
                let (a, b, c) = (self.expr(ty), self.expr(ty), self.expr(ty));
                let l = self.lit(ty);
                format!("(match {s} {{ 0 => {a}, {l} => {b}, _ => {c} }})")
            }
            8 if is_float(ty) => {
                let a = self.expr(ty);
                let m = *self
                    .rng
                    .pick(&["abs()", "sqrt()", "floor()", "exp()", "sin()", "round()"]);
                format!("({a}).{m}")
            }
            8 if is_int(ty) => {
                let (a, b) = (self.expr(ty), self.expr(ty));
                let m = *self.rng.pick(&[
                    "min",
                    "max",
                    "wrapping_add",
                    "wrapping_mul",
                    "saturating_sub",
                ]);
                format!("({a}).{m}({b})")
            }
            9 if is_signed(ty) || is_float(ty) => {
                let a = self.expr(ty);
                format!("(-{a})")
            }
            10 => {
                let a = self.expr(ty);
                let name = self.fresh();
                let b = self.expr(ty);
                format!("{{ let {name}: {ty} = {a}; {name} + {b} }}")
                    .replace(" + ", if ty == "bool" { " & " } else { " + " })
            }
            11 if ty == "f32" => "x[0]".to_string(),
            _ => self.leaf(ty),
        }
    }

    fn stmt(&mut self) {
        let indent = "    ".repeat(self.depth + 2);
        match self.rng.below(12) {
            0..=3 => {
                let ty = *self.rng.pick(SCALARS);
                let e = self.expr(ty);
                let name = self.fresh();
                let mutable = self.rng.one_in(2);
                let m = if mutable { "mut " } else { "" };
                self.out
                    .push_str(&format!("{indent}let {m}{name}: {ty} = {e};\n"));
                self.vars.push(Var { name, ty, mutable });
            }
            4 => {
                let muts: Vec<(String, &'static str)> = self
                    .vars
                    .iter()
                    .filter(|v| v.mutable)
                    .map(|v| (v.name.clone(), v.ty))
                    .collect();
                if muts.is_empty() {
                    return;
                }
                let (name, ty) = self.rng.pick(&muts).clone();
                let e = self.expr(ty);
                let op = if ty == "bool" { "=" } else { "+=" };
                let op = if is_float(ty) && self.rng.one_in(2) {
                    "*="
                } else {
                    op
                };
                self.out.push_str(&format!("{indent}{name} {op} {e};\n"));
            }
            5 if self.depth < 3 => {
                let c = self.expr("bool");
                self.out.push_str(&format!("{indent}if {c} {{\n"));
                self.block();
                self.out.push_str(&format!("{indent}}} else {{\n"));
                self.block();
                self.out.push_str(&format!("{indent}}}\n"));
            }
            6 if self.depth < 3 => {
                let n = self.rng.range(0, 9);
                let name = self.fresh();
                self.out
                    .push_str(&format!("{indent}for {name} in 0..{n}usize {{\n"));
                self.vars.push(Var {
                    name,
                    ty: "usize",
                    mutable: false,
                });
                self.in_loop += 1;
                self.block();
                self.in_loop -= 1;
                self.out.push_str(&format!("{indent}}}\n"));
            }
            7 if self.in_loop > 0 => {
                let c = self.expr("bool");
                let what = if self.rng.one_in(2) {
                    "break"
                } else {
                    "continue"
                };
                self.out
                    .push_str(&format!("{indent}if {c} {{ {what}; }}\n"));
            }
            8 => {
                let e = self.expr("f32");
                let body = e.replace("x[0]", "*o");
                self.out.push_str(&format!(
                    "{indent}y.par_iter_mut().for_each(|o| *o = {body});\n"
                ));
            }
            9 => {
                let name = self.fresh();
                self.out.push_str(&format!(
                    "{indent}let {name}: f32 = x.par_iter().map(|v| *v * 2.0).sum();\n"
                ));
                self.vars.push(Var {
                    name,
                    ty: "f32",
                    mutable: false,
                });
            }
            10 => {
                let ty = *self.rng.pick(&["u32", "f32", "i64"]);
                let n = self.rng.range(1, 6);
                let name = self.fresh();
                let v = self.lit(ty);
                let i = self.rng.below(n);
                let e = self.expr(ty);
                self.out.push_str(&format!(
                    "{indent}let mut {name} = [{v}; {n}];\n{indent}{name}[{i}] = {e};\n"
                ));
            }
            _ => {
                let e = self.expr("bool");
                self.out
                    .push_str(&format!("{indent}assert!({e} || true);\n"));
            }
        }
    }

    fn block(&mut self) {
        let len = self.vars.len();
        self.depth += 1;
        for _ in 0..self.rng.range(0, 4) {
            self.stmt();
        }
        self.depth -= 1;
        self.vars.truncate(len);
    }
}

/// A random kernel module.
pub fn kernel(rng: &mut Rng) -> String {
    let warps = *rng.pick(&[1u32, 2, 4, 8]);
    let with_channel = warps >= 2 && rng.one_in(2);
    let mut g = Gen {
        rng,
        vars: vec![
            Var {
                name: "n".into(),
                ty: "u32",
                mutable: false,
            },
            Var {
                name: "s".into(),
                ty: "f32",
                mutable: false,
            },
        ],
        next: 0,
        depth: 0,
        in_loop: 0,
        out: String::new(),
    };
    for _ in 0..g.rng.range(1, 8) {
        g.stmt();
    }
    let body = std::mem::take(&mut g.out);
    let helper_ty = *g.rng.pick(SCALARS);
    g.vars = vec![
        Var {
            name: "a".into(),
            ty: helper_ty,
            mutable: false,
        },
        Var {
            name: "b".into(),
            ty: helper_ty,
            mutable: false,
        },
    ];
    let helper_body = g.expr(helper_ty);
    let const_ty = *g.rng.pick(&["u32", "usize", "i32"]);
    let const_value = g.lit(const_ty);
    let mut out = String::new();
    out.push_str("mod generated {\n    use gpu_async::device::*;\n");
    out.push_str(&format!("    const C: {const_ty} = {const_value};\n"));
    out.push_str(&format!(
        "    fn helper(a: {helper_ty}, b: {helper_ty}) -> {helper_ty} {{ {helper_body} }}\n"
    ));
    out.push_str(&format!("    #[kernel(warps = {warps})]\n"));
    out.push_str("    pub async fn k(x: &[f32], y: &mut [f32], n: u32, s: f32) {\n");
    if with_channel {
        let len = *g.rng.pick(&[1u32, 32, 256, 1024]);
        let depth = g.rng.range(1, 4);
        let half = warps / 2;
        out.push_str(&format!(
            "        let (tx, rx) = channel::<[f32; {len}], {depth}>();\n"
        ));
        out.push_str(&format!(
            "        join!(on_warps(0..{half}, produce(x, tx)), on_warps({half}..{warps}, work(x, y, n, s, rx))).await;\n    }}\n"
        ));
        out.push_str(&format!(
            "    async fn produce(x: &[f32], tx: Sender<[f32; {len}], {depth}>) {{\n        let mut tiles = block_tiles(x.len(), {len});\n        while let Some(t) = tiles.next() {{\n            let mut slot = tx.reserve().await;\n            slot.copy_from(&x[t]);\n            slot.send();\n        }}\n    }}\n"
        ));
        out.push_str(&format!(
            "    async fn work(x: &[f32], y: &mut [f32], n: u32, s: f32, rx: Receiver<[f32; {len}], {depth}>) {{\n        while let Some(slot) = rx.recv().await {{\n            let m: f32 = slot.par_iter().map(|v| *v).sum();\n            let _ = m;\n        }}\n{body}    }}\n"
        ));
    } else {
        out.push_str(&format!(
            "        join!(on_warps(0..{warps}, work(x, y, n, s))).await;\n    }}\n"
        ));
        out.push_str(&format!(
            "    async fn work(x: &[f32], y: &mut [f32], n: u32, s: f32) {{\n{body}    }}\n"
        ));
    }
    out.push_str("}\n");
    out
}
