//! Matrices and tiles: what a tile load and a tile read compile to (a tensor map parameter per
//! tile shape, one `cp.async.bulk.tensor` by the role's elected thread, swizzled reads), and the
//! errors of their types and calls.

mod common;

use common::{assert_assembles_without_spills, assert_error, one};
use gpu_async_compiler::ir::ParamKind;
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A loader that fills tiles of `TILE` (`Tile<T, R, C>`, with `R` and `C` the constants of that
/// name) from `a`, and a storer that writes each tile's elements, as `f32`, to `y`; `extra` is
/// spliced into the loader's loop after the first load.
fn tiles(elem: TokenStream, rc: (usize, usize), extra: TokenStream) -> TokenStream {
    let (r, c) = rc;
    // An `f32` element is the value; the 16-bit floats convert.
    let to_f32 = if elem.to_string() == "f32" {
        quote!()
    } else {
        quote!(.to_f32())
    };
    quote! {
        mod kernels {
            use gpu_async::device::*;
            const R: usize = #r;
            const C: usize = #c;

            #[kernel(warps = 5)]
            pub async fn tiles(a: &Matrix<#elem>, y: &mut [f32]) {
                let (tx, rx) = channel::<Tile<#elem, R, C>, 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(1..5, store(a, rx, y))).await;
            }

            async fn load(a: &Matrix<#elem>, mut tx: Sender<Tile<#elem, R, C>, 2>) {
                let per_row = (a.cols() + C - 1) / C;
                let count = (a.rows() + R - 1) / R * per_row;
                for t in block_tiles(count, 1) {
                    let Some(mut slot) = tx.reserve().await else { return };
                    slot.load(a, [t.start / per_row * R, t.start % per_row * C]).await;
                    #extra
                    slot.send();
                }
            }

            async fn store(a: &Matrix<#elem>, mut rx: Receiver<Tile<#elem, R, C>, 2>, y: &mut [f32]) {
                let per_row = (a.cols() + C - 1) / C;
                let count = (a.rows() + R - 1) / R * per_row;
                for t in block_tiles(count, 1) {
                    let Some(tile) = rx.recv().await else { return };
                    let base = t.start * R * C;
                    y[base..base + R * C]
                        .par_iter_mut()
                        .enumerate()
                        .for_each(|(i, o)| *o = tile[i / C][i % C] #to_f32);
                }
            }
        }
    }
}

#[test]
fn a_tile_load_is_one_tensor_copy_through_the_matrix_map() {
    let k = one(tiles(quote!(bf16), (64, 64), quote!()));
    for needle in [
        // Rows of 128 bytes take the 128-byte swizzle, whose pattern repeats every 1024 bytes.
        ".extern .shared .align 1024 .b8 gpu_async_smem[];",
        "    .param .u64 tiles_param_0,\n    .param .u64 tiles_param_1,\n    .param .u64 tiles_param_2,\n    .param .align 128 .b8 tiles_param_3[128],\n",
        "mov.b64 %rd",
        ", tiles_param_3;\n",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r",
        "], 8192;\n",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [",
    ] {
        assert!(k.ptx.contains(needle), "PTX lacks {needle:?}");
    }
    assert!(k
        .ir_text
        .contains("param a: &Matrix<bf16> = (ptr v0, rows v1, cols v2), map0 64 x 64"));
    assert!(k.ir_text.contains("tile_load ch0.0 <- a.map0 at ["));
    let ParamKind::Matrix { boxes, .. } = &k.ir.params[0].kind else {
        panic!("`a` is not a matrix parameter: {:?}", k.ir.params[0].kind);
    };
    assert_eq!(boxes.len(), 1);
    // The slots lie on the swizzle's 1024-byte repeat.
    let ch = &k.ir.channels[0];
    assert_eq!((ch.data_offset % 1024, ch.slot_stride % 1024), (0, 0));
}

#[test]
fn tiles_of_other_widths_take_their_own_swizzle_or_none() {
    // 32 f32 columns: 128 bytes, swizzled; 16 bf16 columns: 32 bytes; 8 f32 columns: 32 bytes;
    // 24 bf16 columns: 48 bytes, no swizzle (and the slot 128-byte aligned).
    for (elem, cols, mask, align) in [
        (quote!(f32), 32usize, Some(112), 1024),
        (quote!(bf16), 16, Some(16), 256),
        (quote!(f32), 8, Some(16), 256),
        (quote!(bf16), 24, None, 128),
    ] {
        let k = one(tiles(elem, (16, cols), quote!()));
        let decl = format!(".extern .shared .align {align} .b8 gpu_async_smem[];");
        assert!(k.ptx.contains(&decl), "cols {cols}: PTX lacks {decl:?}");
        match mask {
            Some(m) => assert!(
                k.ir_text.contains(&format!("u32 = const {m}\n")) && k.ir_text.contains(" = Xor "),
                "cols {cols}: no swizzle mask {m} in the IR"
            ),
            None => assert!(!k.ir_text.contains(" = Xor "), "cols {cols}: a swizzle"),
        }
    }
}

#[test]
fn each_tile_shape_of_a_matrix_has_a_map_of_its_own() {
    // A second load of the same shape uses the same map; none of another shape is made here,
    // so the matrix has one map.
    let k = one(tiles(quote!(bf16), (64, 64), quote!()));
    let ParamKind::Matrix { boxes, .. } = &k.ir.params[0].kind else {
        panic!("not a matrix");
    };
    assert_eq!(boxes, &vec![gpu_async_wire::TileBox { rows: 64, cols: 64 }]);
}

#[needs_ptxas]
fn tile_kernels_assemble_without_spills() {
    for (elem, rc) in [
        (quote!(bf16), (64, 64)),
        (quote!(f16), (128, 64)),
        (quote!(f32), (32, 32)),
        (quote!(bf16), (8, 24)),
    ] {
        let k = one(tiles(elem, rc, quote!()));
        assert_assembles_without_spills(&k);
    }
}

#[test]
fn tile_types_the_hardware_cannot_take() {
    assert_error(
        tiles(quote!(f64), (64, 64), quote!()),
        "a matrix holds `bf16`, `f16` or `f32` (what tile loads and the tensor cores take); `f64` is not one",
    );
    assert_error(
        tiles(quote!(bf16), (64, 12), quote!()),
        "a tile's row is a multiple of 16 bytes (a tile load moves rows in 16-byte units): 12 columns of `bf16` are 24 B; make the columns a multiple of 8",
    );
    assert_error(
        tiles(quote!(bf16), (300, 64), quote!()),
        "a tile has 1 to 256 rows (a tile load's limit); got 300",
    );
}

#[test]
fn a_loaded_slot_is_not_read_before_it_is_sent() {
    assert_error(
        tiles(
            quote!(bf16),
            (64, 64),
            quote!(let first = slot[0][0].to_f32();),
        ),
        "`slot` was filled by a bulk copy (`copy_from` or `load`), whose bytes are still in flight",
    );
}

/// A kernel whose loader's body is `body` (with `a: &Matrix<bf16>` and a reserved `slot` of
/// `Tile<bf16, 64, 64>`), for the errors of one call.
fn loader(body: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn k(a: &Matrix<bf16>, b: &Matrix<f16>, y: &mut [f32]) {
                let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
                join!(on_warps(0..1, load(a, b, tx)), on_warps(1..2, store(rx, y))).await;
            }

            async fn load(a: &Matrix<bf16>, b: &Matrix<f16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
                let Some(mut slot) = tx.reserve().await else { return };
                #body
                slot.send();
            }

            async fn store(mut rx: Receiver<Tile<bf16, 64, 64>, 2>, y: &mut [f32]) {
                let Some(tile) = rx.recv().await else { return };
                y[0] = tile[0][0].to_f32();
            }
        }
    }
}

#[test]
fn tile_loads_with_the_wrong_arguments() {
    assert_error(
        loader(quote!(slot.load(b, [0, 0]).await;)),
        "`load` fills a tile of `bf16` from a `&Matrix<bf16>`; found `&Matrix<f16>`",
    );
    assert_error(
        loader(quote!(slot.load(a, [0]).await;)),
        "the tile's top-left corner is two indices, `[row, col]`; found 1",
    );
    assert_error(
        loader(quote!(let at = 3usize; slot.load(a, at).await;)),
        "write the matrix element at the tile's top-left corner as `[row, col]` (or a local `[usize; 2]`); found `usize`",
    );
    assert_error(
        loader(quote!(slot.copy_from(&[0.0f32; 4]).await;)),
        "`copy_from` copies arrays of scalars; a tile is filled with `slot.load(matrix, [row, col])` and read as `tile[r][c]`",
    );
    assert_error(
        loader(quote!(slot[0][1] = bf16::from_f32(1.0);)),
        "a tile is filled by a tile load, `slot.load(matrix, [row, col]).await`; writing its elements is not in the language yet",
    );
    assert_error(
        loader(quote!(let n = a.len();)),
        "a matrix has `rows()` and `cols()`, and is read by tile loads",
    );
}

#[test]
fn matrix_parameters_are_references_of_tile_elements() {
    let module = |ty: TokenStream| {
        quote! {
            mod kernels {
                use gpu_async::device::*;
                #[kernel(warps = 1)]
                pub async fn k(a: #ty, y: &mut [f32]) {
                    join!(on_warps(0..1, r(y))).await;
                }
                async fn r(y: &mut [f32]) {
                    y[0] = 1.0;
                }
            }
        }
    };
    // A matrix the kernel writes with tile stores is `&mut`.
    let k = one(module(quote!(&mut Matrix<f32>)));
    assert!(matches!(
        k.ir.params[0].kind,
        ParamKind::Matrix { mutable: true, .. }
    ));
    assert_error(
        module(quote!(&Matrix<u32>)),
        "a matrix holds `bf16`, `f16` or `f32` (what tile loads and the tensor cores take); `u32` is not one",
    );
}

#[test]
fn a_tile_row_is_read_in_place() {
    let module = quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn k(a: &Matrix<bf16>, y: &mut [f32]) {
                let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
                join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, y))).await;
            }

            async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
                let Some(mut slot) = tx.reserve().await else { return };
                slot.load(a, [0, 0]).await;
                slot.send();
            }

            async fn store(mut rx: Receiver<Tile<bf16, 64, 64>, 2>, y: &mut [f32]) {
                let Some(tile) = rx.recv().await else { return };
                let row = tile[1];
                y[0] = row[2].to_f32();
            }
        }
    };
    assert_error(
        module,
        "a tile's row is not a value of its own (the tile is stored swizzled): read each element in place, as `tile[r][c]`",
    );
}

