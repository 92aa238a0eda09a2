// A loop that writes a shared array by index reads it: another iteration may be writing the
// element read.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn shift() {
        let mut table = shared_array::<f32, 64>();
        join!(on_warps(0..1, rotate(&mut table))).await;
    }

    async fn rotate(table: &mut SharedArray<f32, 64>) {
        (0..64).into_par_iter().for_each(|i| {
            table[i] = table[(i + 1) % 64] + 1.0;
        });
    }
}

fn main() {}
