//! Attention forward on the tensor cores, O = softmax(Q · Kᵀ / √d) · V for `bf16` tensors of
//! shape [B, H, S, d] (row-major, d = 128 or 64), with `f32` accumulation, a `bf16` O and the
//! rows' log-sum-exp (natural log, `f32`), non-causal or causal (query `i` sees keys `0..=i`),
//! for any S. A block per SM takes query tiles (128 rows of one head) from a counter until none
//! is left (see `grid_for`): one warp loads each tile's Q and the K and V tiles of 128 keys, each
//! into a ring of its own (the TMA on the GPU, one thread issuing; the next tile's Q while this
//! tile's keys run), and two warpgroups (64 query rows each) run the online softmax: per block of
//! keys S = Q · Kᵀ (`mma`), the rows' running maximum and sum (`row_max`, `row_sum`, `Rows`),
//! P = 2^(S - max) in registers (`exp2_approx`), and O += P · V with P as the register A operand
//! (`to_bf16`, `mma_kn`), the scores of one block computed while the previous block's product
//! runs. The finished O tile goes through shared memory (`store_tile`) to a store warp, which
//! writes it with a TMA store while the warpgroups start the next tile. Keys past S, and keys
//! after the query in the causal case, are masked to -∞; rows past S are computed and not stored
//! (`store_rows`).
//!
//! Checked against a CPU reference in `f64` (within twice what rounding P and O to `bf16`
//! allows, see `mismatches`); on the GPU it prints TFLOP/s (4 · B · H · S² · d / t,
//! halved for causal), the median of 20 launches after a second of them (the clock of sustained
//! work). `scripts/h200-attention.sh` times cuDNN's and torch's flash attention in the same call
//! on the same shapes, the same way.
//!
//! ```text
//! cargo run --release --example attention -- [b] [h] [s] [full|causal] [d]
//! ```

use gpu_async::bench::{arg, median_of, random_f32, warm_for, Timing};
use gpu_async::half::bf16;
use gpu_async::{
    gpu_async, BackendKind, Device, DeviceBuffer, Grid, Launch, MatrixView, MatrixViewMut,
};

/// How long the GPU runs the kernel before it is timed (see [`warm_for`]).
const WARM: std::time::Duration = std::time::Duration::from_secs(1);

