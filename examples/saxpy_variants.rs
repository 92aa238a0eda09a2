//! saxpy with other tile sizes and ring depths than the main example, to find where the streaming
//! kernel's speed comes from (issue 5). Same kernel text, other constants; every result checked.
//!
//! ```text
//! cargo run --release --example saxpy_variants -- [elements] [part of a variant's name]
//! ```

use gpu_async::bench::{arg, gb_per_s, median_ms, median_of, random_f32, time_launch};
use gpu_async::{gpu_async, BackendKind, Device, DeviceBuffer, Grid, Launch};

/// One loader warp streams tiles of `x` through a ring of `$depth` slots; the other warps of the
/// block update `y` in place, each element with `$body`, in which `$a` is the kernel's scalar,
/// `$yi` the `&mut` element of `y` and `$xi` the element of the slot. The names come from the
/// caller, so that its body can use them.
macro_rules! ring_variant {
    (
        $name:ident, $kernel:ident, $warps:tt, $tile:tt, $depth:tt,
        |$a:ident, $yi:ident, $xi:ident| $($body:tt)*
    ) => {
        #[gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            pub const TILE: usize = $tile;

            #[kernel(warps = $warps)]
            pub async fn $kernel($a: f32, x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; TILE], $depth>();
                join!(
                    on_warps(0..1, load(x, tx)),
                    on_warps(1..$warps, update($a, rx, y))
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

            async fn update($a: f32, mut rx: Receiver<[f32; TILE], $depth>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), TILE);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    y[tile]
                        .par_iter_mut()
                        .zip(slot.par_iter())
                        .for_each(|($yi, $xi)| $($body)*);
                }
            }
        }
    };
}

/// saxpy on 1 + 4 warps, the main example's kernel with other tiles and depths.
macro_rules! saxpy_variant {
    ($name:ident, $tile:expr, $depth:expr) => {
        ring_variant!($name, saxpy, 5, $tile, $depth, |a, yi, xi| *yi += a * xi);
    };
}

saxpy_variant!(tile2k_depth3, 2048, 3);
saxpy_variant!(tile2k_depth6, 2048, 6);
saxpy_variant!(tile4k_depth3, 4096, 3);
saxpy_variant!(tile4k_depth4, 4096, 4);
saxpy_variant!(tile8k_depth3, 8192, 3);

/// The main example's shape (tile 2048, depth 3) with the tile slicing unchecked
/// (`get_unchecked`), to measure what the bounds checks cost (issue 3).
#[gpu_async]
pub mod unchecked {
    use gpu_async::device::*;

    pub const TILE: usize = 2048;

    #[kernel(warps = 5)]
    pub async fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 3>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, update(a, rx, y))
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 3>) {
        for tile in block_tiles(x.len(), TILE) {
            let mut slot = tx.reserve().await;
            // SAFETY: `block_tiles` yields ranges inside `0..x.len()`.
            slot.copy_from(unsafe { x.get_unchecked(tile.start..tile.end) })
                .await;
            slot.send();
        }
    }

    async fn update(a: f32, mut rx: Receiver<[f32; TILE], 3>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            // SAFETY: as above, for `y`.
            unsafe { y.get_unchecked_mut(tile.start..tile.end) }
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(yi, xi)| *yi += a * xi);
        }
    }
}

/// `y = f(x, y)` with 64 dependent FMAs per element (`t = a * t + y`, 64 times, from `t = x`):
/// the compute-heavier streaming workload of issue 5, peer `fma64` in `examples/peers/saxpy.cu`.
macro_rules! fma64_variant {
    ($name:ident, $warps:literal, $tile:literal, $depth:literal) => {
        ring_variant!($name, fma64, $warps, $tile, $depth, |a, yi, xi| {
            let y = *yi;
            let mut t = *xi;
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            t = a.mul_add(t, y);
            *yi = t;
        });
    };
}

fma64_variant!(fma64, 5, 4096, 4);
fma64_variant!(fma64_w9, 9, 4096, 4);
fma64_variant!(fma64_w17, 17, 4096, 4);
fma64_variant!(fma64_w9_t2k, 9, 2048, 4);
// One slot: for a grid of one block per tile, where a deeper ring only takes shared memory that
// more resident blocks could use.
fma64_variant!(fma64_w5_d1, 5, 4096, 1);
fma64_variant!(fma64_w9_d1, 9, 4096, 1);

