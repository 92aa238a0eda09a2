// Role code runs on every thread of the role: an atomic there would run once per thread.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[kernel(warps = 1)]
    pub async fn counts(hits: &[AtomicU32]) {
        join!(on_warps(0..1, count(hits))).await;
    }

    async fn count(hits: &[AtomicU32]) {
        hits[0].fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {}
