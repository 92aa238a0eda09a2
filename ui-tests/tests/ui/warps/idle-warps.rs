// Warps no role runs on are almost always a mistake in the warp count.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 4)]
    pub async fn fills(y: &mut [f32]) {
        join!(on_warps(0..2, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }
}

fn main() {}
