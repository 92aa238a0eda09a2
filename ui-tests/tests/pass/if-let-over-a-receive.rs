// `if let Some(slot) = rx.recv().await`: the slot where an item came, the `else` (here none)
// once the channel has closed.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn relay(x: &[f32], y: &mut [f32]) {
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
        for tile in block_tiles(y.len(), 128) {
            if let Some(slot) = rx.recv().await {
                slot.par_iter()
                    .zip(y[tile].par_iter_mut())
                    .for_each(|(s, o)| *o = *s);
            }
        }
    }
}

fn main() {
    let dev = Device::simulator();
    let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(xs.len()).unwrap();
    gpu_async::block_on(kernels::relay::launch(&dev, Grid::blocks(3), (&x, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), xs);
}
