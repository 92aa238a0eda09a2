//! The limits on nesting, sizes and time: code at the nesting limit expands on a stack of half of
//! rustc's; code far past it, and the other pathological inputs, end in errors or expansions
//! within their time, never in a stack overflow.

use std::time::Duration;

use gpu_async_fuzz::pathological;
use gpu_async_fuzz::run::{expand_source, STACK};

/// Half of the 8 MiB of rustc's thread.
const HALF_STACK: usize = 4 * 1024 * 1024;

#[test]
fn code_at_the_nesting_limit_expands_on_half_of_rustcs_stack() {
    for (name, source, valid) in pathological::inputs() {
        if !name.contains(" 60 ") {
            continue;
        }
        assert!(valid);
        let outcome = expand_source(&source, Duration::from_secs(60), HALF_STACK)
            .unwrap_or_else(|| panic!("{name}: does not lex"));
        assert!(outcome.finding.is_none(), "{name}: {:?}", outcome.finding);
        assert_eq!(outcome.errors, 0, "{name}: {:?}", outcome.messages);
    }
}

#[test]
fn pathological_inputs_expand_or_fail_with_a_documented_error() {
    // A debug build is about ten times slower than a release build, where the budget is 1 s.
    let budget = Duration::from_secs(if cfg!(debug_assertions) { 20 } else { 1 });
    for (name, source, valid) in pathological::inputs() {
        let outcome =
            expand_source(&source, budget, STACK).unwrap_or_else(|| panic!("{name}: does not lex"));
        assert!(outcome.finding.is_none(), "{name}: {:?}", outcome.finding);
        if !valid {
            assert!(
                outcome
                    .messages
                    .iter()
                    .any(|m| m.contains("nested deeper than 64 levels")
                        || m.contains("past the 1024 a kernel value may hold")
                        || m.contains("of shared memory a block can have")
                        || m.contains("is dropped without being sent")
                        || m.contains("parts of `y`")),
                "{name}: {:?}",
                outcome.messages
            );
        }
    }
}

#[test]
fn a_too_deep_input_is_answered_without_parsing_it() {
    // What the attribute can do before syn's parser recurses on the input.
    let source = pathological::role_module(&format!(
        "let t: u32 = {}n{};",
        "(".repeat(5000),
        ")".repeat(5000)
    ));
    let tokens: proc_macro2::TokenStream = source.parse().expect("lexes");
    let out = gpu_async_compiler::parse::too_deep(&tokens).expect("too deep");
    let text = out.to_string();
    assert!(text.contains("nested deeper than 64 levels"), "{text}");
    assert!(text.contains("mod pathological { }"), "{text}");
    let shallow: proc_macro2::TokenStream = pathological::role_module("let t = n;")
        .parse()
        .expect("lexes");
    assert!(gpu_async_compiler::parse::too_deep(&shallow).is_none());
}

#[test]
fn a_long_run_of_returns_is_answered_without_parsing_it() {
    // `return return ..` makes syn's parser recurse once per keyword, as a group does.
    let source = pathological::role_module(&format!("if n > 0 {{ {} }}", "return ".repeat(3000)));
    let tokens: proc_macro2::TokenStream = source.parse().expect("lexes");
    let out = gpu_async_compiler::parse::too_deep(&tokens).expect("too deep");
    assert!(out.to_string().contains("nested deeper than 64 levels"));
    let outcome = expand_source(&source, Duration::from_secs(60), STACK).expect("lexes");
    assert!(outcome.finding.is_none(), "{:?}", outcome.finding);
    let few: proc_macro2::TokenStream = pathological::role_module("if n > 0 { return return; }")
        .parse()
        .expect("lexes");
    assert!(gpu_async_compiler::parse::too_deep(&few).is_none());
}

#[test]
fn a_slot_dropped_on_every_path_is_reported_once() {
    // Each of the 2,000 `return`s drops every slot reserved before it.
    let (name, source, _) = pathological::inputs()
        .into_iter()
        .find(|(name, _, _)| name.contains("slot dropped without"))
        .expect("the input is listed");
    let outcome = expand_source(&source, Duration::from_secs(60), STACK).expect("lexes");
    assert!(outcome.finding.is_none(), "{name}: {:?}", outcome.finding);
    let unsent = outcome
        .messages
        .iter()
        .filter(|m| m.contains("is dropped without being sent"))
        .count();
    assert!((1..=2000).contains(&unsent), "{name}: {unsent} errors");
}
