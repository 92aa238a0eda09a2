//! Inputs that are large or deep on purpose: repeated statements, long sums, deep nesting, large
//! arrays. Each must expand within its time limit (and the deep ones without overflowing the
//! stack); the benchmark times them and a test checks them.

/// A kernel module whose only role's body is `body` (with `x: &[f32]`, `y: &mut [f32]`,
/// `n: u32` and `a: f32` in scope).
pub fn role_module(body: &str) -> String {
    format!(
        "mod pathological {{
    use gpu_async::device::*;
    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32], n: u32, a: f32) {{
        join!(on_warps(0..1, role(x, y, n, a))).await;
    }}
    async fn role(x: &[f32], y: &mut [f32], n: u32, a: f32) {{
{body}
    }}
}}"
    )
}

/// A kernel module with a block-shared array `tile` of `len` `f32`s, whose only role's body is
/// `body` (with `x: &[f32]`, `y: &mut [f32]`, `n: u32` and `tile: &mut SharedArray<f32, 64>` in
/// scope).
pub fn shared_module(len: &str, body: &str) -> String {
    format!(
        "mod pathological {{
    use gpu_async::device::*;
    #[kernel(warps = 2)]
    pub async fn k(x: &[f32], y: &mut [f32], n: u32) {{
        let mut tile = shared_array::<f32, {len}>();
        join!(on_warps(0..2, role(x, y, n, &mut tile))).await;
    }}
    async fn role(x: &[f32], y: &mut [f32], n: u32, tile: &mut SharedArray<f32, 64>) {{
{body}
    }}
}}"
    )
}

/// A kernel module of two roles joined by a channel of 256 `f32`s: `producer`'s body has `tx`
/// (and `x: &[f32]`), `consumer`'s `rx` (and `y: &mut [f32]`).
pub fn channel_module(producer: &str, consumer: &str) -> String {
    format!(
        "mod pathological {{
    use gpu_async::device::*;
    #[kernel(warps = 2)]
    pub async fn k(x: &[f32], y: &mut [f32]) {{
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, producer(x, tx)), on_warps(1..2, consumer(y, rx))).await;
    }}
    async fn producer(x: &[f32], mut tx: Sender<[f32; 256], 2>) {{
{producer}
    }}
    async fn consumer(y: &mut [f32], mut rx: Receiver<[f32; 256], 2>) {{
{consumer}
    }}
}}"
    )
}

/// A kernel module whose kernel body is `body` (with `y: &mut [f32]` in scope, and which must
/// define a part `p0` of it), then runs one role on `p0`.
pub fn parts_module(body: &str) -> String {
    format!(
        "mod pathological {{
    use gpu_async::device::*;
    #[kernel(warps = 1)]
    pub async fn k(y: &mut [f32]) {{
{body}
        join!(on_warps(0..1, role(p0))).await;
    }}
    async fn role(y: &mut [f32]) {{
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }}
}}"
    )
}

/// `text` `times` times.
fn repeat(text: &str, times: usize) -> String {
    text.repeat(times)
}

