// The fixed `window-as-deep-as-the-ring`: a role that holds two slots while it receives a third
// needs a ring of three.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn window(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 3>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, three(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 3>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn three(mut rx: Receiver<[f32; 256], 3>, y: &mut [f32]) {
        let Some(a) = rx.recv().await else { return };
        let Some(b) = rx.recv().await else { return };
        let Some(c) = rx.recv().await else { return };
        y[0] = a[0] + b[0] + c[0];
    }
}

fn main() {
    let dev = Device::simulator();
    let xs: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(1).unwrap();
    gpu_async::block_on(kernels::window::launch(&dev, Grid::blocks(1), (&x, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![0.0 + 256.0 + 512.0]);
}
