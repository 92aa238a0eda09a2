// A `match` without arms, in an arm of another: Rust needs arms covering every value.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32], n: u32) {
        join!(on_warps(0..1, work(y, n))).await;
    }

    async fn work(y: &mut [u32], n: u32) {
        let v: u32 = match n {
            0 => match n {},
            _ => 1,
        };
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