/// The attention kernel of head dimension `$d` (128 or 64) in module `$module`: the same code
/// for both, the tiles and accumulators `$d` wide.
macro_rules! attention_kernel {
    ($module:ident, $d:literal) => {
        #[gpu_async]
        pub mod $module {
            use gpu_async::device::*;
            use std::sync::atomic::{AtomicU32, Ordering};

            /// Query rows per block: 64 per compute warpgroup.
            pub const BQ: usize = 128;
            /// Keys per stage.
            pub const BK: usize = 128;
            /// The head dimension.
            pub const D: usize = $d;
            /// Slots of the K ring and of the V ring.
            pub const KV_STAGES: usize = 2;
            /// Slots of the Q ring (and of the tile numbers' ring): the next tile's Q loads while
            /// this tile's keys run.
            pub const Q_STAGES: usize = 2;
            /// Heads whose causal tiles are ordered together (see `query_tile`).
            pub const HEAD_GROUP: usize = 4;

            /// `o` and `lse` of `q`, `k`, `v` ([B · H · S, D] each, heads one after another).
            /// Block `b` takes tile `t = b` first (see `query_tile`), then `t = grid + n` for each
            /// `n` it takes from `next[0]` (0 when the launch starts), until `t` is past the
            /// last tile. `scale` is `log2(e) / √D`.
            #[allow(clippy::too_many_arguments)]
            // The loader and the store warp are one warp each, in warpgroups of their own (a
            // register budget is a warpgroup's): their copies are one thread's, and the other
            // warps of their warpgroups idle (as four, the loader's only spun in its waits: 11% of
            // the kernel's instructions, at the same speed).
            #[kernel(
                warps = 16,
                idle_warps,
                registers(load = 24, store = 24, compute = 232)
            )]
            pub async fn attention(
                q: &Matrix<bf16>,
                k: &Matrix<bf16>,
                v: &Matrix<bf16>,
                s: usize,
                causal: bool,
                scale: f32,
                o: &mut Matrix<bf16>,
                lse: &mut [f32],
                next: &[AtomicU32],
            ) {
                let (ttx, trx) = channel::<[u32; 1], Q_STAGES>();
                let (qtx, qrx) = channel::<Tile<bf16, BQ, D>, Q_STAGES>();
                let (ktx, krx) = channel::<Tile<bf16, BK, D>, KV_STAGES>();
                let (vtx, vrx) = channel::<Tile<bf16, BK, D>, KV_STAGES>();
                let (rtx, rrx) = channel::<[u32; 2], 2>();
                let (otx, orx) = channel::<Tile<bf16, BQ, D>, 1>();
                join!(
                    on_warps(0..1, load(q, k, v, s, causal, next, ttx, qtx, ktx, vtx)),
                    on_warps(4..5, store(rrx, orx, o)),
                    on_warps(
                        8..16,
                        compute(s, causal, scale, trx, qrx, krx, vrx, rtx, otx, lse)
                    )
                )
                .await;
            }

            /// Writes each finished tile of O into `o`, at the row and for the rows the compute
            /// role sends before it: a tile inside its head by one TMA store that runs while the
            /// compute role goes on with the next tile, the last tile of a head whose S is not a
            /// multiple of `BQ` only up to the head's last row (the next head's rows follow).
            /// Written from the compute warps' registers instead, O took them 2.7 µs per tile
            /// on the H200 (a trace of the roles' waits), with the tensor cores idle: full
            /// attention at S = 4096 ran 2.8% slower.
            async fn store(
                mut rrx: Receiver<[u32; 2], 2>,
                mut orx: Receiver<Tile<bf16, BQ, D>, 1>,
                o: &mut Matrix<bf16>,
            ) {
                while let Some(place) = rrx.recv().await {
                    let (row, rows) = (place[0] as usize, place[1] as usize);
                    drop(place);
                    let Some(tile) = orx.recv().await else {
                        return;
                    };
                    tile.store_rows(o, [row, 0], rows).await;
                }
            }

            /// The head and the query tile of tile `t` of `heads` heads. Full attention takes
            /// each head's tiles in order, so that the blocks running at once share the keys and
            /// values of a head or two. Causal tiles see more keys the later they are: they go
            /// by groups of `HEAD_GROUP` heads (whose keys and values fit the L2 together), and
            /// in a group the last tile of each head first, down to the first, so that the
            /// longest start first and the shortest fill in at the end.
            fn query_tile(t: usize, s: usize, heads: usize, causal: bool) -> (usize, usize) {
                let tiles = (s + BQ - 1) / BQ;
                if !causal {
                    return (t / tiles, t % tiles);
                }
                let group = t / (HEAD_GROUP * tiles);
                let first = group * HEAD_GROUP;
                let size = (heads - first).min(HEAD_GROUP);
                let within = t - first * tiles;
                (first + within % size, tiles - 1 - within / size)
            }

            /// The blocks of keys the query tile `qt` sees: all of them, or up to its diagonal.
            fn key_blocks(s: usize, causal: bool, qt: usize) -> usize {
                let all = (s + BK - 1) / BK;
                if causal {
                    (qt + 1).min(all)
                } else {
                    all
                }
            }

            /// Takes the block's query tiles one at a time, the first by the block's index and each
            /// next one from `next[0]` once the previous one's loads are issued (so that a block
            /// whose tiles were short takes more of them), and for each sends its number to the
            /// compute role and loads its Q tile, then the K and V tiles of each block of keys it
            /// sees, each into a ring of its own: a K slot is free again once its scores are
            /// computed, a softmax before the V slot of the same keys.
            #[allow(clippy::too_many_arguments)]
            async fn load(
                q: &Matrix<bf16>,
                k: &Matrix<bf16>,
                v: &Matrix<bf16>,
                s: usize,
                causal: bool,
                next: &[AtomicU32],
                mut ttx: Sender<[u32; 1], Q_STAGES>,
                mut qtx: Sender<Tile<bf16, BQ, D>, Q_STAGES>,
                mut ktx: Sender<Tile<bf16, BK, D>, KV_STAGES>,
                mut vtx: Sender<Tile<bf16, BK, D>, KV_STAGES>,
            ) {
                let heads = q.rows() / s;
                let total = heads * ((s + BQ - 1) / BQ);
                let mut t = block_index();
                while t < total {
                    let (head, qt) = query_tile(t, s, heads, causal);
                    let Some(mut number) = ttx.reserve().await else {
                        return;
                    };
                    number[0] = t as u32;
                    number.send();
                    let Some(mut slot) = qtx.reserve().await else {
                        return;
                    };
                    slot.load(q, [head * s + qt * BQ, 0]).await;
                    slot.send();
                    for j in 0..key_blocks(s, causal, qt) {
                        let Some(mut kslot) = ktx.reserve().await else {
                            return;
                        };
                        kslot.load(k, [head * s + j * BK, 0]).await;
                        kslot.send();
                        let Some(mut vslot) = vtx.reserve().await else {
                            return;
                        };
                        vslot.load(v, [head * s + j * BK, 0]).await;
                        vslot.send();
                    }
                    t = block_count() + next[0].fetch_add(1, Ordering::Relaxed) as usize;
                }
            }

            /// The online softmax over the blocks of keys, then O / sum and the log-sum-exp. The
            /// scores of block `j` and the product of block `j - 1`'s weights with its values run on
            /// the tensor cores together: both are issued, the scores awaited (the product keeps
            /// running), block `j`'s softmax computed, and only then the product awaited and O
            /// rescaled.
            #[allow(clippy::too_many_arguments)]
            async fn compute(
                s: usize,
                causal: bool,
                scale: f32,
                mut trx: Receiver<[u32; 1], Q_STAGES>,
                mut qrx: Receiver<Tile<bf16, BQ, D>, Q_STAGES>,
                mut krx: Receiver<Tile<bf16, BK, D>, KV_STAGES>,
                mut vrx: Receiver<Tile<bf16, BK, D>, KV_STAGES>,
                mut rtx: Sender<[u32; 2], 2>,
                mut otx: Sender<Tile<bf16, BQ, D>, 1>,
                lse: &mut [f32],
            ) {
                let heads = lse.len() / s;
                while let Some(number) = trx.recv().await {
                    let t = number[0] as usize;
                    drop(number);
                    let (head, qt) = query_tile(t, s, heads, causal);
                    let q0 = qt * BQ;
                    // The role knows how many tiles of keys and values the query tile takes:
                    // its receives unwrap (a stream that ended early fails the launch), so no
                    // branch waits on a slot's end-of-stream word before the mmas are issued.
                    let qtile = qrx.recv().await.unwrap();
                    let mut acc = Accumulator::<BQ, D>::zero();
                    // The rows' running maximum (of the scaled scores, base 2) and sum.
                    let mut m = Rows::<BQ>::splat(0.0);
                    let keys = krx.recv().await.unwrap();
                    let mut sc = Accumulator::<BQ, BK>::zero();
                    sc.mma(&qtile, &keys).await;
                    drop(keys);
                    // The softmax step (written out three times, here, in the loop and for the
                    // last block: a helper cannot take an accumulator): keys past S, or after the
                    // query when causal, masked to -inf (a block with no such key skips the
                    // mask); the running maximum `m` of the scaled scores and the running sum `l`
                    // (rescaled to the new maximum) updated; the scores replaced by the weights
                    // 2^(x scale - m), one `fma` and one `ex2` each.
                    if BK > s || causal {
                        sc.apply_at(|i, c, x| {
                            if (c >= s) | (causal & (c > q0 + i)) {
                                f32::NEG_INFINITY
                            } else {
                                x
                            }
                        });
                    }
                    let block_max = sc.row_max();
                    m.apply_at(|i, _| block_max[i] * scale);
                    sc.apply_at(|i, _, x| x.mul_add(scale, -m[i]).exp2_approx());
                    let mut l = sc.row_sum();
                    let mut p = sc.to_bf16();
                    // Blocks of keys that need no mask run in a loop with no branch in it: a
                    // branch while the product runs makes ptxas wait for the product there,
                    // before the softmax it is meant to overlap. Only the last block can need a
                    // mask (keys past S, or past the diagonal when causal), and it runs after the
                    // loop, masked without a branch.
                    let blocks = key_blocks(s, causal, qt);
                    let masked = blocks * BK > s || causal;
                    let unmasked = if masked { blocks - 1 } else { blocks };
                    for _ in 1..unmasked {
                        let keys = krx.recv().await.unwrap();
                        let values = vrx.recv().await.unwrap();
                        sc = Accumulator::<BQ, BK>::zero();
                        let scores = sc.mma(&qtile, &keys);
                        let product = acc.mma_kn(&p, &values);
                        scores.await;
                        drop(keys);
                        let block_max = sc.row_max();
                        let mut m_new = Rows::<BQ>::splat(0.0);
                        m_new.apply_at(|i, _| m[i].max(block_max[i] * scale));
                        let mut alpha = Rows::<BQ>::splat(0.0);
                        alpha.apply_at(|i, _| (m[i] - m_new[i]).exp2_approx());
                        sc.apply_at(|i, _, x| x.mul_add(scale, -m_new[i]).exp2_approx());
                        let block_sum = sc.row_sum();
                        l.apply_at(|i, x| x * alpha[i] + block_sum[i]);
                        m = m_new;
                        product.await;
                        acc.apply_at(|i, _, x| x * alpha[i]);
                        p = sc.to_bf16();
                    }
                    if masked && blocks > 1 {
                        // The same step on the last block, its scores masked first.
                        let keys = krx.recv().await.unwrap();
                        let values = vrx.recv().await.unwrap();
                        sc = Accumulator::<BQ, BK>::zero();
                        let scores = sc.mma(&qtile, &keys);
                        let product = acc.mma_kn(&p, &values);
                        scores.await;
                        drop(keys);
                        let k0 = (blocks - 1) * BK;
                        sc.apply_at(|i, c, x| {
                            let key = k0 + c;
                            if (key >= s) | (causal & (key > q0 + i)) {
                                f32::NEG_INFINITY
                            } else {
                                x
                            }
                        });
                        let block_max = sc.row_max();
                        let mut m_new = Rows::<BQ>::splat(0.0);
                        m_new.apply_at(|i, _| m[i].max(block_max[i] * scale));
                        let mut alpha = Rows::<BQ>::splat(0.0);
                        alpha.apply_at(|i, _| (m[i] - m_new[i]).exp2_approx());
                        sc.apply_at(|i, _, x| x.mul_add(scale, -m_new[i]).exp2_approx());
                        let block_sum = sc.row_sum();
                        l.apply_at(|i, x| x * alpha[i] + block_sum[i]);
                        m = m_new;
                        product.await;
                        acc.apply_at(|i, _, x| x * alpha[i]);
                        p = sc.to_bf16();
                    }
                    let values = vrx.recv().await.unwrap();
                    acc.mma_kn(&p, &values).await;
                    // O / l as one reciprocal per row and a multiply per element.
                    let mut inv = Rows::<BQ>::splat(0.0);
                    inv.apply_at(|i, _| 1.0 / l[i]);
                    acc.apply_at(|i, _, x| x * inv[i]);
                    let rows = head * s;
                    // O goes to the store warp through shared memory (its previous tile's store
                    // has long read the slot), the row and the rows inside the head first.
                    let Some(mut place) = rtx.reserve().await else {
                        return;
                    };
                    place[0] = (rows + q0) as u32;
                    place[1] = (s - q0).min(BQ) as u32;
                    place.send();
                    let Some(mut out) = otx.reserve().await else {
                        return;
                    };
                    acc.store_tile(&mut out, 0);
                    out.send();
                    // ln(sum e^x) = (m + log2(l)) ln 2, m in the base-2 scale of the scores.
                    let mut out = Rows::<BQ>::splat(0.0);
                    out.apply_at(|i, _| (m[i] + l[i].log2()) * core::f32::consts::LN_2);
                    out.store(&mut lse[rows..rows + s], q0);
                }
            }
        }
    };
}

