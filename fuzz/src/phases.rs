//! The time each phase of the compiler takes on one module, through the phases' public entry
//! points in the order `expand` runs them.

use std::time::{Duration, Instant};

use gpu_async_compiler::{
    bounds, check, diag::Diagnostics, licm, lower, parse, ptx, registers, shadow, verify,
};

/// The phases' names, in order.
pub const PHASES: &[&str] = &[
    "syn",
    "parse",
    "check",
    "lower",
    "licm",
    "bounds",
    "registers",
    "verify",
    "ptx",
    "ptx traced",
    "ir text",
    "shadow",
    "print",
];

/// The time of each phase of [`PHASES`] on `source` (the text of a module), or `None` if it does
/// not parse.
pub fn time_phases(source: &str) -> Option<Vec<Duration>> {
    let mut times = vec![Duration::ZERO; PHASES.len()];
    let mut lap = Instant::now();
    let mut tick = |i: usize, lap: &mut Instant| {
        times[i] += lap.elapsed();
        *lap = Instant::now();
    };
    let tokens: proc_macro2::TokenStream = source.parse().ok()?;
    let item: syn::ItemMod = syn::parse2(tokens).ok()?;
    tick(0, &mut lap);
    let mut diags = Diagnostics::new();
    let mut module = parse::parse_module(item, &mut diags);
    tick(1, &mut lap);
    let program = check::check_module(&mut module, &mut diags);
    tick(2, &mut lap);
    let mut launchers = Vec::new();
    for &id in &program.kernels {
        if !diags.is_empty() {
            break;
        }
        let Some(mut kernel) = lower::lower_kernel(&program, id, &mut diags) else {
            continue;
        };
        tick(3, &mut lap);
        licm::hoist_loop_invariants(&mut kernel);
        tick(4, &mut lap);
        bounds::remove_proven_checks(&mut kernel);
        tick(5, &mut lap);
        let _ = registers::occupancy(&kernel, None, &mut diags);
        let _ = registers::plan(&kernel, None, None, &mut diags);
        tick(6, &mut lap);
        let Ok(verified) = verify::verify(&kernel) else {
            continue;
        };
        tick(7, &mut lap);
        let Ok(ptx) = ptx::write_kernel(&verified) else {
            continue;
        };
        tick(8, &mut lap);
        let Ok(ptx_traced) = ptx::write_kernel_traced(&verified) else {
            continue;
        };
        tick(9, &mut lap);
        let ir_text = kernel.to_string();
        tick(10, &mut lap);
        let f = module.items.iter().find_map(|it| match it {
            parse::Item::Fn(f) if f.item.sig.ident == program.function(id).name => Some(f),
            _ => None,
        });
        let sig = program.signatures.get(id.0 as usize);
        if let (Some(f), Some(sig)) = (f, sig) {
            launchers.push(shadow::launcher(&shadow::LauncherInput {
                item: &f.item,
                sig,
                structs: &program.structs,
                compiled: Some(shadow::Compiled {
                    kernel: &kernel,
                    ptx: &ptx,
                    ir: &ir_text,
                    ptx_traced: &ptx_traced,
                }),
            }));
        }
        tick(11, &mut lap);
    }
    let printed: usize = launchers.iter().map(|l| l.to_string().len()).sum();
    std::hint::black_box(printed);
    tick(12, &mut lap);
    Some(times)
}
