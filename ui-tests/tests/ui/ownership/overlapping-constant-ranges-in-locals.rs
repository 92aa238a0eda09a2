// Two ranges of `y` kept in locals overlap (`0..8` and `4..12`): rustc refuses the second mutable borrow.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn parts(y: &mut [f32]) {
        let first = &mut y[0..8];
        let second = &mut y[4..12];
        join!(on_warps(0..1, fill(1.0, first)), on_warps(1..2, fill(2.0, second))).await;
    }

    async fn fill(v: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
