//! A short fuzzing campaign with a fixed seed: the inputs `cargo test` runs every time, in about
//! 25 s of a debug build.

use std::time::{Duration, Instant};

use gpu_async_fuzz::{fuzz, Campaign, GENERATOR_STACK};

/// Inputs per run, and the most time it may take (whichever comes first).
const INPUTS: u64 = 1500;
const SECONDS: u64 = 40;

#[test]
fn a_fixed_campaign_finds_nothing() {
    // Inputs are made on a thread with a large stack (deep syntax trees print recursively); the
    // expansions run on threads of rustc's 8 MiB.
    let started = Instant::now();
    let run = std::thread::Builder::new()
        .stack_size(GENERATOR_STACK)
        .spawn(|| {
            let campaign = Campaign::new(20_261_201);
            let deadline = Instant::now() + Duration::from_secs(SECONDS);
            let mut found = Vec::new();
            // A debug build is about ten times slower than the release build the campaigns use.
            let budget = Duration::from_secs(if cfg!(debug_assertions) { 10 } else { 1 });
            let totals = fuzz(
                &campaign,
                0,
                budget,
                |t| t.inputs + t.unlexed >= INPUTS || Instant::now() >= deadline,
                |_| {},
                |i, origin, source, f| {
                    found.push(format!("input {i} (from {origin}): {f}\n{source}"));
                },
            );
            (totals, found)
        })
        .expect("start the campaign");
    let (totals, found) = run.join().expect("the campaign ends");
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{} inputs ({} rejected with errors) in {secs:.1} s: {:.0} inputs/s, {} findings",
        totals.inputs + totals.unlexed,
        totals.rejected,
        (totals.inputs + totals.unlexed) as f64 / secs,
        found.len()
    );
    assert!(totals.inputs > 0, "no input was expanded");
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}
