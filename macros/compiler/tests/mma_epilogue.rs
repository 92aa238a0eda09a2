//! The epilogue of tensor-core mmas: `store_scaled` writes `alpha` times the accumulator plus
//! `beta` times the element there, reading it only when `beta` is not 0, and its errors.

mod common;

use common::{assert_assembles_without_spills, assert_error, one};
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A kernel of one loader warp and a compute warpgroup that stores the product of one stage
/// with `store` (the body's last statement).
fn epilogue(out: TokenStream, store: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 8, idle_warps)]
            pub async fn k(a: &Matrix<bf16>, alpha: f32, beta: f32, c: &mut [#out]) {
                let (tx, rx) = channel::<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, alpha, beta, c))).await;
            }

            async fn load(a: &Matrix<bf16>, mut tx: Sender<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>) {
                let Some(mut stage) = tx.reserve().await else { return };
                stage.0.load(a, [0, 0]).await;
                stage.1.load(a, [0, 0]).await;
                stage.send();
            }

            async fn compute(mut rx: Receiver<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>, alpha: f32, beta: f32, c: &mut [#out]) {
                let Some(stage) = rx.recv().await else { return };
                let mut acc = Accumulator::<64, 64>::zero();
                acc.mma(&stage.0, &stage.1).await;
                #store
            }
        }
    }
}

#[test]
fn store_scaled_reads_the_destination_only_when_beta_is_not_zero() {
    for (out, load) in [
        (quote!(f32), "ld.global.f32"),
        (quote!(bf16), "ld.global.b16"),
    ] {
        let k = one(epilogue(
            out,
            quote!(acc.store_scaled(c, 64, [0, 0], alpha, beta);),
        ));
        // `beta != 0`, unordered so that a NaN beta reads too (the simulator's `!=`).
        assert!(k.ptx.contains("setp.neu.f32"), "{}", k.ptx);
        // 32 values, in the unchecked and the checked path each.
        assert_eq!(k.ptx.matches("mul.rn.f32").count(), 64, "{}", k.ptx);
        assert_eq!(k.ptx.matches("fma.rn.f32").count(), 64, "{}", k.ptx);
        // Every load is predicated.
        let loads: Vec<&str> = k.ptx.lines().filter(|l| l.contains(load)).collect();
        assert_eq!(loads.len(), 64, "{}", k.ptx);
        assert!(
            loads.iter().all(|l| l.trim_start().starts_with('@')),
            "{loads:?}"
        );
    }
}

#[test]
fn store_scaled_takes_f32_factors() {
    assert_error(
        epilogue(
            quote!(f32),
            quote!(acc.store_scaled(c, 64, [0, 0], 2, beta);),
        ),
        "expected `f32`",
    );
    assert_error(
        epilogue(quote!(f32), quote!(acc.store_scaled(c, 64, [0, 0], alpha);)),
        "takes 5 arguments",
    );
}

#[needs_ptxas]
fn a_scaled_store_assembles_without_warnings() {
    for out in [quote!(f32), quote!(bf16)] {
        let k = one(epilogue(
            out,
            quote!(acc.store_scaled(c, 64, [0, 0], alpha, beta);),
        ));
        assert_assembles_without_spills(&k);
    }
}
