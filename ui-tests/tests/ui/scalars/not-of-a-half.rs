// `!` is not defined for the half types, as in Rust.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f16], y: &mut [f16]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f16], y: &mut [f16]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| *o = !*v);
    }
}

fn main() {}
