//! Compile-fail tests: each file under `ui/<topic>/` is one mistake a user can make, and its
//! `.stderr` is what they see. Regenerate with `TRYBUILD=overwrite cargo test -p gpu-async-ui-tests`
//! and review the diff. Each file under `pass/` is what a mistake's fixed code looks like (or a
//! form the language accepts that it once did not): it compiles and its `main` runs it on the
//! simulator and checks the result.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    t.pass("tests/pass/*.rs");
}
