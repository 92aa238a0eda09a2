// `+=` and the other compound assignments work on numbers, not on whole arrays.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [f32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [f32]) {
        let mut a = [1.0f32; 4];
        let b = [2.0f32; 4];
        a += b;
        y.par_iter_mut().for_each(|o| *o = a[0]);
    }
}

fn main() {}
