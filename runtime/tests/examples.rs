//! The examples' kernels on random inputs, every element compared with a CPU loop: on the
//! simulator, and on the GPU in the `#[needs_gpu]` tests.

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[path = "common/devices.rs"]
mod devices;

#[allow(dead_code)]
#[path = "../../examples/reduce.rs"]
mod reduce;

#[allow(dead_code)]
#[path = "../../examples/softmax.rs"]
mod softmax;

#[allow(dead_code)]
#[path = "../../examples/histogram.rs"]
mod histogram;

#[allow(dead_code)]
#[path = "../../examples/copy.rs"]
mod copy;

#[allow(dead_code)]
#[path = "../../examples/transpose.rs"]
mod transpose;

#[allow(dead_code)]
#[path = "../../examples/tile_copy.rs"]
mod tile_copy;

#[allow(dead_code)]
#[path = "../../examples/gemm.rs"]
mod gemm;

#[allow(dead_code)]
#[path = "../../examples/attention.rs"]
mod attention;

#[allow(dead_code)]
#[path = "../../examples/scan.rs"]
mod scan;

#[allow(dead_code)]
#[path = "../../examples/saxpy_variants.rs"]
mod saxpy_variants;

#[allow(dead_code)]
#[path = "../../examples/async_demos.rs"]
mod async_demos;

#[allow(dead_code, clippy::all)]
#[path = "../../examples/join_cost.rs"]
mod join_cost;

#[allow(dead_code)]
#[path = "../../examples/pipeline_variants.rs"]
mod pipeline_variants;

#[allow(dead_code)]
#[path = "../../examples/stencil.rs"]
mod stencil;

/// The pipeline example, which `pipeline_variants` includes for its launch type and check.
use pipeline_variants::pipeline;

use gpu_async::{Device, Grid};
use gpu_async_testing::{needs_gpu, on_each_device};

/// Empty, shorter than a tile, around tile boundaries (2048 for saxpy, 1024 for the pipeline),
/// and not a multiple of anything.
const LENGTHS: &[usize] = &[
    0,
    1,
    7,
    1023,
    1024,
    1025,
    2047,
    2048,
    2049,
    3 * 2048 + 17,
    40_009,
];

