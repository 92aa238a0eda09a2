//! The usual "async Rust on a GPU" demos, written with gpu-async: an async fn awaited
//! once, chained async fns (`add_then_double` awaiting `add` and `double`), awaits inside
//! conditionals, an async block, three independent tasks running at once, and the future
//! combinators `join!` and `select!` inside one role. Each kernel's output is checked against
//! plain Rust, on the GPU when there is one and on the simulator otherwise.
//!
//! In gpu-async the concurrency is between *roles* (each on its own warps, combined by
//! `join!` in the kernel body) and, inside a role, between the futures of a `join!` or the arms
//! of a `select!`; an `.await` is a wait on a hardware barrier when it awaits a channel, and runs
//! in place when it awaits a helper.
//!
//! ```text
//! cargo run --release --example async_demos
//! ```

use gpu_async::{block_on, gpu_async, Device, Grid};

#[gpu_async]
pub mod demos {
    use gpu_async::device::*;

    pub const TILE: usize = 256;

    async fn add(a: u32, b: u32) -> u32 {
        a + b
    }

    async fn double(v: u32) -> u32 {
        v * 2
    }

    /// Two awaits in a row, each of an async fn.
    async fn add_then_double(a: u32, b: u32) -> u32 {
        let s = add(a, b).await;
        double(s).await
    }

