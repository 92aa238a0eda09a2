//! Tensor-core mmas: what `acc.mma(&a, &b)` and `acc.store(..)` compile to (`wgmma` over
//! shared-memory descriptors, one wait, a fragment store), that a GEMM assembles without spills
//! and without serialized `wgmma`s, and the errors of shapes, tiles and roles that the tensor
//! cores cannot take.

mod common;

use common::{assert_error, one};
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A kernel of one loader warp and a compute role on `roles` (an `on_warps(..)` range of
/// warps), whose stage is `(Tile<bf16, AR, 64>, Tile<bf16, BR, 64>)` and whose role body is
/// `body` (with `stage` received and `c: &mut [f32]` to store to).
fn mma_kernel(
    warps: usize,
    compute: TokenStream,
    ab: (usize, usize),
    body: TokenStream,
) -> TokenStream {
    let (ar, br) = ab;
    quote! {
        mod kernels {
            use gpu_async::device::*;
            const AR: usize = #ar;
            const BR: usize = #br;

            #[kernel(warps = #warps, idle_warps)]
            pub async fn k(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
                let (tx, rx) = channel::<(Tile<bf16, AR, 64>, Tile<bf16, BR, 64>), 2>();
                join!(on_warps(0..1, load(a, b, tx)), on_warps(#compute, compute(rx, c))).await;
            }

            async fn load(a: &Matrix<bf16>, b: &Matrix<bf16>, mut tx: Sender<(Tile<bf16, AR, 64>, Tile<bf16, BR, 64>), 2>) {
                for k in 0..(a.cols() + 63) / 64 {
                    let Some(mut stage) = tx.reserve().await else { return };
                    stage.0.load(a, [0, k * 64]).await;
                    stage.1.load(b, [0, k * 64]).await;
                    stage.send();
                }
            }

            async fn compute(mut rx: Receiver<(Tile<bf16, AR, 64>, Tile<bf16, BR, 64>), 2>, c: &mut [f32]) {
                #body
            }
        }
    }
}

/// The usual body: accumulate every stage, then store.
fn accumulate(m: usize, n: usize) -> TokenStream {
    quote! {
        let mut acc = Accumulator::<#m, #n>::zero();
        while let Some(stage) = rx.recv().await {
            acc.mma(&stage.0, &stage.1).await;
        }
        acc.store(c, #n, [0, 0]);
    }
}

#[test]
fn an_mma_is_four_wgmmas_per_stage_between_a_fence_and_one_wait() {
    let k = one(mma_kernel(
        12,
        quote!(4..12),
        (128, 256),
        accumulate(128, 256),
    ));
    assert!(
        k.ptx.contains(".target sm_90a"),
        "wgmma is an sm_90a instruction"
    );
    let count = |needle: &str| k.ptx.matches(needle).count();
    // The receiving loop is written once per ring slot (2), each copy one mma.
    let copies = count("wgmma.fence.sync.aligned;");
    assert_eq!(copies, 2);
    assert_eq!(
        count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"),
        4 * copies,
        "K = 64 is four k16 steps"
    );
    assert_eq!(count("wgmma.commit_group.sync.aligned;"), copies);
    // One wait per copy, and one on the role's way out when the kernel aborts (without it
    // ptxas would add one to every branch there, in the loop too).
    assert_eq!(count("wgmma.wait_group.sync.aligned 0;"), copies + 1);
    let abort = k
        .ptx
        .find("$abort_1:")
        .expect("the compute role's abort path");
    assert!(
        k.ptx[abort..]
            .lines()
            .nth(1)
            .unwrap_or_default()
            .contains("wgmma.wait_group"),
        "the abort path starts with the wait"
    );
    // The 128-byte swizzle's descriptor: leading offset 16, stride 1024, mode 1.
    let fields: u64 = 1 << 16 | 64 << 32 | 1 << 62;
    assert!(
        k.ptx.contains(&format!("{fields};")),
        "no descriptor fields {fields:#x}"
    );
    // Each thread holds N / 2 = 128 values and stores them in pairs where it can.
    let wgmma = k
        .ptx
        .lines()
        .find(|l| l.contains("wgmma.mma_async"))
        .unwrap_or_default();
    assert_eq!(wgmma.matches("%f").count(), 128, "{wgmma}");
    assert_eq!(count("st.global.v2.f32"), 64);
    assert_eq!(
        count("st.global.f32"),
        2 * 128,
        "unchecked and checked, one each per value"
    );
    // No `.minnctapersm` from shared memory: the accumulator needs the registers.
    assert!(!k.ptx.contains(".minnctapersm"), "{}", &k.ptx[..600]);
}

#[test]
fn a_kept_mma_is_waited_for_at_its_await_or_its_drop() {
    let body = |wait: TokenStream| {
        quote! {
            let mut x = Accumulator::<64, 64>::zero();
            let mut y = Accumulator::<64, 64>::zero();
            let Some(stage) = rx.recv().await else { return };
            let p = x.mma(&stage.0, &stage.1);
            let q = y.mma(&stage.1, &stage.0);
            #wait
            x.store(c, 128, [0, 0]);
            y.store(c, 128, [0, 64]);
        }
    };
    // The kernel with `wait` in place of the waits, and its first two `wgmma.wait_group`s.
    let compiled = |wait: TokenStream| one(mma_kernel(8, quote!(4..8), (64, 64), body(wait)));
    let first_waits = |ptx: &str| -> Vec<String> {
        ptx.lines()
            .filter(|l| l.contains("wgmma.wait_group"))
            .map(|l| l.trim().to_string())
            .take(2)
            .collect()
    };
    // Two in flight, then their awaits: both issued before the first wait.
    let k = compiled(quote!(p.await; q.await;));
    let ptx = &k.ptx;
    let commits: Vec<usize> = ptx
        .match_indices("wgmma.commit_group")
        .map(|(i, _)| i)
        .collect();
    let first_wait = ptx.find("wgmma.wait_group").unwrap_or(0);
    assert_eq!(commits.len(), 2);
    assert!(
        commits.iter().all(|&c| c < first_wait),
        "both mmas issue before a wait"
    );
    // The first await leaves the second mma running; the second waits for it.
    let (older_first, both) = (
        [
            "wgmma.wait_group.sync.aligned 1;",
            "wgmma.wait_group.sync.aligned 0;",
        ],
        [
            "wgmma.wait_group.sync.aligned 0;",
            "wgmma.wait_group.sync.aligned 0;",
        ],
    );
    assert_eq!(first_waits(ptx), older_first);
    // Awaited newest first, the first wait is for both, and the second waits for nothing more.
    assert_eq!(first_waits(&compiled(quote!(q.await; p.await;)).ptx), both);
    // Dropped without an await, each is waited for all the same, before its stage is released.
    assert_eq!(
        first_waits(&compiled(quote!(drop(p); drop(q);)).ptx),
        older_first
    );
    // A statement that issues an mma and drops it waits at once.
    let k = one(mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut x = Accumulator::<64, 64>::zero();
            let Some(stage) = rx.recv().await else { return };
            let _ = x.mma(&stage.0, &stage.1);
            x.store(c, 64, [0, 0]);
        },
    ));
    // One wait there, one on the role's way out when the kernel aborts.
    assert_eq!(k.ptx.matches("wgmma.wait_group.sync.aligned 0;").count(), 2);
}

/// The body that takes 8 stages with `mma_stages`, then stores.
fn accumulate_stages(m: usize, n: usize) -> TokenStream {
    quote! {
        let mut acc = Accumulator::<#m, #n>::zero();
        if !acc.mma_stages(&rx, 8).await {
            return;
        }
        acc.store(c, #n, [0, 0]);
    }
}

#[test]
fn mma_stages_keeps_one_stage_in_flight() {
    let k = one(mma_kernel(
        12,
        quote!(4..12),
        (128, 256),
        accumulate_stages(128, 256),
    ));
    assert!(k.ir_text.contains("mma_wait pending 1"), "{}", k.ir_text);
    let lines: Vec<&str> = k.ptx.lines().map(str::trim).collect();
    let count = |needle: &str| lines.iter().filter(|l| l.starts_with(needle)).count();
    // The first stage's mma before the loop, every other one in it.
    assert_eq!(count("wgmma.fence.sync.aligned;"), 2);
    assert_eq!(count("wgmma.commit_group.sync.aligned;"), 2);
    // In the loop: the stage's mma is committed, the wait leaves it running, and then the
    // previous stage is released; after the loop, the last wait and release.
    let commit = lines
        .iter()
        .rposition(|l| l.starts_with("wgmma.commit_group"))
        .unwrap_or(0);
    assert_eq!(lines[commit + 1], "wgmma.wait_group.sync.aligned 1;");
    let release = |from: usize| {
        lines[from..from + 6]
            .iter()
            .any(|l| l.contains("mbarrier.arrive.release"))
    };
    assert!(release(commit + 2), "{:#?}", &lines[commit..commit + 8]);
    let last = lines
        .iter()
        .position(|l| *l == "wgmma.wait_group.sync.aligned 0;")
        .unwrap_or(0);
    assert!(
        last > commit && release(last + 1),
        "{:#?}",
        &lines[last..last + 8]
    );
}

#[test]
fn mma_stages_takes_a_channel_of_tile_pairs_it_can_hold_two_of() {
    // A channel of single tiles.
    assert_error(
        quote! {
            mod kernels {
                use gpu_async::device::*;
                #[kernel(warps = 8, idle_warps)]
                pub async fn k(a: &Matrix<bf16>, c: &mut [f32]) {
                    let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
                    join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, c))).await;
                }
                async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
                    let Some(mut s) = tx.reserve().await else { return };
                    s.load(a, [0, 0]).await;
                    s.send();
                }
                async fn compute(rx: Receiver<Tile<bf16, 64, 64>, 2>, c: &mut [f32]) {
                    let mut acc = Accumulator::<64, 64>::zero();
                    acc.mma_stages(&rx, 1).await;
                    acc.store(c, 64, [0, 0]);
                }
            }
        },
        "`mma_stages` takes stages that are pairs of tiles",
    );
    // Tiles of another shape than the accumulator's.
    assert_error(
        mma_kernel(8, quote!(4..8), (64, 128), accumulate_stages(64, 64)),
        "the B tile has 128 rows, and the accumulator's columns (N) are 64",
    );
    // A stage held while `mma_stages` needs two of the ring's two slots.
    assert_error(
        mma_kernel(
            8,
            quote!(4..8),
            (64, 64),
            quote! {
                let mut acc = Accumulator::<64, 64>::zero();
                let Some(first) = rx.recv().await else { return };
                acc.mma(&first.0, &first.1).await;
                acc.mma_stages(&rx, 4).await;
                acc.store(c, 64, [0, 0]);
            },
        ),
        "this receive waits while the role holds 1 slot of channel",
    );
    // The receiver by value.
    assert_error(
        mma_kernel(
            8,
            quote!(4..8),
            (64, 64),
            quote! {
                let mut acc = Accumulator::<64, 64>::zero();
                acc.mma_stages(rx, 4).await;
                acc.store(c, 64, [0, 0]);
            },
        ),
        "pass the receiver by reference",
    );
}

