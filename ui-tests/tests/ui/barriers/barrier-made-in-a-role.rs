// A barrier is made in the kernel body, where the compiler sees which roles take it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn alone(y: &mut [u32]) {
        join!(on_warps(0..1, role(y))).await;
    }

    async fn role(y: &mut [u32]) {
        let sync = barrier();
        sync.wait().await;
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
