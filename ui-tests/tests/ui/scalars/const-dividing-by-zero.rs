// A `const` that divides by zero is reported once, at its definition, not at its uses.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    const TILE: usize = 2048 / 0;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [u32]) {
        join!(on_warps(0..1, work(y))).await;
    }

    async fn work(y: &mut [u32]) {
        let tile = [0u32; TILE];
        let half = TILE / 2;
        y.par_iter_mut().for_each(|o| *o = tile[0] + half as u32);
    }
}

fn main() {}
