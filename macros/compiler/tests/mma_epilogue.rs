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

#[test]
fn apply_writes_its_body_once_per_value_of_the_thread() {
    let k = one(epilogue(
        quote!(f32),
        quote! {
            acc.apply(|v| v.max(0.0) * alpha);
            acc.store(c, 64, [0, 0]);
        },
    ));
    // A 64 x 64 accumulator on one warpgroup: 32 values per thread.
    assert_eq!(k.ptx.matches("max.f32").count(), 32, "{}", k.ptx);
    assert_eq!(k.ptx.matches("mul.rn.f32").count(), 32, "{}", k.ptx);
}

#[test]
fn apply_at_names_rows_and_columns_only_where_used() {
    // No row or column in the body: no lane arithmetic beyond the store's.
    let plain = one(epilogue(
        quote!(f32),
        quote! {
            acc.apply_at(|_, _, v| v + 1.0);
            acc.store(c, 64, [0, 0]);
        },
    ));
    let with_col = one(epilogue(
        quote!(f32),
        quote! {
            acc.apply_at(|_, j, v| v + j as f32);
            acc.store(c, 64, [0, 0]);
        },
    ));
    assert_eq!(plain.ptx.matches("add.rn.f32").count(), 32, "{}", plain.ptx);
    let store_only = one(epilogue(quote!(f32), quote!(acc.store(c, 64, [0, 0]);)));
    let lane_reads = |ptx: &str| ptx.matches("%laneid").count();
    assert_eq!(lane_reads(&plain.ptx), lane_reads(&store_only.ptx));
    assert!(lane_reads(&with_col.ptx) > lane_reads(&store_only.ptx));
    // Each value's column converted once.
    assert_eq!(
        with_col.ptx.matches("cvt.rn.f32.u64").count(),
        32,
        "{}",
        with_col.ptx
    );
}

#[test]
fn apply_takes_a_closure_that_computes_an_f32() {
    let store = quote!(acc.store(c, 64, [0, 0]););
    for (apply, needle) in [
        (quote!(acc.apply(alpha);), "`apply` takes a closure"),
        (
            quote!(acc.apply(|v, w| v);),
            "the closure of `apply` takes one parameter",
        ),
        (
            quote!(acc.apply_at(|v| v);),
            "the closure of `apply_at` takes three parameters",
        ),
        (quote!(acc.apply(|v| 1u32);), "expected `f32`"),
        (
            quote!(acc.apply(|v| { v; });),
            "end its body with that value",
        ),
        (
            quote!(acc.apply(|v| { c[0] = v; v });),
            "it cannot write memory or update an atomic",
        ),
        (
            quote!(acc.apply(|v| { alpha = v; v });),
            "cannot assign to the captured `alpha`",
        ),
    ] {
        assert_error(epilogue(quote!(f32), quote!(#apply #store)), needle);
    }
}

#[needs_ptxas]
fn apply_assembles_without_warnings() {
    let k = one(epilogue(
        quote!(bf16),
        quote! {
            acc.apply(|v| v.max(0.0));
            acc.apply_at(|i, j, v| v * alpha + (i * 64 + j) as f32);
            acc.store(c, 64, [0, 0]);
        },
    ));
    assert_assembles_without_spills(&k);
}

#[test]
fn a_helper_called_in_apply_cannot_write_memory() {
    assert_error(
        quote! {
            mod kernels {
                use gpu_async::device::*;

                #[kernel(warps = 8, idle_warps)]
                pub async fn k(a: &Matrix<bf16>, c: &mut [f32]) {
                    let (tx, rx) = channel::<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>();
                    join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, c))).await;
                }

                async fn load(a: &Matrix<bf16>, mut tx: Sender<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>) {
                    let Some(mut stage) = tx.reserve().await else { return };
                    stage.0.load(a, [0, 0]).await;
                    stage.1.load(a, [0, 0]).await;
                    stage.send();
                }

                fn keep(c: &mut [f32], v: f32) -> f32 {
                    c[0] = v;
                    v
                }

                async fn compute(mut rx: Receiver<(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>), 2>, c: &mut [f32]) {
                    let Some(stage) = rx.recv().await else { return };
                    let mut acc = Accumulator::<64, 64>::zero();
                    acc.mma(&stage.0, &stage.1).await;
                    acc.apply(|v| keep(c, v));
                    acc.store(c, 64, [0, 0]);
                }
            }
        },
        "a helper it calls cannot write memory",
    );
}

#[test]
fn a_store_writes_neighbouring_values_together() {
    // 32 values per thread: 16 pairs, each one store where aligned, and every value on its own
    // in the misaligned and the clipped paths.
    for (out, pair, single) in [
        (quote!(f32), "st.global.v2.f32", "st.global.f32"),
        (quote!(bf16), "st.global.b32", "st.global.b16"),
        (quote!(f16), "st.global.b32", "st.global.b16"),
    ] {
        let k = one(epilogue(out, quote!(acc.store(c, 64, [0, 0]);)));
        assert_eq!(k.ptx.matches(pair).count(), 16, "{}", k.ptx);
        assert_eq!(k.ptx.matches(single).count(), 64, "{}", k.ptx);
    }
}