/// saxpy without a ring: the block's eight warps update one tile of 4096 elements with 16-byte
/// accesses, on a grid of one block per tile (the order that took the copy from 0.91x to 0.96x
/// of `cudaMemcpy`; for saxpy a static analysis suggested it, not measured yet).
#[gpu_async]
pub mod tile_per_block {
    use gpu_async::device::*;

    pub const TILE: usize = 4096;

    #[kernel(warps = 8)]
    pub async fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..8, update(a, x, y))).await;
    }

    async fn update(a: f32, x: &[f32], y: &mut [f32]) {
        for tile in block_tiles(y.len(), TILE) {
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(yi, xi)| *yi += a * xi);
        }
    }
}

/// The CPU meaning of [`fma64`].
fn fma64_reference(a: f32, x: f32, y: f32) -> f32 {
    let mut t = x;
    for _ in 0..64 {
        t = a.mul_add(t, y);
    }
    t
}

type LaunchFn = for<'a> fn(
    &'a Device,
    Grid,
    (f32, &'a DeviceBuffer<f32>, &'a mut DeviceBuffer<f32>),
) -> Launch<'a>;

/// The inputs every variant runs on, and the buffers of the device copy timed next to it.
struct Inputs {
    n: usize,
    xs: Vec<f32>,
    ys: Vec<f32>,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    src: DeviceBuffer<f32>,
    dst: DeviceBuffer<f32>,
}