#[test]
fn saxpy_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS.iter().enumerate() {
        for blocks in [1, 3, 8] {
            let bad = saxpy::run_and_check(&dev, Grid::blocks(blocks), n, i as u64)?;
            assert_eq!(bad, 0, "saxpy: {bad} mismatches, n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[test]
fn pipeline_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS.iter().enumerate() {
        for blocks in [1, 2, 5] {
            let bad = pipeline::run_and_check(&dev, Grid::blocks(blocks), n, 100 + i as u64)?;
            assert_eq!(
                bad, 0,
                "pipeline: {bad} mismatches, n = {n}, {blocks} blocks"
            );
        }
    }
    Ok(())
}

/// Lengths around the stencil's tiles (1024) and runs (8192): a run of one tile, a tile of one
/// element, a last run shorter than a tile.
const STENCIL_LENGTHS: &[usize] = &[8191, 8192, 8193, 9216, 9217, 3 * 8192 + 1];

#[test]
fn stencil_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS.iter().chain(STENCIL_LENGTHS).enumerate() {
        for blocks in [1, 2, 5] {
            let bad = stencil::run_and_check(&dev, Grid::blocks(blocks), n, 300 + i as u64)?;
            assert_eq!(
                bad, 0,
                "stencil: {bad} mismatches, n = {n}, {blocks} blocks"
            );
        }
    }
    Ok(())
}

/// The sum against the CPU in the language's reduction order: the same bits, on any grid and
/// with tiles of 4096 cut anywhere.
fn reduce_check(dev: &Device, grid: Grid, n: usize, seed: u64) -> gpu_async::Result<usize> {
    let xs = gpu_async::bench::random_f32(n, seed);
    let got = reduce::run(dev, grid, &xs)?;
    let want = reduce::reference(&xs, grid.block_count() as usize);
    Ok(usize::from(got.to_bits() != want.to_bits()))
}

#[test]
fn reduce_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS
        .iter()
        .chain(&[4095, 4096, 4097, 3 * 4096 + 1])
        .enumerate()
    {
        for blocks in [1, 2, 5] {
            let bad = reduce_check(&dev, Grid::blocks(blocks), n, 200 + i as u64)?;
            assert_eq!(bad, 0, "reduce: n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[test]
fn softmax_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (rows, blocks) in [(0, 1), (1, 1), (5, 2), (9, 4)] {
        let worst = softmax::run_and_check(&dev, Grid::blocks(blocks), rows, rows as u64)?;
        assert!(
            worst <= softmax::TOLERANCE,
            "softmax: {rows} rows, {blocks} blocks, error {worst:e}"
        );
    }
    Ok(())
}

#[needs_gpu]
fn softmax_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    let sms = dev.sm_count()?;
    for (rows, blocks) in [(1, 1), (7, 3), (300, sms), (1024, 2 * sms)] {
        let worst = softmax::run_and_check(&dev, Grid::blocks(blocks), rows, rows as u64)?;
        assert!(
            worst <= softmax::TOLERANCE,
            "softmax: {rows} rows, {blocks} blocks, error {worst:e}"
        );
    }
    Ok(())
}

#[test]
fn transpose_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for n in [64, 128, 192] {
        let bad = transpose::run_and_check(&dev, transpose::tile_grid(n), n, n as u64)?;
        assert_eq!(bad, 0, "transpose: n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn transpose_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    for n in [64, 192, 1024, 4096] {
        let bad = transpose::run_and_check(&dev, transpose::tile_grid(n), n, n as u64)?;
        assert_eq!(bad, 0, "transpose: n = {n}");
    }
    Ok(())
}

#[test]
fn tile_copy_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    // Whole tiles, ragged edges, one row, and a matrix smaller than one tile.
    for (rows, cols) in [(64, 96), (100, 36), (1, 260), (5, 4)] {
        let grid = tile_copy::grid_for(&dev, 4)?;
        let bad = tile_copy::run_and_check(&dev, grid, rows, cols, rows as u64)?;
        assert_eq!(bad, 0, "tile copy: {rows} x {cols}");
    }
    Ok(())
}

#[needs_gpu]
fn tile_copy_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    for (rows, cols) in [
        (64, 96),
        (100, 36),
        (1, 260),
        (5, 4),
        (1000, 3000),
        (4096, 4096),
    ] {
        let grid = tile_copy::grid_for(&dev, 4)?;
        let bad = tile_copy::run_and_check(&dev, grid, rows, cols, rows as u64)?;
        assert_eq!(bad, 0, "tile copy: {rows} x {cols}");
    }
    Ok(())
}

/// The GEMM's shapes: whole tiles, ragged M, N and K (K not a multiple of the stage's 64), a
/// single row, and more tiles than blocks.
const GEMM_SHAPES: [(usize, usize, usize); 5] = [
    (128, 256, 64),
    (200, 300, 136),
    (1, 8, 8),
    (130, 520, 72),
    (384, 512, 192),
];

/// The shapes of the A · B product: the same but a ragged N that is a multiple of 8 (B's rows
/// are N elements, whose 16-byte multiple its tensor map needs).
const GEMM_KN_SHAPES: [(usize, usize, usize); 5] = [
    (128, 256, 64),
    (200, 296, 136),
    (1, 8, 8),
    (130, 520, 72),
    (384, 512, 192),
];

/// Each product with its shapes.
fn gemm_cases() -> impl Iterator<Item = (gemm::Product, (usize, usize, usize))> {
    let abt = GEMM_SHAPES.map(|s| (gemm::Product::ABt, s));
    let ab = GEMM_KN_SHAPES.map(|s| (gemm::Product::AB, s));
    abt.into_iter().chain(ab)
}

#[test]
fn gemm_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, (product, shape)) in gemm_cases().enumerate() {
        let (m, n, k) = shape;
        let (a, b) = gemm::inputs(m, n, k, i as u64);
        let c = gemm::run(&dev, gemm::grid_for(&dev)?, product, shape, &a, &b)?;
        let bad = gemm::mismatches_in_rows(shape, &a, &b, &c, 0..m);
        assert_eq!(bad, 0, "gemm {product:?} {m} x {n} x {k}");
    }
    Ok(())
}

