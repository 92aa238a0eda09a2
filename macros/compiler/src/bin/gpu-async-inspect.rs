//! `gpu-async-inspect`: what `#[gpu_async]` makes of the kernels in a Rust file.
//!
//! ```text
//! cargo run -p gpu-async-compiler --bin gpu-async-inspect -- FILE.rs [KERNEL] [--ir] [--no-ptx] [--traced]
//! cargo run -p gpu-async-compiler --bin gpu-async-inspect -- FILE.rs [KERNEL] --ptx-only > k.ptx
//! cargo run -p gpu-async-compiler --bin gpu-async-inspect -- --help
//! ```
//!
//! For each kernel of each `#[gpu_async]` module in FILE (or only KERNEL): its roles and warp
//! ranges, its channels and their shared-memory layout, ptxas's resource report (when ptxas is
//! found), the role/channel IR with `--ir`, and the PTX unless `--no-ptx`. With `--ptx-only`, the
//! PTX of the one kernel that FILE (or KERNEL) names and nothing else, to load it elsewhere (the
//! CUDA driver API, `ptxas`). With `--traced`, the PTX (and ptxas's report) are those of the
//! kernel's traced module, which a traced launch loads. Compile errors are printed as `FILE:LINE:COLUMN: error: ...`; a
//! KERNEL that is not in FILE gets the list of the kernels that are.

use std::process::ExitCode;

use gpu_async_compiler::{compile, ir, ptxas, registers};
use quote::ToTokens;

const USAGE: &str =
    "usage: gpu-async-inspect FILE.rs [KERNEL] [--ir] [--no-ptx | --ptx-only] [--traced]";

const HELP: &str = "\
gpu-async-inspect: what #[gpu_async] makes of the kernels in a Rust file

usage: gpu-async-inspect FILE.rs [KERNEL] [--ir] [--no-ptx | --ptx-only] [--traced]

