//! Kernels with register budgets (`setmaxnreg`, sm_90a) compute the same bits as plain CPU loops,
//! on the simulator (which ignores budgets) and on the GPU when there is one: a pipeline whose
//! loader and storer give registers to the transform, and a polynomial evaluator that needs more
//! registers than a uniform split gives it, with and without budgets.

#[allow(dead_code, clippy::all)]
#[path = "common/budgets.rs"]
mod budgets;

use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

use budgets::budgets::COEFS;

/// `n` values in [-1, 1].
fn inputs(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 % 2001) as f32 - 1000.0) / 1000.0)
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_budgets_are_in_the_ptx() {
    let ptx = budgets::budgets::pipeline::PTX;
    for needle in [
        ".target sm_90a\n",
        ".maxnreg 128\n",
        "setmaxnreg.dec.sync.aligned.u32 40;",
        "setmaxnreg.inc.sync.aligned.u32 216;",
    ] {
        assert!(ptx.contains(needle), "PTX lacks {needle:?}");
    }
    assert!(budgets::budgets::poly::PTX.contains("setmaxnreg.inc.sync.aligned.u32 232;"));
    assert!(!budgets::budgets::poly_uniform::PTX.contains("setmaxnreg"));
    assert!(budgets::budgets::poly_uniform::PTX.contains(".target sm_90\n"));
}

#[on_each_device]
fn a_pipeline_with_budgets_computes_a_times_x_plus_b(dev: Device) -> gpu_async::Result<()> {
    let (a, b) = (1.5f32, -0.25f32);
    for (n, blocks) in [(0usize, 1u32), (1000, 3), (300_005, 66)] {
        let host = inputs(n);
        let x = dev.upload(&host)?;
        let mut y = dev.alloc::<f32>(n)?;
        block_on(budgets::budgets::pipeline::launch(
            &dev,
            Grid::blocks(blocks),
            (a, b, &x, &mut y),
        ))?;
        let want: Vec<f32> = host.iter().map(|&v| a * v + b).collect();
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "{dev}: {n} elements, {blocks} blocks"
        );
    }
    Ok(())
}

#[on_each_device]
fn a_polynomial_with_and_without_budgets_gives_the_same_bits(dev: Device) -> gpu_async::Result<()> {
    let coef: Vec<f32> = (0..COEFS)
        .map(|j| ((j * 37 % 17) as f32 - 8.0) / 256.0)
        .collect();
    for (n, blocks) in [(5000usize, 2u32), (40_007, 132)] {
        let host = inputs(n);
        let want: Vec<f32> = host
            .iter()
            .map(|&x| coef.iter().rev().fold(0.0f32, |acc, &c| acc * x + c))
            .collect();
        let c = dev.upload(&coef)?;
        let x = dev.upload(&host)?;
        let mut y = dev.alloc::<f32>(n)?;
        block_on(budgets::budgets::poly::launch(
            &dev,
            Grid::blocks(blocks),
            (&c, &x, &mut y),
        ))?;
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "{dev}: with budgets, {n} elements"
        );
        let mut y = dev.alloc::<f32>(n)?;
        block_on(budgets::budgets::poly_uniform::launch(
            &dev,
            Grid::blocks(blocks),
            (&c, &x, &mut y),
        ))?;
        assert_eq!(
            bits(&y.download()?),
            bits(&want),
            "{dev}: without budgets, {n} elements"
        );
    }
    Ok(())
}
