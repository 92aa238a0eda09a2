//! The time each phase of the compiler takes on one module, through the phases' public entry
//! points in the order `expand` runs them, and the time of each kernel's own phases.

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
    "ptx and traced ptx",
    "ir text",
    "shadow",
    "print",
];

/// The phases a module's kernels share (`syn`, `parse`, `check`, `print`); the others are each
/// kernel's own.
const SHARED: [usize; 4] = [0, 1, 2, 11];

/// The times of one module's expansion.
pub struct PhaseTimes {
    /// The time of each phase of [`PHASES`], all kernels together.
    pub phases: Vec<Duration>,
    /// Each compiled kernel's name and the time of its own phases (from `lower` to `shadow`).
    pub kernels: Vec<(String, Duration)>,
}

impl PhaseTimes {
    /// The time of the phases the kernels share.
    pub fn shared(&self) -> Duration {
        SHARED.iter().map(|&i| self.phases[i]).sum()
    }

    /// The time of the slowest kernel: its own phases and an equal share of the shared ones.
    pub fn slowest_kernel(&self) -> Option<(&str, Duration)> {
        let share = self.shared() / self.kernels.len().max(1) as u32;
        self.kernels
            .iter()
            .max_by_key(|(_, d)| *d)
            .map(|(name, d)| (name.as_str(), *d + share))
    }
}

/// The times of `source` (the text of a module), or `None` if it does not parse.
pub fn time_phases(source: &str) -> Option<PhaseTimes> {
    let mut times = vec![Duration::ZERO; PHASES.len()];
    let mut lap = Instant::now();
    let mut tick = |i: usize, lap: &mut Instant| {
        let elapsed = lap.elapsed();
        times[i] += elapsed;
        *lap = Instant::now();
        elapsed
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
    let mut kernels = Vec::new();
    for &id in &program.kernels {
        if !diags.is_empty() {
            break;
        }
        let name = program.function(id).name.clone();
        let Some(mut kernel) = lower::lower_kernel(&program, id, &mut diags) else {
            continue;
        };
        let mut own = tick(3, &mut lap);
        licm::hoist_loop_invariants(&mut kernel);
        own += tick(4, &mut lap);
        bounds::remove_proven_checks(&mut kernel);
        own += tick(5, &mut lap);
        let _ = registers::occupancy(&kernel, None, &mut diags);
        let _ = registers::plan(&kernel, None, None, &mut diags);
        own += tick(6, &mut lap);
        let Ok(verified) = verify::verify(&kernel) else {
            continue;
        };
        own += tick(7, &mut lap);
        let Ok((ptx, ptx_traced)) = ptx::write_kernel_both(&verified) else {
            continue;
        };
        own += tick(8, &mut lap);
        let ir_text = kernel.to_string();
        own += tick(9, &mut lap);
        let f = module.items.iter().find_map(|it| match it {
            parse::Item::Fn(f) if f.item.sig.ident == name => Some(f),
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
        own += tick(10, &mut lap);
        kernels.push((name, own));
    }
    let printed: usize = launchers.iter().map(|l| l.to_string().len()).sum();
    std::hint::black_box(printed);
    tick(11, &mut lap);
    Some(PhaseTimes {
        phases: times,
        kernels,
    })
}
