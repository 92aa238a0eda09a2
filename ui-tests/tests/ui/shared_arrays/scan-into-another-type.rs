// A scan writes its results as the items' type.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn sums(x: &[u32], y: &mut [u64]) {
        join!(on_warps(0..1, scan(x, y))).await;
    }

    async fn scan(x: &[u32], y: &mut [u64]) {
        x.par_iter().exclusive_sum(y.par_iter_mut(), 0);
    }
}

fn main() {}
