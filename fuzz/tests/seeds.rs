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
