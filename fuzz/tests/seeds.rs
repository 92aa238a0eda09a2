//! Every `#[gpu_async]` module of the repository (examples, ui-tests, runtime tests) expands
//! without a panic or an internal compiler error, into a Rust file.

use std::time::Duration;

use gpu_async_fuzz::run::{expand_source, STACK};
use gpu_async_fuzz::{seeds, GENERATOR_STACK};

#[test]
fn every_module_of_the_repository_expands_to_rust() {
    // Reading the seeds recurses on their syntax trees (the ui-tests nest 200 levels deep).
    std::thread::Builder::new()
        .stack_size(GENERATOR_STACK)
        .spawn(expand_every_module)
        .expect("start the test")
        .join()
        .expect("every module expands");
}

fn expand_every_module() {
    let seeds = seeds::load(&seeds::workspace());
    assert!(seeds.len() > 100, "only {} modules found", seeds.len());
    let mut failures = Vec::new();
    for seed in &seeds {
        let source = quote::ToTokens::to_token_stream(&seed.module).to_string();
        match expand_source(&source, Duration::from_secs(60), STACK) {
            None => failures.push(format!("{}: does not lex", seed.origin)),
            Some(outcome) => {
                if let Some(f) = outcome.finding {
                    failures.push(format!("{} `mod {}`: {f}", seed.origin, seed.module.ident));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_seeds_take_in_the_examples_and_every_kind_of_construct() {
    std::thread::Builder::new()
        .stack_size(GENERATOR_STACK)
        .spawn(seeds_take_in_everything)
        .expect("start the test")
        .join()
        .expect("the seeds take in everything");
}

fn seeds_take_in_everything() {
    let seeds = seeds::load(&seeds::workspace());
    let origins: Vec<&str> = seeds.iter().map(|s| s.origin.as_str()).collect();
    for example in [
        "examples/saxpy.rs",
        "examples/scan.rs",
        "examples/transpose.rs",
    ] {
        assert!(origins.contains(&example), "{example} is not a seed");
    }
    // Each construct appears in some seed's text.
    let texts: Vec<String> = seeds
        .iter()
        .map(|s| quote::ToTokens::to_token_stream(&s.module).to_string())
        .collect();
    for construct in [
        "shared_array",
        "shared_array_2d",
        "AtomicF32",
        "exclusive_sum",
        "inclusive_scan",
        "fetch_max",
        "select !",
        "oneshot",
        "barrier",
        "block_tiles",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(construct)),
            "no seed has `{construct}`"
        );
    }
}