#[needs_gpu]
fn gemm_on_the_gpu_agrees_with_the_exact_product_and_the_simulator() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    let sim = Device::simulator();
    for (i, (product, shape)) in gemm_cases().enumerate() {
        let (m, n, k) = shape;
        let (a, b) = gemm::inputs(m, n, k, i as u64);
        let c = gemm::run(&dev, gemm::grid_for(&dev)?, product, shape, &a, &b)?;
        let bad = gemm::mismatches_in_rows(shape, &a, &b, &c, 0..m);
        assert_eq!(
            bad, 0,
            "gemm {product:?} {m} x {n} x {k} against the exact product"
        );
        let simulated = gemm::run(&sim, gemm::grid_for(&sim)?, product, shape, &a, &b)?;
        let apart = gemm::mismatches_between(shape, &a, &b, &c, &simulated);
        assert_eq!(
            apart, 0,
            "gemm {product:?} {m} x {n} x {k} against the simulator"
        );
    }
    // Larger and ragged, on sampled rows.
    for product in [gemm::Product::ABt, gemm::Product::AB] {
        for shape in [(1000, 3000, 520), (2048, 2048, 4096)] {
            let (m, n, k) = shape;
            let (a, b) = gemm::inputs(m, n, k, 9);
            let c = gemm::run(&dev, gemm::grid_for(&dev)?, product, shape, &a, &b)?;
            let bad = gemm::mismatches_in_rows(shape, &a, &b, &c, gemm::sampled_rows(m));
            assert_eq!(bad, 0, "gemm {product:?} {m} x {n} x {k}");
        }
    }
    Ok(())
}

#[test]
fn scan_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for n in [0, 1, 1000, 8191, 8192, 8193, 40_000] {
        let bad = scan::run_and_check(&dev, n, n as u64)?;
        assert_eq!(bad, 0, "scan: n = {n}");
    }
    Ok(())
}

#[needs_gpu]
fn scan_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    for n in [
        0,
        1,
        1000,
        8191,
        8192,
        8193,
        40_000,
        1 << 22,
        (1 << 24) + 13,
    ] {
        let bad = scan::run_and_check(&dev, n, n as u64)?;
        assert_eq!(bad, 0, "scan: n = {n}");
    }
    Ok(())
}

type Check = fn(&Device, Grid, usize, u64) -> gpu_async::Result<usize>;

/// Every length above plus two large ones, on 1, 1 and 4 blocks per multiprocessor.
fn on_the_gpu(name: &str, check: Check) -> gpu_async::Result<()> {
    let dev = devices::gpu();
    let sms = dev.sm_count()?;
    for (i, &n) in LENGTHS.iter().chain(&[1 << 22, (1 << 24) + 13]).enumerate() {
        for blocks in [1, sms, 4 * sms] {
            let bad = check(&dev, Grid::blocks(blocks), n, i as u64)?;
            assert_eq!(bad, 0, "{name}: {bad} mismatches, n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[needs_gpu]
fn saxpy_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("saxpy", saxpy::run_and_check)?;
    // The example's default grid: one block per tile.
    let dev = devices::gpu();
    for (i, &n) in LENGTHS.iter().chain(&[(1 << 24) + 13]).enumerate() {
        let bad = saxpy::run_and_check(&dev, saxpy::tile_grid(&dev, n), n, 50 + i as u64)?;
        assert_eq!(
            bad, 0,
            "saxpy, one block per tile: {bad} mismatches, n = {n}"
        );
    }
    Ok(())
}

#[needs_gpu]
fn pipeline_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("pipeline", pipeline::run_and_check)?;
    // The example's default grid: one block per 8 tiles, more blocks than are resident.
    let dev = devices::gpu();
    for (i, &n) in LENGTHS.iter().chain(&[(1 << 24) + 13]).enumerate() {
        let grid = pipeline::tile_group_grid(&dev, n);
        let bad = pipeline::run_and_check(&dev, grid, n, 70 + i as u64)?;
        assert_eq!(
            bad, 0,
            "pipeline, one block per 8 tiles: {bad} mismatches, n = {n}"
        );
    }
    Ok(())
}

#[needs_gpu]
fn stencil_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("stencil", stencil::run_and_check)?;
    // The example's default grid: one block per run of 8 tiles.
    let dev = devices::gpu();
    for (i, &n) in LENGTHS
        .iter()
        .chain(STENCIL_LENGTHS)
        .chain(&[(1 << 24) + 13])
        .enumerate()
    {
        let grid = stencil::run_grid(&dev, n);
        let bad = stencil::run_and_check(&dev, grid, n, 90 + i as u64)?;
        assert_eq!(
            bad, 0,
            "stencil, one block per run: {bad} mismatches, n = {n}"
        );
    }
    Ok(())
}

#[needs_gpu]
fn reduce_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("reduce", reduce_check)
}

