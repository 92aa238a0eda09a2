// Closures exist only as the argument of `for_each` and the reductions.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, role(x, y))).await;
    }

    async fn role(x: &[f32], y: &mut [f32]) {
        let double = |v: f32| v * 2.0;
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }
}

fn main() {}
