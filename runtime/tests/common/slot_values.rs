//! Kernels for slots as ordinary values and the forms of `Option` around them: a window of two
//! received slots (`prev = cur`), an `Option` of a receive kept in a local (`take`, `is_some`,
//! reassigned), `match` and `if let` over receives and reserves, `while let` over reserves,
//! slices of slots, `len`, `iter`, `enumerate` of tiles, `tile.len()`, nested zip patterns,
//! element writes from role code, and async helpers awaited in parallel loops.

#[gpu_async::gpu_async]
pub mod slots {
    use gpu_async::device::*;

    pub const N: usize = 8;

    /// Items `i = 0, 1, ..` holding `i + 1, i + 2, ..`, sent until the consumer closes the
    /// channel; the consumer takes `n` of them and keeps a window of two slots: `out[k]` = the
    /// first element of item `k` plus the last of item `k + 1`.
    #[kernel(warps = 2)]
    pub async fn window(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; N], 2>();
        join!(
            on_warps(0..1, produce(tx)),
            on_warps(1..2, pairs(n, rx, out)),
        )
        .await;
    }

    async fn produce(mut tx: Sender<[u32; N], 2>) {
        let mut i = 0u32;
        while let Some(mut slot) = tx.reserve().await {
            slot.par_iter_mut()
                .enumerate()
                .for_each(|(j, v)| *v = i + 1 + j as u32);
            slot.send();
            i += 1;
        }
    }

    async fn pairs(n: u32, rx: Receiver<[u32; N], 2>, out: &mut [u32]) {
        if n == 0 {
            return;
        }
        let Some(mut prev) = rx.recv().await else {
            return;
        };
        let mut k = 1u32;
        while k < n {
            let Some(cur) = rx.recv().await else {
                return;
            };
            out[k as usize - 1] = prev[0] + cur[N - 1];
            k += 1;
            prev = cur;
        }
    }

    /// The consumer receives ahead into an `Option` it keeps: `out[k]` = item `k`'s sum, and
    /// `out[n]` = how many items it saw (`match`, `if let`, `take`, `is_some`).
    #[kernel(warps = 2)]
    pub async fn ahead(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; N], 4>();
        join!(
            on_warps(0..1, produce_n(n, tx)),
            on_warps(1..2, sum_ahead(rx, out)),
        )
        .await;
    }

    async fn produce_n(n: u32, mut tx: Sender<[u32; N], 4>) {
        for i in 0..n {
            match tx.reserve().await {
                Some(mut slot) => {
                    slot.par_iter_mut()
                        .enumerate()
                        .for_each(|(j, v)| *v = i + 1 + j as u32);
                    slot.send();
                }
                None => return,
            }
        }
    }

    async fn sum_ahead(rx: Receiver<[u32; N], 4>, out: &mut [u32]) {
        let mut next = rx.recv().await;
        let mut k = 0usize;
        while next.is_some() {
            if let Some(slot) = next.take() {
                let mut sum = 0u32;
                for v in slot.iter() {
                    sum += *v;
                }
                out[k] = sum;
            }
            k += 1;
            next = rx.recv().await;
        }
        out[out.len() - 1] = k as u32;
    }

    /// Slices of slots: `out[k]` = the sum of item `k`'s elements `2..5` (through a slice of
    /// the received slot), plus its length; the producer writes items through slices of the
    /// reserved slot and single elements.
    #[kernel(warps = 2)]
    pub async fn sliced(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; N], 2>();
        join!(
            on_warps(0..1, produce_sliced(n, tx)),
            on_warps(1..2, sum_slices(rx, out)),
        )
        .await;
    }

    async fn produce_sliced(n: u32, mut tx: Sender<[u32; N], 2>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            let (low, high) = slot.split_at_mut(4);
            low.par_iter_mut()
                .enumerate()
                .for_each(|(j, v)| *v = i + 1 + j as u32);
            high.par_iter_mut()
                .enumerate()
                .for_each(|(j, v)| *v = i + 5 + j as u32);
            slot[N - 1] = i + N as u32;
            slot.send();
        }
    }

    async fn sum_slices(rx: Receiver<[u32; N], 2>, out: &mut [u32]) {
        let mut k = 0usize;
        while let Some(slot) = rx.recv().await {
            let part = &slot[2..5];
            let sum: u32 = part.par_iter().sum();
            out[k] = sum + part.len() as u32 + slot.len() as u32;
            k += 1;
        }
    }

    /// Tiles counted with `enumerate`: `y[t]` = `x[t] * (k + 1) + tile.len()` for the block's
    /// `k`-th tile; nested zip patterns, and async helpers awaited in parallel loops.
    #[kernel(warps = 2)]
    pub async fn tiles(x: &[u32], w: &[u32], y: &mut [u32]) {
        join!(on_warps(0..2, per_tile(x, w, y))).await;
    }

    pub const TILE: usize = 96;

    async fn per_tile(x: &[u32], w: &[u32], y: &mut [u32]) {
        for (k, tile) in block_tiles(x.len(), TILE).enumerate() {
            let len = tile.len() as u32;
            let k1 = k as u32 + 1;
            y[tile.start..tile.end]
                .par_iter_mut()
                .zip(x[tile.start..tile.end].par_iter())
                .zip(w[tile.start..tile.end].par_iter())
                .for_each(|((o, v), m)| *o = scaled(*v, k1).await + len * *m);
        }
    }

    async fn scaled(v: u32, k: u32) -> u32 {
        times(v, k).await
    }

    async fn times(v: u32, k: u32) -> u32 {
        v * k
    }

    /// Async helpers in a lane loop: `y[i] = 2 x[i] + the warp's sum`.
    #[kernel(warps = 1)]
    pub async fn lanes(x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, lane_role(x, y))).await;
    }

    async fn lane_role(x: &[u32], y: &mut [u32]) {
        x.par_iter()
            .zip(y.par_iter_mut())
            .for_each_lane(async |lane, (v, o)| {
                let s = lane.sum(*v).await;
                *o = times(*v, 2).await + s;
            });
    }

    /// Element writes from role code: `out[0] = 1 + 2 + .. + n`, `out[1] += n` twice.
    #[kernel(warps = 4)]
    pub async fn writes(n: u32, out: &mut [u32]) {
        join!(on_warps(0..4, write_role(n, out))).await;
    }

    async fn write_role(n: u32, out: &mut [u32]) {
        let mut s = 0u32;
        for i in 1..=n {
            s += i;
        }
        out[0] = s;
        out[1] = 0;
        out[1] += n;
        out[1] += n;
        out[2] = out[1] + out[0];
    }
}

#[gpu_async::gpu_async]
pub mod two_receivers {
    use gpu_async::device::*;

    /// Items `1, 2, ..` broadcast to one role through two receivers of the channel, one a step
    /// behind the other: `out[k]` = item `k` + item `k + 1`, each item received once per
    /// receiver.
    #[kernel(warps = 2)]
    pub async fn neighbours(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 3>();
        let behind = rx.subscribe();
        join!(
            on_warps(0..1, produce(n, tx)),
            on_warps(1..2, add_pairs(rx, behind, out)),
        )
        .await;
    }

    async fn produce(n: u32, mut tx: Sender<[u32; 1], 3>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot[0] = i + 1;
            slot.send();
        }
    }

    async fn add_pairs(
        ahead: Receiver<[u32; 1], 3>,
        behind: Receiver<[u32; 1], 3>,
        out: &mut [u32],
    ) {
        if ahead.recv().await.is_none() {
            return;
        }
        let mut k = 0usize;
        while let Some(next) = ahead.recv().await {
            let Some(cur) = behind.recv().await else {
                return;
            };
            out[k] = cur[0] + next[0];
            k += 1;
        }
    }
}
