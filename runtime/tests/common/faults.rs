//! Kernels that fail on purpose: a bound broken by some threads of a parallel loop, a division by
//! zero in role code, an `unwrap()` of `None` in one role of two.

use gpu_async::gpu_async;

#[gpu_async]
pub mod faults {
    use gpu_async::device::*;

    pub const TILE: usize = 64;

    /// `y[i] = x[i + shift]`: out of bounds for the last `shift` elements of `y` when `x` is as
    /// long as `y`.
    #[kernel(warps = 2)]
    pub async fn shifted_read(shift: usize, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..2, shifted(shift, x, y))).await;
    }

    async fn shifted(shift: usize, x: &[f32], y: &mut [f32]) {
        y.par_iter_mut()
            .enumerate()
            .for_each(|(i, o)| *o = x[i + shift]);
    }

    /// Role code divides by `d`.
    #[kernel(warps = 1)]
    pub async fn divide(n: u32, d: u32, y: &mut [u32]) {
        join!(on_warps(0..1, quotient(n, d, y))).await;
    }

    async fn quotient(n: u32, d: u32, y: &mut [u32]) {
        let q = n / d;
        y.par_iter_mut().for_each(|o| *o = q);
    }

    /// The storing role takes one tile of `y` per tile of `x`: when `y` is shorter, its
    /// `unwrap()` fails while the loading role waits for free slots.
    #[kernel(warps = 2)]
    pub async fn short_output(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let mut slot = tx.reserve().await;
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, i)| *o = *i);
        }
    }
}
