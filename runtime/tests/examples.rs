//! The examples' kernels on random inputs, every element compared with a CPU loop: on the
//! simulator always, on the GPU when there is one (skipped, with the reason, otherwise).

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[allow(dead_code)]
#[path = "../../examples/pipeline.rs"]
mod pipeline;

use gpu_async::{Device, Grid};

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

fn gpu() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("skipping the GPU half: {e}");
            None
        }
    }
}

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

type Check = fn(&Device, Grid, usize, u64) -> gpu_async::Result<usize>;

/// Every length above plus two large ones, on 1, 1 and 4 blocks per multiprocessor.
fn on_the_gpu(name: &str, check: Check) -> gpu_async::Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let sms = dev.sm_count()?;
    for (i, &n) in LENGTHS.iter().chain(&[1 << 22, (1 << 24) + 13]).enumerate() {
        for blocks in [1, sms, 4 * sms] {
            let bad = check(&dev, Grid::blocks(blocks), n, i as u64)?;
            assert_eq!(bad, 0, "{name}: {bad} mismatches, n = {n}, {blocks} blocks");
        }
    }
    Ok(())
}

#[test]
fn saxpy_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("saxpy", saxpy::run_and_check)
}

#[test]
fn pipeline_on_the_gpu() -> gpu_async::Result<()> {
    on_the_gpu("pipeline", pipeline::run_and_check)
}

/// 2^28 + 5 elements (1 GiB per buffer), on the grids the examples use.
#[test]
#[ignore = "heavy: 2^28 elements; run on the GPU machine with --include-ignored"]
fn large_inputs_on_the_gpu() -> gpu_async::Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let n = (1 << 28) + 5;
    let bad = saxpy::run_and_check(&dev, saxpy::grid_for(&dev, 4)?, n, 9)?;
    assert_eq!(bad, 0, "saxpy: {bad} mismatches, n = {n}");
    let bad = pipeline::run_and_check(&dev, pipeline::grid_for(&dev, 4)?, n, 10)?;
    assert_eq!(bad, 0, "pipeline: {bad} mismatches, n = {n}");
    Ok(())
}