For each kernel of each #[gpu_async] module in FILE (or only KERNEL), prints its roles and
their warps, its channels and their place in shared memory, its register budgets, ptxas's
resource report (when ptxas is found: $PTXAS, the PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or
pip's nvidia-cuda-nvcc), the role and channel graph, and the PTX.

options:
  --ir         also print the role/channel IR after lowering
  --no-ptx     leave the PTX out
  --ptx-only   print only the PTX of the one kernel FILE (or KERNEL) names, to load or assemble
  --traced     the PTX (and ptxas's report) of the traced module, which a traced launch loads
  -h, --help   print this help

Compile errors are printed as FILE:LINE:COLUMN: error: MESSAGE, and the exit status is 1.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let flags: Vec<&str> = args
        .iter()
        .filter(|a| a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let plain: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(f) = flags
        .iter()
        .find(|f| !["--ir", "--no-ptx", "--ptx-only", "--traced"].contains(f))
    {
        eprintln!("unknown option `{f}`\n{USAGE}\n(--help says more)");
        return ExitCode::from(2);
    }
    let ptx_only = flags.contains(&"--ptx-only");
    let (Some(path), None) = (plain.first(), plain.get(2)) else {
        eprintln!("{USAGE}\n(--help says more)");
        return ExitCode::from(2);
    };
    let wanted = plain.get(1).map(|s| s.as_str());
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let file = match syn::parse_file(&source) {
        Ok(f) => f,
        Err(e) => {
            let at = e.span().start();
            eprintln!(
                "{path}:{}:{}: error: not valid Rust: {e}",
                at.line,
                at.column + 1
            );
            return ExitCode::FAILURE;
        }
    };
    let mut modules = Vec::new();
    collect_modules(&file.items, &mut modules);
    if modules.is_empty() {
        eprintln!("{path} has no #[gpu_async] module");
        return ExitCode::FAILURE;
    }
    let kernels_in_file: Vec<String> = modules.iter().flat_map(kernel_names).collect();
    if let Some(w) = wanted.filter(|w| !kernels_in_file.iter().any(|k| k == w)) {
        eprintln!(
            "no kernel named `{w}` in {path}; its kernels: {}",
            if kernels_in_file.is_empty() {
                "none (no `#[kernel(..)]` fn)".to_string()
            } else {
                kernels_in_file.join(", ")
            }
        );
        return ExitCode::FAILURE;
    }
    let ptxas = ptxas::locate();
    let mut ptx_of = Vec::new();
    let mut failed = false;
    for module in modules {
        match compile(module.into_token_stream()) {
            Err(diags) => {
                failed = true;
                for (span, message) in diags.located() {
                    let at = span.start();
                    eprintln!("{path}:{}:{}: error: {message}", at.line, at.column + 1);
                }
            }
            Ok(kernels) => {
                for k in kernels
                    .iter()
                    .filter(|k| wanted.is_none_or(|w| w == k.name))
                {
                    if ptx_only {
                        ptx_of.push((k.name.clone(), module_of(k, &flags).to_string()));
                    } else {
                        print_kernel(k, &ptxas, &flags);
                    }
                }
            }
        }
    }
    if failed {
        return ExitCode::FAILURE;
    }
    if ptx_only {
        // One PTX module per kernel: several would not make one file that loads.
        match ptx_of.as_slice() {
            [(_, ptx)] => print!("{ptx}"),
            several => {
                let names: Vec<&str> = several.iter().map(|(n, _)| n.as_str()).collect();
                eprintln!(
                    "--ptx-only prints one kernel, and {path} has {}: {}; name one as KERNEL",
                    names.len(),
                    names.join(", ")
                );
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Every module with a `#[gpu_async]` attribute, with the attribute removed.
fn collect_modules(items: &[syn::Item], out: &mut Vec<syn::ItemMod>) {
    let is_ours = |a: &syn::Attribute| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "gpu_async")
    };
    for item in items {
        if let syn::Item::Mod(m) = item {
            if m.attrs.iter().any(is_ours) {
                let mut m = m.clone();
                m.attrs.retain(|a| !is_ours(a));
                out.push(m);
            } else if let Some((_, inner)) = &m.content {
                collect_modules(inner, out);
            }
        }
    }
}

/// The names of the `#[kernel(..)]` fns of `module`, read from its syntax (so that they are
/// known even when the module does not compile).
fn kernel_names(module: &syn::ItemMod) -> Vec<String> {
    let Some((_, items)) = &module.content else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("kernel")) => {
                Some(f.sig.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

fn print_kernel(
    k: &gpu_async_compiler::CompiledKernel,
    ptxas: &Result<std::path::PathBuf, ptxas::NotFound>,
    flags: &[&str],
) {
    let kernel = &k.ir;
    println!(
        "kernel `{}`: {} warps ({} threads) per block, {} B of shared memory per block",
        k.name,
        kernel.warps,
        32 * kernel.warps,
        kernel.shared_bytes
    );
    println!("\nroles:");
    for r in &kernel.roles {
        println!(
            "  {:<16} warps {}..{} ({} threads)",
            r.name,
            r.first_warp,
            r.end_warp,
            r.threads()
        );
    }
    println!("\nregister budgets:");
    match (&kernel.registers, &k.registers_note) {
        (Some(b), _) => {
            println!(
                "  {} per thread at the entry (.maxnreg), {}",
                b.entry,
                if b.explicit {
                    "budgets from `registers(..)`"
                } else {
                    "budgets derived from the roles (those that only move data get 40)"
                }
            );
            for (i, r) in kernel.roles.iter().enumerate() {
                let set = registers::setmaxnreg(b, i)
                    .unwrap_or_else(|| "(no setmaxnreg: the entry count)".to_string());
                println!("  {:<16} {:>3}  {set}", r.name, b.roles[i]);
            }
        }
        (None, Some(why)) => println!("  none: {why}"),
        (None, None) => println!("  none"),
    }
    println!("\nchannels:");
    if kernel.channels.is_empty() {
        println!("  none");
    }
    for c in &kernel.channels {
        let role = |r: Option<ir::RoleId>| {
            r.map_or("?".to_string(), |r| kernel.roles[r.0 as usize].name.clone())
        };
        println!(
            "  {} : {} x {} slots, {} -> {}",
            c.name,
            c.ty.payload(),
            c.ty.depth,
            role(c.producer),
            c.consumers
                .iter()
                .map(|r| role(Some(*r)))
                .collect::<Vec<_>>()
                .join(" + ")
        );
        println!(
            "      slots @{}..{} (stride {} B), full barriers @{}, empty barriers @{}, state words @{}",
            c.data_offset,
            c.data_offset + c.slot_stride * c.ty.depth,
            c.slot_stride,
            c.full_offset,
            c.empty_offset,
            c.state_offset
        );
    }
    for (r, barrier) in kernel.roles.iter().zip(&kernel.role_barriers) {
        match barrier {
            Some(ir::RoleBarrier::Mbarrier(o)) => println!("  role barrier of `{}` @{o}", r.name),
            Some(ir::RoleBarrier::Block) => {
                println!(
                    "  role barrier of `{}`: bar.sync 0 (the kernel's only role)",
                    r.name
                )
            }
            None => {}
        }
    }
    let ptx = module_of(k, flags);
    println!("\nptxas -arch={}:", ptxas::arch(ptx));
    match ptxas {
        Err(why) => println!("  {why}"),
        Ok(p) => match ptxas::assemble(p, &k.name, ptx) {
            Ok(report) => println!("  {}", report.resources.replace('\n', "\n  ")),
            Err(log) => println!("  rejected:\n{log}"),
        },
    }
    println!("\ngraph (Mermaid):\n{}", kernel.mermaid());
    if flags.contains(&"--ir") {
        println!("IR:\n{}", k.ir_text);
    }
    if !flags.contains(&"--no-ptx") {
        println!("PTX:\n{ptx}");
    }
}

/// The PTX module `flags` ask for: the traced one with `--traced`.
fn module_of<'k>(k: &'k gpu_async_compiler::CompiledKernel, flags: &[&str]) -> &'k str {
    if flags.contains(&"--traced") {
        &k.ptx_traced
    } else {
        &k.ptx
    }
}
