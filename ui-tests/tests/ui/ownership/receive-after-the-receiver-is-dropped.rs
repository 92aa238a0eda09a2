// A receive after `drop(rx)`: the receiver is gone (use `rx.close()` to stop receiving and keep the receiver, whose `recv` then answers `None`).
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn relay(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, stop(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn stop(rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        drop(rx);
        while let Some(slot) = rx.recv().await {
            y[0] = slot[0];
        }
    }
}

fn main() {}