#[needs_ptxas]
fn a_gemm_assembles_without_spills_or_serialized_wgmmas() {
    let gemms = [
        (12, quote!(4..12), 128, false),
        (8, quote!(4..8), 64, false),
        (12, quote!(4..12), 128, true),
    ];
    for (warps, roles, m, stages) in gemms {
        let body = if stages {
            accumulate_stages(m, 256)
        } else {
            accumulate(m, 256)
        };
        let k = one(mma_kernel(warps, roles, (m, 256), body));
        let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
        let report = gpu_async_compiler::ptxas::assemble(&ptxas, &k.name, &k.ptx)
            .unwrap_or_else(|log| panic!("ptxas rejected `{}`:\n{log}", k.name));
        assert!(
            report.resources.contains("0 bytes spill stores"),
            "{}",
            report.resources
        );
        // ptxas says "wgmma.mma_async instructions are serialized" when it cannot pipeline
        // them, and "warpgroup.wait is injected" (or `arrive`) where other code touches the
        // accumulator's registers while an mma may be writing them.
        for sign in ["serialized", "is injected"] {
            assert!(
                !report.log.contains(sign),
                "ptxas serialized the wgmmas:\n{}",
                report.log
            );
        }
    }
}

#[test]
fn accumulator_shapes_the_tensor_cores_do_not_have() {
    let kernel = |m: usize, n: usize| mma_kernel(8, quote!(4..8), (m, n), accumulate(m, n));
    assert_error(
        kernel(64, 12),
        "a multiple of 8 from 8 to 256; found N = 12",
    );
    assert_error(kernel(64, 264), "found N = 264");
    assert_error(kernel(96, 64), "64 rows per warpgroup");
    // M is 64 per warpgroup of the role that runs the mma.
    assert_error(
        kernel(128, 64),
        "role `compute` runs on 1 warpgroup, each holding 64 rows of an accumulator, so its accumulators have M = 64; found M = 128",
    );
}

