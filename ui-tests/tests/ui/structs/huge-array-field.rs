// A struct's array field is checked against the size of a kernel value before it is laid out.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[derive(Clone, Copy)]
    struct S {
        a: [f32; 1 << 31],
    }

    #[kernel(warps = 1)]
    pub async fn k(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, work(x, y))).await;
    }

    async fn work(x: &[f32], y: &mut [f32]) {
        let s = S { a: [0.0; 4] };
        y.par_iter_mut().for_each(|o| *o = s.a[0]);
    }
}

fn main() {}
