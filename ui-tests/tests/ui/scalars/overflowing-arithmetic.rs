// `overflowing_*` returns a tuple with a flag, which the kernel language does not have.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn adds(y: &mut [u32]) {
        join!(on_warps(0..1, add(y))).await;
    }

    async fn add(y: &mut [u32]) {
        y.par_iter_mut().for_each(|v| *v = v.overflowing_add(1).0);
    }
}

fn main() {}
