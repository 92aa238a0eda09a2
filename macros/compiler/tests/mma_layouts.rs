//! Mma operands stored as column blocks: `mma_kn` / `mma_stages_kn` read a K x N B tile
//! transposed through N-major descriptors, a tile whose K is 128 steps into its second block,
//! a tile of blocks is loaded one TMA copy per block, and the errors of B tiles `mma_kn` cannot
//! read.

mod common;

use common::{assert_assembles_without_spills, assert_error, one};
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A kernel of one loader warp and a compute warpgroup whose stages are `(Tile<bf16, 64, AK>,
/// Tile<bf16, BR, BC>)`, loaded at `[0, k * AK]` and `[k * AK, 0]`, and whose compute body is
/// `body` (with `rx` and `c: &mut [f32]`).
fn kn_kernel(ak: usize, (br, bc): (usize, usize), body: TokenStream) -> TokenStream {
    stage_kernel(ak, (br, bc), quote!([k * #ak, 0]), body)
}

/// As [`kn_kernel`], B's stage tile loaded at `b_corner` (an expression of the stage `k`).
fn stage_kernel(
    ak: usize,
    (br, bc): (usize, usize),
    b_corner: TokenStream,
    body: TokenStream,
) -> TokenStream {
    let stage = quote!((Tile<bf16, 64, #ak>, Tile<bf16, #br, #bc>));
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 8, idle_warps)]
            pub async fn k(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
                let (tx, rx) = channel::<#stage, 2>();
                join!(on_warps(0..1, load(a, b, tx)), on_warps(4..8, compute(rx, c))).await;
            }

            async fn load(a: &Matrix<bf16>, b: &Matrix<bf16>, mut tx: Sender<#stage, 2>) {
                for k in 0..(a.cols() + #ak - 1) / #ak {
                    let Some(mut stage) = tx.reserve().await else { return };
                    stage.0.load(a, [0, k * #ak]).await;
                    stage.1.load(b, #b_corner).await;
                    stage.send();
                }
            }

            async fn compute(rx: Receiver<#stage, 2>, c: &mut [f32]) {
                #body
            }
        }
    }
}

/// `mma_stages_kn` over two stages into an accumulator of `n` columns, then the store.
fn stages_kn(n: usize) -> TokenStream {
    quote! {
        let mut acc = Accumulator::<64, #n>::zero();
        if acc.mma_stages_kn(&rx, 2).await {
            acc.store(c, #n, [0, 0]);
        }
    }
}

/// The `wgmma.mma_async` lines of `ptx`.
fn wgmmas(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("wgmma.mma_async"))
        .collect()
}

#[test]
fn mma_kn_reads_b_transposed_through_n_major_descriptors() {
    let k = one(kn_kernel(64, (64, 256), stages_kn(256)));
    let mmas = wgmmas(&k.ptx);
    // Two stages written (the first before the loop, the loop's), 4 K steps each.
    assert_eq!(mmas.len(), 8, "{}", k.ptx);
    for m in &mmas {
        assert!(
            m.starts_with("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"),
            "{m}"
        );
        // imm-scale-a, imm-scale-b, imm-trans-a 0, imm-trans-b 1.
        assert!(m.ends_with(", 1, 1, 0, 1;"), "{m}");
    }
    // B's descriptor: leading byte offset 8192 (the next 64 columns, a block of 64 rows of 128
    // bytes), stride byte offset 1024, 128-byte swizzle.
    let b_fields = (8192u64 >> 4) << 16 | (1024 >> 4) << 32 | 1 << 62;
    assert!(k.ptx.contains(&format!(", {b_fields};")), "{}", k.ptx);
    // K steps of 16 rows: 2048 bytes, 128 descriptor units each.
    for units in [128, 256, 384] {
        assert!(
            k.ptx.contains(&format!(", {units};")),
            "step of {units}:\n{}",
            k.ptx
        );
    }
    // A 64 x 256 tile is four column blocks: four copies, plus A's one.
    assert_eq!(
        k.ptx.matches("cp.async.bulk.tensor.2d").count(),
        5,
        "{}",
        k.ptx
    );
}

#[test]
fn a_k_of_128_steps_into_the_second_column_block() {
    // A is 64 x 128 and B (N x K) 64 x 128: two column blocks each.
    let k = one(stage_kernel(
        128,
        (64, 128),
        quote!([0, k * 128]),
        quote! {
            let mut rx = rx;
            let Some(stage) = rx.recv().await else { return };
            let mut acc = Accumulator::<64, 64>::zero();
            acc.mma(&stage.0, &stage.1).await;
            acc.store(c, 64, [0, 0]);
        },
    ));
    let mmas = wgmmas(&k.ptx);
    assert_eq!(mmas.len(), 8, "{}", k.ptx);
    assert!(
        mmas.iter().all(|m| m.ends_with(", 1, 1, 0, 0;")),
        "{}",
        k.ptx
    );
    // Steps 4..8 start in the second block, 64 rows of 128 bytes on (512 units), at 32 bytes
    // (2 units) a step.
    for units in [2, 4, 6, 512, 514, 516, 518] {
        assert!(
            k.ptx.contains(&format!(", {units};")),
            "step of {units}:\n{}",
            k.ptx
        );
    }
    assert_eq!(k.ptx.matches("cp.async.bulk.tensor.2d").count(), 4);
}

#[test]
fn b_tiles_mma_kn_cannot_read() {
    // B is K x N: its columns are the accumulator's.
    assert_error(
        kn_kernel(64, (64, 128), stages_kn(256)),
        "the B tile has 128 columns, and the accumulator's columns (N) are 256: `mma_kn` of an `Accumulator<M, N>` takes an M x K tile A and a K x N tile B (it adds A · B)",
    );
    // Its rows are whole 128-byte lines.
    assert_error(
        kn_kernel(64, (64, 32), stages_kn(32)),
        "the B tile's rows are 64 bytes (32 `bf16`s): an mma reads tiles whose rows are whole 128-byte lines (N a multiple of 64 for `bf16`), laid out with the 128-byte swizzle its descriptors name; make N a multiple of 64",
    );
    // Its rows are A's K.
    assert_error(
        kn_kernel(64, (128, 64), stages_kn(64)),
        "the two tiles of an mma have one element type and one K (A's columns, B's rows): A is 64 columns of `bf16`, B 128 rows of `bf16`",
    );
    // The B tile of `mma` stays N x K.
    assert_error(
        kn_kernel(
            64,
            (64, 256),
            quote! {
                let mut acc = Accumulator::<64, 256>::zero();
                acc.mma_stages(&rx, 2).await;
            },
        ),
        "the B tile has 64 rows, and the accumulator's columns (N) are 256: an mma of an `Accumulator<M, N>` takes an M x K tile A and an N x K tile B (it adds A · Bᵀ)",
    );
    // One mma_kn, on a received stage.
    one(kn_kernel(
        64,
        (64, 64),
        quote! {
            let mut rx = rx;
            let Some(stage) = rx.recv().await else { return };
            let mut acc = Accumulator::<64, 64>::zero();
            acc.mma_kn(&stage.0, &stage.1).await;
            acc.store(c, 64, [0, 0]);
        },
    ));
}

#[needs_ptxas]
fn an_a_times_b_gemm_assembles_without_spills_or_serialized_wgmmas() {
    let k = one(kn_kernel(64, (64, 256), stages_kn(256)));
    assert_assembles_without_spills(&k);
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    let report = gpu_async_compiler::ptxas::assemble(&ptxas, &k.name, &k.ptx)
        .unwrap_or_else(|log| panic!("ptxas rejected `{}`:\n{log}", k.name));
    for sign in ["serialized", "is injected"] {
        assert!(!report.log.contains(sign), "{}", report.log);
    }
}

/// A kernel whose compute role computes `s = a · bᵀ` from one stage, then `body` (with `s`,
/// `stage`, `c`).
fn chained(n: usize, body: TokenStream) -> TokenStream {
    kn_kernel(
        64,
        (64, 64),
        quote! {
            let mut rx = rx;
            let Some(stage) = rx.recv().await else { return };
            let mut s = Accumulator::<64, #n>::zero();
            #body
        },
    )
}

#[test]
fn a_fragment_is_the_register_a_operand_of_an_mma() {
    let k = one(chained(
        64,
        quote! {
            s.mma_kn(&stage.0, &stage.1).await;
            let p = s.to_bf16();
            let mut o = Accumulator::<64, 64>::zero();
            o.mma_kn(&p, &stage.1).await;
            o.store(c, 64, [0, 0]);
        },
    ));
    // 32 accumulator values packed into 16 pairs, the low half the lower column.
    let packs: Vec<&str> = k
        .ptx
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cvt.rn.bf16x2.f32"))
        .collect();
    assert_eq!(packs.len(), 16, "{}", k.ptx);
    assert!(packs[0].ends_with(", %f1, %f0;"), "{}", packs[0]);
    let mmas = wgmmas(&k.ptx);
    assert_eq!(mmas.len(), 8, "{}", k.ptx);
    // The register form: four `u32`s per K step, B's descriptor, then scale-d and the three
    // immediates (no transpose flag for A).
    for m in &mmas[4..] {
        assert!(m.contains("}, {%r"), "{m}");
        assert!(m.ends_with(", 1, 1, 1;"), "{m}");
    }
}

#[test]
fn fragments_an_mma_cannot_take() {
    assert_error(
        chained(
            64,
            quote! {
                s.mma_kn(&stage.0, &stage.1).await;
                let p = s.to_bf16();
                let mut o = Accumulator::<64, 64>::zero();
                o.mma(&stage.0, &p).await;
            },
        ),
        "the B operand of an mma is a tile in shared memory: a fragment in registers is an A operand",
    );
    assert_error(
        chained(
            8,
            quote! {
                let p = s.to_bf16();
            },
        ),
        "a fragment is the A operand of mmas of K = 16 each: its accumulator's N is a multiple of 16; found N = 8",
    );
}

#[test]
fn a_fragment_local_is_reassigned_in_its_registers() {
    let k = one(chained(
        64,
        quote! {
            s.mma_kn(&stage.0, &stage.1).await;
            let mut p = s.to_bf16();
            let mut o = Accumulator::<64, 64>::zero();
            o.mma_kn(&p, &stage.1).await;
            s.mma_kn(&stage.0, &stage.1).await;
            p = s.to_bf16();
            o.mma_kn(&p, &stage.1).await;
            o.store(c, 64, [0, 0]);
        },
    ));
    // Both mmas of `o` read the same four registers in their first K step.
    let mmas = wgmmas(&k.ptx);
    let first_regs = |m: &str| {
        m.split("}, {")
            .nth(1)
            .map(|r| r.split('}').next().unwrap_or("").to_string())
    };
    assert_eq!(first_regs(mmas[4]), first_regs(mmas[12]), "{}", k.ptx);
}

#[needs_ptxas]
fn a_register_operand_mma_assembles_without_warnings() {
    let k = one(chained(
        64,
        quote! {
            s.mma_kn(&stage.0, &stage.1).await;
            let p = s.to_bf16();
            let mut o = Accumulator::<64, 64>::zero();
            o.mma_kn(&p, &stage.1).await;
            o.store(c, 64, [0, 0]);
        },
    ));
    assert_assembles_without_spills(&k);
}