/// Every shape of the pipeline in `pipeline_variants` (other tiles, deeper rings, loops that are
/// not unrolled) computes `a * x + b`, around its tile boundaries too, on `blocks` blocks.
fn pipeline_variants_on(dev: &Device, blocks: u32) -> gpu_async::Result<()> {
    for (name, launch) in pipeline_variants::variants() {
        for n in [0, 1, 511, 513, 1025, 40_009] {
            let grid = Grid::blocks(blocks);
            let bad = pipeline::run_and_check_kernel(launch, dev, grid, n, 5 + n as u64)?;
            assert_eq!(bad, 0, "{name} on {dev}: n = {n}");
        }
    }
    Ok(())
}

#[test]
fn pipeline_variants_on_the_simulator() -> gpu_async::Result<()> {
    pipeline_variants_on(&Device::simulator(), 3)
}

#[needs_gpu]
fn pipeline_variants_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    pipeline_variants_on(&dev, 2 * dev.sm_count()?)
}

/// saxpy with `get_unchecked` tile slicing computes what the checked one does, on `blocks`
/// blocks.
fn unchecked_saxpy_on(dev: &Device, blocks: u32) -> gpu_async::Result<()> {
    for n in [0, 1, 2047, 2049, 40_009] {
        let xs = gpu_async::bench::random_f32(n, 1);
        let ys = gpu_async::bench::random_f32(n, 2);
        let x = dev.upload(&xs)?;
        let mut y = dev.upload(&ys)?;
        gpu_async::block_on(saxpy_variants::unchecked::saxpy::launch(
            dev,
            Grid::blocks(blocks),
            (1.25, &x, &mut y),
        ))?;
        let got = y.download()?;
        let bad = got
            .iter()
            .zip(xs.iter().zip(&ys))
            .filter(|(g, (x, y))| g.to_bits() != (1.25 * **x + **y).to_bits())
            .count();
        assert_eq!(bad, 0, "unchecked saxpy on {dev}: n = {n}");
    }
    Ok(())
}

#[test]
fn unchecked_saxpy_on_the_simulator() -> gpu_async::Result<()> {
    unchecked_saxpy_on(&Device::simulator(), 3)
}

#[needs_gpu]
fn unchecked_saxpy_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    unchecked_saxpy_on(&dev, 4 * dev.sm_count()?)
}

