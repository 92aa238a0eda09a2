// A parallel loop writes a slice by index; two iterations may write the same element.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn spread(x: &[u32], y: &mut [u32]) {
        join!(on_warps(0..1, scatter(x, y))).await;
    }

    async fn scatter(x: &[u32], y: &mut [u32]) {
        x.par_iter().for_each(|v| {
            y[*v as usize] = 1;
        });
    }
}

fn main() {}
