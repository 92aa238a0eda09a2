//! Where the time goes: traces the pipeline example's kernel (`examples/pipeline.rs`), on the GPU
//! when there is one and on the simulator otherwise, writes the trace as `trace.json` (open it in
//! <https://ui.perfetto.dev> or `chrome://tracing`) and `trace.svg`, and prints what each role
//! spent its time on. On the GPU it then times the pipeline and saxpy (`examples/saxpy.rs`)
//! traced and untraced, and prints what tracing costs.
//!
//! ```text
//! cargo run --release --example trace -- [directory, default target/trace] [elements]
//! ```
//!
//! `docs/tracing.md` says how to read the picture and the summary.

use gpu_async::bench::{arg, median_of, random_f32, Timing};
use gpu_async::trace::{TraceBlocks, TraceOptions};
use gpu_async::{block_on, BackendKind, Device, DeviceBuffer, Grid};

#[allow(dead_code)]
#[path = "pipeline.rs"]
mod pipeline;

#[allow(dead_code)]
#[path = "saxpy.rs"]
mod saxpy;

/// The elements of a GPU run: 2^28 floats, 1 GiB per buffer.
const GPU_ELEMENTS: usize = 1 << 28;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: String = arg(1, "a directory", "target/trace".to_string())?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let gpu = dev.kind() == BackendKind::Cuda;
    // The simulator traces every block of a small run; the GPU the default sample of a large one.
    let (default_n, options) = if gpu {
        (GPU_ELEMENTS, TraceOptions::default())
    } else {
        (
            5 * pipeline::TILES_PER_BLOCK * pipeline::pipeline::TILE,
            TraceOptions::default().blocks(TraceBlocks::All),
        )
    };
    let n: usize = arg(2, "a number of elements", default_n)?;
    let grid = pipeline::tile_group_grid(&dev, n);
    let xs = random_f32(n, 21);
    let x = dev.upload(&xs)?;
    let mut y = dev.alloc::<f32>(n)?;
    let (a, b) = (2.0f32, 0.5f32);
    let traced = block_on(pipeline::pipeline::scale_shift::launch_traced(
        &dev,
        grid,
        (a, b, &x, &mut y),
        options,
    ));
    let trace = traced.trace;
    traced.result?;
    let mismatches = y
        .download()?
        .iter()
        .zip(&xs)
        .filter(|(g, x)| g.to_bits() != (a * **x + b).to_bits())
        .count();
    println!(
        "check: {n} elements, {} blocks, {mismatches} mismatches against the CPU loop",
        grid.block_count()
    );
    if mismatches != 0 {
        return Err("the traced pipeline's result differs from the CPU loop".into());
    }
    let (json, svg) = trace.save(&dir)?;
    println!("wrote {} and {}\n", json.display(), svg.display());
    print!("{trace}");
    if gpu {
        overhead(&dev, grid, &x, &mut y)?;
    }
    Ok(())
}

/// Times the pipeline on `grid` and saxpy on its own grid over `x` and `y`, each untraced and
/// traced with the default options (the median of 20 runs after 3 warm-ups), and prints the
/// ratios.
fn overhead(
    dev: &Device,
    grid: Grid,
    x: &DeviceBuffer<f32>,
    y: &mut DeviceBuffer<f32>,
) -> gpu_async::Result<()> {
    let mut timing = Timing::new(dev)?;
    let options = TraceOptions::default();
    let plain = median_of(3, 20, || {
        timing.time_launch(|| {
            pipeline::pipeline::scale_shift::launch(dev, grid, (2.0, 1.0, x, &mut *y))
        })
    })?;
    let traced = median_of(3, 20, || {
        timing
            .time_traced(|| {
                pipeline::pipeline::scale_shift::launch_traced(
                    dev,
                    grid,
                    (2.0, 1.0, x, &mut *y),
                    options,
                )
            })
            .map(|(ms, _)| ms)
    })?;
    println!(
        "\npipeline, {} elements: untraced {plain:.3} ms, traced {traced:.3} ms, ratio {:.3}",
        x.len(),
        traced / plain
    );
    let grid = saxpy::tile_grid(dev, x.len());
    let plain = median_of(3, 20, || {
        timing.time_launch(|| saxpy::stream::saxpy::launch(dev, grid, (0.5, x, &mut *y)))
    })?;
    let traced = median_of(3, 20, || {
        timing
            .time_traced(|| {
                saxpy::stream::saxpy::launch_traced(dev, grid, (0.5, x, &mut *y), options)
            })
            .map(|(ms, _)| ms)
    })?;
    println!(
        "saxpy, {} elements: untraced {plain:.3} ms, traced {traced:.3} ms, ratio {:.3}",
        x.len(),
        traced / plain
    );
    Ok(())
}
