// One receiver given twice to one role (for two receivers, `rx.subscribe()` makes the second): it moves into the first parameter.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn twice(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store_two(rx, rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store_two(a: Receiver<[f32; 256], 2>, b: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        while let Some(slot) = a.recv().await {
            y[0] = slot[0];
        }
        while let Some(slot) = b.recv().await {
            y[1] = slot[0];
        }
    }
}

fn main() {}
