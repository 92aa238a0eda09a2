//! Register budgets (`setmaxnreg`): when they are derived, what the PTX gets, and the errors of
//! `#[kernel(.., registers(..))]`.

mod common;

use common::{assert_assembles_without_spills, assert_error, one};
use gpu_async_compiler::ir::RegisterBudgets;
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A loader, a transform and a storer on `ranges` of a block of `warps` warps, with `attr` after
/// `warps = N` in `#[kernel(..)]`.
fn pipeline(warps: u32, ranges: [TokenStream; 3], attr: TokenStream) -> TokenStream {
    placed_pipeline(quote!(warps = #warps), quote!(on_warps), ranges, attr)
}

/// The pipeline with the kernel's size written as `size` (`warps = N` or `warpgroups = N`) and
/// its roles placed by `place` (`on_warps` or `on_warpgroups`).
fn placed_pipeline(
    size: TokenStream,
    place: TokenStream,
    ranges: [TokenStream; 3],
    attr: TokenStream,
) -> TokenStream {
    let [load, transform, store] = ranges;
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(#size #attr)]
            pub async fn pipeline(a: f32, x: &[f32], y: &mut [f32]) {
                let (load_tx, load_rx) = channel::<[f32; 1024], 4>();
                let (out_tx, out_rx) = channel::<[f32; 1024], 2>();
                join!(
                    #place(#load, load(x, load_tx)),
                    #place(#transform, transform(a, load_rx, out_tx)),
                    #place(#store, store(out_rx, y)),
                )
                .await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; 1024], 4>) {
                for tile in block_tiles(x.len(), 1024) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn transform(a: f32, mut rx: Receiver<[f32; 1024], 4>, mut tx: Sender<[f32; 1024], 2>) {
                while let Some(input) = rx.recv().await {
                    let Some(mut output) = tx.reserve().await else { return };
                    output.par_iter_mut().zip(input.par_iter()).for_each(|(o, i)| *o = a * i);
                    output.send();
                }
            }

            async fn store(mut rx: Receiver<[f32; 1024], 2>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), 1024);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    slot.copy_to(&mut y[tile]).await;
                }
            }
        }
    }
}

/// The pipeline on 12 warps with a loader of one warp (0..1), the transform on 4..8 and the storer
/// on 8..12: warps 1..4 run no role.
fn one_warp_loader(attr: TokenStream) -> TokenStream {
    pipeline(12, [quote!(0..1), quote!(4..8), quote!(8..12)], attr)
}

/// The usual shape: 16 warps, loader 0..4, transform 4..12, storer 12..16.
fn aligned(attr: TokenStream) -> TokenStream {
    pipeline(16, [quote!(0..4), quote!(4..12), quote!(12..16)], attr)
}

#[test]
fn data_movers_get_40_and_the_compute_role_the_rest() {
    let k = one(aligned(quote!()));
    assert_eq!(
        k.ir.registers,
        Some(RegisterBudgets {
            // 65536 registers / 512 threads.
            entry: 128,
            // (4 * 128 - 2 * 40) / 2 warpgroups, in multiples of 8.
            roles: vec![40, 216, 40],
            explicit: false,
        })
    );
    assert_eq!(k.registers_note, None);
    for needle in [
        ".target sm_90a\n",
        ".reqntid 512, 1, 1\n.maxnreg 128\n",
        "$role_0:\n    setmaxnreg.dec.sync.aligned.u32 40;\n",
        "$role_1:\n    setmaxnreg.inc.sync.aligned.u32 216;\n",
        "$role_2:\n    setmaxnreg.dec.sync.aligned.u32 40;\n",
    ] {
        assert!(k.ptx.contains(needle), "PTX lacks {needle:?}");
    }
    assert!(k
        .ir_text
        .contains("registers: 128 per thread at the entry, budgets derived from the roles"));
    assert!(k
        .ir_text
        .contains("role1 transform (warps 4..12, 216 registers):"));
}

