//! Nesting that a plain fn compiles, in a kernel, ends in the documented error inside rustc, not
//! in a crash: a generated crate with kernels nested 1,000 levels deep goes through a real
//! `cargo check`, where the macro runs on rustc's own stack (a test thread's stack proves less:
//! rustc's frames below the macro, and its handing of the tokens, are not there).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Levels of nesting.
const DEPTH: usize = 1000;

/// Each kind of nesting: a name and a role body (with `x: &[f32]`, `y: &mut [f32]`, `n: u32`
/// and `a: f32` in scope) nested `DEPTH` levels deep, ending with a parallel loop over `y`
/// (`.par_iter_mut()` in a kernel, `.iter_mut()` in a plain fn).
fn kinds() -> Vec<(&'static str, String)> {
    let d = DEPTH;
    let end_f32 = "y.par_iter_mut().for_each(|o| *o = t);";
    let end_u32 = "y.par_iter_mut().for_each(|o| *o = t as f32);";
    vec![
        (
            "sum",
            format!("let t = a{};\n{end_f32}", " + a".repeat(d - 1)),
        ),
        (
            "negation",
            format!("let t: f32 = {}a;\n{end_f32}", "- ".repeat(d)),
        ),
        (
            "not",
            format!("let t: bool = {}(n > 1);\n{end_u32}", "!".repeat(d)),
        ),
        (
            "parentheses",
            format!(
                "let t: u32 = {}n{};\n{end_u32}",
                "(".repeat(d),
                ")".repeat(d)
            ),
        ),
        (
            "calls",
            format!(
                "let t: f32 = {}a{};\n{end_f32}",
                "f32::abs(".repeat(d),
                ")".repeat(d)
            ),
        ),
        (
            "methods",
            format!("let t: f32 = a{};\n{end_f32}", ".abs()".repeat(d)),
        ),
        (
            "blocks",
            format!(
                "let t: u32 = {}n{};\n{end_u32}",
                "{ ".repeat(d),
                " }".repeat(d)
            ),
        ),
        (
            "ifs",
            format!(
                "let mut t = 0u32;\n{}t += 1;{}\n{end_u32}",
                "if n > 1 { ".repeat(d),
                " }".repeat(d)
            ),
        ),
        (
            "matches",
            format!(
                "let t: u32 = {}2{};\n{end_u32}",
                "match n { 0 => 1, _ => ".repeat(d),
                " }".repeat(d)
            ),
        ),
        (
            "loops",
            format!(
                "let mut t = 0u32;\n{}t += i;{}\n{end_u32}",
                "for i in 0..n { ".repeat(d),
                " }".repeat(d)
            ),
        ),
    ]
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the fuzzer is a folder of the workspace")
        .to_path_buf()
}

/// Whether rustc compiles `body` as a plain fn (it overflows its own stack on some nestings).
fn plain_fn_compiles(dir: &Path, name: &str, body: &str) -> bool {
    let file = dir.join(format!("plain_{name}.rs"));
    let body = body.replace("par_iter_mut", "iter_mut");
    let source = format!(
        "#![allow(unused)]\npub fn role(x: &[f32], y: &mut [f32], n: u32, a: f32) {{\n{body}\n}}\n"
    );
    std::fs::write(&file, source).expect("write the plain fn");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .arg("--out-dir")
        .arg(dir)
        .arg(&file)
        .output()
        .expect("run rustc")
        .status
        .success()
}

#[test]
fn nesting_a_plain_fn_compiles_is_an_error_inside_rustc_not_a_crash() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nesting-1000");
    std::fs::create_dir_all(dir.join("src")).expect("make the crate's folder");
    let kinds: Vec<(&str, String)> = kinds()
        .into_iter()
        .filter(|(name, body)| plain_fn_compiles(&dir, name, body))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|(n, _)| *n).collect();
    // What rustc compiles at this depth today (its own parser overflows on nested blocks).
    for expected in ["sum", "negation", "parentheses", "calls", "methods"] {
        assert!(
            names.contains(&expected),
            "a plain fn of {expected} no longer compiles: {names:?}"
        );
    }
    let root = workspace();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"nesting-1000\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [dependencies]\ngpu-async = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("runtime")
        ),
    )
    .expect("write Cargo.toml");
    // The workspace's versions of the dependencies, so that nothing is resolved anew.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    let mut lib = String::new();
    for (name, body) in &kinds {
        lib.push_str(&format!(
            "#[gpu_async::gpu_async]
mod {name} {{
    use gpu_async::device::*;
    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32], n: u32, a: f32) {{
        join!(on_warps(0..1, role(x, y, n, a))).await;
    }}
    async fn role(x: &[f32], y: &mut [f32], n: u32, a: f32) {{
{body}
    }}
}}
"
        ));
    }
    std::fs::write(dir.join("src/lib.rs"), lib).expect("write lib.rs");
    let out = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet", "--message-format", "short"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        // rustc's own stack, as a user's build has it.
        .env_remove("RUST_MIN_STACK")
        .output()
        .expect("run cargo check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for crash in [
        "overflowed its stack",
        "SIGSEGV",
        "panicked",
        "internal compiler error",
    ] {
        assert!(!stderr.contains(crash), "{crash}:\n{stderr}");
    }
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    let nesting = errors
        .iter()
        .filter(|l| l.contains("nested deeper than 64 levels are not supported in kernels"))
        .count();
    assert_eq!(nesting, kinds.len(), "{names:?}:\n{stderr}");
    // The nesting errors and cargo's summary, nothing else: the expansion adds no error of
    // rustc's own.
    assert_eq!(errors.len(), nesting + 1, "{stderr}");
}
