// A 64 KiB ring per block: 3 blocks fit in an SM's 228 KiB of shared memory, not 4.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 5, min_blocks_per_sm = 4)]
    pub async fn scale(a: f32, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 4096], 4>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..5, times(a, rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 4096], 4>) {
        for tile in block_tiles(x.len(), 4096) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn times(a: f32, mut rx: Receiver<[f32; 4096], 4>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), 4096);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = a * i);
        }
    }
}

fn main() {}
