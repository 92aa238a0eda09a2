// Shared arrays are made in the kernel body, once per block, and passed to the roles.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        join!(on_warps(0..1, write(y))).await;
    }

    async fn write(y: &mut [f32]) {
        let mut table = shared_array::<f32, 64>();
        table.par_iter_mut().for_each(|t| *t = 1.0);
        y.par_iter_mut().zip(table.par_iter()).for_each(|(o, t)| *o = *t);
    }
}

fn main() {}