    /// One await of an async fn, then two chained ones: `y[i] = x[i] + (b + 1) + 2 * (b + 7)`
    /// for block `b`'s tiles.
    #[kernel(warps = 1)]
    pub async fn chained(x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, chained_role(x, y))).await;
    }

    async fn chained_role(x: &[u32], y: &mut [u32]) {
        for tile in block_tiles(x.len(), TILE) {
            let b = (tile.start / TILE) as u32;
            let once = add(b, 1).await;
            let twice = add_then_double(b, 7).await;
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, v)| *o = *v + once + twice);
        }
    }

    /// Awaits inside an `if`: even tiles go through one channel, odd tiles through the other,
    /// and the consumer awaits whichever the tile's parity says.
    #[kernel(warps = 2)]
    pub async fn conditional(x: &[u32], y: &mut [u32]) {
        let (even_tx, even_rx) = channel::<[u32; TILE], 2>();
        let (odd_tx, odd_rx) = channel::<[u32; TILE], 2>();
        join!(
            on_warps(0..1, split(x, even_tx, odd_tx)),
            on_warps(1..2, merge(even_rx, odd_rx, y)),
        )
        .await;
    }

    async fn split(x: &[u32], mut even: Sender<[u32; TILE], 2>, mut odd: Sender<[u32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            if (tile.start / TILE) % 2 == 0 {
                let Some(mut slot) = even.reserve().await else {
                    return;
                };
                slot.par_iter_mut()
                    .zip(x[tile.start..tile.end].par_iter())
                    .for_each(|(s, v)| *s = *v * 3);
                slot.send();
            } else {
                let Some(mut slot) = odd.reserve().await else {
                    return;
                };
                slot.par_iter_mut()
                    .zip(x[tile.start..tile.end].par_iter())
                    .for_each(|(s, v)| *s = *v + 5);
                slot.send();
            }
        }
    }

    async fn merge(
        mut even: Receiver<[u32; TILE], 2>,
        mut odd: Receiver<[u32; TILE], 2>,
        y: &mut [u32],
    ) {
        for tile in block_tiles(y.len(), TILE) {
            if (tile.start / TILE) % 2 == 0 {
                let slot = even.recv().await.unwrap();
                slot.par_iter()
                    .zip(y[tile.start..tile.end].par_iter_mut())
                    .for_each(|(s, o)| *o = *s);
            } else {
                let slot = odd.recv().await.unwrap();
                slot.par_iter()
                    .zip(y[tile.start..tile.end].par_iter_mut())
                    .for_each(|(s, o)| *o = *s);
            }
        }
    }

    /// An async block awaited where it is written: its value is the block's.
    #[kernel(warps = 1)]
    pub async fn block(x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, block_role(x, y))).await;
    }

    async fn block_role(x: &[u32], y: &mut [u32]) {
        for tile in block_tiles(x.len(), TILE) {
            let k = async {
                let a = add(tile.start as u32, 3).await;
                double(a).await + 1
            }
            .await;
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, v)| *o = *v ^ k);
        }
    }

    /// Three independent tasks at once, each on its own warp: squares, a running xor of the
    /// tile, and a copy shifted by one.
    #[kernel(warps = 3)]
    pub async fn three_tasks(
        x: &[u32],
        squares: &mut [u32],
        xors: &mut [u32],
        shifted: &mut [u32],
    ) {
        join!(
            on_warps(0..1, square_task(x, squares)),
            on_warps(1..2, xor_task(x, xors)),
            on_warps(2..3, shift_task(x, shifted)),
        )
        .await;
    }

    async fn square_task(x: &[u32], out: &mut [u32]) {
        for tile in block_tiles(x.len(), TILE) {
            out[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, v)| *o = *v * *v);
        }
    }

    async fn xor_task(x: &[u32], out: &mut [u32]) {
        for tile in block_tiles(x.len(), TILE) {
            let t = x[tile.start..tile.end]
                .par_iter()
                .reduce(|| 0, |a, b| a ^ b);
            out[tile.start..tile.end]
                .par_iter_mut()
                .for_each(|o| *o = t);
        }
    }

    async fn shift_task(x: &[u32], out: &mut [u32]) {
        for tile in block_tiles(x.len(), TILE) {
            out[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .for_each(|(o, v)| *o = *v << 1);
        }
    }

    /// A future combinator: two loader roles send the block's even and odd tiles on two
    /// channels, and one store warp runs a loop over each at once with `join!`: `tripled` gets
    /// `3 x` on the even tiles, `plus5` gets `x + 5` on the odd ones.
    #[kernel(warps = 3)]
    pub async fn joined(x: &[u32], tripled: &mut [u32], plus5: &mut [u32]) {
        let (tx_even, rx_even) = channel::<[u32; TILE], 2>();
        let (tx_odd, rx_odd) = channel::<[u32; TILE], 2>();
        join!(
            on_warps(0..1, load_every_other(x, 0, tx_even)),
            on_warps(1..2, load_every_other(x, 1, tx_odd)),
            on_warps(2..3, store_joined(rx_even, rx_odd, tripled, plus5)),
        )
        .await;
    }

    /// The same with `select!`: the store warp takes whichever tile is ready first.
    #[kernel(warps = 3)]
    pub async fn selected(x: &[u32], tripled: &mut [u32], plus5: &mut [u32]) {
        let (tx_even, rx_even) = channel::<[u32; TILE], 2>();
        let (tx_odd, rx_odd) = channel::<[u32; TILE], 2>();
        join!(
            on_warps(0..1, load_every_other(x, 0, tx_even)),
            on_warps(1..2, load_every_other(x, 1, tx_odd)),
            on_warps(2..3, store_selected(rx_even, rx_odd, tripled, plus5)),
        )
        .await;
    }

    /// Sends the block's tiles `k` with `k % 2 == parity`.
    async fn load_every_other(x: &[u32], parity: usize, mut tx: Sender<[u32; TILE], 2>) {
        let mut k = 0usize;
        for tile in block_tiles(x.len(), TILE) {
            if k % 2 == parity {
                let Some(mut slot) = tx.reserve().await else {
                    return;
                };
                slot.copy_from(&x[tile]).await;
                slot.send();
            }
            k += 1;
        }
    }

    /// Where the block's `k`-th tile starts.
    fn tile_start(k: usize) -> usize {
        (block_index() + k * block_count()) * TILE
    }

    async fn store_joined(
        mut rx_even: Receiver<[u32; TILE], 2>,
        mut rx_odd: Receiver<[u32; TILE], 2>,
        tripled: &mut [u32],
        plus5: &mut [u32],
    ) {
        join!(
            async {
                let mut k = 0usize;
                while let Some(slot) = rx_even.recv().await {
                    let start = tile_start(k);
                    let end = (start + TILE).min(tripled.len());
                    slot.par_iter()
                        .zip(tripled[start..end].par_iter_mut())
                        .for_each(|(v, o)| *o = *v * 3);
                    k += 2;
                }
            },
            async {
                let mut k = 1usize;
                while let Some(slot) = rx_odd.recv().await {
                    let start = tile_start(k);
                    let end = (start + TILE).min(plus5.len());
                    slot.par_iter()
                        .zip(plus5[start..end].par_iter_mut())
                        .for_each(|(v, o)| *o = *v + 5);
                    k += 2;
                }
            },
        )
        .await;
    }

    async fn store_selected(
        mut rx_even: Receiver<[u32; TILE], 2>,
        mut rx_odd: Receiver<[u32; TILE], 2>,
        tripled: &mut [u32],
        plus5: &mut [u32],
    ) {
        let (mut even, mut odd) = (0usize, 1usize);
        loop {
            select! {
                Some(slot) = rx_even.recv() => {
                    let start = tile_start(even);
                    let end = (start + TILE).min(tripled.len());
                    slot.par_iter()
                        .zip(tripled[start..end].par_iter_mut())
                        .for_each(|(v, o)| *o = *v * 3);
                    even += 2;
                }
                Some(slot) = rx_odd.recv() => {
                    let start = tile_start(odd);
                    let end = (start + TILE).min(plus5.len());
                    slot.par_iter()
                        .zip(plus5[start..end].par_iter_mut())
                        .for_each(|(v, o)| *o = *v + 5);
                    odd += 2;
                }
                else => break,
            }
        }
    }
}