#[test]
fn cutlass_numbers_for_one_loader_and_two_compute_warpgroups() {
    // 12 warps, one warpgroup each.
    let k = one(pipeline(
        12,
        [quote!(0..4), quote!(4..8), quote!(8..12)],
        quote!(, registers(store = 40)),
    ));
    let b = k.ir.registers.expect("budgets");
    assert_eq!((b.entry, b.explicit), (168, true));
    // The roles without a number share what is left, whatever they do: (3 * 168 - 40) / 2.
    assert_eq!(b.roles, vec![232, 232, 40]);
    let k = one(pipeline(
        12,
        [quote!(0..4), quote!(4..8), quote!(8..12)],
        quote!(, registers(load = 40, transform = 232, store = 232)),
    ));
    assert_eq!(k.ir.registers.expect("budgets").roles, vec![40, 232, 232]);
}

#[test]
fn no_budgets_where_roles_are_not_whole_warpgroups() {
    let k = one(pipeline(
        6,
        [quote!(0..1), quote!(1..5), quote!(5..6)],
        quote!(),
    ));
    assert_eq!(k.ir.registers, None);
    let note = k.registers_note.expect("a reason");
    assert!(
        note.contains("role `transform` runs on warps 1..5, which do not start a warpgroup"),
        "{note}"
    );
    assert!(k.ptx.contains(".target sm_90\n"));
    assert!(!k.ptx.contains("setmaxnreg") && !k.ptx.contains(".maxnreg"));
}

#[test]
fn no_budgets_with_idle_warps() {
    let k = one(pipeline(
        16,
        [quote!(0..4), quote!(4..8), quote!(8..12)],
        quote!(, idle_warps),
    ));
    assert_eq!(k.ir.registers, None);
    assert!(k
        .registers_note
        .as_deref()
        .is_some_and(|n| n.contains("4 of the block's 16 warps are in no role's warpgroup")));
}

#[test]
fn a_role_ending_inside_its_warpgroup_lends_the_idle_rest_its_budget() {
    // One loader warp (its copies are one thread's), the rest of warpgroup 0 idle.
    let k = one(one_warp_loader(quote!(, idle_warps)));
    assert_eq!(
        k.ir.registers,
        Some(RegisterBudgets {
            entry: 168,
            // Warpgroup 0 counts whole: 3 * 168 - 2 * 40 for the transform's one warpgroup,
            // capped at 256 (the storer only moves data too).
            roles: vec![40, 256, 40],
            explicit: false,
        })
    );
    // Warps 0..4 all reach the loader's `setmaxnreg`; warps 1..4 leave after it.
    let dispatch = k.ptx.split("$role_0;").next().expect("a dispatch");
    let to_loader = dispatch.lines().rev().nth(1).expect("the loader's test");
    assert!(to_loader.ends_with(", 4;"), "{to_loader}");
    let region: Vec<&str> = k
        .ptx
        .split("$role_0:\n")
        .nth(1)
        .expect("the loader's region")
        .lines()
        .take(3)
        .collect();
    assert_eq!(region[0].trim(), "setmaxnreg.dec.sync.aligned.u32 40;");
    assert!(
        region[1].trim().starts_with("setp.ge.u32") && region[1].ends_with(", 1;"),
        "{region:?}"
    );
    assert!(region[2].trim().ends_with("bra $exit;"), "{region:?}");
    let k = one(one_warp_loader(
        quote!(, idle_warps, registers(load = 40, transform = 232, store = 40)),
    ));
    assert_eq!(k.ir.registers.expect("budgets").roles, vec![40, 232, 40]);
    // Without `idle_warps` the rest of the warpgroup is not meant to idle.
    assert_error(
        one_warp_loader(quote!(, registers(load = 40))),
        "warps 1..4 run no role: give them a role in `join!`, lower `warps` in `#[kernel(warps = ..)]`, or say that they are meant to idle with `#[kernel(warps = 12, idle_warps)]`",
    );
}

#[test]
fn no_budgets_for_eight_warps() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 8)]
            pub async fn two(a: f32, x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 1024], 4>();
                join!(on_warps(0..4, load(x, tx)), on_warps(4..8, scale(a, rx, y))).await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; 1024], 4>) {
                for tile in block_tiles(x.len(), 1024) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn scale(a: f32, mut rx: Receiver<[f32; 1024], 4>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), 1024);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = a * i);
                }
            }
        }
    };
    let k = one(module);
    assert_eq!(k.ir.registers, None);
    let note = k.registers_note.expect("a reason");
    assert!(
        note.contains("with 8 warps every thread has 255 registers already"),
        "{note}"
    );
}

