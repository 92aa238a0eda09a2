// Parallel iterations run on all threads of the role at once: they cannot await a helper that
// suspends (here on a one-shot receive); a helper that never suspends is run in place.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn waits_inside(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        let (ftx, frx) = oneshot::<f32>();
        join!(
            on_warps(0..1, load(x, tx, ftx)),
            on_warps(1..2, store(rx, frx, y)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>, factor: OneshotSender<f32>) {
        factor.send(2.0);
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 256], 2>, factor: OneshotReceiver<f32>, y: &mut [f32]) {
        while let Some(slot) = rx.recv().await {
            y.par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| {
                *o = scale(*i, factor).await;
            });
        }
    }

    async fn scale(v: f32, factor: OneshotReceiver<f32>) -> f32 {
        factor.recv().await * v
    }
}

fn main() {}
