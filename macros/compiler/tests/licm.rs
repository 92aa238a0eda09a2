//! Loop-invariant code motion: what leaves a loop, and what stays.

mod common;

use common::one;
use quote::quote;

/// The line of `ir` that contains `needle` (the first one).
fn line_of(ir: &str, needle: &str) -> usize {
    ir.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with `{needle}` in\n{ir}"))
}

#[test]
fn invariants_leave_their_loops_and_nothing_else_does() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 1)]
            pub async fn k(n: u32, out: &mut [u32]) {
                join!(on_warps(0..1, work(n, out))).await;
            }

            async fn work(n: u32, out: &mut [u32]) {
                let mut acc = 0u32;
                for i in 0..n {
                    for j in 0..n {
                        let scale = n * 3;
                        let q = n / 7;
                        let step = i + 1;
                        if j == 5 {
                            let inside = n + 11;
                            acc = acc + inside;
                        }
                        acc = acc + scale + q + step + j;
                    }
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }
        }
    };
    let ir = &one(module).ir_text;
    let (outer, inner) = (line_of(ir, "loop L0 {"), line_of(ir, "loop L1 {"));
    // `n * 3` changes in neither loop: it is computed once, before both.
    assert!(line_of(ir, ":scale: u32 =") < outer, "{ir}");
    // `i + 1` changes with the outer loop only: it leaves the inner one.
    let step = line_of(ir, ":step: u32 =");
    assert!(outer < step && step < inner, "{ir}");
    // A division stays behind its zero check, the check stays where it was, and what an `if`
    // computes stays in the `if`.
    assert!(line_of(ir, "= Div ") > inner, "{ir}");
    assert!(line_of(ir, "panic_if") > inner, "{ir}");
    assert!(line_of(ir, ":inside: u32 =") > line_of(ir, "if v"), "{ir}");
    // The loop counters change in their loops.
    assert!(line_of(ir, ":i: u32 =") > outer, "{ir}");
    assert!(line_of(ir, ":j: u32 =") > inner, "{ir}");
}

#[test]
fn a_bulk_copys_bounds_check_is_computed_before_the_role_loop() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn handoff(items: u32, src: &[u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 4096], 4>();
                join!(
                    on_warps(0..1, produce(src, items, tx)),
                    on_warps(1..2, consume(rx, out)),
                )
                .await;
            }

            async fn produce(src: &[u32], items: u32, mut tx: Sender<[u32; 4096], 4>) {
                for _ in 0..items {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&src[0..4096]).await;
                    slot.send();
                }
            }

            async fn consume(mut rx: Receiver<[u32; 4096], 4>, out: &mut [u32]) {
                let mut acc = 0u32;
                while let Some(slot) = rx.recv().await {
                    acc += slot[0];
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }
        }
    };
    let kernel = one(module);
    let ir = &kernel.ir_text;
    let lp = line_of(ir, "loop L0 {");
    // `4096 > src.len` is compared once; the loop only tests it, after its `reserve`.
    assert!(line_of(ir, "src.len") < lp, "{ir}");
    assert!(line_of(ir, "panic_if") > line_of(ir, "reserve ch0"), "{ir}");
    // So is the split of the copy between one bulk copy and the role's threads (the source's
    // alignment and the bytes of its 16-byte-aligned part): the copy in the loop uses it.
    let copy = line_of(ir, "copy_in ch0");
    let bulk = ir
        .lines()
        .nth(copy)
        .and_then(|l| l.split("bulk bytes ").nth(1));
    let bulk = bulk.unwrap_or_else(|| panic!("no bulk bytes on `copy_in`:\n{ir}"));
    assert!(line_of(ir, &format!("{bulk}: usize = select")) < lp, "{ir}");
    // In the PTX, the loop's copies test no alignment, and `elect.sync`, once at the role's
    // start, picks the thread that issues them (a lane test made ptxas loop over the lanes that
    // pass it).
    let ptx = &kernel.ptx;
    let (role, loop_start) = (
        ptx.find("$role_0:").expect("the loader role"),
        ptx.find("$loop_0:").expect("the role loop"),
    );
    assert!(ptx[role..loop_start].contains("elect.sync"), "{ptx}");
    let body = &ptx[loop_start..];
    let first_copy = &body[..body.find("cp.async.bulk").expect("a bulk copy")];
    assert!(!first_copy.contains("and.b64"), "{first_copy}");
    assert!(!first_copy.contains("elect.sync"), "{first_copy}");
}