/// Runs every demo on `dev` over `n` inputs and returns how many output elements differ from
/// plain Rust.
pub fn run_and_check(dev: &Device, grid: Grid, n: usize) -> gpu_async::Result<usize> {
    use demos::TILE;
    let xs: Vec<u32> = gpu_async::bench::random_f32(n, 77)
        .iter()
        .map(|v| (v * 1e6) as u32)
        .collect();
    let x = dev.upload(&xs)?;
    let mut bad = 0;
    let count = |got: Vec<u32>, want: &dyn Fn(usize) -> u32| {
        got.iter()
            .enumerate()
            .filter(|(i, g)| **g != want(*i))
            .count()
    };

    let mut y = dev.alloc::<u32>(n)?;
    block_on(demos::chained::launch(dev, grid, (&x, &mut y)))?;
    bad += count(y.download()?, &|i| {
        let b = (i / TILE) as u32;
        xs[i]
            .wrapping_add(b + 1)
            .wrapping_add((b + 7).wrapping_mul(2))
    });

    block_on(demos::conditional::launch(dev, grid, (&x, &mut y)))?;
    bad += count(y.download()?, &|i| {
        if (i / TILE) % 2 == 0 {
            xs[i].wrapping_mul(3)
        } else {
            xs[i].wrapping_add(5)
        }
    });

    block_on(demos::block::launch(dev, grid, (&x, &mut y)))?;
    bad += count(y.download()?, &|i| {
        let start = (i / TILE * TILE) as u32;
        xs[i] ^ (start.wrapping_add(3).wrapping_mul(2).wrapping_add(1))
    });

    let (mut sq, mut xo, mut sh) = (
        dev.alloc::<u32>(n)?,
        dev.alloc::<u32>(n)?,
        dev.alloc::<u32>(n)?,
    );
    block_on(demos::three_tasks::launch(
        dev,
        grid,
        (&x, &mut sq, &mut xo, &mut sh),
    ))?;
    bad += count(sq.download()?, &|i| xs[i].wrapping_mul(xs[i]));
    bad += count(xo.download()?, &|i| {
        let t = i / TILE * TILE;
        xs[t..(t + TILE).min(n)].iter().fold(0, |a, b| a ^ b)
    });
    bad += count(sh.download()?, &|i| xs[i] << 1);

    // The combinators: tile `t` is the block's tile `t / blocks`, even or odd.
    let blocks = grid.block_count() as usize;
    let even = |i: usize| (i / TILE / blocks) % 2 == 0;
    const POISON: u32 = 0xdead_beef;
    type Combinator = for<'a> fn(
        &'a Device,
        Grid,
        (
            &'a gpu_async::DeviceBuffer<u32>,
            &'a mut gpu_async::DeviceBuffer<u32>,
            &'a mut gpu_async::DeviceBuffer<u32>,
        ),
    ) -> gpu_async::Launch<'a>;
    let combinators: [Combinator; 2] = [demos::joined::launch, demos::selected::launch];
    for launch in combinators {
        let mut tripled = dev.upload(&vec![POISON; n])?;
        let mut plus5 = dev.upload(&vec![POISON; n])?;
        block_on(launch(dev, grid, (&x, &mut tripled, &mut plus5)))?;
        bad += count(tripled.download()?, &|i| {
            if even(i) {
                xs[i] * 3
            } else {
                POISON
            }
        });
        bad += count(plus5.download()?, &|i| {
            if even(i) {
                POISON
            } else {
                xs[i] + 5
            }
        });
    }
    Ok(bad)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::default()?;
    println!("backend: {dev}");
    let n = 1 << 20;
    let bad = run_and_check(&dev, Grid::blocks(8), n)?;
    println!("check: 6 kernels, {n} elements each, {bad} mismatches against plain Rust");
    if bad != 0 {
        return Err(format!("{bad} mismatches").into());
    }
    Ok(())
}
