// `chunks_mut` hands parts of a slice to roles in the kernel body; role code has no roles to
// hand them to, and iterates over the slice's elements in parallel instead.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn per_chunk(y: &mut [f32]) {
        join!(on_warps(0..1, fill(y))).await;
    }

    async fn fill(y: &mut [f32]) {
        let mut parts = y.chunks_mut(256);
        let first = parts.next().unwrap();
        first.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {}
