//! The epilogue through shared memory: what `acc.store_tile` (swizzled shared stores of a block
//! of the accumulator's columns) and `tile.store` (a TMA store of a received tile, its proxy
//! fence at the sender's `send`, its wait at the slot's release and at the role's end) compile
//! to, and the errors of their calls.

mod common;

use common::{assert_assembles_without_spills, assert_error, one};
use gpu_async_compiler::ir::ParamKind;
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A loader that fills `Tile<f32, 32, 32>` slots from `a`, and a storer that writes each into
/// `c` 32 rows lower.
fn round_trip() -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn round_trip(a: &Matrix<f32>, c: &mut Matrix<f32>) {
                let (tx, rx) = channel::<Tile<f32, 32, 32>, 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, c))).await;
            }

            async fn load(m: &Matrix<f32>, mut tx: Sender<Tile<f32, 32, 32>, 2>) {
                let Some(mut slot) = tx.reserve().await else { return };
                slot.load(m, [0, 0]).await;
                slot.send();
            }

            async fn store(mut rx: Receiver<Tile<f32, 32, 32>, 2>, c: &mut Matrix<f32>) {
                let Some(tile) = rx.recv().await else { return };
                tile.store(c, [32, 0]).await;
            }
        }
    }
}

/// Two warpgroups' product written into tiles of `TILE` (a `Tile<T, 128, C>` type) by
/// `acc.store_tile`, `extra` spliced in before each, and stored into `c`.
fn epilogue(elem: TokenStream, cols: usize, extra: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;
            const C: usize = #cols;

            #[kernel(warps = 12, idle_warps)]
            pub async fn epilogue(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut Matrix<#elem>) {
                let (tx, rx) = channel::<(Tile<bf16, 128, 64>, Tile<bf16, 128, 64>), 2>();
                let (ctx, crx) = channel::<Tile<#elem, 128, C>, 2>();
                join!(
                    on_warps(0..1, load(a, b, tx)),
                    on_warps(1..2, store(crx, c)),
                    on_warps(4..12, compute(rx, ctx))
                )
                .await;
            }

            async fn load(
                a: &Matrix<bf16>,
                b: &Matrix<bf16>,
                mut tx: Sender<(Tile<bf16, 128, 64>, Tile<bf16, 128, 64>), 2>,
            ) {
                let Some(mut stage) = tx.reserve().await else { return };
                stage.0.load(a, [0, 0]).await;
                stage.1.load(b, [0, 0]).await;
                stage.send();
            }

            async fn store(mut crx: Receiver<Tile<#elem, 128, C>, 2>, c: &mut Matrix<#elem>) {
                let mut j = 0usize;
                while let Some(tile) = crx.recv().await {
                    tile.store(c, [0, j * C]).await;
                    j += 1;
                }
            }

            async fn compute(
                mut rx: Receiver<(Tile<bf16, 128, 64>, Tile<bf16, 128, 64>), 2>,
                mut ctx: Sender<Tile<#elem, 128, C>, 2>,
            ) {
                let Some(stage) = rx.recv().await else { return };
                let mut acc = Accumulator::<128, 128>::zero();
                acc.mma(&stage.0, &stage.1).await;
                for j in 0..128 / C {
                    let Some(mut out) = ctx.reserve().await else { return };
                    #extra
                    acc.store_tile(&mut out, j * C);
                    out.send();
                }
            }
        }
    }
}

#[test]
fn a_tile_store_is_a_bulk_group_that_the_release_and_the_role_end_wait_for() {
    let k = one(round_trip());
    let ptx = &k.ptx;
    let store = ptx
        .find("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd")
        .expect("a TMA store");
    let commit = ptx[store..]
        .find("cp.async.bulk.commit_group;")
        .map(|at| store + at)
        .expect("the store's group committed");
    let read = ptx[commit..]
        .find("cp.async.bulk.wait_group.read 0;")
        .map(|at| commit + at)
        .expect("the release waits for the store to have read the slot");
    let arrive = ptx[read..]
        .find("mbarrier.arrive.release.cta.shared::cta.b64")
        .map(|at| read + at)
        .expect("the release's arrival");
    assert!(
        ptx[arrive..].contains("cp.async.bulk.wait_group 0;"),
        "the storer's end waits for its stores to complete"
    );
    // The loader's generic writes (none here but the TMA's) are fenced for the store's proxy
    // at its send.
    let send = ptx.find("// send ch0").expect("the loader's send");
    assert!(ptx[send..].starts_with("// send ch0\n    fence.proxy.async.shared::cta;"));
    assert!(k
        .ir_text
        .contains("param c: &mut Matrix<f32> = (ptr v3, rows v4, cols v5), map0 32 x 32"));
    assert!(k.ir_text.contains("tile_store ch0 -> c.map0 at ["));
    // The store's box is the tile's, as a load's is.
    let ParamKind::Matrix { boxes, mutable, .. } = &k.ir.params[1].kind else {
        panic!("`c` is not a matrix parameter: {:?}", k.ir.params[1].kind);
    };
    assert!(*mutable);
    assert_eq!(boxes, &vec![gpu_async_wire::TileBox { rows: 32, cols: 32 }]);
}

