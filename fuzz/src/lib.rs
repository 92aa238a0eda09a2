//! # gpu-async-fuzz
//!
//! A fuzzer of the compiler's expansion ([`gpu_async_compiler::expand`]). Each input is a
//! `#[gpu_async]` module: a seed (a module of the examples, ui-tests or runtime tests) mutated on
//! its syntax tree or its tokens, or a kernel written by a small grammar. The expansion runs under
//! `catch_unwind` on a thread of a known stack (8 MiB, as rustc's), and fails on a panic, an
//! output containing "internal compiler error", an output that is not a Rust file, or an
//! expansion over the time budget; a stack overflow or an allocation failure aborts the process,
//! which the command line's supervisor reports with the input.
//!
//! Input `i` of a campaign with seed `s` depends on `(s, i)` and the seeds alone, so that a
//! failing input can be made again from its number.

pub mod generate;
pub mod mutate;
pub mod pathological;
pub mod phases;
pub mod rng;
pub mod run;
pub mod seeds;

use std::time::Duration;

/// The stack of the thread that makes inputs (deeply nested ones are printed recursively).
pub const GENERATOR_STACK: usize = 512 * 1024 * 1024;

use quote::ToTokens;

use rng::Rng;
use run::{Expander, Finding, Outcome};

/// The inputs of a campaign.
pub struct Campaign {
    /// The seeds' modules.
    pub seeds: Vec<seeds::Seed>,
    modules: Vec<syn::ItemMod>,
    pieces: mutate::Pieces,
    /// The campaign's seed.
    pub seed: u64,
}

impl Campaign {
    /// A campaign over the repository's seeds.
    pub fn new(seed: u64) -> Self {
        let seeds = seeds::load(&seeds::workspace());
        let modules = seeds.iter().map(|s| s.module.clone()).collect();
        Campaign {
            seeds,
            modules,
            pieces: mutate::Pieces::new(),
            seed,
        }
    }

    /// Input number `index`: its origin and its source.
    pub fn input(&self, index: u64) -> (String, String) {
        let mut rng = Rng::new(self.seed, index);
        if self.modules.is_empty() || rng.one_in(6) {
            return ("generated".to_string(), generate::kernel(&mut rng));
        }
        let i = rng.below(self.modules.len());
        let origin = self.seeds[i].origin.clone();
        if rng.one_in(50) {
            // The seed itself.
            return (origin, self.modules[i].to_token_stream().to_string());
        }
        (
            origin,
            mutate::mutate(&self.modules[i], &self.modules, &self.pieces, &mut rng),
        )
    }
}

/// The counts of a run.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    /// Inputs expanded.
    pub inputs: u64,
    /// Inputs that did not lex (not given to the compiler).
    pub unlexed: u64,
    /// Inputs whose expansion has compile errors.
    pub rejected: u64,
    /// Findings by kind: panics, internal errors, unparsable outputs, slow expansions.
    pub panics: u64,
    /// See `panics`.
    pub internal_errors: u64,
    /// See `panics`.
    pub unparsable: u64,
    /// See `panics`.
    pub slow: u64,
    /// Processes that died (stack overflow, allocation failure): counted by the supervisor.
    pub crashes: u64,
    /// The slowest expansion.
    pub slowest: Duration,
}

impl Totals {
    /// Counts one outcome.
    pub fn add(&mut self, outcome: &Outcome) {
        self.inputs += 1;
        if outcome.errors > 0 {
            self.rejected += 1;
        }
        self.slowest = self.slowest.max(outcome.elapsed);
        match &outcome.finding {
            Some(Finding::Panic(_)) => self.panics += 1,
            Some(Finding::InternalError(_)) => self.internal_errors += 1,
            Some(Finding::Unparsable(_)) => self.unparsable += 1,
            Some(Finding::Slow(_)) => self.slow += 1,
            None => {}
        }
    }

    /// All findings.
    pub fn findings(&self) -> u64 {
        self.panics + self.internal_errors + self.unparsable + self.slow + self.crashes
    }
}

/// Runs inputs `start..` of `campaign` until `stop` says so; calls `found` on each finding and
/// `before` before each input is made (the supervisor's protocol uses it). Making inputs
/// recurses on deep syntax trees: call it on a thread of [`GENERATOR_STACK`].
pub fn fuzz(
    campaign: &Campaign,
    start: u64,
    budget: Duration,
    mut stop: impl FnMut(&Totals) -> bool,
    mut before: impl FnMut(u64),
    mut found: impl FnMut(u64, &str, &str, &Finding),
) -> Totals {
    let mut expander = Expander::new(run::STACK);
    let mut totals = Totals::default();
    let mut index = start;
    while !stop(&totals) {
        before(index);
        let (origin, source) = campaign.input(index);
        // The wall clock's limit, past which the input is abandoned as a hang, is far above the
        // budget on CPU time: a campaign at a low priority waits for the machine's other work.
        let mut outcome = expander.run(&source, budget, budget * 30);
        if let Some(Outcome {
            finding: Some(Finding::Slow(_)),
            ..
        }) = outcome
        {
            // Timing depends on the machine's other work: a slow input is a finding when a
            // second run is slow too.
            outcome = expander.run(&source, budget, budget * 30);
        }
        match outcome {
            None => totals.unlexed += 1,
            Some(outcome) => {
                totals.add(&outcome);
                if let Some(f) = &outcome.finding {
                    found(index, &origin, &source, f);
                }
            }
        }
        index += 1;
    }
    totals
}
