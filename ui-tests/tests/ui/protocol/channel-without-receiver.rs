// A channel whose receiver goes to no role: the producer would fill it and then wait forever.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn lonely(x: &[f32]) {
        let (tx, rx) = channel::<[f32; 32], 2>();
        join!(on_warps(0..1, fill(x, tx))).await;
    }

    async fn fill(x: &[f32], mut tx: Sender<[f32; 32], 2>) {
        for tile in block_tiles(x.len(), 32) {
            let Some(mut s) = tx.reserve().await else { return };
            s.copy_from(&x[tile]).await;
            s.send();
        }
    }
}

fn main() {}
