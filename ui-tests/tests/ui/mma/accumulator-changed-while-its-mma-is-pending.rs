// An issued mma borrows its accumulator until it is awaited: an elementwise operation before that
// would rewrite registers the tensor cores are still writing. rustc rejects it.
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
        let mut acc = Accumulator::<64, 64>::zero();
        let Some(tile) = rx.recv().await else { return };
        let pending = acc.mma(&tile, &tile);
        acc.apply(|v| v.max(0.0));
        pending.await;
        acc.store(c, 64, [0, 0]);
    }
}

fn main() {}
