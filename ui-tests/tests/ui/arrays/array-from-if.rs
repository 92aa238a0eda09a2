// An `if` that yields a whole array: declare it first and assign it in each branch.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn picks(flag: bool, y: &mut [f32]) {
        join!(on_warps(0..1, pick(flag, y))).await;
    }

    async fn pick(flag: bool, y: &mut [f32]) {
        let w = if flag { [1.0f32; 4] } else { [2.0f32; 4] };
        y.par_iter_mut().for_each(|o| *o = w[0]);
    }
}

fn main() {}
