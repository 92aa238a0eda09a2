// A parallel iterator runs where it is made, not chosen by an `if`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(a: &[f32], b: &[f32], y: &mut [f32], first: bool) {
        join!(on_warps(0..1, work(a, b, y, first))).await;
    }

    async fn work(a: &[f32], b: &[f32], y: &mut [f32], first: bool) {
        y.par_iter_mut()
            .zip(if first { a.par_iter() } else { b.par_iter() })
            .for_each(|(o, v)| *o = *v);
    }
}

fn main() {}
