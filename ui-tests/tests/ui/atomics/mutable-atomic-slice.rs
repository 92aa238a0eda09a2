// Atomics are updated through shared references.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[kernel(warps = 1)]
    pub async fn counts(hits: &mut [AtomicU32]) {
        join!(on_warps(0..1, count(hits))).await;
    }

    async fn count(hits: &mut [AtomicU32]) {
        hits.par_iter().for_each(|h| {
            h.fetch_add(1, Ordering::Relaxed);
        });
    }
}

fn main() {}
