//! Kernels that fill tiles from a matrix with tile loads (TMA on the GPU) and write each tile's
//! elements, as `f32`, to a slice: the tiles in row-major order of the matrix, each `R * C`
//! elements long.

use gpu_async::gpu_async;

#[gpu_async]
pub mod tiles {
    use gpu_async::device::*;

    /// The rows of a `bf16` tile: with 64 columns, rows of 128 bytes (the 128-byte swizzle).
    pub const BR: usize = 64;
    /// Its columns.
    pub const BC: usize = 64;
    /// The rows of an `f32` tile: 16 columns, rows of 64 bytes (the 64-byte swizzle).
    pub const FR: usize = 8;
    /// Its columns.
    pub const FC: usize = 16;

    /// Every `BR` x `BC` tile of `a`, as `f32`, to `y`.
    #[kernel(warps = 5)]
    pub async fn bf16_tiles(a: &Matrix<bf16>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<bf16, BR, BC>, 2>();
        join!(
            on_warps(0..1, load_bf16(a, tx)),
            on_warps(1..5, store_bf16(a, rx, y))
        )
        .await;
    }

    async fn load_bf16(a: &Matrix<bf16>, mut tx: Sender<Tile<bf16, BR, BC>, 2>) {
        let per_row = (a.cols() + BC - 1) / BC;
        let count = (a.rows() + BR - 1) / BR * per_row;
        for t in block_tiles(count, 1) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.load(a, [t.start / per_row * BR, t.start % per_row * BC])
                .await;
            slot.send();
        }
    }

    async fn store_bf16(a: &Matrix<bf16>, mut rx: Receiver<Tile<bf16, BR, BC>, 2>, y: &mut [f32]) {
        let per_row = (a.cols() + BC - 1) / BC;
        let count = (a.rows() + BR - 1) / BR * per_row;
        for t in block_tiles(count, 1) {
            let Some(tile) = rx.recv().await else { return };
            let base = t.start * BR * BC;
            y[base..base + BR * BC]
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = tile[i / BC][i % BC].to_f32());
        }
    }

    /// Every `FR` x `FC` tile of `a` to `y`, through a ring of 3 slots.
    #[kernel(warps = 2)]
    pub async fn f32_tiles(a: &Matrix<f32>, y: &mut [f32]) {
        let (tx, rx) = channel::<Tile<f32, FR, FC>, 3>();
        join!(
            on_warps(0..1, load_f32(a, tx)),
            on_warps(1..2, store_f32(a, rx, y))
        )
        .await;
    }

    async fn load_f32(a: &Matrix<f32>, mut tx: Sender<Tile<f32, FR, FC>, 3>) {
        let per_row = (a.cols() + FC - 1) / FC;
        let count = (a.rows() + FR - 1) / FR * per_row;
        for t in block_tiles(count, 1) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.load(a, [t.start / per_row * FR, t.start % per_row * FC])
                .await;
            slot.send();
        }
    }

    async fn store_f32(a: &Matrix<f32>, mut rx: Receiver<Tile<f32, FR, FC>, 3>, y: &mut [f32]) {
        let per_row = (a.cols() + FC - 1) / FC;
        let count = (a.rows() + FR - 1) / FR * per_row;
        for t in block_tiles(count, 1) {
            let Some(tile) = rx.recv().await else { return };
            let base = t.start * FR * FC;
            y[base..base + FR * FC]
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = tile[i / FC][i % FC]);
        }
    }

    /// For every `BR` x `BC` tile of `a`, the `BR` x `FC` tile of `b` at the same corner: both in
    /// one slot, a pair of tiles, each loaded and read on its own; `y` gets the pair's elements,
    /// the first tile's then the second's.
    #[kernel(warps = 5)]
    pub async fn pairs(a: &Matrix<bf16>, b: &Matrix<f32>, y: &mut [f32]) {
        let (tx, rx) = channel::<(Tile<bf16, BR, BC>, Tile<f32, BR, FC>), 2>();
        join!(
            on_warps(0..1, load_pairs(a, b, tx)),
            on_warps(1..5, store_pairs(a, rx, y))
        )
        .await;
    }

    async fn load_pairs(
        a: &Matrix<bf16>,
        b: &Matrix<f32>,
        mut tx: Sender<(Tile<bf16, BR, BC>, Tile<f32, BR, FC>), 2>,
    ) {
        let per_row = (a.cols() + BC - 1) / BC;
        let count = (a.rows() + BR - 1) / BR * per_row;
        for t in block_tiles(count, 1) {
            let Some(mut stage) = tx.reserve().await else {
                return;
            };
            let corner = [t.start / per_row * BR, t.start % per_row * BC];
            stage.0.load(a, corner).await;
            stage.1.load(b, corner).await;
            stage.send();
        }
    }

    async fn store_pairs(
        a: &Matrix<bf16>,
        mut rx: Receiver<(Tile<bf16, BR, BC>, Tile<f32, BR, FC>), 2>,
        y: &mut [f32],
    ) {
        let per_row = (a.cols() + BC - 1) / BC;
        let count = (a.rows() + BR - 1) / BR * per_row;
        for t in block_tiles(count, 1) {
            let Some(stage) = rx.recv().await else { return };
            let base = t.start * (BR * BC + BR * FC);
            y[base..base + BR * BC]
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = stage.0[i / BC][i % BC].to_f32());
            let base = base + BR * BC;
            y[base..base + BR * FC]
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = stage.1[i / FC][i % FC]);
        }
    }
}
