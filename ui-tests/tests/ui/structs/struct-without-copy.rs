// Kernel values are copied (they are registers on the GPU): a struct derives Clone and Copy.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    pub struct Scale {
        pub factor: f32,
    }

    #[kernel(warps = 1)]
    pub async fn scales(s: Scale, y: &mut [f32]) {
        join!(on_warps(0..1, apply(s, y))).await;
    }

    async fn apply(s: Scale, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o *= s.factor);
    }
}

fn main() {}
