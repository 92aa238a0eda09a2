// A tile is filled by tile loads; its elements are not written one by one.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn k(y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<f32, 8, 8>, 2>();
        join!(on_warps(0..1, fill(tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn fill(mut tx: Sender<Tile<f32, 8, 8>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot[0][0] = 1.0;
        slot.send();
    }

    async fn store(mut rx: Receiver<Tile<f32, 8, 8>, 2>, y: &mut [f32]) {
        let Some(tile) = rx.recv().await else { return };
        y[0] = tile[0][0];
    }
}

fn main() {}
