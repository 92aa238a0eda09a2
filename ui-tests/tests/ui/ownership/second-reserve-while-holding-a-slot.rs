// A role holds at most one reserved slot of a channel: the slot borrows the sender.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn greedy(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut first) = tx.reserve().await else { return };
            let Some(second) = tx.reserve().await else { return };
            first.copy_from(&x[tile]).await;
            first.send();
            second.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        while let Some(slot) = rx.recv().await {
            y.par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
        }
    }
}

fn main() {}
