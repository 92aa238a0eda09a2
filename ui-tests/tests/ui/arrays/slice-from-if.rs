// An `if` that yields a slice: choose the range in the branches and slice after the `if`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn picks(flag: bool, x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, pick(flag, x, y))).await;
    }

    async fn pick(flag: bool, x: &[f32], y: &mut [f32]) {
        let first = (if flag { x } else { &x[1..x.len()] })[0];
        y.par_iter_mut().for_each(|o| *o = first);
    }
}

fn main() {}