#[test]
fn no_budgets_when_off_or_when_no_role_only_moves_data() {
    let k = one(aligned(quote!(, registers(off))));
    assert_eq!(k.ir.registers, None);
    assert_eq!(
        k.registers_note.as_deref(),
        Some("turned off by `registers(off)`")
    );
    assert!(k.ptx.contains(".target sm_90\n"));
    // The loader fills its slots with a parallel loop: it computes too.
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 12)]
            pub async fn two(a: f32, x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 1024], 4>();
                join!(on_warps(0..4, fill(x, tx)), on_warps(4..12, scale(a, rx, y))).await;
            }

            async fn fill(x: &[f32], mut tx: Sender<[f32; 1024], 4>) {
                for tile in block_tiles(x.len(), 1024) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.par_iter_mut().zip(x[tile].par_iter()).for_each(|(s, v)| *s = *v);
                    slot.send();
                }
            }

            async fn scale(a: f32, mut rx: Receiver<[f32; 1024], 4>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), 1024);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = a * i);
                }
            }
        }
    };
    let k = one(module);
    assert_eq!(k.ir.registers, None);
    assert_eq!(k.registers_note.as_deref(), Some("no role only moves data"));
}

#[needs_ptxas]
fn the_kernels_with_budgets_assemble_without_spills() {
    for module in [
        aligned(quote!()),
        pipeline(
            12,
            [quote!(0..4), quote!(4..8), quote!(8..12)],
            quote!(, registers(load = 24, transform = 232)),
        ),
        one_warp_loader(quote!(, idle_warps)),
    ] {
        let k = one(module);
        assert!(k.ir.registers.is_some());
        assert_assembles_without_spills(&k);
    }
}

#[test]
fn a_budget_for_a_role_that_does_not_exist() {
    assert_error(
        aligned(quote!(, registers(loader = 40))),
        "`loader` is not a role of this kernel: a budget names the async fn a role runs (`load`, `transform`, `store`)",
    );
}

#[test]
fn budgets_setmaxnreg_cannot_take() {
    for (n, attr) in [
        (20, quote!(, registers(load = 20))),
        (42, quote!(, registers(load = 42))),
        (264, quote!(, registers(load = 264))),
    ] {
        assert_error(
            aligned(attr),
            &format!("a register budget is registers per thread, a multiple of 8 from 24 to 256 (what `setmaxnreg` takes); got {n}"),
        );
    }
}

#[test]
fn budgets_past_the_register_file() {
    assert_error(
        aligned(quote!(, registers(load = 40, transform = 256, store = 40))),
        "these budgets need 592 registers per thread over the warpgroups (`load` 40 x 1 + `transform` 256 x 2 + `store` 40 x 1), past the register file: the block's 512 threads hold 128 registers each at the entry (65536 / 512, in multiples of 8), 512 per thread over its 4 warpgroups; lower them to 512 in all (for example `transform = 216`)",
    );
    assert_error(
        aligned(quote!(, registers(transform = 248))),
        "these budgets (`transform` 248 x 2) leave 16 registers per thread for the 2 warpgroups of the roles without one (`load`, `store`), below the 24 each needs",
    );
}

#[test]
fn budgets_for_roles_that_are_not_whole_warpgroups() {
    assert_error(
        pipeline(
            6,
            [quote!(0..1), quote!(1..5), quote!(5..6)],
            quote!(, registers(load = 40)),
        ),
        "register budgets need whole warpgroups, but role `transform` runs on warps 1..5, which do not start a warpgroup: `setmaxnreg` sets the registers of 4 warps from a multiple of 4, all of which run it; give each warpgroup to one role",
    );
    assert_error(
        pipeline(
            16,
            [quote!(0..4), quote!(4..8), quote!(8..12)],
            quote!(, idle_warps, registers(load = 40)),
        ),
        "register budgets need whole warpgroups, but 4 of the block's 16 warps are in no role's warpgroup",
    );
}

#[test]
fn malformed_registers_options() {
    assert_error(
        aligned(quote!(, registers)),
        "write the register budgets per role, `registers(load = 40, compute = 232)`, or turn the derived ones off with `registers(off)`",
    );
    assert_error(
        aligned(quote!(, registers(off, load = 40))),
        "`registers(off)` turns the budgets off",
    );
    assert_error(
        aligned(quote!(, registers(load = 40, load = 48))),
        "`load` has a register budget already",
    );
    assert_error(aligned(quote!(, registers(load))), "expected `=`");
}

