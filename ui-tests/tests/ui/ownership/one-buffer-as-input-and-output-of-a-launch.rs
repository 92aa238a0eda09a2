// One buffer as a launch's input and its output: the launch would read what it writes.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn copy(x: &[f32], y: &mut [f32]) {
        join!(on_warps(0..1, each(x, y))).await;
    }

    async fn each(x: &[f32], y: &mut [f32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| *o = *v);
    }
}

fn main() -> Result<(), gpu_async::Error> {
    let dev = Device::simulator();
    let mut y = dev.alloc::<f32>(1024)?;
    gpu_async::block_on(kernels::copy::launch(&dev, Grid::blocks(1), (&y, &mut y)))?;
    Ok(())
}