/// A loader of pairs of tiles (`Tile<bf16, 64, 64>`, `Tile<f32, 64, 32>`) from `a` and `b`,
/// whose loop body after the reserve is `body`, and a reader of both tiles.
fn pairs(body: TokenStream) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn pairs(a: &Matrix<bf16>, b: &Matrix<f32>, y: &mut [f32]) {
                let (tx, rx) = channel::<(Tile<bf16, 64, 64>, Tile<f32, 64, 32>), 2>();
                join!(on_warps(0..1, load(a, b, tx)), on_warps(1..2, store(rx, y))).await;
            }

            async fn load(
                a: &Matrix<bf16>,
                b: &Matrix<f32>,
                mut tx: Sender<(Tile<bf16, 64, 64>, Tile<f32, 64, 32>), 2>,
            ) {
                for t in block_tiles(a.rows() / 64, 1) {
                    let Some(mut stage) = tx.reserve().await else { return };
                    #body
                    stage.send();
                }
            }

            async fn store(
                mut rx: Receiver<(Tile<bf16, 64, 64>, Tile<f32, 64, 32>), 2>,
                y: &mut [f32],
            ) {
                while let Some(stage) = rx.recv().await {
                    y[0] = stage.0[1][2].to_f32() + stage.1[3][4];
                }
            }
        }
    }
}

