//! The GEMM epilogue `C = alpha · A · Bᵀ + beta · C`: one stage's product stored with
//! `store_scaled` into `f32` and `bf16` outputs; elementwise operations on an accumulator of
//! two warpgroups (`apply`, `apply_at`) before its store.

use gpu_async::gpu_async;

#[gpu_async]
pub mod epilogue {
    use gpu_async::device::*;

    /// Rows, columns and K of the product.
    pub const T: usize = 64;

    /// `c = alpha · a · bᵀ + beta · c` and `h = alpha · a · bᵀ + beta · h` (`h` in `bf16`), the
    /// product stored at (`row`, `col`) of matrices of `cols` columns (clipped at their edges).
    #[allow(clippy::too_many_arguments)]
    #[kernel(warps = 8, idle_warps)]
    pub async fn scaled(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        row: usize,
        col: usize,
        cols: usize,
        alpha: f32,
        beta: f32,
        c: &mut [f32],
        h: &mut [bf16],
    ) {
        let (tx, rx) = channel::<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>();
        join!(
            on_warps(0..1, load(a, b, tx)),
            on_warps(4..8, compute(rx, row, col, cols, alpha, beta, c, h))
        )
        .await;
    }

    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>,
    ) {
        let Some(mut stage) = tx.reserve().await else {
            return;
        };
        stage.0.load(a, [0, 0]).await;
        stage.1.load(b, [0, 0]).await;
        stage.send();
    }

    async fn compute(
        mut rx: Receiver<(Tile<bf16, T, T>, Tile<bf16, T, T>), 2>,
        row: usize,
        col: usize,
        cols: usize,
        alpha: f32,
        beta: f32,
        c: &mut [f32],
        h: &mut [bf16],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<T, T>::zero();
        acc.mma(&stage.0, &stage.1).await;
        acc.store_scaled(c, cols, [row, col], alpha, beta);
        acc.store_scaled(h, cols, [row, col], alpha, beta);
    }

    /// Rows of the elementwise kernel's accumulator: two warpgroups.
    pub const ROWS: usize = 128;

    /// `c` (`ROWS` x `T`) = `a · bᵀ` (`a` is `ROWS` x `T`, `b` is `T` x `T`), each element then
    /// clamped below at -3 and halved, doubled and capped at 4 (a body with a `let` and an
    /// `if`), and given `bias` of its column minus a quarter of its row; the same stored into
    /// `h` (`bf16`, rows of `T`: pairs of neighbours stored together) and at (1, 1) of `g`
    /// (`f16`, rows of `T + 3`: each value on its own, clipped at the edges).
    #[kernel(warps = 12, idle_warps)]
    pub async fn elementwise(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        bias: &[f32],
        c: &mut [f32],
        h: &mut [bf16],
        g: &mut [f16],
    ) {
        let (tx, rx) = channel::<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>();
        join!(
            on_warps(0..1, load_rows(a, b, tx)),
            on_warps(4..12, apply_and_store(rx, bias, c, h, g))
        )
        .await;
    }

    async fn load_rows(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
    ) {
        let Some(mut stage) = tx.reserve().await else {
            return;
        };
        stage.0.load(a, [0, 0]).await;
        stage.1.load(b, [0, 0]).await;
        stage.send();
    }

    async fn apply_and_store(
        mut rx: Receiver<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
        bias: &[f32],
        c: &mut [f32],
        h: &mut [bf16],
        g: &mut [f16],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<ROWS, T>::zero();
        acc.mma(&stage.0, &stage.1).await;
        acc.apply(|v| v.max(-3.0) * 0.5);
        acc.apply(|v| {
            let twice = v * 2.0;
            if twice > 4.0 {
                4.0
            } else {
                twice
            }
        });
        acc.apply_at(|i, j, v| v + bias[j] - i as f32 * 0.25);
        acc.store(c, T, [0, 0]);
        acc.store(h, T, [0, 0]);
        acc.store(g, T + 3, [1, 1]);
    }

    /// `c` = `a · bᵀ` (as [`elementwise`]) with each row's maximum taken off and a tenth of
    /// that kept, then divided by its row's sum less one, plus the row's maximum again: row
    /// maxima and sums (`row_max`, `row_sum`) read back by the row's elements.
    #[kernel(warps = 12, idle_warps)]
    pub async fn row_stats(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>();
        join!(
            on_warps(0..1, load_rows(a, b, tx)),
            on_warps(4..12, rows_and_store(rx, c))
        )
        .await;
    }

    async fn rows_and_store(
        mut rx: Receiver<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
        c: &mut [f32],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<ROWS, T>::zero();
        acc.mma(&stage.0, &stage.1).await;
        let m = acc.row_max();
        acc.apply_at(|i, _, v| (v - m[i]) * 0.1);
        let l = acc.row_sum();
        acc.apply_at(|i, _, v| v / (l[i] - 1.0) + m[i]);
        acc.store(c, T, [0, 0]);
    }

    /// `a · bᵀ` plus `w` (`ROWS` x `T`, row-major), then each row's sum into `out[..ROWS]` and
    /// its maximum into `out[ROWS..]`: with `w` of mixed magnitudes, the sums' bits show the order
    /// in which `row_sum` adds.
    #[kernel(warps = 12, idle_warps)]
    pub async fn ordered_sums(a: &Matrix<bf16>, b: &Matrix<bf16>, w: &[f32], out: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>();
        join!(
            on_warps(0..1, load_rows(a, b, tx)),
            on_warps(4..12, sum_rows(rx, w, out))
        )
        .await;
    }

    async fn sum_rows(
        mut rx: Receiver<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
        w: &[f32],
        out: &mut [f32],
    ) {
        let Some(stage) = rx.recv().await else {
            return;
        };
        let mut acc = Accumulator::<ROWS, T>::zero();
        acc.mma(&stage.0, &stage.1).await;
        acc.apply_at(|i, j, v| v + w[i * T + j]);
        let l = acc.row_sum();
        let m = acc.row_max();
        l.store(out, 0);
        m.store(out, ROWS);
    }

    /// Two stages of scores `s_k = a · b_kᵀ` (`b_k` the `k`-th 64 rows of `b`) folded into
    /// running row statistics, as attention's online softmax keeps them: `m` the rows' running
    /// maximum, `l` a running sum rescaled by each new maximum; each stage's shifted scores go to
    /// `c` (stage `k` at column `T k`), and `m` and `l` to `stats` (`m` then `l`, from `at`).
    #[kernel(warps = 12, idle_warps)]
    pub async fn running_rows(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        c: &mut [f32],
        stats: &mut [f32],
        at: usize,
    ) {
        let (tx, rx) = channel::<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>();
        join!(
            on_warps(0..1, load_stages(a, b, tx)),
            on_warps(4..12, fold_rows(rx, c, stats, at))
        )
        .await;
    }

    async fn load_stages(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
    ) {
        for k in 0..2 {
            let Some(mut stage) = tx.reserve().await else {
                return;
            };
            stage.0.load(a, [0, 0]).await;
            stage.1.load(b, [k * T, 0]).await;
            stage.send();
        }
    }

    async fn fold_rows(
        mut rx: Receiver<(Tile<bf16, ROWS, T>, Tile<bf16, T, T>), 2>,
        c: &mut [f32],
        stats: &mut [f32],
        at: usize,
    ) {
        let mut m = Rows::<ROWS>::splat(-1000.0);
        let mut l = Rows::<ROWS>::splat(0.0);
        let mut k = 0usize;
        while let Some(stage) = rx.recv().await {
            let mut s = Accumulator::<ROWS, T>::zero();
            s.mma(&stage.0, &stage.1).await;
            let tile_max = s.row_max();
            let mut m_new = Rows::<ROWS>::splat(0.0);
            m_new.apply_at(|i, _| m[i].max(tile_max[i]));
            s.apply_at(|i, _, v| (v - m_new[i]) * 0.5);
            let tile_sum = s.row_sum();
            l.apply_at(|i, x| x * 0.25 + tile_sum[i] + (m[i] - m_new[i]));
            m = m_new;
            s.store(c, 2 * T, [0, k * T]);
            k += 1;
        }
        m.store(stats, at);
        l.store(stats, at + ROWS);
    }
}
