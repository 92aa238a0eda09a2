// A shared value is written by role code: every iteration of a parallel loop would write it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn lasts(x: &[f32], y: &mut [f32]) {
        let last = shared::<f32>();
        join!(on_warps(0..1, keep(x, y, &last))).await;
    }

    async fn keep(x: &[f32], y: &mut [f32], last: &Shared<f32>) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            last.set(*v);
            *o = *v;
        });
    }
}

fn main() {}
