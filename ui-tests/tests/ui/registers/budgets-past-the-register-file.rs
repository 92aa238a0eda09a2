// The budgets share the registers the block holds at its entry: 168 per thread for 384 threads.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 12, registers(load = 40, times = 248))]
    pub async fn scale(a: f32, x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 1024], 4>();
        join!(on_warps(0..4, load(x, tx)), on_warps(4..12, times(a, rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 1024], 4>) {
        for tile in block_tiles(x.len(), 1024) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn times(a: f32, mut rx: Receiver<[f32; 1024], 4>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), 1024);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap();
            y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = a * i);
        }
    }
}

fn main() {}