#[test]
fn store_tile_writes_swizzled_pairs_one_column_block_per_branch() {
    // f32 tiles of 32 columns: 128-byte rows, the 128-byte swizzle (mask 0x70), four blocks of
    // the accumulator's 128 columns, each 8 pair stores per thread (4 column groups, 2 rows):
    // the thread's 64 values in 32 stores.
    let k = one(epilogue(quote!(f32), 32, quote!()));
    assert!(k
        .ir_text
        .contains("acc_tile.f32 64 values -> tile 128 x 32 at shared ["));
    assert!(k.ir_text.contains("u32 = const 112\n"));
    assert_eq!(k.ptx.matches("st.shared.v2.f32 [").count(), 32);
    assert_eq!(k.ptx.matches("$acc_tile_next_").count(), 2 * 4);
    // bf16 tiles of 64 columns (128 bytes): pairs packed into one b32 each, low column low.
    let k = one(epilogue(quote!(bf16), 64, quote!()));
    assert_eq!(k.ptx.matches("cvt.rn.bf16x2.f32 ").count(), 32);
    assert_eq!(k.ptx.matches("st.shared.b32 [").count(), 32);
    // f32 tiles of 64 columns: two 128-byte column blocks, the second 128 rows of 128 bytes on.
    let k = one(epilogue(quote!(f32), 64, quote!()));
    assert!(
        k.ptx.contains("+16384], {"),
        "the second column block's stores"
    );
}

#[test]
fn store_tile_and_tile_store_errors_say_what_to_write() {
    assert_error(
        epilogue(quote!(f32), 48, quote!()),
        "the tile's 48 columns do not divide the accumulator's 128: `store_tile` writes a block of C of them, so C is one of the divisors of N that are multiples of 8",
    );
    assert_error(
        epilogue(quote!(f32), 32, quote!(acc.store_tile(&out, 0);)),
        "`store_tile` writes the slot: pass it as `&mut slot`",
    );
    assert_error(
        epilogue(quote!(f32), 32, quote!(acc.store_tile(out, 0);)),
        "pass the reserved tile slot mutably: `acc.store_tile(&mut slot, col)`",
    );
    // A tile of one element type into a matrix of another.
    let mismatched = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn k(a: &Matrix<f32>, c: &mut Matrix<bf16>) {
                let (tx, rx) = channel::<Tile<f32, 32, 32>, 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, c))).await;
            }

            async fn load(a: &Matrix<f32>, mut tx: Sender<Tile<f32, 32, 32>, 2>) {
                let Some(mut slot) = tx.reserve().await else { return };
                slot.load(a, [0, 0]).await;
                slot.send();
            }

            async fn store(mut rx: Receiver<Tile<f32, 32, 32>, 2>, c: &mut Matrix<bf16>) {
                let Some(tile) = rx.recv().await else { return };
                tile.store(c, [0, 0]).await;
            }
        }
    };
    assert_error(
        mismatched,
        "`store` writes a tile of `f32` into a `&mut Matrix<f32>`; found `&mut Matrix<bf16>`",
    );
}

#[needs_ptxas]
fn tile_store_kernels_assemble_without_spills() {
    assert_assembles_without_spills(&one(round_trip()));
    for (elem, cols) in [(quote!(f32), 32), (quote!(f32), 64), (quote!(bf16), 64)] {
        assert_assembles_without_spills(&one(epilogue(elem, cols, quote!())));
    }
}
