// `-` on an unsigned integer: Rust rejects it, whether the value is an item of a `u32` slice or the
// result of a helper returning `u32`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    fn largest() -> u32 {
        -1
    }

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| *o = -1);
        let v = largest();
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