#[test]
fn an_mma_runs_on_whole_warpgroups() {
    let k = mma_kernel(8, quote!(2..6), (64, 64), accumulate(64, 64));
    assert_error(
        k,
        "role `compute` runs on warps 2..6, and a tensor-core mma is issued by whole warpgroups",
    );
    let k = mma_kernel(8, quote!(4..6), (64, 64), accumulate(64, 64));
    assert_error(k, "whole warpgroups (4 warps from a multiple of 4)");
}

#[test]
fn mma_operands_the_tensor_cores_cannot_read() {
    // B's rows are the accumulator's columns.
    let k = mma_kernel(8, quote!(4..8), (64, 128), accumulate(64, 64));
    assert_error(
        k,
        "the B tile has 128 rows, and the accumulator's columns (N) are 64",
    );
    // An operand is a received tile, by reference.
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            let Some(stage) = rx.recv().await else { return };
            acc.mma(stage.0, &stage.1).await;
        },
    );
    assert_error(k, "pass the A tile by reference: `&tile`");
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            let Some(stage) = rx.recv().await else { return };
            acc.mma(&stage.0, &c[0..4]).await;
        },
    );
    assert_error(k, "the B operand of an mma is a tile in shared memory");
}

#[test]
fn tiles_an_mma_cannot_read() {
    let kernel = |elem: TokenStream, cols: usize| {
        quote! {
            mod kernels {
                use gpu_async::device::*;
                #[kernel(warps = 8, idle_warps)]
                pub async fn k(a: &Matrix<#elem>, c: &mut [f32]) {
                    let (tx, rx) = channel::<Tile<#elem, 64, #cols>, 2>();
                    join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, c))).await;
                }
                async fn load(a: &Matrix<#elem>, mut tx: Sender<Tile<#elem, 64, #cols>, 2>) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.load(a, [0, 0]).await;
                    slot.send();
                }
                async fn compute(mut rx: Receiver<Tile<#elem, 64, #cols>, 2>, c: &mut [f32]) {
                    let mut acc = Accumulator::<64, 64>::zero();
                    let Some(t) = rx.recv().await else { return };
                    acc.mma(&t, &t).await;
                    acc.store(c, 64, [0, 0]);
                }
            }
        }
    };
    // The same tile as A and B is fine: a 64 x 64 x 64 product.
    one(kernel(quote!(bf16), 64));
    one(kernel(quote!(f16), 64));
    assert_error(kernel(quote!(f32), 32), "takes tiles of `bf16` or `f16`");
    assert_error(
        kernel(quote!(bf16), 32),
        "the A tile's rows are 64 bytes (32 `bf16`s)",
    );
}

