// A float atomic has no bitwise operations.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;
    use std::sync::atomic::Ordering;

    #[kernel(warps = 1)]
    pub async fn mask(x: &[f32], acc: &[AtomicF32]) {
        join!(on_warps(0..1, update(x, acc))).await;
    }

    async fn update(x: &[f32], acc: &[AtomicF32]) {
        x.par_iter().for_each(|v| {
            acc[0].fetch_and(*v, Ordering::Relaxed);
        });
    }
}

fn main() {}
