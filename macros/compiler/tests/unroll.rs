//! Role loops written as copies of their body with constant ring slots: which loops are, and
//! what their PTX keeps of the ring registers; and how a receive in them reads its slot's state
//! word.

mod common;

use common::one;
use proc_macro2::TokenStream;
use quote::quote;

/// A producer and a consumer of a ring of `depth` slots; `consume` is the consumer's body.
fn handoff(depth: usize, consume: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn handoff(items: u32, out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 1], #depth>();
                join!(
                    on_warps(0..1, produce(items, tx)),
                    on_warps(1..2, consume(rx, out)),
                )
                .await;
            }

            async fn produce(items: u32, mut tx: Sender<[u32; 1], #depth>) {
                for i in 0..items {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.par_iter_mut().for_each(|v| *v = i);
                    slot.send();
                }
            }

            async fn consume(mut rx: Receiver<[u32; 1], #depth>, out: &mut [u32]) {
                #consume
            }
        }
    }
}

/// The consumer's body that sums the first element of every item into `out[0]`.
fn summing_consumer() -> TokenStream {
    quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    }
}

fn copies(ptx: &str, n: u32) -> usize {
    ptx.matches(&format!("// {n} copies of the loop body"))
        .count()
}

#[test]
fn producer_and_consumer_loops_are_unrolled_by_the_ring_depth() {
    let consume = summing_consumer();
    for depth in [2usize, 3, 4] {
        let k = one(handoff(depth, consume.clone()));
        assert_eq!(copies(&k.ptx, depth as u32), 2, "depth {depth}");
        // Slots are constants in the copies: the last slot's barrier address is an immediate
        // times the barrier's 8 bytes (outside the loops, the close after the producer's loop
        // still advances the slot register).
        assert!(
            k.ptx.contains(&format!(", {}, 8, %r", depth - 1)),
            "depth {depth}"
        );
    }
    // Depth 1: the slot is always 0 already; nothing to unroll.
    assert_eq!(copies(&one(handoff(1, consume.clone())).ptx, 1), 0);
    // Deeper rings would need more copies than an SM's instruction cache holds with the other
    // roles' loops (8 copies made a pipeline stall on instruction fetches): not unrolled.
    for depth in [5usize, 8] {
        let ptx = one(handoff(depth, consume.clone())).ptx;
        assert!(!ptx.contains("copies of the loop body"), "depth {depth}");
    }
}

#[test]
fn a_loop_whose_parallel_body_is_long_is_not_unrolled() {
    // The vector loop writes a parallel loop's body 21 times: 14 operations per element are
    // already more code than four copies of the role loop should carry.
    let update = quote! {
        out.par_iter_mut().for_each(|o| {
            let mut t = *o;
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            t = t.wrapping_mul(3).wrapping_add(1);
            *o = t ^ acc;
        });
    };
    let consume = quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        #update
    };
    // The parallel loop after the role loop does not count: both loops are unrolled.
    assert_eq!(copies(&one(handoff(2, consume)).ptx, 2), 2);
    let long_body = quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
            #update
        }
    };
    assert_eq!(
        copies(&one(handoff(2, long_body)).ptx, 2),
        1,
        "only the producer's loop"
    );
}

#[test]
fn loops_with_continue_or_a_ring_used_before_are_not_unrolled() {
    // A `continue` would skip the copies after it.
    let with_continue = quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            if slot[0] == 7 {
                continue;
            }
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    };
    let k = one(handoff(2, with_continue));
    assert_eq!(copies(&k.ptx, 2), 1, "only the producer's loop");
    // A receive before the loop: the ring's slot at the loop's entry is not known to be 0.
    let received_before = quote! {
        let mut acc = 0u32;
        let first = rx.recv().await.unwrap();
        acc += first[0];
        drop(first);
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    };
    let k = one(handoff(2, received_before));
    assert_eq!(copies(&k.ptx, 2), 1, "only the producer's loop");
}

/// The `(predicate, next line)` after each `mbarrier.try_wait` of `ptx`.
fn after_try_waits(ptx: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter_map(|w| {
            let rest = w[0].strip_prefix("mbarrier.try_wait.parity.shared::cta.b64 ")?;
            let p = rest.split(',').next()?.to_string();
            Some((p, w[1].to_string()))
        })
        .collect()
}

