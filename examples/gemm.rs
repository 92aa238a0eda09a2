//! A bf16 GEMM on the tensor cores, C = A · Bᵀ with f32 accumulation: A is M x K, B is N x K, C
//! is M x N, all row-major. One block per multiprocessor walks the 128 x 256 output tiles in a
//! grouped order (4 tile rows take their tiles column by column, so that their A and B tiles
//! stay in L2); in each block one warp loads a 128 x 64 tile of A and a 256 x 64 tile of B per
//! stage with tile loads (the TMA on the GPU) into a 4-stage ring, and two warpgroups accumulate
//! them with `wgmma` (each 64 rows of the tile), one stage's mma running while the next is
//! received (`mma_stages`). The finished tile goes to a store warp 32 columns at a time through a
//! ring of two `Tile<f32, 128, 32>` slots (`acc.store_tile`), and the store warp writes each into
//! C with a TMA store (`tile.store`) while the warpgroups go on with the next tile: on the H200
//! the stores of C, written straight from the registers, kept the tensor cores idle for 11% of
//! the time at 4096^3 (`docs/benchmarks.md`).
//!
//! Any M works, and any K and N whose rows are whole 16-byte units (K a multiple of 8, N of 4,
//! or of 8 for A · B, whose B has rows of N `bf16`s): tiles past the edges load zeros and the TMA
//! stores stop at the edges. Other shapes are an `Error::TensorMap` at launch, naming the matrix
//! and the rule.
//!
//! The loader and the store warp are warps 0 and 1, and the other two warps of their warpgroup
//! idle (they leave at the start): a loader warpgroup would make all four warps wait on the
//! ring's barriers, taking issue slots from the compute warps that share their schedulers (on the
//! H200, 1-2% of the time). The compute warpgroups start on warp 4, as `wgmma` needs.
//!
//! On the GPU the peer is cuBLAS (`cublasGemmEx`, bf16 in, f32 out and compute), run in the same
//! process on the same inputs; both results are checked, element by element, against each
//! other and, on sampled rows, against a CPU reference.
//!
//! ```text
//! LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo run --release --example gemm -- [m] [n] [k]
//! ```

#[path = "peers/cublas_gemm.rs"]
mod cublas_gemm;

use gpu_async::bench::{arg, median_of, random_f32, Timing};
use gpu_async::half::bf16;
use gpu_async::{
    gpu_async, BackendKind, Device, DeviceBuffer, Grid, Launch, MatrixView, MatrixViewMut,
};

#[gpu_async]
pub mod gemm {
    use gpu_async::device::*;

    /// Rows of C a block computes at a time: 64 per compute warpgroup.
    pub const BM: usize = 128;
    /// Columns of C a block computes at a time: the tensor cores' widest N.
    pub const BN: usize = 256;
    /// K per stage: 64 `bf16`s, a 128-byte row, the swizzle the tensor cores read.
    pub const BK: usize = 64;
    /// Tile rows that walk their columns together, so that their A and B tiles stay in L2. On
    /// the H200, at 4096^3 (16 tile columns), 4 rows ran 4% faster than 16 or 8 and 1-2% faster
    /// than 1, 2 or 32; at 8192^3, 0.8% slower than 16 (`docs/benchmarks.md`).
    pub const GROUP_M: usize = 4;

    /// Columns of C in one tile the compute warpgroups hand to the store warp: 32 `f32`s, a
    /// 128-byte row, whose swizzle keeps their shared-memory writes free of bank conflicts.
    pub const BC: usize = 32;
    /// Stages of A and B in the ring.
    pub const STAGES: usize = 4;
    /// Tiles of C in the store warp's ring.
    pub const OUT: usize = 2;

    /// `c = a · bᵀ`: `a` is M x K, `b` is N x K, `c` the M x N result, row-major.
    #[kernel(warps = 12, idle_warps)]
    pub async fn gemm(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut Matrix<f32>) {
        let (tx, rx) = channel::<(Tile<bf16, BM, BK>, Tile<bf16, BN, BK>), STAGES>();
        let (ctx, crx) = channel::<Tile<f32, BM, BC>, OUT>();
        join!(
            on_warps(0..1, load(a, b, tx)),
            on_warps(1..2, store(crx, c)),
            on_warps(4..12, compute(a, b, rx, ctx))
        )
        .await;
    }

