//! Barriers between roles: a writer role and a two-warp reader role meet twice per round (the
//! value a round's `set` wrote is read after the first wait; the reader has read it before the
//! second), and a kernel whose roles wait a different number of times.

use gpu_async::gpu_async;

#[gpu_async]
pub mod barriers {
    use gpu_async::device::*;

    #[kernel(warps = 4)]
    pub async fn rounds(rounds: u32, out: &mut [u32]) {
        let sync = barrier();
        let cell = shared::<u32>();
        join!(
            on_warps(0..1, writer(rounds, &sync, &cell)),
            on_warps(1..3, reader(rounds, &sync, &cell, out)),
            on_warps(3..4, bystander(rounds, &sync)),
        )
        .await;
    }

    async fn writer(rounds: u32, sync: &Barrier, cell: &Shared<u32>) {
        for r in 0..rounds {
            cell.set(r * 10 + 1);
            sync.wait().await;
            sync.wait().await;
        }
    }

    async fn reader(rounds: u32, sync: &Barrier, cell: &Shared<u32>, out: &mut [u32]) {
        let mut total = 0u32;
        for _ in 0..rounds {
            sync.wait().await;
            total += cell.get();
            sync.wait().await;
        }
        let b = block_index();
        out[b..b + 1].par_iter_mut().for_each(|o| *o = total);
    }

    /// A third role that only meets the others.
    async fn bystander(rounds: u32, sync: &Barrier) {
        for _ in 0..2 * rounds {
            sync.wait().await;
        }
    }

    /// The second role waits once less than the first: a deadlock.
    #[kernel(warps = 2)]
    pub async fn uneven(out: &mut [u32]) {
        let sync = barrier();
        join!(
            on_warps(0..1, twice(&sync)),
            on_warps(1..2, once(&sync, out))
        )
        .await;
    }

    async fn twice(sync: &Barrier) {
        sync.wait().await;
        sync.wait().await;
    }

    async fn once(sync: &Barrier, out: &mut [u32]) {
        sync.wait().await;
        out.par_iter_mut().for_each(|o| *o = 1);
    }
}

/// One-shot values: a reducing role sends its tile's sum to a writing role, once per block; and
/// a sender that never sends.
#[gpu_async]
pub mod oneshots {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn total(x: &[u32], out: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(
            on_warps(0..2, summer(x, tx)),
            on_warps(2..3, writer(rx, out)),
        )
        .await;
    }

    async fn summer(x: &[u32], tx: OneshotSender<u32>) {
        let b = block_index();
        let per = x.len() / block_count();
        let s = x[b * per..b * per + per].par_iter().sum();
        tx.send(s + 1);
    }

    async fn writer(rx: OneshotReceiver<u32>, out: &mut [u32]) {
        let v = rx.recv().await;
        let b = block_index();
        out[b..b + 1].par_iter_mut().for_each(|o| *o = v);
    }

    /// The sender role returns without sending: the receiver waits forever.
    #[kernel(warps = 2)]
    pub async fn never(out: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(on_warps(0..1, silent(tx)), on_warps(1..2, writer(rx, out))).await;
    }

    async fn silent(_tx: OneshotSender<u32>) {}
}

/// A broadcast: one loading role, two receiving roles (one and two warps) that each see every
/// slot; a slot is free once both have released it.
#[gpu_async]
pub mod broadcasts {
    use gpu_async::device::*;

    pub const TILE: usize = 256;

    #[kernel(warps = 4)]
    pub async fn fan_out(x: &[f32], doubled: &mut [f32], squared: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        let rx2 = rx.subscribe();
        join!(
            on_warps(0..1, load(x, tx)),
            on_warps(1..2, double(rx, doubled)),
            on_warps(2..4, square(rx2, squared)),
        )
        .await;
    }

    async fn load(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn double(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * TILE;
            let end = (start + TILE).min(y.len());
            slot.par_iter()
                .zip(y[start..end].par_iter_mut())
                .for_each(|(s, o)| *o = *s * 2.0);
            k += block_count();
        }
    }

    async fn square(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut k = block_index();
        while let Some(slot) = rx.recv().await {
            let start = k * TILE;
            let end = (start + TILE).min(y.len());
            slot.par_iter()
                .zip(y[start..end].par_iter_mut())
                .for_each(|(s, o)| *o = *s * *s);
            k += block_count();
        }
    }
}
