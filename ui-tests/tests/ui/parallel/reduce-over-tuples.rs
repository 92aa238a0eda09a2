// A reduction combines scalars: zipped items are mapped to one first.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn dot(a: &[f32], b: &[f32], out: &mut [f32]) {
        join!(on_warps(0..1, multiply(a, b, out))).await;
    }

    async fn multiply(a: &[f32], b: &[f32], out: &mut [f32]) {
        let d = a.par_iter().zip(b.par_iter()).sum();
        out[0..1].par_iter_mut().for_each(|o| *o = d);
    }
}

fn main() {}
