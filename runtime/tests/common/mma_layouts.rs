//! Kernels whose tiles are stored as column blocks (rows of several 128-byte lines): mmas with
//! a K of 128 per tile, `mma_kn` and `mma_stages_kn` with B given as K x N (N = 256, four blocks
//! read transposed), and element reads of a tile of blocks.

use gpu_async::gpu_async;

#[gpu_async]
pub mod mma_layouts {
    use gpu_async::device::*;

    /// Rows of A and of the accumulator.
    pub const M: usize = 64;
    /// Columns of the accumulator in the `a · b` kernels: four column blocks of a B tile.
    pub const N: usize = 256;
    /// K of a stage of the `a · b` kernels.
    pub const K: usize = 64;
    /// K of a stage of the wide-K kernel: two column blocks of each tile.
    pub const WIDE_K: usize = 128;
    /// Columns of the accumulator in the wide-K kernel.
    pub const WIDE_N: usize = 64;

    /// `c = a · b` over the first `stages` stages of K: `a` is M x (stages K), `b` is (stages K)
    /// x N, both row-major; `mma_stages_kn`.
    #[kernel(warps = 8, idle_warps)]
    pub async fn kn_stages(a: &Matrix<bf16>, b: &Matrix<bf16>, stages: usize, c: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, M, K>, Tile<bf16, K, N>), 2>();
        join!(
            on_warps(0..1, load_kn(a, b, stages, tx)),
            on_warps(4..8, accumulate_kn(rx, stages, c))
        )
        .await;
    }

    async fn load_kn(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        stages: usize,
        mut tx: Sender<(Tile<bf16, M, K>, Tile<bf16, K, N>), 2>,
    ) {
        for k in 0..stages {
            let Some(mut stage) = tx.reserve().await else {
                return;
            };
            stage.0.load(a, [0, k * K]).await;
            stage.1.load(b, [k * K, 0]).await;
            stage.send();
        }
    }

    async fn accumulate_kn(
        rx: Receiver<(Tile<bf16, M, K>, Tile<bf16, K, N>), 2>,
        stages: usize,
        c: &mut [f32],
    ) {
        let mut acc = Accumulator::<M, N>::zero();
        if acc.mma_stages_kn(&rx, stages).await {
            acc.store(c, N, [0, 0]);
        }
    }

    /// `c = a · b` of one stage (`a` M x K, `b` K x N) by one `mma_kn`, awaited.
    #[kernel(warps = 8, idle_warps)]
    pub async fn kn_once(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, M, K>, Tile<bf16, K, N>), 2>();
        join!(
            on_warps(0..1, load_kn(a, b, 1, tx)),
            on_warps(4..8, once_kn(rx, c))
        )
        .await;
    }

    async fn once_kn(mut rx: Receiver<(Tile<bf16, M, K>, Tile<bf16, K, N>), 2>, c: &mut [f32]) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<M, N>::zero();
        acc.mma_kn(&stage.0, &stage.1).await;
        acc.store(c, N, [0, 0]);
    }

    /// `c = a · bᵀ` over `stages` stages of 128 columns of K: `a` is M x .., `b` WIDE_N x ..;
    /// each tile two column blocks.
    #[kernel(warps = 8, idle_warps)]
    pub async fn wide_k(a: &Matrix<bf16>, b: &Matrix<bf16>, stages: usize, c: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, M, WIDE_K>, Tile<bf16, WIDE_N, WIDE_K>), 2>();
        join!(
            on_warps(0..1, load_wide(a, b, stages, tx)),
            on_warps(4..8, accumulate_wide(rx, stages, c))
        )
        .await;
    }

    async fn load_wide(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        stages: usize,
        mut tx: Sender<(Tile<bf16, M, WIDE_K>, Tile<bf16, WIDE_N, WIDE_K>), 2>,
    ) {
        for k in 0..stages {
            let Some(mut stage) = tx.reserve().await else {
                return;
            };
            stage.0.load(a, [0, k * WIDE_K]).await;
            stage.1.load(b, [0, k * WIDE_K]).await;
            stage.send();
        }
    }

    async fn accumulate_wide(
        rx: Receiver<(Tile<bf16, M, WIDE_K>, Tile<bf16, WIDE_N, WIDE_K>), 2>,
        stages: usize,
        c: &mut [f32],
    ) {
        let mut acc = Accumulator::<M, WIDE_N>::zero();
        if acc.mma_stages(&rx, stages).await {
            acc.store(c, WIDE_N, [0, 0]);
        }
    }

    /// Rows of the tile the element-read kernel copies.
    pub const ROWS: usize = 8;
    /// Columns of that tile: 384 `f32`s, three column blocks of 32.
    pub const COLS: usize = 96;

    /// `y` = the `ROWS` x `COLS` tile of `a` at (`row`, `col`), read element by element from
    /// the slot (zeros past `a`'s edges).
    #[kernel(warps = 2)]
    pub async fn read_blocks(a: &Matrix<f32>, row: usize, col: usize, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<f32, ROWS, COLS>, 2>();
        join!(
            on_warps(0..1, load_one(a, row, col, tx)),
            on_warps(1..2, read_one(rx, y))
        )
        .await;
    }

    async fn load_one(
        a: &Matrix<f32>,
        row: usize,
        col: usize,
        mut tx: Sender<Tile<f32, ROWS, COLS>, 2>,
    ) {
        let Some(mut slot) = tx.reserve().await else {
            return;
        };
        slot.load(a, [row, col]).await;
        slot.send();
    }

    async fn read_one(mut rx: Receiver<Tile<f32, ROWS, COLS>, 2>, y: &mut [f32]) {
        assert!(y.len() == ROWS * COLS, "y holds one tile");
        let Some(tile) = rx.recv().await else {
            return;
        };
        for r in 0..ROWS {
            y[r * COLS..(r + 1) * COLS]
                .par_iter_mut()
                .enumerate()
                .for_each(|(c, o)| *o = tile[r][c]);
        }
    }
}

