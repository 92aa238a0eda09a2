// The iterations of a parallel loop cannot wait: the role waits, before or after the loop.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn meet(y: &mut [u32]) {
        let sync = barrier();
        join!(on_warps(0..1, first(&sync, y)), on_warps(1..2, second(&sync))).await;
    }

    async fn first(sync: &Barrier, y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| {
            sync.wait();
            *o = 1;
        });
    }

    async fn second(sync: &Barrier) {
        sync.wait().await;
    }
}

fn main() {}
