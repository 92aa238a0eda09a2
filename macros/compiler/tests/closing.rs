//! Closing a channel from the receiving side, in the PTX (`docs/design.md`, "Closing from the
//! receiving side"): what a channel no receiver closes keeps, what the producer's first test of a
//! closable channel reads, and the receiver's close with one receiving warp and with several.

use gpu_async_compiler::{compile, CompiledKernel};
use proc_macro2::TokenStream;
use quote::quote;

/// A producer of `n` items and a consumer on `consumer_warps` warps whose loop is `consume`.
fn kernel(consumer_warps: u32, consume: TokenStream) -> CompiledKernel {
    let warps = consumer_warps + 1;
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = #warps)]
            pub async fn relay(n: u32, k: u32, out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 32], 4>();
                join!(
                    on_warps(0..1, produce(n, tx)),
                    on_warps(1..#warps, consume(k, rx, out)),
                )
                .await;
            }

            async fn produce(n: u32, mut tx: Sender<[u32; 32], 4>) {
                for i in 0..n {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.par_iter_mut().for_each(|v| *v = i);
                    slot.send();
                }
            }

            async fn consume(k: u32, rx: Receiver<[u32; 32], 4>, out: &mut [u32]) {
                #consume
            }
        }
    };
    let mut kernels = compile(module).expect("compiles");
    kernels.remove(0)
}

/// Takes every item.
fn to_the_end() -> TokenStream {
    quote! {
        let mut sum = 0u32;
        while let Some(slot) = rx.recv().await {
            sum += slot[0];
        }
        out[0] = sum;
    }
}

/// Takes `k` items, then drops the receiver.
fn stops_early() -> TokenStream {
    quote! {
        let mut sum = 0u32;
        for _ in 0..k {
            let Some(slot) = rx.recv().await else { break };
            sum += slot[0];
        }
        drop(rx);
        out[0] = sum;
    }
}

/// The PTX lines of the producer's reserve: from its comment to the next comment.
fn reserve_lines(ptx: &str) -> Vec<&str> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("// reserve"))
        .expect("a reserve");
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("//"))
        .copied()
        .collect()
}

/// The PTX lines of the receiver's close.
fn close_lines(ptx: &str) -> Vec<&str> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("// close the receiving end"))
        .expect("a receiver's close");
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("//") && !l.starts_with('$'))
        .copied()
        .collect()
}

#[test]
fn a_channel_no_receiver_closes_keeps_the_plain_protocol() {
    let k = kernel(1, to_the_end());
    let c = &k.ir.channels[0];
    assert!(!c.closable && c.debt_offset.is_none(), "{}", k.ir_text);
    assert!(!k.ptx.contains("close the receiving end"));
    assert!(!k.ptx.contains("atom.shared.exch"));
}

#[test]
fn the_first_test_of_a_closable_reserve_reads_nothing_else() {
    let k = kernel(1, stops_early());
    assert!(k.ir.channels[0].closable, "{}", k.ir_text);
    let lines = reserve_lines(&k.ptx);
    let first = lines
        .iter()
        .position(|l| l.starts_with("mbarrier.try_wait"))
        .expect("a wait");
    assert!(
        lines[first + 1].starts_with("vote.sync.all.pred"),
        "{lines:#?}"
    );
    assert!(lines[first + 2].contains(" bra $waited"), "{lines:#?}");
    // No load before the first test either.
    assert!(
        lines[..first].iter().all(|l| !l.starts_with("ld.")),
        "{lines:#?}"
    );
}

#[test]
fn a_receiver_of_one_warp_arrives_on_every_slot_at_once() {
    let k = kernel(1, stops_early());
    assert_eq!(k.ir.channels[0].debt_offset, None, "{}", k.ir_text);
    let close = close_lines(&k.ptx);
    let arrivals = close
        .iter()
        .filter(|l| l.contains("mbarrier.arrive"))
        .count();
    // One `arrive` (the last warp) and one `arrive_drop` (the others) per slot of the ring.
    assert_eq!(arrivals, 2 * 4, "{close:#?}");
    assert!(close.iter().all(|l| !l.contains("test_wait")), "{close:#?}");
}

#[test]
fn a_receiver_of_several_warps_owes_the_phases_it_is_ahead_on_as_debts() {
    let k = kernel(4, stops_early());
    let c = &k.ir.channels[0];
    assert!(c.closable && c.debt_offset.is_some(), "{}", k.ir_text);
    let close = close_lines(&k.ptx);
    let count = |what: &str| close.iter().filter(|l| l.contains(what)).count();
    // Per slot: is the phase before the one owed complete? Else a debt, not an arrival.
    assert_eq!(count("mbarrier.test_wait.parity"), 4, "{close:#?}");
    assert_eq!(count("red.shared.add.u32"), 4, "{close:#?}");
    assert_eq!(count("mbarrier.arrive"), 2 * 4, "{close:#?}");
    // The producer pays debts where it waits: after its first test fails (not before it), and
    // in its slow loop.
    let reserve = reserve_lines(&k.ptx);
    let first_exch = reserve
        .iter()
        .position(|l| l.contains("atom.shared.exch.b32"))
        .expect("a debt paid");
    let first_test = reserve
        .iter()
        .position(|l| l.starts_with("mbarrier.try_wait"))
        .expect("a wait");
    assert!(first_test < first_exch, "{reserve:#?}");
    // Arriving for the closed warps it took the debt of: `arrive_drop` with a count.
    let paid = reserve
        .iter()
        .filter(|l| l.contains("mbarrier.arrive_drop") && l.split(',').count() == 3)
        .count();
    assert!(paid >= 2, "{reserve:#?}");
}
