// A parallel loop over a slice that a `match` chooses: choose the range in the arms and slice
// after the `match`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn scale(mode: u32, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(mode, x, y))).await;
    }

    async fn work(mode: u32, x: &[f32], y: &mut [f32]) {
        y.par_iter_mut()
            .zip(match mode { 0 => x, _ => &x[1..x.len()] }.par_iter())
            .enumerate()
            .for_each(|(i, (o, v))| *o = *v * 2.0 + i as f32);
    }
}

fn main() {}
