// Two roles get ranges of `y` that overlap (`..mid + 1` and `mid..`): they are not provably disjoint, so rustc sees two mutable borrows of `y`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn halves(mid: usize, y: &mut [f32]) {
        join!(
            on_warps(0..1, fill(1.0, &mut y[..mid + 1])),
            on_warps(1..2, fill(2.0, &mut y[mid..])),
        )
        .await;
    }

    async fn fill(v: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
