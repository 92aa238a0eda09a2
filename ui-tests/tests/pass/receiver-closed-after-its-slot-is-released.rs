// The fixed `receiver-closed-while-holding-a-slot`: the role reads its slot, releases it, then
// closes the channel; the sender's next `reserve` answers `None` and the loader ends early.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn first_only(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, first(rx, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
        for tile in block_tiles(x.len(), 256) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn first(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
        if let Some(slot) = rx.recv().await {
            y[0] = slot[0];
        }
        rx.close();
    }
}

fn main() {
    let dev = Device::simulator();
    let xs: Vec<f32> = (0..1 << 16).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(1).unwrap();
    gpu_async::block_on(kernels::first_only::launch(&dev, Grid::blocks(1), (&x, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![0.0]);
}
