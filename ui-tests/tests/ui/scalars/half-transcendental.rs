// `exp`, `ln`, `sin`, ... are computed for `f32` and `f64`; a half type says how to use them.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn grows(y: &mut [f16]) {
        join!(on_warps(0..1, grow(y))).await;
    }

    async fn grow(y: &mut [f16]) {
        y.par_iter_mut().for_each(|v| *v = v.exp());
    }
}

fn main() {}