#[test]
fn a_receive_loads_its_state_word_predicated_on_the_first_try_wait() {
    let consume = summing_consumer();
    let k = one(handoff(2, consume));
    let waits = after_try_waits(&k.ptx);
    // The consumer's two copies each load the state word right after their first `try_wait`,
    // before the `vote`, and only where that lane's test passed: unpredicated, the H200 issued
    // the load before the wait had seen the phase complete and read a stale word.
    let early: Vec<_> = waits
        .iter()
        .filter(|(_, next)| next.contains("ld.shared.u32"))
        .collect();
    assert_eq!(early.len(), 2, "{waits:#?}");
    for (p, next) in early {
        assert!(next.starts_with(&format!("@{p} ld.shared.u32 ")), "{next}");
    }
}

/// How many receives of `ptx` first test whether the channel has closed before (a branch
/// around the wait to the receive's end).
fn closed_tests(ptx: &str) -> usize {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with('@') && l.contains(" bra $recv_done_"))
        .count()
}

#[test]
fn a_receive_whose_end_leaves_the_loop_does_not_test_for_an_earlier_end() {
    // `while let` over the whole stream: after the end nothing receives again, so the
    // copies' receives keep no "closed" register and test none.
    let k = one(handoff(2, summing_consumer()));
    assert_eq!(closed_tests(&k.ptx), 0, "{}", k.ptx);
    // Receiving again after the loop must answer `None` at once: both receives test.
    let again_after = quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    };
    assert_eq!(
        closed_tests(&one(handoff(2, again_after)).ptx),
        3,
        "the first loop's two copies and the second loop"
    );
    // A receive inside a loop that goes on after the end (here, an outer loop) tests.
    let outer_loop = quote! {
        let mut acc = 0u32;
        for _ in 0..2 {
            while let Some(slot) = rx.recv().await {
                acc += slot[0];
            }
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    };
    assert_eq!(closed_tests(&one(handoff(2, outer_loop)).ptx), 1);
    // One that unwraps never answers the end (the end fails the launch): it tests nothing.
    let unwrapped = quote! {
        let mut acc = 0u32;
        for _ in 0..4 {
            let slot = rx.recv().await.unwrap();
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    };
    assert_eq!(closed_tests(&one(handoff(2, unwrapped)).ptx), 0);
}

/// A producer that copies `$src` into each slot of a 16 KiB ring of 2 with `copy_from`.
fn bulk_producer(src: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn copies(items: u32, x: &[u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 4096], 2>();
                join!(
                    on_warps(0..1, produce(items, x, tx)),
                    on_warps(1..2, consume(rx, out)),
                )
                .await;
            }

            async fn produce(items: u32, x: &[u32], mut tx: Sender<[u32; 4096], 2>) {
                for i in 0..items as usize {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(#src).await;
                    slot.send();
                }
            }

            async fn consume(mut rx: Receiver<[u32; 4096], 2>, out: &mut [u32]) {
                let mut acc = 0u32;
                while let Some(slot) = rx.recv().await {
                    acc += slot[0];
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }
        }
    }
}

#[test]
fn a_loop_copying_the_same_source_has_a_version_without_the_tail() {
    // The same source every time: tested once before the loop; the first version has no tail
    // loop, the second (for an unaligned source, or a tail) has the tail loops of its copies.
    let ptx = one(bulk_producer(quote! { &x[0..4096] })).ptx;
    let first = ptx
        .find("// the loop's version whose bulk copies have no tail")
        .expect("two versions");
    let second = ptx
        .find("// the loop's version with the copies' tails")
        .expect("two versions");
    assert!(first < second);
    assert!(
        !ptx[first..second].contains("$tail_"),
        "{}",
        &ptx[first..second]
    );
    assert_eq!(
        ptx[second..].matches("bra.uni $tail_end_").count(),
        2,
        "two copies"
    );
    // A source that changes with the iteration: one version, whose copies test their tails.
    let ptx = one(bulk_producer(quote! { &x[i..i + 4096] })).ptx;
    assert!(!ptx.contains("the loop's version"));
    assert_eq!(ptx.matches("bra.uni $tail_end_").count(), 2);
}
