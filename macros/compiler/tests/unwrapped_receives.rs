//! `rx.recv().await.unwrap()`: a receive whose end fails the launch. No branch depends on the
//! slot's state word, and none comes before the wait; the role raises the panic at its slow
//! waits, its loops' watches, its other panics and its end.

mod common;

use common::one;
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A producer of `items` items and a consumer whose body is `consume`, on a ring of 2.
fn handoff(consume: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn handoff(items: u32, taken: u32, out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 1], 2>();
                join!(
                    on_warps(0..1, produce(items, tx)),
                    on_warps(1..2, consume(taken, rx, out)),
                )
                .await;
            }

            async fn produce(items: u32, mut tx: Sender<[u32; 1], 2>) {
                for i in 0..items {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot[0] = i;
                    slot.send();
                }
            }

            async fn consume(taken: u32, mut rx: Receiver<[u32; 1], 2>, out: &mut [u32]) {
                #consume
            }
        }
    }
}

/// `taken` receives that unwrap, summed into `out[0]`.
fn unwrapping_consumer() -> TokenStream {
    quote! {
        let mut acc = 0u32;
        for _ in 0..taken {
            let slot = rx.recv().await.unwrap();
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    }
}

/// The lines of `ptx`, trimmed.
fn lines(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).collect()
}

/// The predicates set from a receive's state word: `(predicate, state register)` of each
/// `setp.*.u32 p, state, 0` whose `state` an `ld.shared.u32` right after a wait's `$waited`
/// label loaded.
fn state_predicates(ptx: &str) -> Vec<(String, String)> {
    let lines = lines(ptx);
    let states: Vec<String> = lines
        .windows(4)
        .filter(|w| w[0].starts_with("$waited_"))
        .flat_map(|w| w[1..].iter())
        .filter_map(|l| {
            let dst = l.strip_prefix("ld.shared.u32 ")?.split(',').next()?;
            Some(dst.to_string())
        })
        .collect();
    lines
        .iter()
        .filter_map(|l| {
            let rest = l
                .strip_prefix("setp.eq.u32 ")
                .or_else(|| l.strip_prefix("setp.ne.u32 "))?;
            let mut ops = rest.trim_end_matches(';').split(", ");
            let (p, state, zero) = (ops.next()?, ops.next()?, ops.next()?);
            (zero == "0" && states.iter().any(|s| s == state))
                .then(|| (p.to_string(), state.to_string()))
        })
        .collect()
}

#[test]
fn no_branch_depends_on_the_state_word_of_a_receive_that_unwraps() {
    let k = one(handoff(unwrapping_consumer()));
    let preds = state_predicates(&k.ptx);
    assert!(!preds.is_empty(), "{}", k.ptx);
    // The word is loaded once, after the wait: none of the waits' first tests loads it.
    assert!(
        !lines(&k.ptx)
            .iter()
            .any(|l| l.starts_with('@') && l.contains(" ld.shared.u32 ")),
        "{}",
        k.ptx
    );
    for (p, _) in &preds {
        for l in lines(&k.ptx) {
            let branches_on_it = l.contains(" bra ")
                && (l.starts_with(&format!("@{p} ")) || l.starts_with(&format!("@!{p} ")));
            assert!(!branches_on_it, "`{l}` branches on the state word's {p}");
        }
        // Its one use: the failed site, set where the slot holds the end-of-stream marker.
        let uses: Vec<&str> = lines(&k.ptx)
            .into_iter()
            .filter(|l| {
                l.split(|c: char| !c.is_alphanumeric() && c != '%')
                    .any(|w| w == p)
            })
            .filter(|l| !l.starts_with("setp."))
            .collect();
        assert!(
            uses.iter()
                .all(|l| l.starts_with(&format!("@{p} mov.u32 "))),
            "{uses:#?}"
        );
    }
    // Nothing is tested before the wait: ptxas moves a first test that follows straight-line
    // code up into it, which overlaps the test's latency with that code.
    let lines = lines(&k.ptx);
    for (i, _) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == "// recv ch0")
    {
        let before_wait: Vec<&&str> = lines[i..]
            .iter()
            .take_while(|l| !l.starts_with("mbarrier.try_wait"))
            .collect();
        assert!(
            !before_wait.iter().any(|l| l.contains(" bra ")),
            "{before_wait:#?}"
        );
    }
    // The same consumer with `let .. else`, which answers the end, branches on it.
    let answered = one(handoff(quote! {
        let mut acc = 0u32;
        for _ in 0..taken {
            let Some(slot) = rx.recv().await else { return };
            acc += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    }));
    assert!(!answered.ptx.contains("$unwrap_failed"), "{}", answered.ptx);
}

