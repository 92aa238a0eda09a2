// A kernel compiles to at most 65536 IR instructions; each `f64` `sin` is several hundred.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(x: &[f64], y: &mut [f64]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f64], y: &mut [f64]) {
        let mut t = x[0];
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        t = t.sin();
        y.par_iter_mut().for_each(|o| *o = t);
    }
}

fn main() {}
