// A table is checked against the 64 KiB of constant memory before it is made.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    static T: [f32; 0xffffffff] = [0.0; 0xffffffff];

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = T[3]);
    }
}

fn main() {}
