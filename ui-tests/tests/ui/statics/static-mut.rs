// Every thread of every block would share a `static mut`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    static mut COUNTER: u32 = 0;

    #[kernel(warps = 1)]
    pub async fn counts(y: &mut [u32]) {
        join!(on_warps(0..1, count(y))).await;
    }

    async fn count(y: &mut [u32]) {
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
