// There is no `Result` on the device: `?` is rejected.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, role(x, y))).await;
    }

    async fn role(x: &[f32], y: &mut [f32]) {
        let first = x.first()?;
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }
}

fn main() {}
