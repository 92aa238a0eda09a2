// A scalar kernel parameter takes exactly its type at launch.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(value: f32, y: &mut [f32]) {
        join!(on_warps(0..1, write(value, y))).await;
    }

    async fn write(value: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v = value);
    }
}

fn main() -> gpu_async::Result<()> {
    let dev = Device::simulator();
    let mut y = dev.alloc::<f32>(16)?;
    gpu_async::block_on(kernels::fill::launch(&dev, Grid::blocks(1), (1u32, &mut y)))
}
