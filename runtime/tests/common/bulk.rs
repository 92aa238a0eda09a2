//! Bulk copies by roles of two warps: a loader that fills slots with `copy_from` from a source
//! shifted by `skip` elements (so that it is 16-byte aligned or not, and its tiles end with a
//! tail or not), and a storer that empties them with `copy_to`. One thread of each role's first
//! warp issues the bulk part; every warp arrives on the channel's barriers.

use gpu_async::gpu_async;

#[gpu_async]
pub mod bulk {
    use gpu_async::device::*;

    pub const TILE: usize = 256;

    /// `y[i] = x[i + skip]` for every `i` of `y`.
    #[kernel(warps = 4)]
    pub async fn shifted_copy(skip: usize, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 3>();
        join!(
            on_warps(0..2, load(skip, x, y.len(), tx)),
            on_warps(2..4, store(rx, y)),
        )
        .await;
    }

    async fn load(skip: usize, x: &[f32], n: usize, mut tx: Sender<[f32; TILE], 3>) {
        for tile in block_tiles(n, TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile.start + skip..tile.end + skip]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; TILE], 3>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            slot.copy_to(&mut y[tile]).await;
        }
    }

    /// The producer copies the same `n` elements, `x[skip..skip + n]`, into every slot of a
    /// ring of 2, `rounds` times; the consumer sums the first `n` elements of every slot it
    /// receives, with `copy_to` writing the last one to `last`. `sum[0]` = the sum. The source is
    /// the same in every round, so the compiler tests once whether the bulk part covers it and
    /// runs a version of the loop without the tail when it does.
    #[kernel(warps = 2)]
    pub async fn repeated_copy(rounds: u32, skip: usize, x: &[u32], sum: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 64], 2>();
        let n = sum.len() - 1;
        join!(
            on_warps(0..1, repeat(rounds, skip, n, x, tx)),
            on_warps(1..2, add_up(n, rx, sum)),
        )
        .await;
    }

    async fn repeat(rounds: u32, skip: usize, n: usize, x: &[u32], mut tx: Sender<[u32; 64], 2>) {
        let part = &x[skip..skip + n];
        for _ in 0..rounds {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(part).await;
            slot.send();
        }
    }

    async fn add_up(n: usize, mut rx: Receiver<[u32; 64], 2>, sum: &mut [u32]) {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            for i in 0..n {
                acc = acc.wrapping_add(slot[i]);
            }
        }
        sum[0..1].par_iter_mut().for_each(|s| *s = acc);
    }
}
