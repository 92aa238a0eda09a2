//! saxpy with other tile sizes and ring depths than the main example, and the 64-FMA workload
//! in several kernel shapes, to find where a streaming kernel's speed comes from. Every
//! result is checked against the CPU bit for bit.
//!
//! The shapes: the main example's ring (one loader warp, the other warps computing; other tiles,
//! depths and warps), one role without a ring (`fma64 flat`: the 64-FMA workload's fastest
//! kernel on the H200, with `min_blocks_per_sm = 8` on a grid of one block per tile, 1.06x its
//! CUDA C++ peer), and an out-of-place kernel with both inputs through rings (`fma64 to z`).
//! `docs/benchmarks.md` has the numbers.
//!
//! ```text
//! cargo run --release --example saxpy_variants -- [elements] [part of a variant's name]
//! ```

use gpu_async::bench::{arg, gb_per_s, median_of, random_f32, Timing};
use gpu_async::{gpu_async, BackendKind, Device, DeviceBuffer, Grid, Launch};

/// One loader warp streams tiles of `x` through a ring of `$depth` slots; the other warps of the
/// block update `y` in place, each element with `$body`, in which `$a` is the kernel's scalar,
/// `$yi` the `&mut` element of `y` and `$xi` the element of the slot. The names come from the
/// caller, so that its body can use them. `$option`s are more `#[kernel(..)]` options.
macro_rules! ring_variant {
    (
        $name:ident, $kernel:ident, $warps:tt, $tile:tt, $depth:tt, [$($option:tt)*],
        |$a:ident, $yi:ident, $xi:ident| $($body:tt)*
    ) => {
        #[gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            pub const TILE: usize = $tile;

            #[kernel(warps = $warps, $($option)*)]
            pub async fn $kernel($a: f32, x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; TILE], $depth>();
                join!(
                    on_warps(0..1, load(x, tx)),
                    on_warps(1..$warps, update($a, x.len(), rx, y))
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

            async fn update(
                $a: f32,
                n: usize,
                mut rx: Receiver<[f32; TILE], $depth>,
                y: &mut [f32],
            ) {
                assert!(n == y.len(), "x and y differ in length");
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

/// `z = f(x, y)` out of place, with `x` and `y` both streamed into shared memory: warp 0 copies
/// tiles of `x` into one ring of `$depth` slots, warp 1 tiles of `y` into another, and the other
/// warps write `z` from the two slots with `$body` (`$zi` the `&mut` element of `z`, `$xi` and
/// `$yi` the slots' elements). The compute warps never wait for global memory, which the in-place
/// [`ring_variant`] cannot avoid: there the warps that write `y` must also read it, since a loader
/// role holding `&y` while another role holds `&mut y` is what the borrow checker forbids.
macro_rules! two_ring_variant {
    (
        $name:ident, $kernel:ident, $warps:tt, $tile:tt, $depth:tt,
        |$a:ident, $zi:ident, $xi:ident, $yi:ident| $($body:tt)*
    ) => {
        #[gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            pub const TILE: usize = $tile;

            #[kernel(warps = $warps)]
            pub async fn $kernel($a: f32, x: &[f32], y: &[f32], z: &mut [f32]) {
                let (x_tx, x_rx) = channel::<[f32; TILE], $depth>();
                let (y_tx, y_rx) = channel::<[f32; TILE], $depth>();
                join!(
                    on_warps(0..1, load(x, x_tx)),
                    on_warps(1..2, load(y, y_tx)),
                    on_warps(2..$warps, update($a, x.len(), y.len(), x_rx, y_rx, z))
                )
                .await;
            }

            async fn load(src: &[f32], mut tx: Sender<[f32; TILE], $depth>) {
                for tile in block_tiles(src.len(), TILE) {
                    let mut slot = tx.reserve().await;
                    slot.copy_from(&src[tile]).await;
                    slot.send();
                }
            }

            async fn update(
                $a: f32,
                x_len: usize,
                y_len: usize,
                mut x_rx: Receiver<[f32; TILE], $depth>,
                mut y_rx: Receiver<[f32; TILE], $depth>,
                z: &mut [f32],
            ) {
                assert!(x_len == z.len() && y_len == z.len(), "x, y and z differ in length");
                let mut tiles = block_tiles(z.len(), TILE);
                while let Some(x_slot) = x_rx.recv().await {
                    let y_slot = y_rx.recv().await.unwrap();
                    let tile = tiles.next().unwrap();
                    z[tile]
                        .par_iter_mut()
                        .zip(x_slot.par_iter())
                        .zip(y_slot.par_iter())
                        .for_each(|(($zi, $xi), $yi)| $($body)*);
                }
            }
        }
    };
}

/// One role on all `$warps` warps and no ring: each block takes its tiles of `x` and `y` (one tile
/// each on a grid of one block per tile) and updates `y` in place with `$body`, every element read
/// and written with 16-byte global accesses, as the CUDA C++ grid-stride peers do. `$option`s are
/// more `#[kernel(..)]` options.
macro_rules! no_ring_variant {
    (
        $name:ident, $kernel:ident, $warps:tt, $tile:tt, [$($option:tt)*],
        |$a:ident, $yi:ident, $xi:ident| $($body:tt)*
    ) => {
        #[gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            pub const TILE: usize = $tile;

            #[kernel(warps = $warps, $($option)*)]
            pub async fn $kernel($a: f32, x: &[f32], y: &mut [f32]) {
                join!(on_warps(0..$warps, update($a, x, y))).await;
            }

            async fn update($a: f32, x: &[f32], y: &mut [f32]) {
                assert!(x.len() == y.len(), "x and y differ in length");
                for tile in block_tiles(y.len(), TILE) {
                    y[tile.start..tile.end]
                        .par_iter_mut()
                        .zip(x[tile.start..tile.end].par_iter())
                        .for_each(|($yi, $xi)| $($body)*);
                }
            }
        }
    };
}

/// saxpy on 1 + 4 warps, the main example's kernel with other tiles and depths.
macro_rules! saxpy_variant {
    ($name:ident, $tile:expr, $depth:expr) => {
        ring_variant!($name, saxpy, 5, $tile, $depth, [], |a, yi, xi| *yi +=
            a * xi);
    };
}

saxpy_variant!(tile2k_depth3, 2048, 3);
saxpy_variant!(tile2k_depth6, 2048, 6);
saxpy_variant!(tile4k_depth3, 4096, 3);
saxpy_variant!(tile4k_depth4, 4096, 4);
saxpy_variant!(tile8k_depth3, 8192, 3);

/// The main example's shape (tile 2048, depth 3) with the tile slicing unchecked
/// (`get_unchecked`), to measure what the bounds checks cost.
#[gpu_async]
pub mod unchecked {
    use gpu_async::device::*;

    pub const TILE: usize = 2048;

    #[kernel(warps = 5)]
    pub async fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 3>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..5, update(a, x.len(), rx, y))
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

    async fn update(a: f32, n: usize, mut rx: Receiver<[f32; TILE], 3>, y: &mut [f32]) {
        assert!(n == y.len(), "x and y differ in length");
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

/// Calls `$then!($($args)* |a, params..| body)` with the body of the 64-FMA workload: `t = a * t + y`,
/// 64 times, from `t = x`, with `x` and `y` read by the tokens in `x: [..]` and `y: [..]`, and
/// `t` written by `out: [..] = t`. The kernels that do this work differ only in where `x`, `y`
/// and the result live, so the 64 steps are written once.
macro_rules! with_fma64_body {
    (
        $then:ident!($($args:tt)*),
        |$a:ident $(, $param:ident)*|,
        x: [$($x:tt)*], y: [$($y:tt)*], out: [$($out:tt)*]
    ) => {
        $then!($($args)* |$a $(, $param)*| {
            let y = $($y)*;
            let mut t = $($x)*;
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            t = $a.mul_add(t, y);
            $($out)* = t;
        });
    };
}

/// `y = f(x, y)` with 64 dependent FMAs per element (`t = a * t + y`, 64 times, from `t = x`):
/// the compute-heavier streaming workload, peer `fma64` in `examples/peers/saxpy.cu`.
macro_rules! fma64_variant {
    ($name:ident, $warps:literal, $tile:literal, $depth:literal $(, $blocks:literal)?) => {
        with_fma64_body!(
            ring_variant!($name, fma64, $warps, $tile, $depth, [$(min_blocks_per_sm = $blocks)?],),
            |a, yi, xi|,
            x: [*xi], y: [*yi], out: [*yi]
        );
    };
}

/// The 64-FMA workload out of place (`z = f(x, y)`), both inputs through rings: 2 loader warps and
/// `$warps - 2` compute warps.
macro_rules! fma64_two_ring_variant {
    ($name:ident, $warps:literal, $tile:literal, $depth:literal) => {
        with_fma64_body!(
            two_ring_variant!($name, fma64, $warps, $tile, $depth,),
            |a, zi, xi, yi|,
            x: [*xi], y: [*yi], out: [*zi]
        );
    };
}

/// The 64-FMA workload in place on one role without a ring ([`no_ring_variant`]), with registers
/// for `$blocks` blocks per SM when given.
macro_rules! fma64_no_ring_variant {
    ($name:ident, $warps:literal, $tile:literal $(, $blocks:literal)?) => {
        with_fma64_body!(
            no_ring_variant!($name, fma64, $warps, $tile, [$(min_blocks_per_sm = $blocks)?],),
            |a, yi, xi|,
            x: [*xi], y: [*yi], out: [*yi]
        );
    };
}

fma64_no_ring_variant!(fma64_flat_w8_t4k, 8, 4096);
fma64_no_ring_variant!(fma64_flat_w8_t1k_b8, 8, 1024, 8);
fma64_no_ring_variant!(fma64_flat_w8_t2k_b8, 8, 2048, 8);
fma64_no_ring_variant!(fma64_flat_w8_t4k_b8, 8, 4096, 8);
fma64_no_ring_variant!(fma64_flat_w8_t8k_b8, 8, 8192, 8);
fma64_no_ring_variant!(fma64_flat_w16_t4k_b4, 16, 4096, 4);
fma64_no_ring_variant!(fma64_flat_w16_t8k_b4, 16, 8192, 4);

fma64_two_ring_variant!(fma64_xy_w10_t4k_d2, 10, 4096, 2);

fma64_variant!(fma64, 5, 4096, 4);
fma64_variant!(fma64_w9, 9, 4096, 4);
fma64_variant!(fma64_w17, 17, 4096, 4);
fma64_variant!(fma64_w9_t2k, 9, 2048, 4);
// One slot: for a grid of one block per tile, where a deeper ring only takes shared memory that
// more resident blocks could use.
fma64_variant!(fma64_w5_d1, 5, 4096, 1);
fma64_variant!(fma64_w9_d1, 9, 4096, 1);
// The same with registers for 7 blocks per SM (63 warps), and a 2-slot ring (6 blocks per SM by
// shared memory).
fma64_variant!(fma64_w9_d1_b7, 9, 4096, 1, 7);
fma64_variant!(fma64_w9_d2, 9, 4096, 2);

/// saxpy without a ring: the block's eight warps update one tile of 4096 elements with 16-byte
/// accesses, on a grid of one block per tile (the order of the copy example's tile copy; for
/// saxpy it measured about what the ring kernel measures on the same grid: 4229-4250 GB/s against
/// 4240-4257 on an H200, 2026-11-29, timed without the L2 flush).
#[gpu_async]
pub mod tile_per_block {
    use gpu_async::device::*;

    pub const TILE: usize = 4096;

    #[kernel(warps = 8)]
    pub async fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..8, update(a, x, y))).await;
    }

    async fn update(a: f32, x: &[f32], y: &mut [f32]) {
        assert!(x.len() == y.len(), "x and y differ in length");
        for tile in block_tiles(y.len(), TILE) {
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(yi, xi)| *yi += a * xi);
        }
    }
}

