// Shared arrays hold scalars and atomics; an array of structs is not in the language yet.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[derive(Clone, Copy)]
    pub struct Point {
        pub x: f32,
        pub y: f32,
    }

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        let mut points = shared_array::<Point, 64>();
        join!(on_warps(0..1, write(&mut points))).await;
    }

    async fn write(points: &mut SharedArray<Point, 64>) {}
}

fn main() {}