attention_kernel!(head128, 128);
attention_kernel!(head64, 64);

/// An attention problem: `heads` (B · H) heads of `s` rows of `d` (128 or 64), full or causal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub heads: usize,
    pub s: usize,
    pub d: usize,
    pub causal: bool,
}

/// `log2(e) / √d`: the scores' scale in base 2.
pub fn scale(d: usize) -> f32 {
    std::f32::consts::LOG2_E / (d as f32).sqrt()
}

/// An error for a head dimension other than the kernels' 128 and 64.
fn check_head_dimension(shape: Shape) -> Result<(), String> {
    match shape.d {
        128 | 64 => Ok(()),
        d => Err(format!("the head dimension is 128 or 64, not {d}")),
    }
}

/// The grid of `shape` on `dev`: a block per SM (one on the simulator), or one per query tile
/// where there are fewer; an error for a `d` other than 128 or 64.
///
/// A block that stays loads its next tile's Q and first keys while it computes the last of the
/// current one (full attention ran 2-3.5% faster on the H200 than with a block per tile at
/// S = 4096 and 16384), and the blocks take their tiles from a counter as they free up: causal
/// tiles see from one block of keys to all of them, which a fixed share of tiles per block does
/// not even out (443 against 666 TFLOP/s at S = 16384).
pub fn grid_for(dev: &Device, shape: Shape) -> Result<Grid, Box<dyn std::error::Error>> {
    check_head_dimension(shape)?;
    let tiles = shape.heads * shape.s.div_ceil(head128::BQ);
    let tiles =
        u32::try_from(tiles).map_err(|_| format!("{tiles} tiles are more than a grid has"))?;
    Ok(Grid::blocks(tiles.min(dev.sm_count()?).max(1)))
}

