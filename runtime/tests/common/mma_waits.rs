//! Kernels whose results depend on where the mma waits are: `mma_stages` over a channel that
//! may end before the stages asked for, and two mmas in flight awaited one at a time.

use gpu_async::gpu_async;

#[gpu_async]
pub mod mma_waits {
    use gpu_async::device::*;

    /// Rows of A and of the accumulator.
    pub const M: usize = 64;
    /// Rows of B, columns of the accumulator.
    pub const N: usize = 64;
    /// Columns of a stage's tiles.
    pub const K: usize = 64;

    /// The loader sends the first `sent` stages (K columns each) of `a` (M x ..) and `b` (N x
    /// ..); the compute role asks `mma_stages` for `count` of them and stores the product into
    /// `all` when all came, into `some` when the channel ended first.
    #[kernel(warps = 8, idle_warps)]
    pub async fn stages(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        sent: usize,
        count: usize,
        all: &mut [f32],
        some: &mut [f32],
    ) {
        let (tx, rx) = channel::<(Tile<bf16, M, K>, Tile<bf16, N, K>), 2>();
        join!(
            on_warps(0..1, load(a, b, sent, tx)),
            on_warps(4..8, accumulate(rx, count, all, some))
        )
        .await;
    }

    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        sent: usize,
        mut tx: Sender<(Tile<bf16, M, K>, Tile<bf16, N, K>), 2>,
    ) {
        for k in 0..sent {
            let Some(mut stage) = tx.reserve().await else {
                return;
            };
            stage.0.load(a, [0, k * K]).await;
            stage.1.load(b, [0, k * K]).await;
            stage.send();
        }
    }

    async fn accumulate(
        rx: Receiver<(Tile<bf16, M, K>, Tile<bf16, N, K>), 2>,
        count: usize,
        all: &mut [f32],
        some: &mut [f32],
    ) {
        let mut acc = Accumulator::<M, N>::zero();
        if acc.mma_stages(&rx, count).await {
            acc.store(all, N, [0, 0]);
        } else {
            acc.store(some, N, [0, 0]);
        }
    }

    /// From one stage (`a` and `b`, both 64 x 64): `x = a · bᵀ` and `y = b · aᵀ` issued back to
    /// back, `x` awaited and stored while `y` may still run, then `y` awaited and stored.
    #[kernel(warps = 8, idle_warps)]
    pub async fn two_in_flight(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        x_out: &mut [f32],
        y_out: &mut [f32],
    ) {
        let (tx, rx) = channel::<(Tile<bf16, M, K>, Tile<bf16, N, K>), 2>();
        join!(
            on_warps(0..1, load(a, b, 1, tx)),
            on_warps(4..8, both(rx, x_out, y_out))
        )
        .await;
    }

    async fn both(
        mut rx: Receiver<(Tile<bf16, M, K>, Tile<bf16, N, K>), 2>,
        x_out: &mut [f32],
        y_out: &mut [f32],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut x = Accumulator::<M, N>::zero();
        let mut y = Accumulator::<M, N>::zero();
        let p = x.mma(&stage.0, &stage.1);
        let q = y.mma(&stage.1, &stage.0);
        p.await;
        x.store(x_out, N, [0, 0]);
        q.await;
        y.store(y_out, N, [0, 0]);
    }
}