/// The 64-FMA kernels that take their own shapes: one role without a ring, with registers sized for
/// 8 blocks per SM (`min_blocks_per_sm`), in place; and the out-of-place kernel that streams `x`
/// and `y` through two rings. Every element against the CPU's 64 `mul_add`s, at lengths with and
/// without a partial tile, on a grid of one block per tile (more blocks than are resident) and on
/// a smaller one.
#[on_each_device]
fn fma64_variants(dev: Device) -> gpu_async::Result<()> {
    use saxpy_variants::{
        fma64_flat_w8_t4k_b8 as flat, fma64_reference as reference,
        fma64_xy_w10_t4k_d2 as two_rings,
    };
    for n in [0, 1, 4095, 4096, 40_009, 1 << 20] {
        let grids = [Grid::per_tile(n, flat::TILE), Grid::blocks(3)];
        let xs = gpu_async::bench::random_f32(n, 5);
        let ys = gpu_async::bench::random_f32(n, 6);
        let x = dev.upload(&xs)?;
        let y_in = dev.upload(&ys)?;
        for grid in grids {
            let mut y = dev.upload(&ys)?;
            gpu_async::block_on(flat::fma64::launch(&dev, grid, (-0.5, &x, &mut y)))?;
            let mut z = dev.alloc::<f32>(n)?;
            gpu_async::block_on(two_rings::fma64::launch(
                &dev,
                grid,
                (-0.5, &x, &y_in, &mut z),
            ))?;
            for (name, got) in [
                ("in place, no ring", y.download()?),
                ("two rings", z.download()?),
            ] {
                let bad = got
                    .iter()
                    .zip(xs.iter().zip(&ys))
                    .filter(|(g, (x, y))| g.to_bits() != reference(-0.5, **x, **y).to_bits())
                    .count();
                assert_eq!(
                    bad,
                    0,
                    "fma64 {name} on {dev}: n = {n}, {} blocks",
                    grid.block_count()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn copy_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS.iter().chain(&[4095, 4096, 4097]).enumerate() {
        for blocks in [1, 2, 5] {
            let bad = copy::run_and_check(&dev, Grid::blocks(blocks), n, 400 + i as u64)?;
            assert_eq!(bad, 0, "copy: {bad} mismatches, n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[needs_gpu]
fn copy_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("copy", copy::run_and_check)
}

#[test]
fn histogram_on_the_simulator() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    for (i, &n) in LENGTHS.iter().chain(&[8191, 8192, 8193]).enumerate() {
        for blocks in [1, 2, 5] {
            let bad = histogram::run_and_check(&dev, Grid::blocks(blocks), n, 300 + i as u64)?;
            assert_eq!(
                bad, 0,
                "histogram: {bad} bins differ, n = {n}, {blocks} blocks"
            );
        }
    }
    Ok(())
}

#[needs_gpu]
fn histogram_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("histogram", histogram::run_and_check)
}

/// 2^28 + 5 elements (1 GiB per buffer), on the grids the examples use.
#[needs_gpu]
#[ignore = "heavy: 2^28 elements; run on the GPU machine with --include-ignored"]
fn large_inputs_on_the_gpu() -> gpu_async::Result<()> {
    let dev = devices::gpu();
    let n = (1 << 28) + 5;
    let bad = saxpy::run_and_check(&dev, saxpy::grid_for(&dev, 4)?, n, 9)?;
    assert_eq!(bad, 0, "saxpy: {bad} mismatches, n = {n}");
    let bad = saxpy::run_and_check(&dev, saxpy::tile_grid(&dev, n), n, 11)?;
    assert_eq!(
        bad, 0,
        "saxpy, one block per tile: {bad} mismatches, n = {n}"
    );
    let bad = pipeline::run_and_check(&dev, pipeline::grid_for(&dev, 4)?, n, 10)?;
    assert_eq!(bad, 0, "pipeline: {bad} mismatches, n = {n}");
    Ok(())
}

#[on_each_device]
fn async_demos_match_the_cpu(dev: Device) -> gpu_async::Result<()> {
    for &n in &[0, 1, 255, 256, 257, 5000] {
        for blocks in [1, 3] {
            let bad = async_demos::run_and_check(&dev, Grid::blocks(blocks), n)?;
            assert_eq!(bad, 0, "{dev}: {bad} mismatches, n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[on_each_device]
fn join_cost_variants_agree(dev: Device) -> gpu_async::Result<()> {
    for items in [0u32, 1, 2, 3, 500] {
        let failures = join_cost::check(&dev, items)?;
        assert!(failures.is_empty(), "{dev}, {items} items: {failures:?}");
    }
    Ok(())
}

/// `Err(e)` whose message names `what`, with the kernel's own words; a launch that succeeded or
/// failed for another reason is a test failure.
fn rejected(result: gpu_async::Result<()>, what: &str) {
    match result {
        Err(gpu_async::Error::KernelPanic { message, .. }) if message.contains(what) => {}
        other => panic!("expected a kernel panic saying {what:?}, got {other:?}"),
    }
}

/// Every example kernel checks that its buffers fit together: a launch with lengths that differ
/// is an `Err` that says so, never a partial result or a hang.
#[on_each_device]
fn examples_reject_buffers_of_different_lengths(dev: Device) -> gpu_async::Result<()> {
    let grid = Grid::blocks(2);
    let x = dev.upload(&vec![1.0f32; 4096])?;
    for y_len in [1000, 8192] {
        let mut y = dev.alloc::<f32>(y_len)?;
        let differ = "x and y differ in length";
        rejected(
            gpu_async::block_on(saxpy::stream::saxpy::launch(&dev, grid, (2.0, &x, &mut y))),
            differ,
        );
        rejected(
            gpu_async::block_on(pipeline::pipeline::scale_shift::launch(
                &dev,
                grid,
                (2.0, 1.0, &x, &mut y),
            )),
            differ,
        );
        rejected(
            gpu_async::block_on(copy::copy::copy::launch(&dev, grid, (&x, &mut y))),
            differ,
        );
        rejected(
            gpu_async::block_on(copy::tiles::copy::launch(&dev, grid, (&x, &mut y))),
            differ,
        );
        rejected(
            gpu_async::block_on(softmax::softmax::rows::launch(&dev, grid, (&x, &mut y))),
            differ,
        );
    }
    let ragged = dev.upload(&vec![1.0f32; 4097])?;
    let mut y = dev.alloc::<f32>(4097)?;
    rejected(
        gpu_async::block_on(softmax::softmax::rows::launch(
            &dev,
            grid,
            (&ragged, &mut y),
        )),
        "whole number of rows",
    );
    let mut partials = dev.alloc::<f32>(1)?;
    rejected(
        gpu_async::block_on(reduce::reduce::sum::launch(&dev, grid, (&x, &mut partials))),
        "one element per block",
    );
    let words = dev.upload(&[3u32; 25])?;
    let mut bins = dev.alloc::<u32>(255)?;
    rejected(
        gpu_async::block_on(histogram::histogram::count::launch(
            &dev,
            grid,
            (&words, 100, &mut bins),
        )),
        "256",
    );
    let mut bins = dev.alloc::<u32>(256)?;
    rejected(
        gpu_async::block_on(histogram::histogram::count::launch(
            &dev,
            grid,
            (&words, 101, &mut bins),
        )),
        "fewer than n bytes",
    );
    Ok(())
}

/// Attention shapes: (heads, S, causal, d): one tile, a ragged S, several tiles of keys, causal
/// and full, both head dimensions.
const ATTENTION_CASES: [(usize, usize, bool, usize); 7] = [
    (1, 128, false, 128),
    (2, 130, true, 128),
    (1, 200, false, 128),
    (2, 300, true, 128),
    (1, 1, false, 128),
    (2, 200, true, 64),
    (1, 300, false, 64),
];

fn attention_shape((heads, s, causal, d): (usize, usize, bool, usize)) -> attention::Shape {
    attention::Shape {
        heads,
        s,
        d,
        causal,
    }
}

#[test]
fn attention_on_the_simulator() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::simulator();
    for (i, &case) in ATTENTION_CASES.iter().enumerate() {
        let shape = attention_shape(case);
        let inputs = attention::inputs(shape, i as u64);
        let (o, lse) = attention::run(&dev, shape, &inputs)?;
        let rows: Vec<usize> = (0..shape.s).collect();
        let bad = attention::mismatches(shape, shape.heads, &inputs, (&o, &lse), &rows);
        assert_eq!(bad, 0, "attention {shape:?}");
    }
    Ok(())
}

#[test]
fn attention_blocks_take_the_tiles_from_the_counter_on_the_simulator(
) -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::simulator();
    // 9 query tiles of 1 to 3 blocks of keys, taken by 2 and by 4 blocks.
    let shape = attention_shape((3, 300, true, 64));
    let inputs = attention::inputs(shape, 5);
    let rows: Vec<usize> = (0..shape.s).collect();
    for blocks in [2, 4] {
        let (o, lse) = attention::run_on(&dev, Grid::blocks(blocks), shape, &inputs)?;
        let bad = attention::mismatches(shape, shape.heads, &inputs, (&o, &lse), &rows);
        assert_eq!(bad, 0, "attention {shape:?} on {blocks} blocks");
    }
    Ok(())
}

#[test]
fn attention_of_an_unsupported_head_dimension_is_an_error() {
    let shape = attention_shape((1, 128, false, 96));
    let inputs = attention::inputs(shape, 0);
    match attention::run(&Device::simulator(), shape, &inputs) {
        Err(e) => assert_eq!(e.to_string(), "the head dimension is 128 or 64, not 96"),
        Ok(_) => panic!("d = 96 ran"),
    }
}

#[needs_gpu]
fn attention_on_the_gpu_agrees_with_the_exact_result() -> Result<(), Box<dyn std::error::Error>> {
    let dev = devices::gpu();
    // The last two have more query tiles than the H200 has SMs: blocks take several tiles.
    let more = [
        (3, 1000, true, 128),
        (2, 1024, false, 128),
        (3, 1000, false, 64),
        (40, 1000, true, 128),
        (24, 1024, false, 64),
    ];
    for (i, case) in ATTENTION_CASES.iter().copied().chain(more).enumerate() {
        let shape = attention_shape(case);
        let inputs = attention::inputs(shape, i as u64);
        let (o, lse) = attention::run(&dev, shape, &inputs)?;
        let rows = attention::sampled_rows(shape.s);
        let bad = attention::mismatches(shape, shape.heads, &inputs, (&o, &lse), &rows);
        assert_eq!(bad, 0, "attention {shape:?}");
    }
    Ok(())
}