/// Random Q, K and V of [heads · s, d], as bf16: K and V in [-1, 1), Q in [-4, 4), so that the
/// softmax has peaks and the check sees a wrong weight.
pub fn inputs(shape: Shape, seed: u64) -> [Vec<bf16>; 3] {
    let n = shape.heads * shape.s * shape.d;
    [4.0, 1.0, 1.0].map(|range| {
        random_f32(n, seed + range as u64)
            .into_iter()
            .map(|x| bf16::from_f32(range * x))
            .collect()
    })
}

/// The launch of the kernel of `shape.d` (64, or else 128) on `grid` ([`grid_for`]); `next`
/// (one word, the tiles' counter) must be 0.
fn launch<'a>(
    dev: &'a Device,
    (grid, shape): (Grid, Shape),
    (q, k, v): (
        MatrixView<'a, bf16>,
        MatrixView<'a, bf16>,
        MatrixView<'a, bf16>,
    ),
    (o, lse): (MatrixViewMut<'a, bf16>, &'a mut DeviceBuffer<f32>),
    next: &'a mut DeviceBuffer<u32>,
) -> Launch<'a> {
    let (s, causal, scale) = (shape.s, shape.causal, scale(shape.d));
    if shape.d == 64 {
        head64::attention::launch(dev, grid, (q, k, v, s, causal, scale, o, lse, next))
    } else {
        head128::attention::launch(dev, grid, (q, k, v, s, causal, scale, o, lse, next))
    }
}

