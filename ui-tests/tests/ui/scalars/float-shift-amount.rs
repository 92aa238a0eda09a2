// A shift amount is an integer, also in a compound assignment.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32], n: u32) {
        join!(on_warps(0..1, work(y, n))).await;
    }

    async fn work(y: &mut [u32], n: u32) {
        let mut v = n;
        v <<= 1.5;
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