#[gpu_async]
pub mod chained {
    use gpu_async::device::*;

    /// Rows, columns and K of every tile of [`chain`].
    pub const T: usize = 64;

    /// `s = a · bᵀ` (all T x T), then `p = s` rounded to bf16 in registers, then
    /// `o = p · v` (`mma_kn`, `v` given as K x N) and `w = p · vᵀ` (`mma`).
    #[kernel(warps = 8, idle_warps)]
    pub async fn chain(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        v: &Matrix<bf16>,
        o: &mut [f32],
        w: &mut [f32],
    ) {
        let (tx, rx) = channel::<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>();
        let (vtx, vrx) = channel::<Tile<bf16, T, T>, 2>();
        join!(
            on_warps(0..1, load(a, b, v, tx, vtx)),
            on_warps(4..8, compute(rx, vrx, o, w))
        )
        .await;
    }

    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        v: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>,
        mut vtx: Sender<Tile<bf16, T, T>, 2>,
    ) {
        let Some(mut stage) = tx.reserve().await else {
            return;
        };
        stage.0.load(a, [0, 0]).await;
        stage.1.load(b, [0, 0]).await;
        stage.send();
        let Some(mut slot) = vtx.reserve().await else {
            return;
        };
        slot.load(v, [0, 0]).await;
        slot.send();
    }

    async fn compute(
        mut rx: Receiver<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>,
        mut vrx: Receiver<Tile<bf16, T, T>, 2>,
        o: &mut [f32],
        w: &mut [f32],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut s = Accumulator::<T, T>::zero();
        s.mma(&stage.0, &stage.1).await;
        let p = s.to_bf16();
        let Some(vt) = vrx.recv().await else {
            return;
        };
        let mut out = Accumulator::<T, T>::zero();
        out.mma_kn(&p, &vt).await;
        out.store(o, T, [0, 0]);
        let mut out_t = Accumulator::<T, T>::zero();
        out_t.mma(&p, &vt).await;
        out_t.store(w, T, [0, 0]);
    }
}
