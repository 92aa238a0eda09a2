// `exp`, `ln`, `sin`, ... are computed for `f32` only.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn grows(y: &mut [f64]) {
        join!(on_warps(0..1, grow(y))).await;
    }

    async fn grow(y: &mut [f64]) {
        y.par_iter_mut().for_each(|v| *v = v.exp());
    }
}

fn main() {}
