// `select!` waits on a role's first receiver of each channel: a second receiver of a broadcast in
// the same role (`rx.subscribe()`) is received from with `recv().await`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn merge(x: &[f32], z: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; 256], 2>();
        let rx2 = rx.subscribe();
        let (tz, rz) = channel::<[f32; 256], 2>();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..2, load(z, tz)),
            on_warps(2..3, store(rx, rx2, rz, y)),
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

    async fn store(
        mut rx: Receiver<[f32; 256], 2>,
        mut rx2: Receiver<[f32; 256], 2>,
        mut rz: Receiver<[f32; 256], 2>,
        y: &mut [f32],
    ) {
        let Some(first) = rx.recv().await else { return };
        y[0] = first[0];
        drop(first);
        loop {
            select! {
                Some(a) = rx2.recv() => { y[1] = a[0]; }
                Some(b) = rz.recv() => { y[2] = b[0]; }
                else => break,
            }
        }
    }
}

fn main() {}
