// A struct's array field has at least one element.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[derive(Clone, Copy)]
    struct Pair {
        a: f32,
        b: [f32; 0],
    }

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [f32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [f32]) {
        let p = Pair { a: 1.0, b: [] };
        y.par_iter_mut().for_each(|o| *o = p.a);
    }
}

fn main() {}