/// O and the log-sum-exp of `shape`'s attention, computed by the kernel on [`grid_for`]'s grid.
pub fn run(
    dev: &Device,
    shape: Shape,
    inputs: &[Vec<bf16>; 3],
) -> Result<(Vec<bf16>, Vec<f32>), Box<dyn std::error::Error>> {
    run_on(dev, grid_for(dev, shape)?, shape, inputs)
}

/// [`run`] on `grid`: any number of blocks takes the tiles between them.
pub fn run_on(
    dev: &Device,
    grid: Grid,
    shape: Shape,
    [q, k, v]: &[Vec<bf16>; 3],
) -> Result<(Vec<bf16>, Vec<f32>), Box<dyn std::error::Error>> {
    check_head_dimension(shape)?;
    let (rows, d) = (shape.heads * shape.s, shape.d);
    let (dq, dk, dv) = (dev.upload(q)?, dev.upload(k)?, dev.upload(v)?);
    let mut o = dev.upload(&vec![bf16::NAN; rows * d])?;
    let mut lse = dev.upload(&vec![f32::NAN; rows])?;
    let mut next = dev.upload(&[0u32])?;
    let views = (
        dq.as_matrix(rows, d)?,
        dk.as_matrix(rows, d)?,
        dv.as_matrix(rows, d)?,
    );
    gpu_async::block_on(launch(
        dev,
        (grid, shape),
        views,
        (o.as_matrix_mut(rows, d)?, &mut lse),
        &mut next,
    ))?;
    Ok((o.download()?, lse.download()?))
}

