// A shared array larger than the shared memory of a block is an error on its length, before
// anything is made for it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        let mut table = shared_array::<f32, 4_000_000_000>();
        join!(on_warps(0..1, write(y, &mut table))).await;
    }

    async fn write(y: &mut [f32], table: &mut SharedArray<f32, 64>) {
        table.par_iter_mut().for_each(|t| *t = 1.0);
        y.par_iter_mut().zip(table.par_iter()).for_each(|(o, t)| *o = *t);
    }
}

fn main() {}
