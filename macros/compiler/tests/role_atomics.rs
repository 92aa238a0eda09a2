//! Atomics in role code: the role's first thread runs the operation, between role barriers, and
//! its result reaches the other threads of the role (a shuffle in one warp, the role's scratch in
//! several); an operation whose result is unused is the first thread's `red` alone.

mod common;

use common::{assert_assembles_without_spills, one};
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A kernel whose role of `warps` warps (from warp 0) runs `body` on `counters`.
fn role_kernel(warps: u32, body: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;
            use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

            #[kernel(warps = 8, idle_warps)]
            pub async fn k(counters: &[AtomicU64], out: &mut [u64]) {
                join!(on_warps(0..#warps, run(counters, out))).await;
            }

            async fn run(counters: &[AtomicU64], out: &mut [u64]) {
                #body
            }
        }
    }
}

/// The lines of `ptx` that hold `needle`.
fn lines_with<'a>(ptx: &'a str, needle: &str) -> Vec<&'a str> {
    ptx.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn one_warp_takes_the_first_lanes_result_by_a_shuffle() {
    let k = one(role_kernel(
        1,
        quote! { out[0] = counters[0].fetch_add(1, Ordering::Relaxed); },
    ));
    let atoms = lines_with(&k.ptx, "atom.relaxed.gpu.global.add.u64");
    assert_eq!(atoms.len(), 1, "{}", k.ptx);
    // The other lanes branch around it, then take lane 0's two words.
    assert!(k.ptx.contains("bra $atomic_once"), "{}", k.ptx);
    assert_eq!(
        lines_with(&k.ptx, "shfl.sync.idx.b32").len(),
        2,
        "{}",
        k.ptx
    );
    assert!(!k.ptx.contains("st.shared"), "{}", k.ptx);
}

#[test]
fn several_warps_take_the_result_through_the_role_scratch() {
    let k = one(role_kernel(
        4,
        quote! { out[0] = counters[0].fetch_add(1, Ordering::Relaxed); },
    ));
    // Stored by the first thread, read by all between two role barriers (the block's, for
    // the kernel's only role).
    let lines: Vec<&str> = k.ptx.lines().map(str::trim).collect();
    let store = lines.iter().position(|l| l.contains("st.shared.b64"));
    let Some(store) = store else {
        panic!("no store to the scratch: {}", k.ptx)
    };
    assert!(lines[store].starts_with('@'), "{}", lines[store]);
    assert_eq!(
        lines[store + 1..store + 4],
        ["bar.sync 0;", lines[store + 2], "bar.sync 0;"],
        "{}",
        k.ptx
    );
    assert!(lines[store + 2].starts_with("ld.shared.b64"), "{}", k.ptx);
    assert!(!k.ptx.contains("shfl.sync"), "{}", k.ptx);
}

#[test]
fn an_unused_result_is_one_red_by_the_first_thread() {
    let k = one(role_kernel(
        4,
        quote! { counters[0].fetch_add(1, Ordering::Relaxed); },
    ));
    assert_eq!(
        lines_with(&k.ptx, "red.relaxed.gpu.global.add.u64").len(),
        1,
        "{}",
        k.ptx
    );
    // Nothing to hand out: no scratch; the role's barriers order it with the role's other
    // accesses.
    assert!(!k.ptx.contains("st.shared"), "{}", k.ptx);
    let lines: Vec<&str> = k.ptx.lines().map(str::trim).collect();
    let Some(red) = lines.iter().position(|l| l.starts_with("red.")) else {
        panic!("no red: {}", k.ptx)
    };
    assert_eq!(lines[red - 2], "bar.sync 0;", "{}", k.ptx);
    assert!(lines[red - 1].starts_with("@!") && lines[red + 1].starts_with("$atomic_once"));
    assert_eq!(lines[red + 2], "bar.sync 0;", "{}", k.ptx);
}

#[test]
fn a_load_in_role_code_is_every_threads_own() {
    let k = one(role_kernel(
        4,
        quote! {
            let v = counters[0].load(Ordering::Acquire);
            out.par_iter_mut().for_each(|o| *o = v);
        },
    ));
    assert!(!k.ptx.contains("$atomic_once"), "{}", k.ptx);
    assert_eq!(
        lines_with(&k.ptx, "ld.acquire.gpu.global.u64").len(),
        1,
        "{}",
        k.ptx
    );
}

#[needs_ptxas]
fn role_atomics_assemble() {
    for warps in [1, 4] {
        let k = one(role_kernel(
            warps,
            quote! {
                let t = counters[0].fetch_add(1, Ordering::Relaxed);
                let won = counters[1].compare_exchange(0, t + 1, Ordering::AcqRel, Ordering::Relaxed).is_ok();
                if won {
                    counters[2].fetch_max(t, Ordering::Relaxed);
                }
                out[0] = t;
            },
        ));
        assert_assembles_without_spills(&k);
    }
}
