// Role code runs on every thread of the role: a shared array is written in a parallel loop.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn first() {
        let mut table = shared_array::<f32, 64>();
        join!(on_warps(0..1, set_first(&mut table))).await;
    }

    async fn set_first(table: &mut SharedArray<f32, 64>) {
        table[0] = 1.0;
    }
}

fn main() {}