#[test]
fn a_store_checks_each_element_only_where_the_threads_last_one_is_outside() {
    // A thread of a 64-column accumulator holds rows `r` and `r + 8` and columns `c + 8 j + e`
    // (j < 8, e < 2): its elements all lie inside where more than 8 rows and more than 57
    // columns are left from its first. A bound of 16 rows and 64 columns sent the threads
    // whose first column is not the warp's through the element-by-element path on every
    // matrix exactly as wide as the accumulator.
    for store in [
        quote!(acc.store(c, 64, [0, 0]);),
        quote!(acc.store_scaled(c, 64, [0, 0], alpha, beta);),
    ] {
        let k = one(epilogue(quote!(f32), store));
        let lines: Vec<&str> = k.ptx.lines().map(str::trim).collect();
        let guard = lines
            .windows(3)
            .find(|w| w[2].contains("bra $acc_store_checked"));
        let Some([rows, cols, _]) = guard else {
            panic!("no branch to the checked path: {}", k.ptx);
        };
        assert!(
            rows.starts_with("setp.gt.u64") && rows.ends_with(", 8;"),
            "{rows}"
        );
        assert!(
            cols.starts_with("setp.gt.and.u64") && cols.contains(", 57, "),
            "{cols}"
        );
    }
}
#[test]
fn a_row_reduction_folds_the_threads_values_then_four_lanes() {
    let k = one(epilogue(
        quote!(f32),
        quote! {
            let m = acc.row_max();
            let l = acc.row_sum();
            acc.apply_at(|i, _, v| (v - m[i]) / l[i]);
            acc.store(c, 64, [0, 0]);
        },
    ));
    // 32 values per thread, 16 per row: 15 folds and 2 combinations per row, two rows.
    assert_eq!(k.ptx.matches("max.f32").count(), 34, "{}", k.ptx);
    assert_eq!(k.ptx.matches("add.rn.f32").count(), 34, "{}", k.ptx);
    assert_eq!(k.ptx.matches("shfl.sync.bfly.b32").count(), 8, "{}", k.ptx);
}

#[test]
fn rows_are_read_by_the_elements_of_their_row() {
    let store = quote!(acc.store(c, 64, [0, 0]););
    for body in [
        quote!(let m = acc.row_max(); acc.apply_at(|_, j, v| v - m[j]);),
        quote!(let m = acc.row_max(); acc.apply_at(|i, _, v| v - m[0]);),
        quote!(let m = acc.row_max(); acc.apply(|v| v - m[0]);),
        quote!(let m = acc.row_max(); let x = m[0]; acc.apply(|v| v - x);),
    ] {
        assert_error(
            epilogue(quote!(f32), quote!(#body #store)),
            "index the rows inside `acc.apply_at(|i, j, v| ..)` with its row parameter",
        );
    }
}

#[test]
fn rows_take_a_splat_a_closure_and_a_slice_of_f32() {
    let store = quote!(acc.store(c, 64, [0, 0]););
    for (body, needle) in [
        (
            quote!(let m = Rows::<64>::zero();),
            "rows are made with `Rows::<M>::splat(v)`",
        ),
        (
            quote!(let m = Rows::<32>::splat(0.0);),
            "`M` is 64, 128, 192 or 256",
        ),
        (quote!(let m = Rows::<64>::splat(1u32);), "expected `f32`"),
        (
            quote!(let mut m = acc.row_max(); m.apply_at(|x| x);),
            "a plain closure of two parameters",
        ),
        (
            quote!(let mut m = acc.row_max(); m.apply(|x| { c[0] = x; x });),
            "it cannot write memory",
        ),
        (
            quote!(let m = acc.row_max(); m.store(c, 64, 0);),
            "takes 2 arguments",
        ),
        (
            quote!(let m = acc.row_max(); m.sum();),
            "`sum` is not one of their methods",
        ),
    ] {
        assert_error(epilogue(quote!(f32), quote!(#body #store)), needle);
    }
    assert_error(
        epilogue(
            quote!(bf16),
            quote! {
                let m = acc.row_max();
                m.store(c, 0);
            },
        ),
        "rows are stored into a `&mut [f32]`",
    );
}

#[needs_ptxas]
fn rows_assemble_without_warnings() {
    let k = one(epilogue(
        quote!(f32),
        quote! {
            let mut m = Rows::<64>::splat(-1.0);
            let t = acc.row_max();
            m.apply_at(|i, x| x.max(t[i]));
            acc.apply_at(|i, _, v| v - m[i]);
            let l = acc.row_sum();
            l.store(c, 4096);
            acc.store(c, 64, [0, 0]);
        },
    ));
    assert_assembles_without_spills(&k);
}
