// Helpers are inlined: one that runs a `join!`, called in a branch of a `join!`, would nest them.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        join!(both(), async {}).await;
        y.par_iter_mut().for_each(|o| *o = 1);
    }

    async fn both() {
        join!(async {}, async {}).await
    }
}

fn main() {}
