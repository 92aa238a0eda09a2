// A slice parameter of a role or a helper holds scalars, not arrays or other slices.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    fn first(z: &[&[f32]]) -> f32 {
        z[0][0]
    }

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[[f32; 2]], y: &mut [f32]) {
        let v = first(x);
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
