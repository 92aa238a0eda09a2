// `get_unchecked` skips the bounds check: it is `unsafe`, as in Rust.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn halves(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, half(x, y))).await;
    }

    async fn half(x: &[f32], y: &mut [f32]) {
        let n = x.len() / 2;
        y.par_iter_mut()
            .zip(x.get_unchecked(0..n).par_iter())
            .for_each(|(o, v)| *o = *v);
    }
}

fn main() {}
