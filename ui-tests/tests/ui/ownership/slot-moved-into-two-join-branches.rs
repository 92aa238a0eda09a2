// A received slot moved into one `join!` branch (an `async move` block) is used by the other branch too.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn relay(x: &[f32], y: &mut [f32], z: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y, z))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(rx: Receiver<[f32; 256], 2>, y: &mut [f32], z: &mut [f32]) {
        let Some(slot) = rx.recv().await else { return };
        join!(
            async move {
                y[0..256].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
            },
            async {
                z[0..256].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
            },
        )
        .await;
    }
}

fn main() {}
