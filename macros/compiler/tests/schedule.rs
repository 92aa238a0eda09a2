//! Work that does not depend on a channel wait is computed before it.

mod common;

use common::one;
use quote::quote;

/// The line of `ir` that contains `needle` (the first one).
fn line_of(ir: &str, needle: &str) -> usize {
    line_with_all(ir, &[needle])
}

/// The first line of `ir` that contains every one of `needles`.
fn line_with_all(ir: &str, needles: &[&str]) -> usize {
    ir.lines()
        .position(|l| needles.iter().all(|n| l.contains(n)))
        .unwrap_or_else(|| panic!("no line with all of {needles:?} in\n{ir}"))
}

/// The lines of `ir` that contain `needle`.
fn lines_with(ir: &str, needle: &str) -> Vec<usize> {
    ir.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn a_loaders_tile_arithmetic_moves_above_its_reserve_and_its_checks_stay_below() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn k(x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 256], 2>();
                join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
                for tile in block_tiles(x.len(), 256) {
                    let mut slot = tx.reserve().await;
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), 256);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    slot.copy_to(&mut y[tile]).await;
                }
            }
        }
    };
    let ir = &one(module).ir_text;
    let reserve = line_of(ir, "reserve ch0");
    // The tile's checks are computed before the wait; the checks themselves come after it.
    let starts_after_end = line_with_all(ir, &["panic_if", "slice index starts after it ends"]);
    let check_value = ir
        .lines()
        .nth(starts_after_end)
        .and_then(|l| l.split_whitespace().nth(1).map(|v| format!("{v}: bool =")));
    let check_value = check_value.unwrap_or_else(|| panic!("no checked value in\n{ir}"));
    assert!(line_of(ir, &check_value) < reserve, "{ir}");
    assert!(starts_after_end > reserve, "{ir}");
    // So are the source's address and the split of the bulk copy.
    let copy = line_of(ir, "copy_in ch0");
    let bulk = ir
        .lines()
        .nth(copy)
        .and_then(|l| l.split("bulk bytes ").nth(1));
    let bulk = bulk.unwrap_or_else(|| panic!("no bulk bytes in\n{ir}"));
    assert!(
        line_of(ir, &format!("{bulk}: usize = select")) < reserve,
        "{ir}"
    );
    // A receive's result is only known after its wait: the test of it stays there.
    let recv = line_of(ir, "= recv ch0");
    let some = ir
        .lines()
        .nth(recv)
        .and_then(|l| l.split(':').next())
        .map(str::trim);
    let some = some.unwrap_or_else(|| panic!("no recv result in\n{ir}"));
    assert!(line_of(ir, &format!("= Not {some}")) > recv, "{ir}");
}

#[test]
fn a_value_independent_of_a_receive_moves_above_it_except_in_a_join_branch() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 5)]
            pub async fn k(n: u32, out_a: &mut [u32], out_b: &mut [u32], out_c: &mut [u32]) {
                let (tx_a, rx_a) = channel::<[u32; 1], 2>();
                let (tx_b, rx_b) = channel::<[u32; 1], 2>();
                let (tx_c, rx_c) = channel::<[u32; 1], 2>();
                join!(
                    on_warps(0..1, produce(n, tx_a)),
                    on_warps(1..2, produce(n, tx_b)),
                    on_warps(2..3, produce(n, tx_c)),
                    on_warps(3..4, consume_both(n, rx_a, rx_b, out_a, out_b)),
                    on_warps(4..5, consume(n, rx_c, out_c)),
                )
                .await;
            }

            async fn produce(n: u32, mut tx: Sender<[u32; 1], 2>) {
                for i in 0..n {
                    let mut slot = tx.reserve().await;
                    slot.par_iter_mut().for_each(|v| *v = i);
                    slot.send();
                }
            }

            async fn consume(n: u32, mut rx: Receiver<[u32; 1], 2>, out: &mut [u32]) {
                let mut acc = 0u32;
                for i in 0..n {
                    let slot = rx.recv().await.unwrap();
                    let scaled = i.wrapping_mul(3);
                    acc = acc.wrapping_add(slot[0]).wrapping_add(scaled);
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }

            async fn consume_both(
                n: u32,
                rx_a: Receiver<[u32; 1], 2>,
                rx_b: Receiver<[u32; 1], 2>,
                out_a: &mut [u32],
                out_b: &mut [u32],
            ) {
                join!(consume(n, rx_a, out_a), consume(n, rx_b, out_b)).await;
            }
        }
    };
    let ir = &one(module).ir_text;
    // `i * 3` does not depend on the receive: in the plain role (the last) it is computed before
    // the wait, in each branch of the `join!` role after it, as written.
    let (recvs, scaled) = (
        lines_with(ir, "= recv ch"),
        lines_with(ir, ":scaled: u32 ="),
    );
    assert_eq!(recvs.len(), 3, "{ir}");
    assert_eq!(scaled.len(), 3, "{ir}");
    assert!(scaled[0] > recvs[0] && scaled[1] > recvs[1], "{ir}");
    assert!(scaled[2] < recvs[2], "{ir}");
    // The `unwrap` of the received value is checked after the wait.
    let unwraps = lines_with(ir, "called `Option::unwrap()` on a `None` value");
    assert!(unwraps.iter().rev().take(1).all(|&u| u > recvs[2]), "{ir}");
}
