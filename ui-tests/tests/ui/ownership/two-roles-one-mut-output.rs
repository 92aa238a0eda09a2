// Two roles cannot both write one output: rustc refuses two live `&mut` borrows.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn twice(x: &[f32], y: &mut [f32]) {
        let (tx_a, rx_a) = channel::<[f32; 256], 2>();
        let (tx_b, rx_b) = channel::<[f32; 256], 2>();
        join!(
            on_warps(0..1, load(x, tx_a, tx_b)),
            on_warps(1..2, store(rx_a, y)),
            on_warps(2..3, store(rx_b, y)),
        )
        .await;
    }

    async fn load(x: &[f32], mut a: Sender<[f32; 256], 2>, mut b: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = a.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
            let Some(mut other) = b.reserve().await else { return };
            other.par_iter_mut().for_each(|o| *o = 0.0);
            other.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        while let Some(slot) = rx.recv().await {
            y.par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
        }
    }
}

fn main() {}
