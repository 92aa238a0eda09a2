//! Warp operations in `for_each_lane` bodies: every shuffle mode, the votes, the warp
//! reductions, lane and warp numbers, a scan written with `shuffle_up`, and a loop steered by a
//! vote; in a one-warp role and a two-warp role.

use gpu_async::gpu_async;

#[gpu_async]
pub mod warps {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    #[allow(clippy::too_many_arguments)]
    pub async fn warp_ops(
        x: &[i32],
        f: &[f32],
        d: &[f64],
        shuffled: &mut [i32],
        xored: &mut [i32],
        up: &mut [f32],
        down: &mut [f64],
        votes: &mut [u32],
        sums: &mut [f32],
        extremes: &mut [i64],
        scans: &mut [i32],
        positions: &mut [u32],
    ) {
        join!(on_warps(
            0..2,
            lanes(x, f, d, shuffled, xored, up, down, votes, sums, extremes, scans, positions)
        ))
        .await;
    }

    /// The same on a one-warp role.
    #[kernel(warps = 1)]
    #[allow(clippy::too_many_arguments)]
    pub async fn warp_ops_one_warp(
        x: &[i32],
        f: &[f32],
        d: &[f64],
        shuffled: &mut [i32],
        xored: &mut [i32],
        up: &mut [f32],
        down: &mut [f64],
        votes: &mut [u32],
        sums: &mut [f32],
        extremes: &mut [i64],
        scans: &mut [i32],
        positions: &mut [u32],
    ) {
        join!(on_warps(
            0..1,
            lanes(x, f, d, shuffled, xored, up, down, votes, sums, extremes, scans, positions)
        ))
        .await;
    }

    /// Every item: each block takes the same items (the outputs are the same bits).
    #[allow(clippy::too_many_arguments)]
    async fn lanes(
        x: &[i32],
        f: &[f32],
        d: &[f64],
        shuffled: &mut [i32],
        xored: &mut [i32],
        up: &mut [f32],
        down: &mut [f64],
        votes: &mut [u32],
        sums: &mut [f32],
        extremes: &mut [i64],
        scans: &mut [i32],
        positions: &mut [u32],
    ) {
        x.par_iter()
            .zip(shuffled.par_iter_mut())
            .zip(xored.par_iter_mut())
            .for_each_lane(async |lane, ((v, s), o)| {
                *s = lane.shuffle(*v, *v as u32).await;
                *o = lane.shuffle_xor(*v, 5).await;
            });
        f.par_iter()
            .zip(d.par_iter())
            .zip(up.par_iter_mut().zip(down.par_iter_mut()))
            .for_each_lane(async |lane, ((v, w), (u, dn))| {
                *u = lane.shuffle_up(*v, 3).await;
                *dn = lane.shuffle_down(*w, 7).await;
            });
        x.par_iter()
            .zip(f.par_iter())
            .zip(votes.par_iter_mut().zip(sums.par_iter_mut()))
            .for_each_lane(async |lane, ((v, w), (vote, s))| {
                let ballot = lane.ballot(*v > 0).await;
                let all = lane.all(*v > -1000).await;
                let any = lane.any(*v == 7).await;
                *vote = ballot ^ ((all as u32) << 5) ^ ((any as u32) << 9);
                *s = lane.sum(*w).await;
            });
        x.par_iter()
            .zip(d.par_iter())
            .zip(extremes.par_iter_mut())
            .for_each_lane(async |lane, ((v, w), e)| {
                let lo = lane.min(*v as i64).await;
                let hi = lane.max(*w).await;
                let total = lane.sum(*v as u8).await;
                *e = lo ^ (hi.to_bits() as i64) ^ ((total as i64) << 40);
            });
        x.par_iter()
            .zip(scans.par_iter_mut())
            .zip(positions.par_iter_mut())
            .for_each_lane(async |lane, ((v, s), p)| {
                // An inclusive scan of the warp's values: each step's shuffle is reached by
                // every lane; only the addition depends on the lane.
                let mut acc = *v % 100;
                for step in 0..5 {
                    let distance = 1u32 << step;
                    let from = lane.shuffle_up(acc, distance).await;
                    if lane.id() >= distance {
                        acc += from;
                    }
                }
                // A loop steered by a vote: the same number of rounds on every lane.
                let mut rounds = 0u32;
                while lane.any(*v % 16 > rounds as i32).await {
                    rounds += 1;
                }
                *s = acc;
                *p = lane.id() | (lane.warp() << 8) | (rounds << 16);
            });
    }

    /// A lane loop over a count that is not a multiple of 32 is a device panic.
    #[kernel(warps = 1)]
    pub async fn partial_warp(x: &[i32], out: &mut [i32]) {
        join!(on_warps(0..1, partial(x, out))).await;
    }

    async fn partial(x: &[i32], out: &mut [i32]) {
        x.par_iter()
            .zip(out.par_iter_mut())
            .for_each_lane(async |lane, (v, o)| {
                *o = lane.sum(*v).await;
            });
    }

    /// An index out of bounds on some lanes of a lane loop that then meets at a warp
    /// operation: the kernel stops with the panic, without hanging.
    #[kernel(warps = 2)]
    pub async fn lane_out_of_bounds(x: &[i32], table: &[i32], out: &mut [i32]) {
        join!(on_warps(0..2, out_of_bounds(x, table, out))).await;
    }

    async fn out_of_bounds(x: &[i32], table: &[i32], out: &mut [i32]) {
        x.par_iter()
            .zip(out.par_iter_mut())
            .for_each_lane(async |lane, (v, o)| {
                let t = table[*v as usize];
                *o = lane.sum(t).await;
            });
    }
}

/// A loop of warp operations around an inner loop that each lane leaves at its own time: the
/// inner loop's `break` does not make the outer loop's warp operations divergent.
#[gpu_async]
pub mod nested_loops {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn digits(x: &[u32], out: &mut [u32]) {
        join!(on_warps(0..1, body(x, out))).await;
    }

    async fn body(x: &[u32], out: &mut [u32]) {
        x.par_iter()
            .zip(out.par_iter_mut())
            .for_each_lane(async |lane, (v, o)| {
                let mut total = 0u32;
                for round in 0..3u32 {
                    // Count the decimal digits of v + round: a different trip count per lane.
                    let mut n = *v + round;
                    let mut digits = 0u32;
                    loop {
                        digits += 1;
                        n /= 10;
                        if n == 0 {
                            break;
                        }
                    }
                    total += lane.sum(digits).await;
                }
                *o = total;
            });
    }
}