#[test]
fn a_pair_of_tiles_is_two_loads_into_one_slot() {
    let k = one(pairs(quote! {
        let corner = [t.start * 64, 0];
        stage.0.load(a, corner).await;
        stage.1.load(b, [t.start * 64, 0]).await;
    }));
    // The bf16 tile at 0 (8192 bytes), the f32 tile after it, on its own 1024-byte repeat.
    let ch = &k.ir.channels[0];
    assert_eq!(ch.ty.part_offsets(), vec![0, 8192]);
    assert_eq!(ch.slot_stride, 16384);
    assert!(k.ir_text.contains("tile_load ch0.0 <- a.map0 at ["));
    assert!(k.ir_text.contains("tile_load ch0.1 <- b.map0 at ["));
    // One copy per tile, in each of the two copies of the loop body (unrolled by the ring's
    // depth), each expecting its tile's bytes.
    assert_eq!(k.ptx.matches("cp.async.bulk.tensor.2d").count(), 4);
    assert_eq!(k.ptx.matches("], 8192;\n").count(), 4);
    // The second tile's reads are offset by its place in the slot.
    assert!(k.ir_text.contains("u32 = const 8192\n"));
}

#[needs_ptxas]
fn a_pair_of_tiles_assembles() {
    let k = one(pairs(quote! {
        stage.0.load(a, [t.start * 64, 0]).await;
        stage.1.load(b, [t.start * 64, 0]).await;
    }));
    assert_assembles_without_spills(&k);
}

#[test]
fn the_tiles_of_a_pair_are_named_and_used_in_place() {
    assert_error(
        pairs(quote!(stage.load(a, [0, 0]).await;)),
        "a slot of `(Tile<bf16, 64, 64>, Tile<f32, 64, 32>)` holds two tiles: load each of them, `slot.0.load(a, [row, col]).await` and `slot.1.load(..)`",
    );
    assert_error(
        pairs(quote!(stage.2.load(a, [0, 0]).await;)),
        "a slot of `(Tile<bf16, 64, 64>, Tile<f32, 64, 32>)` has 2 tiles, `.0` to `.1`",
    );
    assert_error(
        pairs(quote!(stage.1.load(a, [0, 0]).await;)),
        "`load` fills a tile of `f32` from a `&Matrix<f32>`; found `&Matrix<bf16>`",
    );
    assert_error(
        pairs(quote!(stage.0.load(a, [0, 0]).await; let v = stage.1[0][0];)),
        "`stage` was filled by a bulk copy (`copy_from` or `load`), whose bytes are still in flight",
    );
}

#[test]
fn a_tile_smaller_than_its_swizzle_repeat_has_slots_a_repeat_apart() {
    // 3 rows of 64 bf16: 384 bytes with the 128-byte swizzle, which repeats every 1024.
    let k = one(tiles(quote!(bf16), (3, 64), quote!()));
    let ch = &k.ir.channels[0];
    assert_eq!((ch.data_offset % 1024, ch.slot_stride), (0, 1024));
}
