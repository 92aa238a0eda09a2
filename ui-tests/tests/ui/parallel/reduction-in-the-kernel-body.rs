// A reduction combines the parts of a role's threads, so it is role code: the kernel body runs
// on every thread before the roles start, and only creates channels, scalars and slice parts.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn total_first(x: &[f32], y: &mut [f32]) {
        let total = x.par_iter().sum();
        join!(on_warps(0..2, scale(x, y, total))).await;
    }

    async fn scale(x: &[f32], y: &mut [f32], total: f32) {
        y.par_iter_mut()
            .zip(x.par_iter())
            .for_each(|(o, v)| *o = *v / total);
    }
}

fn main() {}
