// A tile store writes its matrix: the matrix is a `&mut Matrix<T>` parameter, not a `&Matrix<T>`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn k(a: &Matrix<f32>, c: &Matrix<f32>) {
        let (tx, rx) = channel::<Tile<f32, 32, 32>, 2>();
        join!(on_warps(0..1, load(a, tx)), on_warps(1..2, store(rx, c))).await;
    }

    async fn load(a: &Matrix<f32>, mut tx: Sender<Tile<f32, 32, 32>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        slot.send();
    }

    async fn store(mut rx: Receiver<Tile<f32, 32, 32>, 2>, c: &Matrix<f32>) {
        let Some(tile) = rx.recv().await else { return };
        tile.store(c, [0, 0]).await;
    }
}

fn main() {}
