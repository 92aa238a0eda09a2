// A role receives a third slot while it holds two of a ring of two: the sender needs one of them back first, so the receive would wait forever.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn window(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, three(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn three(rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        let Some(a) = rx.recv().await else { return };
        let Some(b) = rx.recv().await else { return };
        let Some(c) = rx.recv().await else { return };
        y[0] = a[0] + b[0] + c[0];
    }
}

fn main() {}
