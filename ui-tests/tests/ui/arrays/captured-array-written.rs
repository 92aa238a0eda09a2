// A parallel body writing an array it captured from role code: each thread has its own copy.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fills(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        let mut scratch = [0.0f32; 4];
        y.par_iter_mut().for_each(|o| {
            scratch[0] = *o;
            *o = scratch[1];
        });
    }
}

fn main() {}
