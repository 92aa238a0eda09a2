//! How the PTX writer meets a role's threads and spreads index loops over them: the role
//! barrier of a kernel's only role is `bar.sync 0` (a role of some warps keeps its mbarrier),
//! and a loop over a few whole steps of indices issues every step's loads before the first
//! step's store, computing the later steps' addresses from the first step's.

use gpu_async_compiler::compile;
use proc_macro2::TokenStream;
use quote::quote;

/// The PTX of the one kernel of `module`.
fn ptx(module: TokenStream) -> String {
    let mut kernels = compile(module).unwrap_or_else(|d| panic!("{:?}", d.messages()));
    kernels.remove(0).ptx
}

/// A tile transpose on `warps` warps: 1024 items, `1024 / (32 warps)` steps per thread.
fn transpose(warps: usize) -> TokenStream {
    quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = #warps)]
            pub async fn t(x: &[f32], y: &mut [f32], n: usize) {
                let mut tile = shared_array_2d::<f32, 32, 32>();
                join!(on_warps(0..#warps, r(x, y, n, &mut tile))).await;
            }
            async fn r(x: &[f32], y: &mut [f32], n: usize, tile: &mut SharedArray2d<f32, 32, 32>) {
                let (r0, c0) = (block_index() / (n / 32) * 32, block_index() % (n / 32) * 32);
                (0..1024usize).into_par_iter().for_each(|i| {
                    let v = unsafe { *x.get_unchecked((r0 + i / 32) * n + c0 + i % 32) };
                    tile[i / 32][i % 32] = v;
                });
                (0..1024usize).into_par_iter().for_each(|i| {
                    y[(c0 + i / 32) * n + r0 + i % 32] = tile[i % 32][i / 32];
                });
            }
        }
    }
}

#[test]
fn the_role_barrier_of_a_kernels_only_role_is_bar_sync_0() {
    let ptx = ptx(transpose(8));
    assert!(!ptx.contains("mbarrier"), "{ptx}");
    assert!(!ptx.contains("fence.mbarrier_init"), "{ptx}");
    // The set-up's and the role barrier between the loops.
    assert!(ptx.matches("bar.sync 0;").count() >= 2, "{ptx}");
}

#[test]
fn a_role_of_some_of_the_warps_keeps_an_mbarrier() {
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 3)]
            pub async fn k(x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 256], 2>();
                join!(on_warps(0..1, load(x, tx)), on_warps(1..3, total(rx, y))).await;
            }
            async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
                for tile in block_tiles(x.len(), 256) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }
            async fn total(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
                let mut acc = 0.0f32;
                while let Some(slot) = rx.recv().await {
                    acc += slot.par_iter().sum();
                }
                y[0..1].par_iter_mut().for_each(|o| *o = acc);
            }
        }
    });
    // The reduction's role barrier: two warps of three.
    assert!(ptx.contains("mbarrier.init.shared::cta.b64"), "{ptx}");
    assert!(!ptx.contains("bar.sync 0;\n    add.u32"), "{ptx}");
}

#[test]
fn index_steps_issue_every_load_before_the_first_shared_store() {
    for warps in [4, 8] {
        let ptx = ptx(transpose(warps));
        let steps = 1024 / (32 * warps);
        let first_store = ptx.find("st.shared.f32").expect("the tile's stores");
        let loads_before = ptx[..first_store].matches("ld.global.f32").count();
        assert_eq!(loads_before, steps, "{warps} warps:\n{ptx}");
    }
}

#[test]
fn later_steps_compute_their_addresses_from_the_first_steps() {
    for warps in [2usize, 4, 8] {
        let ptx = ptx(transpose(warps));
        let steps = 1024 / (32 * warps);
        let loads: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.trim().strip_prefix("ld.global.f32 "))
            .map(|l| l.split(['[', ']']).nth(1).expect("a load's address"))
            .collect();
        assert_eq!(loads.len(), steps, "{warps} warps:\n{ptx}");
        // Step k's address is step 0's plus k * (32 * warps / 32) rows of n floats: one `mad`
        // by the parameter `n`, not the index arithmetic again.
        for (k, addr) in loads.iter().enumerate().skip(1) {
            let def = ptx
                .lines()
                .map(str::trim)
                .find(|l| l.split([' ', ',']).nth(1) == Some(*addr))
                .unwrap_or_else(|| panic!("no definition of {addr}:\n{ptx}"));
            let rows = k * warps * 4;
            assert!(
                def.starts_with(&format!("mad.lo.u64 {addr}, %rd"))
                    && def.ends_with(&format!(", {rows}, {};", loads[0])),
                "{warps} warps, step {k}: {def}\n{ptx}"
            );
        }
        // The index divided by the tile's width in step 0 only.
        // (`i / 32` is in the tile's row and in the source's row.)
        let start = ptx.find("// par_for").expect("the first loop");
        let end = ptx.find("st.shared.f32").expect("the tile's stores");
        let shifts = ptx[start..end].matches("shr.u64").count();
        assert_eq!(shifts, 2, "{warps} warps:\n{ptx}");
    }
}

#[test]
fn a_shift_of_a_value_that_wraps_between_steps_is_computed_in_every_step() {
    // `i - 100` is below zero (wrapped) in thread t's first steps while t + 64 k < 100, and
    // not in the later ones: step k's shift is not step 0's plus a constant.
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 2)]
            pub async fn k(y: &mut [u32]) {
                join!(on_warps(0..2, r(y))).await;
            }
            async fn r(y: &mut [u32]) {
                assert!(y.len() == 1024, "y holds 1024 items");
                (0..1024usize).into_par_iter().for_each(|i| {
                    y[i] = (i as u32).wrapping_sub(100) >> 4;
                });
            }
        }
    });
    let start = ptx.find("// par_for").expect("the loop");
    assert_eq!(ptx[start..].matches("shr.u32").count(), 16, "{ptx}");
}

#[test]
fn a_narrowed_product_with_a_parameter_is_computed_in_every_step() {
    // `(i * n) as u32`: step k adds k * 64 * n, a 64-bit product; the narrowed value is
    // computed per step (a 32-bit `mad` cannot take the 64-bit `n`).
    let ptx = ptx(quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 2)]
            pub async fn k(y: &mut [u32], n: usize) {
                join!(on_warps(0..2, r(y, n))).await;
            }
            async fn r(y: &mut [u32], n: usize) {
                assert!(y.len() == 1024, "y holds 1024 items");
                (0..1024usize).into_par_iter().for_each(|i| {
                    y[i] = (i * n) as u32;
                });
            }
        }
    });
    for line in ptx.lines().filter(|l| l.contains("mad.lo.u32")) {
        assert!(!line.contains("%rd"), "a 64-bit operand in {line}:\n{ptx}");
    }
}
