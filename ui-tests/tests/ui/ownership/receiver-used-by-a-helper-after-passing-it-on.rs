// A role passes its receiver to a helper, which takes it, then receives from it again: it moved into the helper.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn relay(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, first_then_rest(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn first_then_rest(rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        drain(rx).await;
        while let Some(slot) = rx.recv().await {
            y[0] = slot[0];
        }
    }

    async fn drain(rx: Receiver<[f32; 256], 2>) {
        while let Some(_slot) = rx.recv().await {}
    }
}

fn main() {}
