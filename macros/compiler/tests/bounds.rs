//! Checks the compiler proves never fire are removed; the others stay.

mod common;

use common::one;
use quote::quote;

/// The `panic_if` lines of `ir`, by message.
fn checks(ir: &str) -> Vec<&str> {
    ir.lines()
        .filter(|l| l.trim_start().starts_with("panic_if"))
        .map(|l| l.split('"').nth(1).unwrap_or(""))
        .collect()
}

#[test]
fn the_bounds_of_a_tile_of_the_same_slice_are_proven() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;
            pub const TILE: usize = 256;

            #[kernel(warps = 2)]
            pub async fn k(x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; TILE], 2>();
                join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
                for tile in block_tiles(x.len(), TILE) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn store(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), TILE);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    slot.copy_to(&mut y[tile]).await;
                }
            }
        }
    };
    let ir = one(module).ir_text;
    // The slice checks, the copies' length checks and the constant tile size's check are gone:
    // only the `unwrap()`, which depends on how many items arrive, is left.
    assert_eq!(
        checks(&ir),
        ["called `Option::unwrap()` on a `None` value"],
        "{ir}"
    );
}

#[test]
fn checks_that_can_fire_stay() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;
            pub const TILE: usize = 128;

            #[kernel(warps = 2)]
            pub async fn k(lo: usize, hi: usize, d: u32, x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 64], 2>();
                join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(lo, hi, d, x, rx, y))).await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; 64], 2>) {
                // Tiles of 128 elements into slots of 64: the copy's length check stays.
                for tile in block_tiles(x.len(), TILE) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn store(
                lo: usize,
                hi: usize,
                d: u32,
                x: &[f32],
                mut rx: Receiver<[f32; 64], 2>,
                y: &mut [f32],
            ) {
                // A divisor from the host, and a range from the host: their checks stay.
                let q = 1000 / d;
                let v = x[lo..hi].len() as u32 + q;
                while let Some(_slot) = rx.recv().await {}
                // Tiles of `x` on `y`: each ends within `x`, not within `y`.
                for tile in block_tiles(x.len(), TILE) {
                    y[tile.start..tile.end].par_iter_mut().for_each(|o| *o = v as f32);
                }
            }
        }
    };
    let ir = one(module).ir_text;
    let left = checks(&ir);
    for needle in [
        "copy_from: the source is longer than the slot's 64 elements",
        "attempt to divide by zero",
        "slice index starts after it ends",
        "slice range past the end of the slice",
    ] {
        assert!(
            left.iter().any(|m| m.contains(needle)),
            "{needle:?} is gone:\n{ir}"
        );
    }
    // `x[lo..hi]` keeps both of its checks; `y[tile]` keeps only its end's (a tile starts
    // before it ends, whatever slice it came from).
    let count = |m: &str| left.iter().filter(|l| **l == m).count();
    assert_eq!(count("slice range past the end of the slice"), 2, "{ir}");
    assert_eq!(count("slice index starts after it ends"), 1, "{ir}");
}

#[test]
fn a_value_written_again_keeps_its_checks() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;
            pub const TILE: usize = 256;

            #[kernel(warps = 1)]
            pub async fn k(bump: bool, x: &[f32], out: &mut [u32]) {
                join!(on_warps(0..1, work(bump, x, out))).await;
            }

            async fn work(bump: bool, x: &[f32], out: &mut [u32]) {
                let mut total = 0usize;
                let mut limit = x.len();
                for tile in block_tiles(x.len(), TILE) {
                    // Written in a branch: past the end of `x` when `bump`.
                    let mut end = tile.end;
                    if bump {
                        end = end + 1;
                    }
                    total = total + x[tile.start..end].len();
                    // Written later in the loop: from the second tile on, it is the previous
                    // tile's start, before this tile's.
                    total = total + x[tile.start..limit].len();
                    limit = tile.start;
                }
                out[0..1].par_iter_mut().for_each(|o| *o = total as u32);
            }
        }
    };
    let ir = one(module).ir_text;
    let left = checks(&ir);
    let count = |m: &str| left.iter().filter(|l| **l == m).count();
    // Both slices of `x` keep both checks; `out[0..1]` keeps its end's (`out` may be empty),
    // not its start's (`0 <= 1`).
    assert_eq!(count("slice index starts after it ends"), 2, "{ir}");
    assert_eq!(count("slice range past the end of the slice"), 3, "{ir}");
}