/// The CPU meaning of [`fma64`] and of every 64-FMA kernel here.
pub fn fma64_reference(a: f32, x: f32, y: f32) -> f32 {
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

/// The typed launch of an out-of-place kernel, `z = f(x, y)`.
type OutOfPlaceFn = for<'a> fn(
    &'a Device,
    Grid,
    (
        f32,
        &'a DeviceBuffer<f32>,
        &'a DeviceBuffer<f32>,
        &'a mut DeviceBuffer<f32>,
    ),
) -> Launch<'a>;

/// A variant's kernel: in place (`y = f(x, y)`) or out of place (`z = f(x, y)`).
#[derive(Clone, Copy)]
enum Kernel {
    InPlace(LaunchFn),
    OutOfPlace(OutOfPlaceFn),
}

/// The inputs every variant runs on, and the buffers of the device copy timed next to it.
struct Inputs {
    n: usize,
    xs: Vec<f32>,
    ys: Vec<f32>,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    /// The output of the out-of-place kernels.
    z: DeviceBuffer<f32>,
    src: DeviceBuffer<f32>,
    dst: DeviceBuffer<f32>,
}

impl Inputs {
    /// Launches `kernel` on `grid` with the scalar `a`, from `x` and `y` into `y` (in place) or
    /// `z` (out of place).
    fn launch<'a>(&'a mut self, dev: &'a Device, kernel: Kernel, grid: Grid, a: f32) -> Launch<'a> {
        match kernel {
            Kernel::InPlace(launch) => launch(dev, grid, (a, &self.x, &mut self.y)),
            Kernel::OutOfPlace(launch) => launch(dev, grid, (a, &self.x, &self.y, &mut self.z)),
        }
    }

