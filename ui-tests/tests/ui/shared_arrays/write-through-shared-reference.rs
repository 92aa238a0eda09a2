// A role that takes `&SharedArray` reads it; writing it takes `&mut`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        let table = shared_array::<f32, 64>();
        join!(on_warps(0..1, write(&table))).await;
    }

    async fn write(table: &SharedArray<f32, 64>) {
        (0..64).into_par_iter().for_each(|i| {
            table[i] = 1.0;
        });
    }
}

fn main() {}
