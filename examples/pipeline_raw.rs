//! The pipeline example's kernel launched two ways in one process, on the same buffers, the same
//! stream and the same timing: the typed launch (`pipeline::scale_shift::launch`) and a raw cudarc
//! launch of the same PTX with the same parameters (`launch_builder`). What it separates: the
//! typed launch path from everything else about a process (where buffers lie, what the runtime
//! set up) when the kernel measures differently from the Rust example and from C++.
//!
//! ```text
//! cargo run --release --example pipeline_raw -- [elements] [rounds]
//! ```
//!
//! Random inputs; both launches are checked bit for bit against a CPU loop first. Each round
//! times both, in turn, as the median of 20 runs after 3 warm-ups, each run after an L2 flush
//! ([`Timing`]), on the default grid of the pipeline example (one block per 8 tiles) and on 2
//! blocks per multiprocessor. Prints GB/s per round (8 bytes per element) and the median ratio
//! typed / raw. Needs a GPU: on the simulator it says so and exits successfully.

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use gpu_async::cudarc::nvrtc::Ptx;
use gpu_async::{BackendKind, Device, DeviceBuffer, Grid};

#[path = "pipeline.rs"]
#[allow(dead_code)]
mod pipeline_example;
use pipeline_example::{grid_for, pipeline, tile_group_grid};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The device address of `slice`.
fn address<T>(slice: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (address, _sync) = slice.device_ptr(stream);
    address
}

/// The kernel's parameters as the typed path passes them (the abort protocol's last four: a
/// zeroed abort word, a launch id, a failure record, the default 5 s watchdog).
struct RawArgs {
    a: f32,
    b: f32,
    x: u64,
    y: u64,
    len: u64,
    abort_word: u64,
    launch_id: u32,
    record: u64,
    watchdog_ns: u64,
}

fn raw_launch(stream: &CudaStream, func: &CudaFunction, grid: Grid, p: &RawArgs) -> AnyResult<()> {
    let config = LaunchConfig {
        grid_dim: (grid.block_count(), 1, 1),
        block_dim: (32 * pipeline::scale_shift::SPEC.warps, 1, 1),
        shared_mem_bytes: pipeline::scale_shift::SPEC.shared_bytes,
    };
    let mut builder = stream.launch_builder(func);
    builder
        .arg(&p.a)
        .arg(&p.b)
        .arg(&p.x)
        .arg(&p.len)
        .arg(&p.y)
        .arg(&p.len)
        .arg(&p.abort_word)
        .arg(&p.launch_id)
        .arg(&p.record)
        .arg(&p.watchdog_ns);
    // SAFETY: `scale_shift` takes exactly these ten parameters, of these types (.f32 .f32 .u64
    // .u64 .u64 .u64 .u64 .u32 .u64 .u64); `x` and `y` are live allocations of `len` floats,
    // the abort word one zeroed u32, the record 64 bytes; the values live across the call.
    unsafe { builder.launch(config) }?;
    Ok(())
}

fn main() -> AnyResult<()> {
    let n: usize = arg(1, "a number of elements", 1 << 28)?;
    let rounds: usize = arg(2, "a number of rounds", 5)?;
    let dev = Device::default()?;
    if dev.kind() != BackendKind::Cuda {
        println!("pipeline_raw compares GPU launches and needs a GPU; this is {dev}");
        return Ok(());
    }
    println!("backend: {dev}; {n} elements, {rounds} rounds");
    let stream = dev
        .cudarc_stream()
        .ok_or("the CUDA device has no cudarc stream")?;
    let module = stream
        .context()
        .load_module(Ptx::from_src(pipeline::scale_shift::PTX))?;
    let func = module.load_function("scale_shift")?;

    // Every buffer as the runtime allocates it (on 4 KiB boundaries), its address through a
    // cudarc slice.
    let abort = dev.alloc::<u32>(1)?.into_cudarc()?;
    let record = dev.alloc::<u64>(8)?.into_cudarc()?;
    let xs = random_f32(n, 11);
    let x_slice = dev.upload(&xs)?.into_cudarc()?;
    let y_slice = dev.alloc::<f32>(n)?.into_cudarc()?;
    let (xa, ya) = (address(&x_slice, &stream), address(&y_slice, &stream));
    println!(
        "x at {xa:#x}, y at {ya:#x}, y - x = {:#x}",
        ya.wrapping_sub(xa)
    );
    let mut raw = RawArgs {
        a: 2.0,
        b: 1.0,
        x: xa,
        y: ya,
        len: n as u64,
        abort_word: address(&abort, &stream),
        launch_id: 1,
        record: address(&record, &stream),
        watchdog_ns: 5_000_000_000,
    };
    let x = DeviceBuffer::from_cudarc(&dev, x_slice)?;
    let mut y = DeviceBuffer::from_cudarc(&dev, y_slice)?;

    let grids = [
        ("one block per 8 tiles", tile_group_grid(&dev, n)),
        ("2/SM", grid_for(&dev, 2)?),
    ];
    // Both launches checked, on both grids, with y poisoned first.
    let (a, b) = (1.75f32, -0.375f32);
    for (name, grid) in grids {
        for typed in [true, false] {
            y.upload_from(&vec![f32::NAN; n])?;
            if typed {
                pipeline::scale_shift::launch(&dev, grid, (a, b, &x, &mut y)).wait()?;
            } else {
                raw.a = a;
                raw.b = b;
                raw_launch(&stream, &func, grid, &raw)?;
                stream.synchronize()?;
            }
            let got = y.download()?;
            let bad = got
                .iter()
                .zip(&xs)
                .filter(|(g, x)| g.to_bits() != (a * **x + b).to_bits())
                .count();
            println!(
                "check: {name}, {}: {bad} mismatches of {n}",
                if typed { "typed" } else { "raw" }
            );
            if bad != 0 {
                return Err("the kernel's result differs from the CPU loop".into());
            }
        }
    }
    (raw.a, raw.b) = (2.0, 1.0);

    let mut timing = Timing::new(&dev)?;
    for (name, grid) in grids {
        let (mut typed_gbs, mut raw_gbs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let typed_ms = median_of(3, 20, || {
                timing.time_launch(|| {
                    pipeline::scale_shift::launch(&dev, grid, (2.0, 1.0, &x, &mut y))
                })
            })?;
            let raw_ms = timing.median_ms(3, 20, || {
                raw_launch(&stream, &func, grid, &raw).map_err(|e| gpu_async::Error::Cuda {
                    call: "cuLaunchKernel (cudarc's launch_builder)",
                    message: e.to_string(),
                })
            })?;
            typed_gbs.push(gb_per_s(8 * n, typed_ms));
            raw_gbs.push(gb_per_s(8 * n, raw_ms));
            ratios.push(raw_ms / typed_ms);
        }
        ratios.sort_by(f64::total_cmp);
        let list = |v: &[f64]| v.iter().map(|g| format!(" {g:.0}")).collect::<String>();
        println!(
            "{name} ({} blocks): typed{} GB/s, raw{} GB/s; median ratio typed/raw {:.4}",
            grid.block_count(),
            list(&typed_gbs),
            list(&raw_gbs),
            ratios[ratios.len() / 2]
        );
    }
    Ok(())
}
