// The kernel itself is not generic: its launcher has one signature.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fills<T: Copy>(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }
}

fn main() {}
