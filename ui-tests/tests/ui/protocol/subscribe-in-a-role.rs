// The receivers of a broadcast are made in the kernel body, where the compiler counts them.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn fan(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 128], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 128], 2>) {
        for tile in block_tiles(x.len(), 128) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 128], 2>, y: &mut [f32]) {
        let _other = rx.subscribe();
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * 128;
            let end = (start + 128).min(y.len());
            slot.par_iter()
                .zip(y[start..end].par_iter_mut())
                .for_each(|(s, o)| *o = *s);
            k += block_count();
        }
    }
}

fn main() {}