#[test]
fn the_role_raises_the_failure_where_it_would_wait_loop_or_end() {
    let k = one(handoff(unwrapping_consumer()));
    let lines = lines(&k.ptx);
    let raises: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with('@') && l.ends_with("bra $unwrap_failed_1;"))
        .map(|(i, _)| i)
        .collect();
    // Each slow wait of the consumer (one per copy of its unrolled loop), its loop's watch and
    // its end; never the producer (role 0), which has no receive that unwraps.
    assert!(raises.len() >= 3, "{}", k.ptx);
    assert!(!k.ptx.contains("$unwrap_failed_0"), "{}", k.ptx);
    let stubs = lines.iter().filter(|l| **l == "$unwrap_failed_1:").count();
    assert_eq!(stubs, 1, "{}", k.ptx);
    // The stub writes the failed site's register (set to u32::MAX at the role's start) into
    // the failure record.
    let failed = lines
        .iter()
        .find_map(|l| l.strip_prefix("mov.u32 ")?.strip_suffix(", 4294967295;"))
        .unwrap_or_else(|| panic!("no failed-site register in {}", k.ptx));
    let stub = lines
        .iter()
        .position(|l| *l == "$unwrap_failed_1:")
        .unwrap_or(0);
    let stores_it = lines[stub..]
        .iter()
        .take_while(|l| !l.starts_with("bra "))
        .any(|l| l.starts_with("st.volatile.global.u32") && l.ends_with(&format!(", {failed};")));
    assert!(stores_it, "{:#?}", &lines[stub..]);
    // The last raise is at the role's end, after its last receive.
    let last_recv = lines
        .iter()
        .rposition(|l| l.starts_with("// recv ch0"))
        .unwrap_or(0);
    assert!(raises.iter().any(|&i| i > last_recv), "{}", k.ptx);
}

#[test]
fn a_later_panic_of_the_role_reports_the_unwrap_that_met_the_end() {
    // The index comes from the slot: past the end it is the marker slot's stale value, and the
    // bounds check may fail first; its stub reports the failed site where one is set.
    let k = one(handoff(quote! {
        let slot = rx.recv().await.unwrap();
        let i = slot[0] as usize;
        drop(slot);
        out[i..i + 1].par_iter_mut().for_each(|o| *o = 1);
    }));
    let lines = lines(&k.ptx);
    let panic_stub = lines
        .iter()
        .position(|l| l.starts_with("$panic_") && l.ends_with(':'))
        .unwrap_or_else(|| panic!("no panic stub in {}", k.ptx));
    assert!(
        lines[panic_stub + 1].starts_with("setp.ne.u32")
            && lines[panic_stub + 2].starts_with("selp.b32"),
        "{:#?}",
        &lines[panic_stub..panic_stub + 4]
    );
}

#[test]
fn after_a_loop_that_answered_the_end_an_unwrap_fails_without_waiting() {
    // The `while let` loop leaves on the end; the unwrap after it fails without waiting (the
    // ring is past the marker: a wait would never end): the closed flag sets the failed site
    // and skips the wait.
    let k = one(handoff(quote! {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot[0];
        }
        let last = rx.recv().await.unwrap();
        acc += last[0];
        drop(last);
        out[0..1].par_iter_mut().for_each(|o| *o = acc);
    }));
    let lines = lines(&k.ptx);
    let unwrap_recv = lines
        .iter()
        .rposition(|l| l.starts_with("// recv ch0"))
        .unwrap_or(0);
    let (set, skip) = (lines[unwrap_recv + 1], lines[unwrap_recv + 2]);
    let closed = set.split(' ').next().unwrap_or("");
    assert!(
        closed.starts_with('@') && set.contains(" mov.u32 "),
        "{set}"
    );
    assert!(
        skip.starts_with(&format!("{closed} bra $recv_done_")),
        "{skip}"
    );
}

#[needs_ptxas]
fn a_kernel_with_receives_that_unwrap_assembles_without_spills() {
    common::assert_assembles_without_spills(&one(handoff(unwrapping_consumer())));
}
