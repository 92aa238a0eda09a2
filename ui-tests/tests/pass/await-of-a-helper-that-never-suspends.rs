// An async helper that never suspends (it touches no channel, barrier, one-shot or warp
// operation) awaited in a parallel loop: it runs in place, on each thread.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn scaled(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        for tile in block_tiles(y.len(), 256) {
            let Some(slot) = rx.recv().await else { return };
            y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| {
                *o = scale(*i).await;
            });
        }
    }

    async fn scale(v: f32) -> f32 {
        2.0 * v
    }
}

fn main() {
    let dev = Device::simulator();
    let xs: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(xs.len()).unwrap();
    gpu_async::block_on(kernels::scaled::launch(&dev, Grid::blocks(2), (&x, &mut y))).unwrap();
    let want: Vec<f32> = xs.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.download().unwrap(), want);
}