#[test]
fn accumulators_belong_to_role_code_and_store_to_float_slices() {
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            while let Some(stage) = rx.recv().await {
                acc.mma(&stage.0, &stage.1).await;
            }
            let y: &[f32] = c;
            acc.store(y, 64, [0, 0]);
        },
    );
    assert_error(
        k,
        "an accumulator is stored into a `&mut [f32]`, `&mut [bf16]` or `&mut [f16]`",
    );
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            c.par_iter_mut().for_each(|x| {
                let z = Accumulator::<64, 64>::zero();
                *x = 0.0;
            });
        },
    );
    assert_error(k, "inside a `par_iter` closure");
    let k = quote! {
        mod kernels {
            use gpu_async::device::*;
            #[kernel(warps = 8, idle_warps)]
            pub async fn k(c: &mut [f32]) {
                let acc = Accumulator::<64, 64>::zero();
                join!(on_warps(4..8, r(c))).await;
            }
            async fn r(c: &mut [f32]) {
                c[0] = 1.0;
            }
        }
    };
    assert_error(k, "make it in that role's code, not in the kernel body");
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            while let Some(stage) = rx.recv().await {
                acc.mma(&stage.0, &stage.1).await;
            }
            c[0] = acc.get(0);
        },
    );
    assert_error(k, "`store_scaled(out, cols, [row, col], alpha, beta)` and `store_tile(&mut slot, col)`; `get` is not one of its methods (its elements are spread over the role's registers)");
}

#[test]
fn an_accumulator_zeroed_in_its_loop_zeroes_its_own_registers() {
    // One loop over every stage, storing and zeroing the accumulator after each tile's last:
    // the loop starts at the ring's first slot and is written once per slot (2), each copy
    // zeroing the accumulator's own registers, not copying new ones into them.
    let k = one(mma_kernel(
        8,
        quote!(4..8),
        (64, 256),
        quote! {
            let mut acc = Accumulator::<64, 256>::zero();
            let mut i = 0usize;
            while let Some(stage) = rx.recv().await {
                acc.mma(&stage.0, &stage.1).await;
                drop(stage);
                if i % 4 == 3 {
                    acc.store(c, 256, [i / 4 * 64, 0]);
                    acc = Accumulator::<64, 256>::zero();
                }
                i += 1;
            }
        },
    ));
    assert_eq!(k.ptx.matches("wgmma.fence.sync.aligned;").count(), 2);
    let wgmma = k
        .ptx
        .lines()
        .find(|l| l.contains("wgmma.mma_async"))
        .unwrap_or_default();
    // Every copy names the same 128 registers.
    let regs = &wgmma[wgmma.find('{').unwrap_or(0)..wgmma.find('}').unwrap_or(0)];
    assert!(k
        .ptx
        .lines()
        .filter(|l| l.contains("wgmma.mma_async"))
        .all(|l| l.contains(regs)));
    // The zeroing writes those registers (128 at the start, 128 per copy), nothing else.
    let zeros = k.ptx.matches("mov.f32 %f0, 0f00000000;").count();
    assert_eq!(zeros, 3, "%f0 zeroed at the start and once per copy");
}