/// The exact attention of query row `i` of head `head` (f64): its output row, each output's
/// weighted mean of |V| (what rounding P to `bf16` can move it by, relatively), and the
/// log-sum-exp.
pub fn reference_row(
    shape: Shape,
    [q, k, v]: &[Vec<bf16>; 3],
    head: usize,
    i: usize,
) -> (Vec<(f64, f64)>, f64) {
    let (s, d) = (shape.s, shape.d);
    let at = |x: &[bf16], r: usize, c: usize| f64::from(x[(head * s + r) * d + c].to_f32());
    let keys = if shape.causal { i + 1 } else { s };
    let scores: Vec<f64> = (0..keys)
        .map(|j| (0..d).map(|c| at(q, i, c) * at(k, j, c)).sum::<f64>() / (d as f64).sqrt())
        .collect();
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
    let sum: f64 = weights.iter().sum();
    let out = (0..d)
        .map(|c| {
            let (mut x, mut size) = (0.0, 0.0);
            for (j, w) in weights.iter().enumerate() {
                x += w * at(v, j, c);
                size += w * at(v, j, c).abs();
            }
            (x / sum, size / sum)
        })
        .collect();
    (out, max + sum.ln())
}

/// The rows `rows` of the first `heads` heads whose O or log-sum-exp differ from the exact ones
/// by more than the tolerance: for an element of O, `2^-8` of its weighted mean of |V| plus
/// `2^-8` of itself (P and O are rounded to `bf16`, `2^-9` each); for the log-sum-exp, `2^-14`
/// of `1 + |lse|` (it is computed in `f32`). NaNs never pass.
pub fn mismatches(
    shape: Shape,
    heads: usize,
    inputs: &[Vec<bf16>; 3],
    (o, lse): (&[bf16], &[f32]),
    rows: &[usize],
) -> usize {
    let (s, d) = (shape.s, shape.d);
    let mut bad = 0;
    for head in 0..heads.min(shape.heads) {
        for &i in rows.iter().filter(|&&i| i < s) {
            let (want, want_lse) = reference_row(shape, inputs, head, i);
            let row = &o[(head * s + i) * d..(head * s + i + 1) * d];
            let o_ok = row.iter().zip(&want).all(|(g, &(w, size))| {
                (f64::from(g.to_f32()) - w).abs() <= (size + w.abs()) / 256.0
            });
            let got_lse = f64::from(lse[head * s + i]);
            let lse_ok = (got_lse - want_lse).abs() <= (1.0 + want_lse.abs()) / 16384.0;
            if !o_ok || !lse_ok {
                bad += 1;
            }
        }
    }
    bad
}