    /// Writes the block's output tiles into C as they come, `BC` columns at a time, with TMA
    /// stores that run while the compute warpgroups go on with the next tile.
    async fn store(mut crx: Receiver<Tile<f32, BM, BC>, OUT>, c: &mut Matrix<f32>) {
        let tiles_m = (c.rows() + BM - 1) / BM;
        let tiles_n = (c.cols() + BN - 1) / BN;
        let mut t = block_index();
        while t < tiles_m * tiles_n {
            let (row, col) = tile_corner(t, tiles_m, tiles_n);
            for j in 0..BN / BC {
                let Some(tile) = crx.recv().await else {
                    return;
                };
                tile.store(c, [row, col + j * BC]).await;
            }
            t += block_count();
        }
    }

    /// The top-left element of output tile `t` in the grouped order: `GROUP_M` tile rows take
    /// their tiles column by column.
    fn tile_corner(t: usize, tiles_m: usize, tiles_n: usize) -> (usize, usize) {
        let per_group = GROUP_M * tiles_n;
        let first = t / per_group * GROUP_M;
        let rows = (tiles_m - first).min(GROUP_M);
        let i = t % per_group;
        ((first + i % rows) * BM, i / rows * BN)
    }

    /// Loads the stages of the block's output tiles: for each, K in steps of `BK`.
    async fn load(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, BM, BK>, Tile<bf16, BN, BK>), STAGES>,
    ) {
        let tiles_m = (a.rows() + BM - 1) / BM;
        let tiles_n = (b.rows() + BN - 1) / BN;
        let steps = (a.cols() + BK - 1) / BK;
        let mut t = block_index();
        while t < tiles_m * tiles_n {
            let (row, col) = tile_corner(t, tiles_m, tiles_n);
            for k in 0..steps {
                let Some(mut stage) = tx.reserve().await else {
                    return;
                };
                stage.0.load(a, [row, k * BK]).await;
                stage.1.load(b, [col, k * BK]).await;
                stage.send();
            }
            t += block_count();
        }
    }

    /// Accumulates each of the block's output tiles over its stages, then hands it to the
    /// store warp `BC` columns at a time.
    async fn compute(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        rx: Receiver<(Tile<bf16, BM, BK>, Tile<bf16, BN, BK>), STAGES>,
        mut ctx: Sender<Tile<f32, BM, BC>, OUT>,
    ) {
        let tiles_m = (a.rows() + BM - 1) / BM;
        let tiles_n = (b.rows() + BN - 1) / BN;
        let steps = (a.cols() + BK - 1) / BK;
        let mut t = block_index();
        while t < tiles_m * tiles_n {
            let mut acc = Accumulator::<BM, BN>::zero();
            // One stage's mma runs while the next is received and issued.
            if !acc.mma_stages(&rx, steps).await {
                return;
            }
            for j in 0..BN / BC {
                let Some(mut tile) = ctx.reserve().await else {
                    return;
                };
                acc.store_tile(&mut tile, j * BC);
                tile.send();
            }
            t += block_count();
        }
    }

    /// `c = a · b`: `a` is M x K, `b` is K x N (its rows run along N), `c` the M x N result,
    /// row-major. The same schedule and stages as [`gemm`], with B's stage tile K x N: four
    /// column blocks of 64 columns that the tensor cores read transposed (`mma_stages_kn`).
    #[kernel(warps = 12, idle_warps)]
    pub async fn gemm_kn(a: &Matrix<bf16>, b: &Matrix<bf16>, c: &mut Matrix<f32>) {
        let (tx, rx) = channel::<(Tile<bf16, BM, BK>, Tile<bf16, BK, BN>), STAGES>();
        let (ctx, crx) = channel::<Tile<f32, BM, BC>, OUT>();
        join!(
            on_warps(0..1, load_kn(a, b, tx)),
            on_warps(1..2, store(crx, c)),
            on_warps(4..12, compute_kn(a, b, rx, ctx))
        )
        .await;
    }

    /// Loads the stages of the block's output tiles, B's as K x N tiles.
    async fn load_kn(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        mut tx: Sender<(Tile<bf16, BM, BK>, Tile<bf16, BK, BN>), STAGES>,
    ) {
        let tiles_m = (a.rows() + BM - 1) / BM;
        let tiles_n = (b.cols() + BN - 1) / BN;
        let steps = (a.cols() + BK - 1) / BK;
        let mut t = block_index();
        while t < tiles_m * tiles_n {
            let (row, col) = tile_corner(t, tiles_m, tiles_n);
            for k in 0..steps {
                let Some(mut stage) = tx.reserve().await else {
                    return;
                };
                stage.0.load(a, [row, k * BK]).await;
                stage.1.load(b, [k * BK, col]).await;
                stage.send();
            }
            t += block_count();
        }
    }

    /// Accumulates each of the block's output tiles over its stages of `a · b`, then hands it
    /// to the store warp.
    async fn compute_kn(
        a: &Matrix<bf16>,
        b: &Matrix<bf16>,
        rx: Receiver<(Tile<bf16, BM, BK>, Tile<bf16, BK, BN>), STAGES>,
        mut ctx: Sender<Tile<f32, BM, BC>, OUT>,
    ) {
        let tiles_m = (a.rows() + BM - 1) / BM;
        let tiles_n = (b.cols() + BN - 1) / BN;
        let steps = (a.cols() + BK - 1) / BK;
        let mut t = block_index();
        while t < tiles_m * tiles_n {
            let mut acc = Accumulator::<BM, BN>::zero();
            if !acc.mma_stages_kn(&rx, steps).await {
                return;
            }
            for j in 0..BN / BC {
                let Some(mut tile) = ctx.reserve().await else {
                    return;
                };
                acc.store_tile(&mut tile, j * BC);
                tile.send();
            }
            t += block_count();
        }
    }
}

