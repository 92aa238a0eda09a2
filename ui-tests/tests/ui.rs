//! Compile-fail tests: each file under `ui/<topic>/` is one mistake a user can make, and its
//! `.stderr` is what they see. Regenerate with `TRYBUILD=overwrite cargo test -p gpu-async-ui-tests`
//! and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