    /// Runs `kernel` on `grid` with `a = check.0`, compares every element with
    /// `reference(a, x, y)` bit for bit, and on the GPU times it with `a = time_a` next to a device
    /// copy of as many bytes.
    fn check_and_time(
        &mut self,
        (dev, timing): (&Device, &mut Timing),
        name: &str,
        kernel: Kernel,
        grid: Grid,
        (a, time_a): (f32, f32),
        reference: fn(f32, f32, f32) -> f32,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let n = self.n;
        self.y.upload_from(&self.ys)?;
        self.launch(dev, kernel, grid, a).wait()?;
        let got = match kernel {
            Kernel::InPlace(_) => self.y.download()?,
            Kernel::OutOfPlace(_) => self.z.download()?,
        };
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
            let ms = median_of(3, 20, || {
                timing.time_launch(|| self.launch(dev, kernel, grid, time_a))
            })?;
            let (src, dst) = (&self.src, &mut self.dst);
            let copy_ms = timing.median_ms(3, 20, || dst.copy_from_buffer(src))?;
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
    let mut timing = Timing::new(&dev)?;
    let mut inputs = Inputs {
        n,
        x: dev.upload(&xs)?,
        y: dev.upload(&ys)?,
        z: dev.alloc::<f32>(n)?,
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
            let kernel = Kernel::InPlace(launch);
            inputs.check_and_time(
                (&dev, &mut timing),
                name,
                kernel,
                grid,
                (1.5, 0.5),
                saxpy_reference,
            )?;
        }
    }
    // 64 dependent FMAs per element (a = -0.5 keeps the values finite): 4, 8 and 16 compute
    // warps per block.
    let fma_variants: [(&str, LaunchFn, Grid); 23] = [
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
        (
            "fma64, 1 + 8 warps, tile 4096 x 1, min 7 blocks/SM, one block per tile",
            fma64_w9_d1_b7::fma64::launch,
            tiles_of(fma64_w9_d1_b7::TILE),
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 1, min 7 blocks/SM, 7/SM",
            fma64_w9_d1_b7::fma64::launch,
            per_sm(7)?,
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 2, 6/SM",
            fma64_w9_d2::fma64::launch,
            per_sm(6)?,
        ),
        (
            "fma64, 1 + 8 warps, tile 4096 x 2, one block per tile",
            fma64_w9_d2::fma64::launch,
            tiles_of(fma64_w9_d2::TILE),
        ),
        // The same work in place on one role without a ring, `y` and `x` read from global
        // memory.
        (
            "fma64 flat, 8 warps, tile 4096, one block per tile",
            fma64_flat_w8_t4k::fma64::launch,
            tiles_of(fma64_flat_w8_t4k::TILE),
        ),
        (
            "fma64 flat, 8 warps, tile 1024, min 8 blocks/SM, one block per tile",
            fma64_flat_w8_t1k_b8::fma64::launch,
            tiles_of(fma64_flat_w8_t1k_b8::TILE),
        ),
        (
            "fma64 flat, 8 warps, tile 2048, min 8 blocks/SM, one block per tile",
            fma64_flat_w8_t2k_b8::fma64::launch,
            tiles_of(fma64_flat_w8_t2k_b8::TILE),
        ),
        (
            "fma64 flat, 8 warps, tile 4096, min 8 blocks/SM, one block per tile",
            fma64_flat_w8_t4k_b8::fma64::launch,
            tiles_of(fma64_flat_w8_t4k_b8::TILE),
        ),
        (
            "fma64 flat, 8 warps, tile 4096, min 8 blocks/SM, 8/SM",
            fma64_flat_w8_t4k_b8::fma64::launch,
            per_sm(8)?,
        ),
        (
            "fma64 flat, 8 warps, tile 8192, min 8 blocks/SM, one block per tile",
            fma64_flat_w8_t8k_b8::fma64::launch,
            tiles_of(fma64_flat_w8_t8k_b8::TILE),
        ),
        (
            "fma64 flat, 16 warps, tile 4096, min 4 blocks/SM, one block per tile",
            fma64_flat_w16_t4k_b4::fma64::launch,
            tiles_of(fma64_flat_w16_t4k_b4::TILE),
        ),
        (
            "fma64 flat, 16 warps, tile 8192, min 4 blocks/SM, one block per tile",
            fma64_flat_w16_t8k_b4::fma64::launch,
            tiles_of(fma64_flat_w16_t8k_b4::TILE),
        ),
        (
            "fma64 flat, 16 warps, tile 8192, min 4 blocks/SM, 4/SM",
            fma64_flat_w16_t8k_b4::fma64::launch,
            per_sm(4)?,
        ),
    ];
    // The same work out of place, `z = f(x, y)`, with `y` streamed through a ring of its own too.
    let out_of_place: [(&str, OutOfPlaceFn, Grid); 1] = [(
        "fma64 to z, 2 + 8 warps, tiles 4096 x 2 + 4096 x 2, 2/SM",
        fma64_xy_w10_t4k_d2::fma64::launch,
        per_sm(2)?,
    )];
    let fma_kernels = fma_variants
        .into_iter()
        .map(|(name, launch, grid)| (name, Kernel::InPlace(launch), grid))
        .chain(
            out_of_place
                .into_iter()
                .map(|(name, launch, grid)| (name, Kernel::OutOfPlace(launch), grid)),
        );
    for (name, kernel, grid) in fma_kernels {
        if name.contains(only.as_str()) {
            inputs.check_and_time(
                (&dev, &mut timing),
                name,
                kernel,
                grid,
                (-0.5, -0.5),
                fma64_reference,
            )?;
        }
    }
    Ok(())
}
