// Channel ends travel one at a time: a tuple of them is not a value of the kernel language (and giving it to two roles would move it twice).
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn both(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        let ends = (tx, rx);
        join!(
            on_warps(0..1, load(x, ends.0)),
            on_warps(1..2, load(x, ends.0)),
            on_warps(2..3, store(ends.1, y)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), 256);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
        }
    }
}

fn main() {}
