// A 1-tuple's type is written `(u32,)`, and the message says so.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        let t: (u32,) = (1u32, 2u32);
        y.par_iter_mut().for_each(|o| *o = t.0);
    }
}

fn main() {}
