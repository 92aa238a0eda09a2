// A warp count too large for any integer type gets the same message as any count past 32.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 99999999999999999999)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
