// A warp range past the 32 warps a block can have: raising `warps` would not help.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 4)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..100000, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
