// A loaded tile's bytes are in flight until the receiver's `recv`: the loader cannot read it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn k(a: &Matrix<f32>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<f32, 8, 8>, 2>();
        join!(on_warps(0..1, load(a, tx, y)), on_warps(1..2, drain(rx))).await;
    }

    async fn load(a: &Matrix<f32>, mut tx: Sender<Tile<f32, 8, 8>, 2>, y: &mut [f32]) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        y[0] = slot[0][0];
        slot.send();
    }

    async fn drain(mut rx: Receiver<Tile<f32, 8, 8>, 2>) {
        while let Some(_tile) = rx.recv().await {}
    }
}

fn main() {}
