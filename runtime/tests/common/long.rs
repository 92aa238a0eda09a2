//! Kernels that run as long as they are told to, for the tests of what a launch does while its
//! kernel runs: cancellation, drops, progress, the watchdog, executors, streams and events.

use gpu_async::gpu_async;

#[gpu_async]
pub mod long {
    use gpu_async::device::*;

    /// Each block steps a linear congruential generator `rounds` times from 1 (a loop that does
    /// not await), then writes the value into every element of `out`.
    #[kernel(warps = 1)]
    pub async fn count(rounds: u64, out: &mut [u32]) {
        join!(on_warps(0..1, counter(rounds, out))).await;
    }

    async fn counter(rounds: u64, out: &mut [u32]) {
        let mut x: u32 = 1;
        let mut i: u64 = 0;
        while i < rounds {
            x = x * 1664525 + 1013904223;
            i += 1;
        }
        out.par_iter_mut().for_each(|o| *o = x);
    }

    /// `out[i] = 2 * x[i] + 1`.
    #[kernel(warps = 1)]
    pub async fn affine(x: &[u32], out: &mut [u32]) {
        join!(on_warps(0..1, apply(x, out))).await;
    }

    async fn apply(x: &[u32], out: &mut [u32]) {
        out.par_iter_mut()
            .zip(x.par_iter())
            .for_each(|(o, v)| *o = 2 * *v + 1);
    }

    /// `spinner` waits for `stop[0]` to become non-zero without awaiting (nothing makes it so)
    /// before it sends; `waiter` waits for the item.
    #[kernel(warps = 2)]
    pub async fn spin(stop: &[u32], out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 32], 1>();
        join!(
            on_warps(0..1, waiter(rx, out)),
            on_warps(1..2, spinner(stop, tx)),
        )
        .await;
    }

    async fn waiter(mut rx: Receiver<[u32; 32], 1>, out: &mut [u32]) {
        while let Some(slot) = rx.recv().await {
            out.par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o = *v);
        }
    }

    async fn spinner(stop: &[u32], mut tx: Sender<[u32; 32], 1>) {
        let mut seen = stop[0];
        while seen == 0 {
            seen = stop[0];
        }
        let mut slot = tx.reserve().await;
        slot.par_iter_mut().for_each(|v| *v = 1);
        slot.send();
    }
}

/// What [`long::count`] writes after `rounds` steps.
pub fn count_value(rounds: u64) -> u32 {
    let mut x = 1u32;
    for _ in 0..rounds {
        x = x.wrapping_mul(1664525).wrapping_add(1013904223);
    }
    x
}
