// An SM holds 64 warps: 8 blocks of 9 warps cannot be resident together.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 9, min_blocks_per_sm = 8)]
    pub async fn scale(a: f32, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..9, times(a, x, y))).await;
    }

    async fn times(a: f32, x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, i)| *o = a * i);
    }
}

fn main() {}
