//! The epilogue through shared memory: a product of two warpgroups written a block of columns
//! at a time into tile slots (`acc.store_tile`), which one-warp roles store into matrices with
//! TMA stores (`tile.store`; `tile.store_rows`, its first `limit` rows), at a corner where the
//! matrices' edges clip the tiles. Three tile shapes: `f32` rows of 128 bytes (the 128-byte
//! swizzle), `f32` rows of two 128-byte column blocks, `bf16` rows of 64 bytes (the 64-byte
//! swizzle).

use gpu_async::gpu_async;

#[gpu_async]
pub mod tiled {
    use gpu_async::device::*;

    /// Rows of the product: two warpgroups.
    pub const ROWS: usize = 128;
    /// Columns of the product (the accumulator's N).
    pub const N: usize = 128;
    /// K of the product: one stage.
    pub const K: usize = 64;

    /// `a · bᵀ` (`a` is `ROWS` x `K`, `b` is `N` x `K`) stored at (`row`, `col`) of `c`, `w`
    /// (both `f32`) and `h` (`bf16`), each clipped at its edges, and `w` and `h` only in the
    /// product's first `limit` rows.
    #[kernel(warps = 15, idle_warps)]
    pub async fn tiled(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        row: usize,
        col: usize,
        limit: usize,
        c: &mut Matrix<f32>,
        w: &mut Matrix<f32>,
        h: &mut Matrix<bf16>,
    ) {
        let (tx, rx) = channel::<(Tile<bf16, ROWS, K>, Tile<bf16, N, K>), 2>();
        let (ctx, crx) = channel::<Tile<f32, ROWS, 32>, 2>();
        let (wtx, wrx) = channel::<Tile<f32, ROWS, 64>, 1>();
        let (htx, hrx) = channel::<Tile<bf16, ROWS, 32>, 2>();
        join!(
            on_warps(0..1, load(a, b, tx)),
            on_warps(4..12, compute(rx, ctx, wtx, htx)),
            on_warps(12..13, store_f32(crx, row, col, c)),
            on_warps(13..14, store_wide(wrx, row, col, limit, w)),
            on_warps(14..15, store_bf16(hrx, row, col, limit, h))
        )
        .await;
    }

    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, ROWS, K>, Tile<bf16, N, K>), 2>,
    ) {
        let Some(mut stage) = tx.reserve().await else {
            return;
        };
        stage.0.load(a, [0, 0]).await;
        stage.1.load(b, [0, 0]).await;
        stage.send();
    }

    async fn compute(
        mut rx: Receiver<(Tile<bf16, ROWS, K>, Tile<bf16, N, K>), 2>,
        mut ctx: Sender<Tile<f32, ROWS, 32>, 2>,
        mut wtx: Sender<Tile<f32, ROWS, 64>, 1>,
        mut htx: Sender<Tile<bf16, ROWS, 32>, 2>,
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<ROWS, N>::zero();
        acc.mma(&stage.0, &stage.1).await;
        for j in 0..N / 32 {
            let Some(mut slot) = ctx.reserve().await else {
                return;
            };
            acc.store_tile(&mut slot, j * 32);
            slot.send();
            let Some(mut slot) = htx.reserve().await else {
                return;
            };
            acc.store_tile(&mut slot, j * 32);
            slot.send();
        }
        for j in 0..N / 64 {
            let Some(mut slot) = wtx.reserve().await else {
                return;
            };
            acc.store_tile(&mut slot, j * 64);
            slot.send();
        }
    }

    async fn store_f32(
        mut crx: Receiver<Tile<f32, ROWS, 32>, 2>,
        row: usize,
        col: usize,
        c: &mut Matrix<f32>,
    ) {
        let mut j = 0usize;
        while let Some(tile) = crx.recv().await {
            tile.store(c, [row, col + j * 32]).await;
            j += 1;
        }
    }

    async fn store_wide(
        mut wrx: Receiver<Tile<f32, ROWS, 64>, 1>,
        row: usize,
        col: usize,
        limit: usize,
        w: &mut Matrix<f32>,
    ) {
        let mut j = 0usize;
        while let Some(tile) = wrx.recv().await {
            tile.store_rows(w, [row, col + j * 64], limit).await;
            j += 1;
        }
    }

    async fn store_bf16(
        mut hrx: Receiver<Tile<bf16, ROWS, 32>, 2>,
        row: usize,
        col: usize,
        limit: usize,
        h: &mut Matrix<bf16>,
    ) {
        let mut j = 0usize;
        while let Some(tile) = hrx.recv().await {
            tile.store_rows(h, [row, col + j * 32], limit).await;
            j += 1;
        }
    }
}