impl Inputs {
    /// Runs `launch` on `grid` with `a = check.0`, compares every element with
    /// `reference(a, x, y)` bit for bit, and on the GPU times it with `a = time_a` next to a device
    /// copy of as many bytes.
    fn check_and_time(
        &mut self,
        dev: &Device,
        name: &str,
        launch: LaunchFn,
        grid: Grid,
        (a, time_a): (f32, f32),
        reference: fn(f32, f32, f32) -> f32,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let n = self.n;
        self.y.upload_from(&self.ys)?;
        launch(dev, grid, (a, &self.x, &mut self.y)).wait()?;
        let got = self.y.download()?;
        // The CPU check on every core: 64 FMAs per element take a minute on one at 2^28.
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        let chunk = n.div_ceil(threads).max(1);
        let bad: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = got
                .chunks(chunk)
                .zip(self.xs.chunks(chunk).zip(self.ys.chunks(chunk)))
                .map(|(got, (xs, ys))| {
                    scope.spawn(move || {
                        got.iter()
                            .zip(xs.iter().zip(ys))
                            .filter(|(g, (x, y))| g.to_bits() != reference(a, **x, **y).to_bits())
                            .count()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(usize::MAX))
                .sum()
        });
        println!("{name}, {} blocks: {bad} mismatches", grid.block_count());
        if bad != 0 {
            return Err(format!("{name}: wrong results").into());
        }
        if dev.kind() == BackendKind::Cuda {
            let (x, y) = (&self.x, &mut self.y);
            let ms = median_of(3, 20, || {
                time_launch(dev, || launch(dev, grid, (time_a, x, &mut *y)))
            })?;
            let (src, dst) = (&self.src, &mut self.dst);
            let copy_ms = median_ms(dev, 3, 20, || dst.copy_from_buffer(src))?;
            let (k, c) = (gb_per_s(12 * n, ms), gb_per_s(12 * n, copy_ms));
            println!(
                "  {k:.0} GB/s ({ms:.3} ms), device copy {c:.0} GB/s, ratio {:.2}",
                k / c
            );
        }
        Ok(())
    }
}

/// saxpy's CPU meaning: a multiply, then an add (two roundings, as the kernels compute it).
fn saxpy_reference(a: f32, x: f32, y: f32) -> f32 {
    a * x + y
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = arg(1, "a number of elements", 1 << 28)?;
    // Only the variants whose name contains this (all by default).
    let only: String = arg(2, "a part of a variant's name", String::new())?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let per_sm = |k: u32| -> gpu_async::Result<Grid> {
        Ok(match dev.kind() {
            BackendKind::Cuda => Grid::blocks(k * dev.sm_count()?),
            _ => Grid::blocks(3),
        })
    };
    let xs = random_f32(n, 1);
    let ys = random_f32(n, 2);
    let mut inputs = Inputs {
        n,
        x: dev.upload(&xs)?,
        y: dev.upload(&ys)?,
        src: dev.upload(&random_f32(3 * n / 2, 3))?,
        dst: dev.alloc::<f32>(3 * n / 2)?,
        xs,
        ys,
    };
    // One block per tile of `tile` elements on the GPU.
    let tiles_of = |tile: usize| match dev.kind() {
        BackendKind::Cuda => Grid::per_tile(n, tile),
        _ => Grid::blocks(3),
    };
    // saxpy's shapes: checked with a = 1.5, timed with a = 0.5. The tile-per-block variant runs
    // one block per tile of 4096 elements on the GPU.
    let tile_grid = tiles_of(tile_per_block::TILE);
    let variants: [(&str, LaunchFn, Grid); 8] = [
        (
            "tile 2048 x depth 3 (the main example), checked slicing",
            tile2k_depth3::saxpy::launch,
            per_sm(4)?,
        ),
        (
            "tile 2048 x depth 3, unchecked slicing (get_unchecked)",
            unchecked::saxpy::launch,
            per_sm(4)?,
        ),
        (
            "tile 2048 x depth 6 (48 KiB ring)",
            tile2k_depth6::saxpy::launch,
            per_sm(4)?,
        ),
        (
            "tile 4096 x depth 4 (64 KiB ring)",
            tile4k_depth4::saxpy::launch,
            per_sm(3)?,
        ),
        (
            "tile 4096 x depth 3 (48 KiB ring)",
            tile4k_depth3::saxpy::launch,
            per_sm(2)?,
        ),
        (
            "tile 4096 x depth 3 (48 KiB ring)",
            tile4k_depth3::saxpy::launch,
            per_sm(4)?,
        ),
        (
            "tile 8192 x depth 3 (96 KiB ring)",
            tile8k_depth3::saxpy::launch,
            per_sm(2)?,
        ),
        (
            "one block per tile of 4096, no ring",
            tile_per_block::saxpy::launch,
            tile_grid,
        ),
    ];
    for (name, launch, grid) in variants {
        if name.contains(only.as_str()) {
            inputs.check_and_time(&dev, name, launch, grid, (1.5, 0.5), saxpy_reference)?;
        }
    }
    // 64 dependent FMAs per element (a = -0.5 keeps the values finite): 4, 8 and 16 compute
    // warps per block.
    let fma_variants: [(&str, LaunchFn, Grid); 10] = [
        (
            "fma64, 1 + 4 warps, tile 4096 x 4, 3/SM",
            fma64::fma64::launch,
            per_sm(3)?,
        ),
        (
            "fma64, 1 + 4 warps, tile 4096 x 4, 4/SM",
            fma64::fma64::launch,
            per_sm(4)?,
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 4, 3/SM",
            fma64_w9::fma64::launch,
            per_sm(3)?,
        ),
        (
            "fma64, 1 + 16 warps, tile 4096 x 4, 3/SM",
            fma64_w17::fma64::launch,
            per_sm(3)?,
        ),
        (
            "fma64, 1 + 16 warps, tile 4096 x 4, 2/SM",
            fma64_w17::fma64::launch,
            per_sm(2)?,
        ),
        (
            "fma64, 1 + 8 warps, tile 2048 x 4, 6/SM",
            fma64_w9_t2k::fma64::launch,
            per_sm(6)?,
        ),
        (
            "fma64, 1 + 4 warps, tile 4096 x 4, one block per tile",
            fma64::fma64::launch,
            tiles_of(fma64::TILE),
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 4, one block per tile",
            fma64_w9::fma64::launch,
            tiles_of(fma64_w9::TILE),
        ),
        (
            "fma64, 1 + 4 warps, tile 4096 x 1, one block per tile",
            fma64_w5_d1::fma64::launch,
            tiles_of(fma64_w5_d1::TILE),
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 1, one block per tile",
            fma64_w9_d1::fma64::launch,
            tiles_of(fma64_w9_d1::TILE),
        ),
    ];
    for (name, launch, grid) in fma_variants {
        if name.contains(only.as_str()) {
            inputs.check_and_time(&dev, name, launch, grid, (-0.5, -0.5), fma64_reference)?;
        }
    }
    Ok(())
}
