// A local array of 2^30 elements: an error on its length, before anything is allocated.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f32], y: &mut [f32]) {
        let v = [0.0f32; 1 << 30];
        y.par_iter_mut().for_each(|o| *o = v[3]);
    }
}

fn main() {}
