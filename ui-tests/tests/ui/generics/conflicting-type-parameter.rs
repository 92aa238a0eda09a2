// One type parameter, two argument types.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn mixes(x: &[u32], y: &mut [f32]) {
        join!(on_warps(0..1, mix(x, y))).await;
    }

    fn larger<T: PartialOrd>(a: T, b: T) -> T {
        if a > b { a } else { b }
    }

    async fn mix(x: &[u32], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| *o = larger(*v, 2.5f32));
    }
}

fn main() {}
