// A shift by a negative amount: Rust rejects `x << -3` as an overflow.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| *o = *o << -3);
    }
}

fn main() {}