/// One block per multiprocessor on the GPU (each holds 192 KiB of stages and 32 KiB of C, so one
/// fits), a few on the simulator.
pub fn grid_for(dev: &Device) -> gpu_async::Result<Grid> {
    Ok(match dev.kind() {
        BackendKind::Cuda => Grid::blocks(dev.sm_count()?),
        _ => Grid::blocks(3),
    })
}

/// Random A (`m` x `k`) and B (`n` x `k`) in [-1, 1), as bf16.
pub fn inputs(m: usize, n: usize, k: usize, seed: u64) -> (Vec<bf16>, Vec<bf16>) {
    let to_bf16 = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect::<Vec<_>>();
    (
        to_bf16(random_f32(m * k, seed)),
        to_bf16(random_f32(n * k, seed + 1)),
    )
}

/// The product a run computes, and how it is given B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// C = A · Bᵀ, B given as N x K ([`gemm::gemm`]).
    ABt,
    /// C = A · B, B given as K x N ([`gemm::gemm_kn`]).
    AB,
}

impl Product {
    /// The product named `abt` or `ab` on the command line.
    pub fn parse(name: &str) -> Option<Product> {
        match name {
            "abt" => Some(Product::ABt),
            "ab" => Some(Product::AB),
            _ => None,
        }
    }
}

/// `x` (`rows` x `cols`, row-major) transposed: `cols` x `rows`.
pub fn transposed(x: &[bf16], rows: usize, cols: usize) -> Vec<bf16> {
    let mut t = vec![bf16::ZERO; rows * cols];
    for (i, row) in x.chunks(cols.max(1)).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            t[j * rows + i] = v;
        }
    }
    t
}

/// The launch of `product` on `grid`: `a` is M x K, `b` is as the product takes it (N x K for
/// [`Product::ABt`], K x N for [`Product::AB`]), `c` is M x N.
pub fn launch<'a>(
    dev: &'a Device,
    grid: Grid,
    product: Product,
    (a, b): (MatrixView<'a, bf16>, MatrixView<'a, bf16>),
    c: MatrixViewMut<'a, f32>,
) -> Launch<'a> {
    match product {
        Product::ABt => gemm::gemm::launch(dev, grid, (a, b, c)),
        Product::AB => gemm::gemm_kn::launch(dev, grid, (a, b, c)),
    }
}

