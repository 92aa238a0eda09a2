// Expressions nest at most 64 levels deep in kernels.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f32], y: &mut [f32]) {
        let mut t = 0.0f32;
        if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { if t < 1.0 { t += 1.0; } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } } }
        y.par_iter_mut().for_each(|o| *o = t);
    }
}

fn main() {}
