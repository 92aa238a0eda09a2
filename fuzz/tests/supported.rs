//! Valid Rust that the kernel language takes as Rust does: each expands without errors.

use std::time::Duration;

use gpu_async_fuzz::pathological::role_module;
use gpu_async_fuzz::run::{expand_source, STACK};

fn expands_clean(body: &str) {
    let outcome = expand_source(&role_module(body), Duration::from_secs(60), STACK)
        .expect("the module lexes");
    assert!(outcome.finding.is_none(), "{body}: {:?}", outcome.finding);
    assert!(
        outcome.messages.is_empty(),
        "{body}: {:?}",
        outcome.messages
    );
}

#[test]
fn a_diverging_expression_takes_the_type_its_context_wants() {
    expands_clean(
        "let mut tiles = block_tiles(x.len(), if n > 8 { return } else { 256 });
         while let Some(t) = tiles.next() {
             y[t.start..t.end].par_iter_mut().for_each(|o| *o = a);
         }",
    );
    expands_clean(
        "let v: u32 = if n > 0 { 3 } else { return };
         y.par_iter_mut().for_each(|o| *o = v as f32);",
    );
}

#[test]
fn a_stray_semicolon_is_accepted() {
    expands_clean("y.par_iter_mut().for_each(|o| *o = a);;");
}

#[test]
fn a_parallel_iterator_in_a_block_of_nothing_else_is_the_iterator() {
    expands_clean("y.par_iter_mut().zip({ x.par_iter() }).for_each(|(o, v)| *o = *v);");
}
