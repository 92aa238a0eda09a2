// One role takes two receivers of one broadcast (`rx.subscribe()` makes the second): each
// receiver sees every item, at a ring position of its own, so the role reads each tile twice.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn fan(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 128], 2>();
        let rx2 = rx.subscribe();
        join!(on_warps(0..1, load(x, tx)), on_warps(1..2, store(rx, rx2, y))).await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; 128], 2>) {
        for tile in block_tiles(x.len(), 128) {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn store(
        mut rx: Receiver<[f32; 128], 2>,
        mut rx2: Receiver<[f32; 128], 2>,
        y: &mut [f32],
    ) {
        for tile in block_tiles(y.len(), 128) {
            let Some(a) = rx.recv().await else { return };
            let Some(b) = rx2.recv().await else { return };
            y[tile]
                .par_iter_mut()
                .zip(a.par_iter().zip(b.par_iter()))
                .for_each(|(o, (s, t))| *o = *s + *t);
        }
    }
}

fn main() {
    let dev = Device::simulator();
    let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(xs.len()).unwrap();
    gpu_async::block_on(kernels::fan::launch(&dev, Grid::blocks(3), (&x, &mut y))).unwrap();
    let want: Vec<f32> = xs.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.download().unwrap(), want);
}
