// A shared array that fits the 227 KiB of shared memory a block can have, but not with a
// channel's ring.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn big(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 4096], 2>();
        let mut table = shared_array_2d::<f32, 112, 512>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..2, store(rx, y, &mut table)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 4096], 2>) {
        for tile in block_tiles(x.len(), 4096) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(
        mut rx: Receiver<[f32; 4096], 2>,
        y: &mut [f32],
        table: &mut SharedArray2d<f32, 112, 512>,
    ) {
        while let Some(slot) = rx.recv().await {
            slot.par_iter().enumerate().for_each(|(i, v)| {
                table[i / 512][i % 512] = *v;
            });
        }
        y[0..1].par_iter_mut().for_each(|o| *o = table[0][0]);
    }
}

fn main() {}
