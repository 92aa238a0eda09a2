// `mma_kn` adds A · B with B given as K x N; an N x K tile is `mma`'s B (it adds A · Bᵀ).
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 8, idle_warps)]
    pub async fn k(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, 64, 64>, Tile<bf16, 128, 64>), 2>();
        join!(on_warps(0..1, load(a, b, tx)), on_warps(4..8, compute(rx, c))).await;
    }

    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, 64, 64>, Tile<bf16, 128, 64>), 2>,
    ) {
        let Some(mut stage) = tx.reserve().await else { return };
        stage.0.load(a, [0, 0]).await;
        stage.1.load(b, [0, 0]).await;
        stage.send();
    }

    async fn compute(mut rx: Receiver<(Tile<bf16, 64, 64>, Tile<bf16, 128, 64>), 2>, c: &mut [f32]) {
        let mut acc = Accumulator::<64, 128>::zero();
        let Some(stage) = rx.recv().await else { return };
        acc.mma_kn(&stage.0, &stage.1).await;
        acc.store(c, 128, [0, 0]);
    }
}

fn main() {}
