// Helpers are inlined into their roles: a helper cannot call itself.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn recursive(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    fn factorial(n: u32) -> u32 {
        if n == 0 {
            1
        } else {
            n * factorial(n - 1)
        }
    }

    async fn fill(y: &mut [f32]) {
        let f = factorial(5) as f32;
        y.par_iter_mut().for_each(|v| *v = f);
    }
}

fn main() {}