/// The matrix views of `a` (M x K) and `b` as `product` takes it.
pub fn views<'a>(
    product: Product,
    (m, n, k): (usize, usize, usize),
    (a, b): (&'a DeviceBuffer<bf16>, &'a DeviceBuffer<bf16>),
) -> gpu_async::Result<(MatrixView<'a, bf16>, MatrixView<'a, bf16>)> {
    let b = match product {
        Product::ABt => b.as_matrix(n, k)?,
        Product::AB => b.as_matrix(k, n)?,
    };
    Ok((a.as_matrix(m, k)?, b))
}

/// C = A · Bᵀ computed by the kernel of `product` on `grid`, with `b` given as N x K (for
/// [`Product::AB`] it is uploaded transposed, K x N, so that both products are the same); C is
/// poisoned with NaNs first, so that an element the kernel misses shows.
pub fn run(
    dev: &Device,
    grid: Grid,
    product: Product,
    (m, n, k): (usize, usize, usize),
    a: &[bf16],
    b: &[bf16],
) -> gpu_async::Result<Vec<f32>> {
    let da = dev.upload(a)?;
    let db = match product {
        Product::ABt => dev.upload(b)?,
        Product::AB => dev.upload(&transposed(b, n, k))?,
    };
    let mut c = dev.upload(&vec![f32::NAN; m * n])?;
    let ab = views(product, (m, n, k), (&da, &db))?;
    gpu_async::block_on(launch(dev, grid, product, ab, c.as_matrix_mut(m, n)?))?;
    c.download()
}