/// Shared memory, not warps, bounds the blocks per SM of the 6-warp pipeline (24 KiB of rings:
/// 9 blocks, where 64 warps would allow 10): the PTX says so to ptxas with `.minnctapersm`.
/// Kernels bounded by their warps get nothing.
#[test]
fn minnctapersm_where_shared_memory_bounds_the_blocks() {
    use gpu_async_compiler::registers::min_blocks_per_sm;
    assert_eq!(min_blocks_per_sm(9, 64 * 1024 + 64), Some(3));
    assert_eq!(min_blocks_per_sm(6, 24 * 1024 + 96), Some(9));
    // 8 warps and 16 KiB: 8 blocks by warps, 13 by shared memory.
    assert_eq!(min_blocks_per_sm(8, 16 * 1024 + 64), None);
    assert_eq!(min_blocks_per_sm(1, 0), None);
    // A block of 227 KiB: one.
    assert_eq!(min_blocks_per_sm(2, 227 * 1024), Some(1));
    let k = one(pipeline(
        6,
        [quote!(0..1), quote!(1..5), quote!(5..6)],
        quote!(),
    ));
    let want = min_blocks_per_sm(6, k.ir.shared_bytes).expect("bounded by shared memory");
    assert!(
        k.ptx
            .contains(&format!(".reqntid 192, 1, 1\n.minnctapersm {want}\n")),
        "{}",
        &k.ptx[..k.ptx.find('{').unwrap_or(0)]
    );
    // 16 warps: bounded by warps (4 blocks), not by its 24 KiB.
    assert!(!one(aligned(quote!(, registers(off))))
        .ptx
        .contains(".minnctapersm"));
}

/// One role on 8 warps without shared memory: the warps allow 8 blocks per SM, but ptxas does not
/// know that the user means to run 8 and allocates as for one.
fn flat(attr: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 8 #attr)]
            pub async fn scale(a: f32, x: &[f32], y: &mut [f32]) {
                join!(on_warps(0..8, scale_tiles(a, x, y))).await;
            }

            async fn scale_tiles(a: f32, x: &[f32], y: &mut [f32]) {
                for tile in block_tiles(y.len(), 4096) {
                    y[tile.start..tile.end]
                        .par_iter_mut()
                        .zip(x[tile.start..tile.end].par_iter())
                        .for_each(|(o, i)| *o = a.mul_add(*i, *o));
                }
            }
        }
    }
}

/// `min_blocks_per_sm = N` reaches the PTX as `.minnctapersm N`, where the kernel would have had
/// none, and replaces the one shared memory would give.
#[test]
fn min_blocks_per_sm_becomes_minnctapersm() {
    let k = one(flat(quote!(, min_blocks_per_sm = 8)));
    assert_eq!(k.ir.min_blocks_per_sm, Some(8));
    assert!(k.ptx.contains(".reqntid 256, 1, 1\n.minnctapersm 8\n"));
    assert!(k
        .ir_text
        .contains("registers: sized for 8 blocks per SM (`.minnctapersm 8`)"));
    let k = one(flat(quote!()));
    assert_eq!(k.ir.min_blocks_per_sm, None);
    assert!(!k.ptx.contains(".minnctapersm"));
    // The 6-warp pipeline: 9 blocks by shared memory unless the user asks for fewer.
    let six = |attr| pipeline(6, [quote!(0..1), quote!(1..5), quote!(5..6)], attr);
    assert_eq!(one(six(quote!())).ir.min_blocks_per_sm, Some(9));
    let k = one(six(quote!(, min_blocks_per_sm = 2)));
    assert!(k.ptx.contains(".reqntid 192, 1, 1\n.minnctapersm 2\n"));
}

/// A kernel whose roles would get register budgets gets none when it asks for several blocks
/// per SM (budgets give one block the whole register file), and says why.
#[test]
fn min_blocks_per_sm_turns_derived_budgets_off() {
    let k = one(aligned(quote!(, min_blocks_per_sm = 2)));
    assert_eq!(k.ir.registers, None);
    assert!(!k.ptx.contains(".maxnreg") && !k.ptx.contains("setmaxnreg"));
    assert!(k.ptx.contains(".reqntid 512, 1, 1\n.minnctapersm 2\n"));
    let note = k.registers_note.expect("a note");
    assert!(note.contains("`min_blocks_per_sm = 2`"), "{note}");
}

