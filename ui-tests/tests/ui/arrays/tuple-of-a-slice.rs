// Tuples hold scalars: a slice goes to a helper as its own parameter.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn pairs(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, pair(x, y))).await;
    }

    async fn pair(x: &[f32], y: &mut [f32]) {
        let both = (x, 1.0f32);
        y.par_iter_mut().for_each(|o| *o = both.1);
    }
}

fn main() {}
