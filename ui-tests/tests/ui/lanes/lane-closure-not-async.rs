// The lanes of a warp meet at awaits: the closure must be async.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn lanes(x: &[i32], y: &mut [i32]) {
        join!(on_warps(0..1, role(x, y))).await;
    }

    async fn role(x: &[i32], y: &mut [i32]) {
        x.par_iter()
            .zip(y.par_iter_mut())
            .for_each_lane(|lane, (v, o)| {
                *o = *v + lane.id() as i32;
            });
    }
}

fn main() {}
