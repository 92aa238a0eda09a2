//! Inputs the campaigns found, reduced to their cause: each once panicked, failed inside the
//! compiler or took seconds, and must now expand (or fail with errors) without a finding.

use std::time::Duration;

use gpu_async_fuzz::pathological::{channel_module, role_module};
use gpu_async_fuzz::run::{expand_source, Outcome, STACK};

fn expand(source: &str) -> Outcome {
    let outcome = expand_source(source, Duration::from_secs(60), STACK).expect("lexes");
    assert!(outcome.finding.is_none(), "{:?}", outcome.finding);
    outcome
}

#[test]
fn a_parallel_body_that_awaits_and_begins_with_a_block_is_rewritten_without_a_panic() {
    // The awaiting body is put in `run_now(async { .. })`; read back as tokens, a body
    // `{ .. } << 1` ended a statement at its block and did not parse.
    let outcome = expand(&role_module(
        "y.par_iter_mut().for_each(|o| { *o = half(a).await; } << 1);\n    }\n    async fn half(v: f32) -> f32 { v * 0.5",
    ));
    assert!(outcome.errors > 0, "a unit shifted is a type error");
}

#[test]
fn a_reduction_in_the_kernel_body_is_an_error() {
    let source = "mod m {
    use gpu_async::device::*;
    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        let s = x.par_iter().sum();
        join!(on_warps(0..1, r(y, s))).await;
    }
    async fn r(y: &mut [f32], s: f32) {
        y.par_iter_mut().for_each(|o| *o = s);
    }
}";
    let outcome = expand(source);
    assert!(
        outcome.messages.iter().any(|m| m.contains("is role code")),
        "{:?}",
        outcome.messages
    );
}

#[test]
fn many_unsent_reserves_give_one_error_each() {
    let outcome = expand(&channel_module(
        &"let Some(mut s) = tx.reserve().await else { return };\n".repeat(300),
        "while let Some(s) = rx.recv().await { drop(s); }",
    ));
    assert!(outcome.errors <= 300 + 1, "{} errors", outcome.errors);
}

#[test]
fn a_tile_smaller_than_its_swizzle_repeat_still_starts_on_one() {
    // 3 rows of 128 bytes: 384 bytes, whose slots were laid out 128 bytes apart although the
    // 128-byte swizzle repeats every 1024 (the verifier's "channel 0 is misaligned").
    let source = "mod m {
    use gpu_async::device::*;
    #[kernel(warps = 2)]
    pub async fn k(a: &Matrix<bf16>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<bf16, 3, 64>, 2>();
        join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, y))).await;
    }
    async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 3, 64>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        slot.send();
    }
    async fn store(mut rx: Receiver<Tile<bf16, 3, 64>, 2>, y: &mut [f32]) {
        let Some(tile) = rx.recv().await else { return };
        y[0] = tile[2][63].to_f32();
    }
}";
    let outcome = expand(source);
    assert_eq!(outcome.errors, 0, "{:?}", outcome.messages);
}

#[test]
fn a_match_whose_arms_all_diverge_is_a_value_of_no_type() {
    // Its context (an arm of a `u32` match) made it a `u32` match, whose result register no arm
    // wrote: the verifier's "used before it is defined".
    let source = "mod m {
    use gpu_async::device::*;
    #[kernel(warps = 1)]
    pub async fn k(mode: u32, y: &mut [u32]) {
        join!(on_warps(0..1, pick(mode, y))).await;
    }
    async fn pick(mode: u32, y: &mut [u32]) {
        let v = match mode {
            0 => 10u32,
            _ => match mode { _ => panic!(\"no\") },
        };
        y.par_iter_mut().for_each(|o| *o = v);
    }
}";
    let outcome = expand(source);
    assert_eq!(outcome.errors, 0, "{:?}", outcome.messages);
}

#[test]
fn a_receive_awaited_through_a_block_is_the_receive() {
    // `{ rx.recv() }.await` lowered to no value: the slot bound by its `let .. else` was
    // nothing, and the loop that read it compared floats with indices (the verifier's "bad
    // operand types").
    let source = "mod m {
    use gpu_async::device::*;
    #[kernel(warps = 2)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 64], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }
    async fn load(x: &[f32], mut tx: Sender<[f32; 64], 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.copy_from(&x[0..64]).await;
        slot.send();
    }
    async fn store(mut rx: Receiver<[f32; 64], 2>, y: &mut [f32]) {
        let Some(slot) = { rx.recv() }.await else { return };
        y[0..64].par_iter_mut().zip(slot.par_iter()).for_each(|(o, v)| *o = *v * 2.0);
    }
}";
    let outcome = expand(source);
    assert_eq!(outcome.errors, 0, "{:?}", outcome.messages);
    let with_statements = source.replace("{ rx.recv() }.await", "{ let _z = 1; rx.recv() }.await");
    let outcome = expand(&with_statements);
    assert!(
        outcome
            .messages
            .iter()
            .any(|m| m.contains("`.await` of a block")),
        "{:?}",
        outcome.messages
    );
}