#[test]
fn an_accumulator_is_assigned_only_from_one_of_its_shape() {
    let k = mma_kernel(
        8,
        quote!(4..8),
        (64, 64),
        quote! {
            let mut acc = Accumulator::<64, 64>::zero();
            acc = Accumulator::<64, 128>::zero();
            acc.store(c, 64, [0, 0]);
            drop(rx);
        },
    );
    assert_error(
        k,
        "expected `Accumulator<64, 64>`, found `Accumulator<64, 128>`",
    );
}

#[test]
fn a_register_budget_that_cannot_hold_the_accumulator() {
    let kernel = |budget: usize| {
        quote! {
            mod kernels {
                use gpu_async::device::*;
                #[kernel(warpgroups = 3, registers(load = 40, compute = #budget))]
                pub async fn k(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
                    let (tx, rx) = channel::<(Tile<bf16, 128, 64>, Tile<bf16, 256, 64>), 2>();
                    join!(on_warpgroups(0..1, load(a, b, tx)), on_warpgroups(1..3, compute(rx, c))).await;
                }
                async fn load(a: &Matrix<bf16>, b: &Matrix<bf16>, mut tx: Sender<(Tile<bf16, 128, 64>, Tile<bf16, 256, 64>), 2>) {
                    let Some(mut stage) = tx.reserve().await else { return };
                    stage.0.load(a, [0, 0]).await;
                    stage.1.load(b, [0, 0]).await;
                    stage.send();
                }
                async fn compute(mut rx: Receiver<(Tile<bf16, 128, 64>, Tile<bf16, 256, 64>), 2>, c: &mut [f32]) {
                    let mut acc = Accumulator::<128, 256>::zero();
                    while let Some(stage) = rx.recv().await {
                        acc.mma(&stage.0, &stage.1).await;
                    }
                    acc.store(c, 256, [0, 0]);
                }
            }
        }
    };
    assert_error(
        kernel(152),
        "role `compute` holds 128 accumulator registers per thread (the `f32` values of its accumulators: N / 2 for each), and its budget is 152 registers: ptxas could not keep them; give it at least 160",
    );
    let k = one(kernel(232));
    assert!(k.ptx.contains("setmaxnreg.inc.sync.aligned.u32 232;"));
}

#[test]
fn an_accumulator_is_not_passed_to_helpers() {
    let k = quote! {
        mod kernels {
            use gpu_async::device::*;
            #[kernel(warps = 8, idle_warps)]
            pub async fn k(a: &Matrix<bf16>, c: &mut [f32]) {
                let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, c))).await;
            }
            async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
                let Some(mut slot) = tx.reserve().await else { return };
                slot.load(a, [0, 0]).await;
                slot.send();
            }
            fn finish(acc: &Accumulator<64, 64>, c: &mut [f32]) {
                acc.store(c, 64, [0, 0]);
            }
            async fn compute(mut rx: Receiver<Tile<bf16, 64, 64>, 2>, c: &mut [f32]) {
                let mut x = Accumulator::<64, 64>::zero();
                let Some(t) = rx.recv().await else { return };
                x.mma(&t, &t).await;
                finish(&x, c);
            }
        }
    };
    assert_error(k.clone(), "a helper fn cannot take or return one yet");
    assert_error(k, "an accumulator is not passed on");
}

#[test]
fn a_block_whose_threads_cannot_hold_the_accumulator() {
    // 16 warps leave each thread 128 registers; three warpgroups of 64 x 256 accumulators need
    // 128 for the accumulator alone.
    let k = one(mma_kernel(
        12,
        quote!(4..12),
        (128, 256),
        accumulate(128, 256),
    ));
    assert!(k.ptx.contains("wgmma"));
    let k = mma_kernel(16, quote!(4..16), (192, 256), accumulate(192, 256));
    assert_error(
        k,
        "role `compute` holds 128 accumulator registers per thread (the `f32` values of its accumulators: N / 2 for each), and a block of 512 threads leaves each thread 128",
    );
}
