//! The fuzzer's command line.
//!
//! ```text
//! cargo run --release -p gpu-async-fuzz -- [--seconds N] [--inputs N] [--seed S] [--out DIR] [--budget-ms MS]
//! cargo run -p gpu-async-fuzz -- --bench [--runs K]
//! cargo run --release -p gpu-async-fuzz -- --file PATH..
//! ```
//!
//! A campaign runs until `--seconds` (60 by default) or `--inputs` (alone: until they are done),
//! and prints its count, inputs per second and findings by kind; its budget is on each input's CPU
//! time. A campaign runs in a child process (`--worker`) that reports each input's number before
//! expanding it, so that when the child dies (a stack overflow, an allocation failure) the
//! supervisor makes the input again from its number, saves it, and starts a new child after it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gpu_async_fuzz::run::{self, Finding};
use gpu_async_fuzz::{pathological, seeds, Campaign, Totals};

struct Options {
    seconds: f64,
    inputs: Option<u64>,
    seed: u64,
    out: Option<PathBuf>,
    budget: Duration,
    worker: bool,
    start: u64,
    bench: bool,
    runs: usize,
    files: Vec<PathBuf>,
    stack: usize,
    print: Option<u64>,
}

fn usage() -> ! {
    eprintln!(
        "usage: gpu-async-fuzz [--seconds N] [--inputs N] [--seed S] [--out DIR] [--budget-ms MS]\n       gpu-async-fuzz --bench [--runs K]\n       gpu-async-fuzz [--stack-kib K] --file PATH..\n       gpu-async-fuzz --seed S --print INPUT"
    );
    std::process::exit(2)
}

fn parse_options() -> Options {
    let mut o = Options {
        seconds: 60.0,
        inputs: None,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        out: None,
        budget: Duration::from_millis(1000),
        worker: false,
        start: 0,
        bench: false,
        runs: 5,
        files: Vec::new(),
        stack: run::STACK,
        print: None,
    };
    let mut args = std::env::args().skip(1);
    let mut seconds_given = false;
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--seconds" => {
                o.seconds = value().parse().unwrap_or_else(|_| usage());
                seconds_given = true;
            }
            "--inputs" => o.inputs = Some(value().parse().unwrap_or_else(|_| usage())),
            "--seed" => o.seed = value().parse().unwrap_or_else(|_| usage()),
            "--out" => o.out = Some(PathBuf::from(value())),
            "--budget-ms" => {
                o.budget = Duration::from_millis(value().parse().unwrap_or_else(|_| usage()))
            }
            "--worker" => o.worker = true,
            "--start" => o.start = value().parse().unwrap_or_else(|_| usage()),
            "--bench" => o.bench = true,
            "--print" => o.print = Some(value().parse().unwrap_or_else(|_| usage())),
            "--runs" => o.runs = value().parse().unwrap_or_else(|_| usage()),
            "--stack-kib" => o.stack = 1024 * value().parse::<usize>().unwrap_or_else(|_| usage()),
            "--file" => {
                o.files.push(PathBuf::from(value()));
                o.files.extend(args.by_ref().map(PathBuf::from));
            }
            _ => usage(),
        }
    }
    if o.inputs.is_some() && !seconds_given {
        // A count of inputs alone runs until they are done.
        o.seconds = 1e9;
    }
    o
}

fn main() {
    // Inputs are made on a thread with a large stack: deep syntax trees print recursively.
    let main = std::thread::Builder::new()
        .name("main-large-stack".to_string())
        .stack_size(gpu_async_fuzz::GENERATOR_STACK)
        .spawn(real_main)
        .expect("start the main thread");
    if main.join().is_err() {
        std::process::exit(101);
    }
}

fn real_main() {
    let o = parse_options();
    if let Some(i) = o.print {
        let (origin, source) = Campaign::new(o.seed).input(i);
        println!("// input {i} of seed {}, from {origin}\n{source}", o.seed);
    } else if o.bench {
        bench(o.runs);
    } else if !o.files.is_empty() {
        files(&o);
    } else if o.worker {
        worker(&o);
    } else {
        supervise(&o);
    }
}

