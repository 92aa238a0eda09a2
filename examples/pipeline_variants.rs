//! The pipeline example's kernel with other tile sizes and ring depths, to find which shape of it
//! moves the most bytes. Same kernel text, other constants; every variant checked once
//! against a CPU loop, then timed next to a device copy of as many bytes.
//!
//! ```text
//! cargo run --release --example pipeline_variants -- [elements] [part of a variant's name]
//! ```

use gpu_async::bench::{arg, gb_per_s, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device};

/// The example the variants are of: its launch type and its check.
#[allow(dead_code)]
#[path = "pipeline.rs"]
pub mod pipeline;

use pipeline::ScaleShift;

/// The pipeline of `examples/pipeline.rs` with tiles of `$tile` floats, a load ring of `$depth`
/// slots and an output ring of `$out_depth`.
macro_rules! pipeline_variant {
    ($name:ident, $tile:tt, $depth:tt, $out_depth:tt) => {
        #[gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            pub const TILE: usize = $tile;

            #[kernel(warps = 6)]
            pub async fn scale_shift(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
                let (load_tx, load_rx) = channel::<[f32; TILE], $depth>();
                let (out_tx, out_rx) = channel::<[f32; TILE], $out_depth>();
                join!(
                    on_warps(0..1, load(x, load_tx)),
                    on_warps(1..5, transform(a, b, load_rx, out_tx)),
                    on_warps(5..6, store(x.len(), out_rx, y)),
                )
                .await;
            }

            async fn load(x: &[f32], mut tx: Sender<[f32; TILE], $depth>) {
                for tile in block_tiles(x.len(), TILE) {
                    let mut slot = tx.reserve().await;
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn transform(
                a: f32,
                b: f32,
                mut rx: Receiver<[f32; TILE], $depth>,
                mut tx: Sender<[f32; TILE], $out_depth>,
            ) {
                while let Some(input) = rx.recv().await {
                    let mut output = tx.reserve().await;
                    output
                        .par_iter_mut()
                        .zip(input.par_iter())
                        .for_each(|(o, i)| *o = a * i + b);
                    output.send();
                }
            }

            async fn store(n: usize, mut rx: Receiver<[f32; TILE], $out_depth>, y: &mut [f32]) {
                assert!(n == y.len(), "x and y differ in length");
                let mut tiles = block_tiles(y.len(), TILE);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    slot.copy_to(&mut y[tile]).await;
                }
            }
        }
    };
}

pipeline_variant!(t1k_d4_o2, 1024, 4, 2);
pipeline_variant!(t1k_d6_o2, 1024, 6, 2);
pipeline_variant!(t1k_d8_o2, 1024, 8, 2);
pipeline_variant!(t1k_d4_o3, 1024, 4, 3);
pipeline_variant!(t1k_d8_o4, 1024, 8, 4);
pipeline_variant!(t512_d8_o4, 512, 8, 4);
// Tiles of 2048: the per-tile work of every role (waits, slicing, releases) spread over twice
// the bytes; the peer has the same shape.
pipeline_variant!(t2k_d4_o2, 2048, 4, 2);

/// Every variant: its name and its launch.
pub fn variants() -> [(&'static str, ScaleShift); 7] {
    [
        (
            "tile 1024, rings 4 and 2 (the example)",
            t1k_d4_o2::scale_shift::launch,
        ),
        ("tile 1024, rings 6 and 2", t1k_d6_o2::scale_shift::launch),
        ("tile 1024, rings 8 and 2", t1k_d8_o2::scale_shift::launch),
        ("tile 1024, rings 4 and 3", t1k_d4_o3::scale_shift::launch),
        ("tile 1024, rings 8 and 4", t1k_d8_o4::scale_shift::launch),
        ("tile 512, rings 8 and 4", t512_d8_o4::scale_shift::launch),
        ("tile 2048, rings 4 and 2", t2k_d4_o2::scale_shift::launch),
    ]
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 1 << 20)?;
    let only: String = arg(2, "part of a variant's name", String::new())?;
    // The grids, comma-separated: `N` runs N blocks per SM, `eN` one block per N elements.
    let grids: String = arg(3, "grids such as 2,3,4 or e16384", "2,3,4".to_string())?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let xs = random_f32(n, 21);
    let x = dev.upload(&xs)?;
    let mut y = dev.upload(&random_f32(n, 22))?;
    let src = dev.upload(&random_f32(n, 23))?;
    let mut dst = dev.alloc::<f32>(n)?;
    let mut timing = Timing::new(&dev)?;
    let (a, b) = (1.75f32, -0.25f32);
    for (name, launch) in variants() {
        if !name.contains(only.as_str()) {
            continue;
        }
        let specs: Vec<&str> = match dev.kind() {
            BackendKind::Cuda => grids.split(',').collect(),
            _ => vec!["1"],
        };
        for spec in specs {
            let grid = match spec.strip_prefix('e') {
                Some(elements) => match elements.parse::<usize>() {
                    Ok(e) if e > 0 => gpu_async::Grid::per_tile(n, e),
                    _ => return Err(format!("`{spec}` is not eN with N > 0").into()),
                },
                None => match spec.parse::<u32>() {
                    Ok(k) if k > 0 => pipeline::grid_for(&dev, k)?,
                    _ => return Err(format!("`{spec}` is not a number of blocks per SM").into()),
                },
            };
            let bad = pipeline::launch_and_check(launch, &dev, grid, (a, b), (&xs, &x), &mut y)?;
            println!(
                "check: {name}, {} blocks, {bad} mismatches against the CPU loop",
                grid.block_count()
            );
            if bad != 0 {
                return Err(format!("{name}: the result differs from the CPU loop").into());
            }
            if dev.kind() == BackendKind::Cuda {
                let (ms, copy_ms) = pipeline::time_against_copy(
                    launch,
                    (&dev, &mut timing),
                    grid,
                    (&x, &mut y),
                    (&src, &mut dst),
                )?;
                let (k, c) = (gb_per_s(8 * n, ms), gb_per_s(8 * n, copy_ms));
                println!(
                    "bandwidth: {name}, grid {spec} ({} blocks): {k:.0} GB/s ({ms:.3} ms), device copy {c:.0} GB/s, ratio {:.3}",
                    grid.block_count(),
                    k / c
                );
            }
        }
    }
    Ok(())
}
