// A 2D shared array is iterated by index, not with `par_iter_mut`.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        let mut tile = shared_array_2d::<f32, 32, 32>();
        join!(on_warps(0..1, write(&mut tile))).await;
    }

    async fn write(tile: &mut SharedArray2d<f32, 32, 32>) {
        tile.par_iter_mut().for_each(|row| *row = [0.0; 32]);
    }
}

fn main() {}