/// Saves a failing input under `dir`.
fn save(dir: &Path, index: u64, kind: &str, origin: &str, source: &str, what: &str) {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(format!("{kind}-{index}.rs"));
    let text = format!("// {what}\n// input {index}, from {origin}\n{source}\n");
    if std::fs::write(&path, text).is_ok() {
        eprintln!("saved {}", path.display());
    }
}

/// The child: runs inputs from `--start`, reporting each on stdout.
fn worker(o: &Options) {
    let campaign = Campaign::new(o.seed);
    let deadline = Instant::now() + Duration::from_secs_f64(o.seconds);
    let stdout = std::io::stdout();
    let totals = gpu_async_fuzz::fuzz(
        &campaign,
        o.start,
        o.budget,
        |t| Instant::now() >= deadline || o.inputs.is_some_and(|n| t.inputs + t.unlexed >= n),
        |i| {
            let _ = writeln!(stdout.lock(), "run {i}");
        },
        |i, origin, source, f| {
            let first_line = f.to_string().lines().next().unwrap_or("").to_string();
            let _ = writeln!(stdout.lock(), "finding {i} {} {first_line}", f.kind());
            if let Some(dir) = &o.out {
                save(dir, i, f.kind(), origin, source, &f.to_string());
            }
        },
    );
    let _ = writeln!(
        stdout.lock(),
        "totals {} {} {} {} {} {} {} {}",
        totals.inputs,
        totals.unlexed,
        totals.rejected,
        totals.panics,
        totals.internal_errors,
        totals.unparsable,
        totals.slow,
        totals.slowest.as_micros()
    );
}