#[test]
fn min_blocks_per_sm_the_sm_cannot_hold() {
    // 16 warps: 4 blocks fill the SM's 64 warps.
    assert_error(
        aligned(quote!(, min_blocks_per_sm = 5)),
        "an SM holds at most 64 warps: 5 blocks of 16 warps would be 80; write `min_blocks_per_sm = 4` or fewer",
    );
    // 24 KiB of rings and barriers per block: 9 fit in 228 KiB with the 1 KiB each keeps.
    assert_error(
        pipeline(
            6,
            [quote!(0..1), quote!(1..5), quote!(5..6)],
            quote!(, min_blocks_per_sm = 10),
        ),
        "blocks fit, not 10",
    );
    assert_error(
        aligned(quote!(, min_blocks_per_sm = 0)),
        "an SM holds 1 to 32 blocks; got 0",
    );
    assert_error(
        aligned(quote!(, min_blocks_per_sm = 2, registers(load = 40))),
        "`min_blocks_per_sm` and `registers(..)` cannot be combined",
    );
    // `registers(off)` leaves nothing to combine.
    let k = one(aligned(quote!(, min_blocks_per_sm = 2, registers(off))));
    assert!(k.ptx.contains(".minnctapersm 2\n"));
}

#[test]
fn warpgroups_are_four_warps_each() {
    let by_warps = one(pipeline(
        12,
        [quote!(0..4), quote!(4..8), quote!(8..12)],
        quote!(, registers(load = 40)),
    ));
    let by_groups = one(placed_pipeline(
        quote!(warpgroups = 3),
        quote!(on_warpgroups),
        [quote!(0..1), quote!(1..2), quote!(2..3)],
        quote!(, registers(load = 40)),
    ));
    assert_eq!(by_groups.ptx, by_warps.ptx);
    assert_eq!(by_groups.ir_text, by_warps.ir_text);
    // The two placements mix: warpgroup 1 is warps 4..8.
    let mixed = one(placed_pipeline(
        quote!(warps = 12),
        quote!(on_warpgroups),
        [quote!(0..1), quote!(1..2), quote!(2..3)],
        quote!(, registers(load = 40)),
    ));
    assert_eq!(mixed.ptx, by_warps.ptx);
}

#[test]
fn warpgroup_errors_speak_in_warpgroups() {
    let groups = |size: TokenStream, ranges: [TokenStream; 3]| {
        placed_pipeline(size, quote!(on_warpgroups), ranges, quote!())
    };
    assert_error(
        groups(
            quote!(warpgroups = 2),
            [quote!(0..1), quote!(1..2), quote!(2..3)],
        ),
        "the warpgroup range 2..3 (warps 8..12) is past the kernel's 8 warps: raise `#[kernel(warpgroups = 3)]` or move the role",
    );
    assert_error(
        groups(
            quote!(warpgroups = 3),
            [quote!(0..1), quote!(1..2), quote!(1..3)],
        ),
        "the warpgroup range 1..3 (warps 4..12) overlaps role `transform` on warps 4..8",
    );
    assert_error(
        groups(
            quote!(warpgroups = 3),
            [quote!(0..1), quote!(1..2), quote!(2..9)],
        ),
        "the warpgroup range 2..9 (warps 8..36) is past the kernel's 12 warps, and a block has at most 32 warps (1024 threads): give the role a range within `0..3`",
    );
    assert_error(
        groups(
            quote!(warpgroups = 9),
            [quote!(0..1), quote!(1..2), quote!(2..3)],
        ),
        "a block has 1 to 8 warpgroups of 4 warps (at most 1024 threads); got 9",
    );
    assert_error(
        groups(
            quote!(warps = 12, warpgroups = 3),
            [quote!(0..1), quote!(1..2), quote!(2..3)],
        ),
        "write either `warps = N` or `warpgroups = N`",
    );
    assert_error(
        placed_pipeline(
            quote!(warps = 12),
            quote!(on_warp_groups),
            [quote!(0..1), quote!(1..2), quote!(2..3)],
            quote!(),
        ),
        "each argument of `join!` is `on_warps(first..end, role(args))` or `on_warpgroups(first..end, role(args))`",
    );
}
