// `%` on floats is the exact `fmod`, between two values of one type.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn wraps(y: &mut [f32]) {
        join!(on_warps(0..1, wrap(y))).await;
    }

    async fn wrap(y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v = *v % 6.25f64);
    }
}

fn main() {}
