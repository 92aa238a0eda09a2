// `as` does not convert `half` types in Rust; the kernel language says what to write.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn widens(x: &[f16], y: &mut [f32]) {
        join!(on_warps(0..1, widen(x, y))).await;
    }

    async fn widen(x: &[f16], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| *o = *v as f32);
    }
}

fn main() {}
