// `<<` shifts an integer: here it would shift the `Option` a receive gives.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 32], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 32], 2>) {
        for tile in block_tiles(x.len(), 32) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 32], 2>, y: &mut [f32]) {
        while let Some(slot) = rx.recv().await << 1 {
            y[0..32].par_iter_mut().zip(slot.par_iter()).for_each(|(o, v)| *o = *v);
        }
    }
}

fn main() {}