/// The parent: runs workers until the time is up, restarting after a crash.
fn supervise(o: &Options) {
    let campaign = Campaign::new(o.seed);
    eprintln!(
        "gpu-async-fuzz: seed {}, {} seed modules, {:.0} s, budget {} ms per input",
        o.seed,
        campaign.seeds.len(),
        o.seconds,
        o.budget.as_millis()
    );
    let exe = std::env::current_exe().expect("the fuzzer's own path");
    let started = Instant::now();
    let mut totals = Totals::default();
    let mut next = 0u64;
    let mut last_report = Instant::now();
    loop {
        let left = o.seconds - started.elapsed().as_secs_f64();
        let inputs_left = o
            .inputs
            .map(|n| n.saturating_sub(totals.inputs + totals.unlexed));
        if left <= 0.0 || inputs_left == Some(0) {
            break;
        }
        let mut cmd = Command::new(&exe);
        cmd.args(["--worker", "--seed", &o.seed.to_string()])
            .args(["--start", &next.to_string()])
            .args(["--seconds", &left.to_string()])
            .args(["--budget-ms", &o.budget.as_millis().to_string()]);
        if let Some(n) = inputs_left {
            cmd.args(["--inputs", &n.to_string()]);
        }
        if let Some(dir) = &o.out {
            cmd.arg("--out").arg(dir);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a worker");
        let reader = BufReader::new(child.stdout.take().expect("the worker's stdout"));
        let mut current = None;
        let mut finished = false;
        let mut ran = 0u64;
        for line in reader.lines().map_while(Result::ok) {
            let mut parts = line.split(' ');
            match parts.next() {
                Some("run") => {
                    current = parts.next().and_then(|i| i.parse::<u64>().ok());
                    ran += 1;
                    if last_report.elapsed() > Duration::from_secs(30) {
                        last_report = Instant::now();
                        let done = totals.inputs + totals.unlexed + ran;
                        eprintln!(
                            "  {done} inputs, {:.0}/s, {} findings",
                            done as f64 / started.elapsed().as_secs_f64(),
                            totals.findings()
                        );
                    }
                }
                Some("finding") => {
                    // Counted here, as they come: a worker's totals die with it.
                    match parts.nth(1) {
                        Some("panic") => totals.panics += 1,
                        Some("internal-error") => totals.internal_errors += 1,
                        Some("unparsable") => totals.unparsable += 1,
                        _ => totals.slow += 1,
                    }
                    eprintln!("FINDING {}", &line["finding ".len()..]);
                }
                Some("totals") => {
                    let n: Vec<u64> = parts.filter_map(|p| p.parse().ok()).collect();
                    // The findings by kind were counted from their lines.
                    if let [inputs, unlexed, rejected, _, _, _, _, slowest] = n[..] {
                        totals.inputs += inputs;
                        totals.unlexed += unlexed;
                        totals.rejected += rejected;
                        totals.slowest = totals.slowest.max(Duration::from_micros(slowest));
                        finished = true;
                    }
                }
                _ => {}
            }
        }
        let status = child.wait().expect("wait for the worker");
        if finished && status.success() {
            break;
        }
        // The worker died on input `current`: make it again and keep it.
        let Some(i) = current else {
            eprintln!("the worker died before its first input ({status})");
            std::process::exit(1);
        };
        totals.crashes += 1;
        // The inputs before the crash were run but their counts died with the worker.
        totals.inputs += ran.saturating_sub(1);
        let (origin, source) = campaign.input(i);
        eprintln!("FINDING {i} crash: the worker died ({status}) on input {i} from {origin}");
        if let Some(dir) = &o.out {
            save(
                dir,
                i,
                "crash",
                &origin,
                &source,
                &format!("the worker died: {status}"),
            );
        }
        next = i + 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let all = totals.inputs + totals.unlexed;
    println!(
        "{} inputs ({} expanded, {} did not lex, {} rejected with errors) in {:.1} s: {:.0} inputs/s; slowest expansion {:.1} ms (wall clock)",
        all,
        totals.inputs,
        totals.unlexed,
        totals.rejected,
        secs,
        all as f64 / secs,
        totals.slowest.as_secs_f64() * 1000.0
    );
    println!(
        "findings: {} panics, {} stack overflows or aborts, {} internal compiler errors, {} unparsable outputs, {} over the time budget",
        totals.panics, totals.crashes, totals.internal_errors, totals.unparsable, totals.slow
    );
    if totals.findings() > 0 {
        std::process::exit(1);
    }
}

/// Expands every module of the given files (a file that is itself a module's text counts as one)
/// and reports each one's time, errors and findings.
fn files(o: &Options) {
    for path in &o.files {
        let Ok(source) = std::fs::read_to_string(path) else {
            eprintln!("cannot read {}", path.display());
            continue;
        };
        let mut modules: Vec<String> = seeds::modules_of(&source)
            .iter()
            .map(|m| quote::ToTokens::to_token_stream(m).to_string())
            .collect();
        if modules.is_empty() {
            modules.push(source.clone());
        }
        for m in modules {
            match run::expand_source(&m, o.budget, o.stack) {
                None => println!("{}: does not lex", path.display()),
                Some(outcome) => {
                    println!(
                        "{}: {:.1} ms, {} errors, {}",
                        path.display(),
                        outcome.elapsed.as_secs_f64() * 1000.0,
                        outcome.errors,
                        outcome
                            .finding
                            .as_ref()
                            .map_or("ok".to_string(), Finding::to_string)
                    );
                    for m in &outcome.messages {
                        println!("    error: {}", m.chars().take(300).collect::<String>());
                    }
                    if let Some(times) = gpu_async_fuzz::phases::time_phases(&m) {
                        let parts: Vec<String> = gpu_async_fuzz::phases::PHASES
                            .iter()
                            .zip(&times.phases)
                            .map(|(p, t)| format!("{p} {:.1}", t.as_secs_f64() * 1000.0))
                            .collect();
                        println!("    phases (ms): {}", parts.join(", "));
                    }
                    if let Ok(tokens) = m.parse::<proc_macro2::TokenStream>() {
                        if let Ok(kernels) = gpu_async_compiler::compile(tokens) {
                            for k in kernels {
                                let (insts, cost) = ir_size(&k.ir);
                                println!(
                                    "    kernel `{}`: {insts} IR instructions (counting {cost} toward the limit), {} values, {} B of PTX",
                                    k.name,
                                    k.ir.values.len(),
                                    k.ptx.len()
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A kernel's IR instructions, and what they count toward `ir::MAX_KERNEL_INSTS`
/// (`Inst::cost`).
fn ir_size(k: &gpu_async_compiler::ir::Kernel) -> (usize, usize) {
    use gpu_async_compiler::ir::{Block, Inst};
    fn walk(b: &Block, in_par: bool, insts: &mut usize, cost: &mut usize) {
        for inst in &b.0 {
            *insts += 1;
            *cost += inst.cost(in_par);
            match inst {
                Inst::ParFor(p) => {
                    walk(&p.body, true, insts, cost);
                    if let Some(r) = &p.reduce {
                        // The combining block is lowered after the loop's body, outside it.
                        walk(&r.combine, in_par, insts, cost);
                    }
                }
                Inst::If { then, else_, .. } => {
                    walk(then, in_par, insts, cost);
                    walk(else_, in_par, insts, cost);
                }
                Inst::Loop { body, .. } => walk(body, in_par, insts, cost),
                Inst::Join { branches } => {
                    for b in branches {
                        walk(b, in_par, insts, cost);
                    }
                }
                _ => {}
            }
        }
    }
    let (mut insts, mut cost) = (0, 0);
    walk(&k.prologue, false, &mut insts, &mut cost);
    for r in &k.roles {
        walk(&r.body, false, &mut insts, &mut cost);
    }
    (insts, cost)
}

/// The expansion time of each example's modules and of the pathological inputs, and for the
/// examples, of their slowest kernel (its own phases and an equal share of what the module's
/// kernels share: lexing, parsing, checking, printing).
///
/// Run unoptimized, as cargo builds a proc macro for a debug build, except proc-macro2 (see the
/// workspace's `Cargo.toml`): outside rustc its fallback makes the tokens that rustc's own,
/// optimized, code makes inside it.
fn bench(runs: usize) {
    let root = seeds::workspace();
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("expansion time, {build} build, median of {runs} runs\n");
    println!("| input | kernels | expand, ms | slowest kernel, ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    examples.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    examples.sort();
    let mut rows: Vec<(String, String)> = Vec::new();
    for path in &examples {
        let source = std::fs::read_to_string(path).unwrap_or_default();
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().to_string());
        for m in seeds::modules_of(&source) {
            let text = quote::ToTokens::to_token_stream(&m).to_string();
            rows.push((format!("`examples/{name}` `mod {}`", m.ident), text));
        }
    }
    for (name, source, _) in pathological::inputs() {
        rows.push((name, source));
    }
    if let Ok(dir) = std::env::var("GPU_ASYNC_FUZZ_BENCH_DUMP") {
        // The inputs as files, for `--file` and profilers.
        let _ = std::fs::create_dir_all(&dir);
        for (k, (_, source)) in rows.iter().enumerate() {
            let _ = std::fs::write(format!("{dir}/{k:02}.rs"), source);
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    for (name, source) in rows {
        let mut times = Vec::new();
        let mut slowest = Vec::new();
        let mut kernels = 0;
        let mut errors = 0;
        let mut note = String::new();
        for _ in 0..runs.max(1) {
            match run::expand_source(&source, Duration::from_secs(3600), run::STACK) {
                Some(outcome) => {
                    times.push(outcome.elapsed);
                    errors = outcome.errors;
                    if let Some(f) = outcome.finding {
                        note = format!(" ({f})");
                    }
                }
                None => note = " (does not lex)".to_string(),
            }
            if let Some(t) = gpu_async_fuzz::phases::time_phases(&source) {
                kernels = t.kernels.len();
                if let Some((_, d)) = t.slowest_kernel() {
                    slowest.push(d);
                }
            }
        }
        let slowest = if slowest.is_empty() {
            "".to_string()
        } else {
            format!("{:.2}", ms(median(slowest)))
        };
        println!(
            "| {name}{note} | {kernels} | {:.2} | {slowest} | {errors} |",
            ms(median(times))
        );
    }
}
