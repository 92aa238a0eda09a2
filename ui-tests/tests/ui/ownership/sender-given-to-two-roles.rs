// One sender given to two roles: it moves into the first.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn both(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..2, load(x, tx)),
            on_warps(2..3, store(rx, y)),
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
