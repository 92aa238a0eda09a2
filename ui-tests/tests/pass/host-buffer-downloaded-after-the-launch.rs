// The fixed `host-buffer-downloaded-while-a-launch-writes-it`: await the launch (which ends its
// borrow of `y`), then read `y`.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn fill(y: &mut [f32]) {
        join!(on_warps(0..1, ones(y))).await;
    }

    async fn ones(y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() -> Result<(), gpu_async::Error> {
    let dev = Device::simulator();
    let mut y = dev.alloc::<f32>(1024)?;
    let launch = kernels::fill::launch(&dev, Grid::blocks(1), (&mut y,));
    gpu_async::block_on(launch)?;
    assert_eq!(y.download()?, vec![1.0; 1024]);
    Ok(())
}
