// A tile's row is a multiple of 16 bytes: a tile load moves rows in 16-byte units.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn k(a: &Matrix<bf16>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<bf16, 64, 12>, 2>();
        join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, y))).await;
    }

    async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 12>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        slot.send();
    }

    async fn store(mut rx: Receiver<Tile<bf16, 64, 12>, 2>, y: &mut [f32]) {
        let Some(tile) = rx.recv().await else { return };
        y[0] = tile[0][0].to_f32();
    }
}

fn main() {}
