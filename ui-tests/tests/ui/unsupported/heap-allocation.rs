// There is no allocator on the device.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn allocates(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        let scratch = Vec::new();
        y.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {}