/// `open` `depth` times, `inner`, then `close` `depth` times.
fn nest(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// The pathological inputs: a name, the module's source, and whether it is a valid kernel.
pub fn inputs() -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let mut add = |name: &str, body: String, valid: bool| {
        out.push((name.to_string(), role_module(&body), valid));
    };
    // Each body ends by writing its result `t` through a parallel loop.
    let end_f32 = "y.par_iter_mut().for_each(|o| *o = t);";
    let end_u32 = "y.par_iter_mut().for_each(|o| *o = t as f32);";
    add(
        "2000 x `let` of an index",
        format!(
            "let mut t = 0.0f32;\n{}{end_f32}",
            repeat("let v = x[0] + a; t += v;\n", 2000)
        ),
        true,
    );
    add(
        "2000 x checked index read",
        format!(
            "let mut t = 0.0f32;\n{}{end_f32}",
            repeat("t += x[2] * a;\n", 2000)
        ),
        true,
    );
    add(
        "2000 x `if`",
        format!(
            "let mut t = 0u32;\n{}{end_u32}",
            repeat("if n > 3 { t += 1; }\n", 2000)
        ),
        true,
    );
    add(
        "2000 x parallel loop",
        repeat("y.par_iter_mut().for_each(|o| *o += 1.0);\n", 2000),
        true,
    );
    add(
        "2000 x `for` loop",
        format!(
            "let mut t = 0u32;\n{}{end_u32}",
            repeat("for i in 0..n { t += i; }\n", 2000)
        ),
        true,
    );
    add(
        "2000 x `match`",
        format!(
            "let mut t = 0u32;\n{}{end_u32}",
            repeat("t += match n { 0 => 1, 1 | 2 => 2, _ => 3 };\n", 2000)
        ),
        true,
    );
    add(
        "2000 x tile loop",
        repeat(
            "for tile in block_tiles(x.len(), 256) { y[tile.start..tile.end].par_iter_mut().zip(x[tile.start..tile.end].par_iter()).for_each(|(o, i)| *o = *i); }\n",
            2000,
        ),
        true,
    );
    add(
        "2000 x reduction",
        format!(
            "let mut t = 0.0f32;\n{}{end_f32}",
            repeat("t += x.par_iter().map(|v| *v * a).sum::<f32>();\n", 2000)
        ),
        true,
    );
    add(
        "400 x float `%`",
        format!(
            "let mut t = a;\n{}{end_f32}",
            repeat("t = t % 3.5f32;\n", 400)
        ),
        true,
    );
    add(
        "1000 x f64 `sin`",
        format!(
            "let mut t = a as f64;\n{}y.par_iter_mut().for_each(|o| *o = t as f32);",
            repeat("t = t.sin();\n", 1000)
        ),
        true,
    );
    add(
        "local `[0.0f32; 1024]` indexed at run time",
        format!("let mut v = [0.0f32; 1024];\nv[n as usize] = a;\nlet t = v[3];\n{end_f32}"),
        true,
    );
    add(
        "local `[0.0f32; 100000]`",
        format!("let mut v = [0.0f32; 100000];\nv[n as usize] = a;\nlet t = v[3];\n{end_f32}"),
        false,
    );
    add(
        "local `[0.0f32; 1 << 30]`",
        format!("let v = [0.0f32; 1 << 30];\nlet t = v[3];\n{end_f32}"),
        false,
    );
    // At the nesting limit, and past it: 1000 levels of operators, and 200 of the constructs that
    // nest delimited groups (rustc's own parser overflows its stack on a plain fn of 1000 nested
    // `if`s, and syn's, which the attribute runs first, near 300 in a debug build).
    for (depth, groups) in [(60usize, 60usize), (1000, 200)] {
        let valid = depth <= 60;
        add(
            &format!("`a + a + ..`, {depth} terms"),
            format!("let t = a{};\n{end_f32}", repeat(" + a", depth - 1)),
            valid,
        );
        add(
            &format!("unary `-` nested {depth} deep"),
            format!("let t: f32 = {}a;\n{end_f32}", repeat("- ", depth)),
            valid,
        );
        add(
            &format!("`if` nested {groups} deep"),
            format!(
                "let mut t = 0u32;\n{}\n{end_u32}",
                nest("if n > 1 { ", "t += 1;", " }", groups)
            ),
            valid,
        );
        add(
            &format!("`match` nested {groups} deep"),
            format!(
                "let t: u32 = {};\n{end_u32}",
                nest("match n { 0 => 1, _ => ", "2", " }", groups)
            ),
            valid,
        );
        add(
            &format!("blocks nested {groups} deep"),
            format!("let t: u32 = {};\n{end_u32}", nest("{ ", "n", " }", groups)),
            valid,
        );
        add(
            &format!("parentheses nested {groups} deep"),
            format!("let t: u32 = {};\n{end_u32}", nest("(", "n", ")", groups)),
            valid,
        );
        add(
            &format!("`for` nested {groups} deep"),
            format!(
                "let mut t = 0u32;\n{}\n{end_u32}",
                nest("for i in 0..n { ", "t += i;", " }", groups)
            ),
            valid,
        );
    }
    // A body of about 400 KB.
    add(
        "400 KB of statements",
        format!(
            "let mut t = 0.0f32;\n{}{end_f32}",
            repeat(
                "t += (x[1] * a + 2.0) / (a - 1.5) + (n as f32).max(3.0) - x[0].abs();\n",
                5600
            )
        ),
        true,
    );
    // Channel handoffs: each end's wait is about 2 KB of PTX; 600 come near the instruction
    // limit, 2000 pass it.
    for n in [600, 2000] {
        out.push((
            format!("{n} x channel handoff (`reserve`, `send`; `recv`)"),
            channel_module(
                &repeat(
                    "let Some(mut s) = tx.reserve().await else { return };\ns.send();\n",
                    n,
                ),
                &repeat("let s = rx.recv().await.unwrap();\ndrop(s);\n", n),
            ),
            true,
        ));
    }
    // Every `return` drops every slot in scope: each unsent slot is reported once, not once
    // per path (which was 2,000 x 2,000 / 2 errors).
    out.push((
        "2000 x slot dropped without `send`".to_string(),
        channel_module(
            &repeat(
                "let Some(mut s) = tx.reserve().await else { return };\n",
                2000,
            ),
            "while let Some(s) = rx.recv().await { drop(s); }",
        ),
        false,
    ));
    // Parts of one slice: their disjointness is an order over all of them, quadratic in their
    // number, which the language bounds (256).
    for (n, valid) in [(256, true), (2000, false)] {
        out.push((
            format!("{n} x `&mut y[k..k + 1]` in the kernel body"),
            parts_module(
                &(0..n)
                    .map(|k| format!("let p{k} = &mut y[{k}..{k} + 1];\n"))
                    .collect::<String>(),
            ),
            valid,
        ));
    }
    // Shared arrays: a role barrier's placement walks the loops around each access.
    let shared_body = "(0..64usize).into_par_iter().for_each(|i| { tile[i] = x[i]; });\n\
        y[0..64].par_iter_mut().enumerate().for_each(|(i, o)| *o = tile[63 - i]);";
    out.push((
        "`for` nested 40 deep around shared-array accesses".to_string(),
        shared_module("64", &nest("for i in 0..n { ", shared_body, " }", 40)),
        true,
    ));
    out.push((
        "shared array of 4,000,000,000 `f32`s".to_string(),
        shared_module("4_000_000_000", shared_body),
        false,
    ));
    out
}
