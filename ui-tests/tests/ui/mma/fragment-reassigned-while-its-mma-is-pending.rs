// An mma reads its register A operand until it is awaited: the fragment is not rewritten
// before then.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 8, idle_warps)]
    pub async fn k(a: &Matrix<bf16>, c: &mut [f32]) {
        let (tx, rx) = channel::<Tile<bf16, 64, 64>, 2>();
        join!(on_warps(0..1, load(a, tx)), on_warps(4..8, compute(rx, c))).await;
    }

    async fn load(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, 64, 64>, 2>) {
        let Some(mut slot) = tx.reserve().await else { return };
        slot.load(a, [0, 0]).await;
        slot.send();
    }

    async fn compute(mut rx: Receiver<Tile<bf16, 64, 64>, 2>, c: &mut [f32]) {
        let Some(tile) = rx.recv().await else { return };
        let mut s = Accumulator::<64, 64>::zero();
        s.mma(&tile, &tile).await;
        let mut p = s.to_bf16();
        let mut o = Accumulator::<64, 64>::zero();
        let pending = o.mma(&p, &tile);
        p = s.to_bf16();
        pending.await;
        o.store(c, 64, [0, 0]);
    }
}

fn main() {}
