// `store_tile` writes all of the accumulator's rows: the tile has the accumulator's M rows.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 8, idle_warps)]
    pub async fn k(a: &Matrix<bf16>, c: &mut Matrix<f32>) {
        let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
        let (ctx, crx) = channel::<Tile<f32, 32, 32>, 2>();
        join!(
            on_warps(0..1, load(a, tx)),
            on_warps(1..2, store(crx, c)),
            on_warps(4..8, compute(rx, ctx))
        )
        .await;
    }

    async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        slot.send();
    }

    async fn store(mut crx: Receiver<Tile<f32, 32, 32>, 2>, c: &mut Matrix<f32>) {
        let Some(tile) = crx.recv().await else { return };
        tile.store(c, [0, 0]).await;
    }

    async fn compute(mut rx: Receiver<Tile<bf16, 64, 64>, 2>, mut ctx: Sender<Tile<f32, 32, 32>, 2>) {
        let mut acc = Accumulator::<64, 64>::zero();
        let Some(tile) = rx.recv().await else { return };
        acc.mma(&tile, &tile).await;
        let Some(mut out) = ctx.reserve().await else { return };
        acc.store_tile(&mut out, 0);
        out.send();
    }
}

fn main() {}
