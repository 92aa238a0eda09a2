// `as` converts scalars; a slice's elements are scalars, never tuples or arrays.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[u32], y: &mut [u32]) {
        let pairs = x as &[(u32, u32)];
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
