// Enum variants carry no data in the kernel language.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[derive(Clone, Copy)]
    pub enum Shape {
        Point,
        Circle(f32),
    }

    #[kernel(warps = 1)]
    pub async fn fills(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = 1.0);
    }
}

fn main() {}
