// The `for_each` closure takes the item.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().for_each(|| 0.0);
    }
}

fn main() {}