/// The rows checked of a long sequence: the first and last of each tile's warpgroups and every
/// 61st (every row when `s` is small).
pub fn sampled_rows(s: usize) -> Vec<usize> {
    if s <= 256 {
        return (0..s).collect();
    }
    let mut rows: Vec<usize> = (0..s).step_by(61).collect();
    rows.extend([0, 63, 64, 127, 128, s - 65, s - 64, s - 1]);
    rows.sort_unstable();
    rows.dedup();
    rows
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::default()?;
    let gpu = dev.kind() == BackendKind::Cuda;
    let b: usize = arg(1, "b", 1)?;
    let h: usize = arg(2, "h", if gpu { 16 } else { 1 })?;
    let s: usize = arg(3, "s", if gpu { 4096 } else { 200 })?;
    let mask: String = arg(4, "the mask, full or causal", "full".to_string())?;
    let d: usize = arg(5, "d, 128 or 64", 128)?;
    let causal = match mask.as_str() {
        "causal" => true,
        "full" => false,
        other => return Err(format!("the mask is `full` or `causal`, not `{other}`").into()),
    };
    println!("backend: {dev}");
    let shape = Shape {
        heads: b * h,
        s,
        d,
        causal,
    };
    let inputs = inputs(shape, 11);
    let (o, lse) = run(&dev, shape, &inputs)?;
    let rows = sampled_rows(s);
    let bad = mismatches(shape, 2, &inputs, (&o, &lse), &rows);
    println!(
        "check: {mask} attention, b {b}, h {h}, s {s}, d {d}: {} rows of {} heads against the exact result: {bad} mismatches",
        rows.len(),
        shape.heads.min(2)
    );
    if bad != 0 {
        return Err("the attention differs from the exact one".into());
    }
    if !gpu {
        return Ok(());
    }
    let rows_all = shape.heads * s;
    let [q, k, v] = &inputs;
    let (dq, dk, dv) = (dev.upload(q)?, dev.upload(k)?, dev.upload(v)?);
    let mut dout = dev.alloc::<bf16>(rows_all * d)?;
    let mut dlse = dev.alloc::<f32>(rows_all)?;
    let mut next = dev.alloc::<u32>(1)?;
    let mut timing = Timing::new(&dev)?;
    let views = (
        dq.as_matrix(rows_all, d)?,
        dk.as_matrix(rows_all, d)?,
        dv.as_matrix(rows_all, d)?,
    );
    let grid = grid_for(&dev, shape)?;
    let mut timed = || {
        next.upload_from(&[0])?;
        let o = dout.as_matrix_mut(rows_all, d)?;
        timing.time_launch(|| launch(&dev, (grid, shape), views, (o, &mut dlse), &mut next))
    };
    // Timed at the clock of sustained work, as its peers are (`warm_for` says why).
    warm_for(WARM, &mut timed)?;
    let ms = median_of(3, 20, timed)?;
    let flops =
        4.0 * shape.heads as f64 * (s as f64).powi(2) * d as f64 / if causal { 2.0 } else { 1.0 };
    println!(
        "time: attention {ms:.3} ms ({:.0} TFLOP/s)",
        flops / (ms * 1e-3) / 1e12
    );
    Ok(())
}
