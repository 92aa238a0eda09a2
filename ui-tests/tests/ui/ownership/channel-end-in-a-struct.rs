// A struct of a #[gpu_async] module holds scalars and arrays of them: a channel end is not one
// (each end moves into one role on its own).
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    pub struct Ends {
        tx: Sender<[f32; 256], 2>,
    }

    #[kernel(warps = 1)]
    pub async fn none(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {}
