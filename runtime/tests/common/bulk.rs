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
            let mut slot = tx.reserve().await;
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
}