/// The Euclidean norm of each `k`-element row of `x`.
pub fn row_norms(x: &[bf16], k: usize) -> Vec<f64> {
    x.chunks(k.max(1))
        .map(|row| {
            row.iter()
                .map(|v| f64::from(v.to_f32()).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .collect()
}

/// The tolerance of an element whose rows of A and B have the norms `a` and `b`: `2^-12 a b`,
/// which bounds `2^-12 Σ_k |a_ik b_jk|` (Cauchy–Schwarz). Summed in another order (the tensor
/// cores' own, cuBLAS's), f32 accumulation stays far inside it; a misplaced element or a lost K
/// step does not.
pub fn tolerance(a: f64, b: f64) -> f64 {
    a * b / 4096.0
}

/// The elements of `c` in the rows `rows` (and every column) that differ from the exact A · Bᵀ
/// (computed here in f64) by more than [`tolerance`], NaNs included.
pub fn mismatches_in_rows(
    (m, n, k): (usize, usize, usize),
    a: &[bf16],
    b: &[bf16],
    c: &[f32],
    rows: impl IntoIterator<Item = usize>,
) -> usize {
    let (na, nb) = (row_norms(a, k), row_norms(b, k));
    let mut bad = 0;
    for i in rows.into_iter().filter(|&i| i < m) {
        let a_row = &a[i * k..(i + 1) * k];
        for j in 0..n {
            let exact: f64 = a_row
                .iter()
                .zip(&b[j * k..(j + 1) * k])
                .map(|(x, y)| f64::from(x.to_f32()) * f64::from(y.to_f32()))
                .sum();
            let got = f64::from(c[i * n + j]);
            // A NaN is never within the tolerance.
            let within = (got - exact).abs() <= tolerance(na[i], nb[j]);
            if !within {
                bad += 1;
            }
        }
    }
    bad
}

/// The rows a large result is checked on: the first and last rows of the first and last tiles
/// and of their warpgroups' halves, and every 97th row (every row when `m` is small).
pub fn sampled_rows(m: usize) -> Vec<usize> {
    if m <= 512 {
        return (0..m).collect();
    }
    let mut rows: Vec<usize> = (0..m).step_by(97).collect();
    rows.extend([0, 63, 64, 127, 128, m - 129, m - 65, m - 64, m - 1]);
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Elements of `x` and `y` (both M x N) that differ by more than twice their [`tolerance`]
/// (each within it of the exact value), NaNs included.
pub fn mismatches_between(
    (m, n, k): (usize, usize, usize),
    a: &[bf16],
    b: &[bf16],
    x: &[f32],
    y: &[f32],
) -> usize {
    let (na, nb) = (row_norms(a, k), row_norms(b, k));
    let mut bad = 0;
    for i in 0..m {
        for j in 0..n {
            let (u, v) = (f64::from(x[i * n + j]), f64::from(y[i * n + j]));
            let within = (u - v).abs() <= 2.0 * tolerance(na[i], nb[j]);
            if !within {
                bad += 1;
            }
        }
    }
    bad
}

fn tflops((m, n, k): (usize, usize, usize), ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::default()?;
    let gpu = dev.kind() == BackendKind::Cuda;
    let m: usize = arg(1, "m", if gpu { 4096 } else { 200 })?;
    let n: usize = arg(2, "n", if gpu { 4096 } else { 300 })?;
    let k: usize = arg(3, "k", if gpu { 4096 } else { 136 })?;
    let product_name: String = arg(
        4,
        "the product, abt (A · Bᵀ) or ab (A · B)",
        "abt".to_string(),
    )?;
    let product = Product::parse(&product_name).ok_or_else(|| {
        format!("the product is `abt` (A · Bᵀ) or `ab` (A · B), not `{product_name}`")
    })?;
    let shape = (m, n, k);
    println!("backend: {dev}");
    let grid = grid_for(&dev)?;
    // B as N x K; the A · B run takes it transposed, so both have one exact product.
    let (a, b) = inputs(m, n, k, 7);
    let c = run(&dev, grid, product, shape, &a, &b)?;
    let rows = sampled_rows(m);
    let bad = mismatches_in_rows(shape, &a, &b, &c, rows.iter().copied());
    let what = match product {
        Product::ABt => "A · Bᵀ",
        Product::AB => "A · B",
    };
    println!(
        "check: {what}, {m} x {n} x {k}, {} blocks, {} sampled rows against the exact product: {bad} mismatches",
        grid.block_count(),
        rows.len()
    );
    if bad != 0 {
        return Err("the product differs from the exact one".into());
    }
    if !gpu {
        return Ok(());
    }
    let b_given = match product {
        Product::ABt => b.clone(),
        Product::AB => transposed(&b, n, k),
    };
    let layout = match product {
        Product::ABt => cublas_gemm::BLayout::NK,
        Product::AB => cublas_gemm::BLayout::KN,
    };
    let mut peer = cublas_gemm::CublasGemm::new(0, (m, n, k), &a, (&b_given, layout))?;
    peer.run_ms()?;
    let reference = peer.c()?;
    let bad = mismatches_in_rows(shape, &a, &b, &reference, rows.iter().copied());
    let apart = mismatches_between(shape, &a, &b, &c, &reference);
    println!(
        "check: cuBLAS on the sampled rows: {bad} mismatches; ours against cuBLAS, every element: {apart} mismatches"
    );
    if bad != 0 || apart != 0 {
        return Err("the product differs from cuBLAS's".into());
    }
    // Both timed alike: a flush of the L2 cache, then events around one call (the host's work
    // for the call overlaps the flush); the median of 20 after 3 untimed.
    let (da, db) = (dev.upload(&a)?, dev.upload(&b_given)?);
    let mut dc = dev.alloc::<f32>(m * n)?;
    let mut timing = Timing::new(&dev)?;
    let ab = views(product, shape, (&da, &db))?;
    let ours_ms = median_of(3, 20, || {
        let c = dc.as_matrix_mut(m, n)?;
        timing.time_launch(|| launch(&dev, grid, product, ab, c))
    })?;
    let peer_ms = median_of(3, 20, || {
        peer.run_ms().map_err(|message| gpu_async::Error::Cuda {
            call: "the cuBLAS peer",
            message,
        })
    })?;
    let (ours, theirs) = (tflops(shape, ours_ms), tflops(shape, peer_ms));
    let name = match product {
        Product::ABt => "gemm",
        Product::AB => "gemm_kn",
    };
    println!(
        "time: {name} {ours_ms:.3} ms ({ours:.0} TFLOP/s), cuBLAS {peer_ms:.3} ms ({theirs:.0} TFLOP/s), ratio {:.3}",
        ours / theirs
    );
    Ok(())
}
