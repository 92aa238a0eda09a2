// The fixed `split-at-mut-half-given-to-two-roles`: each role gets its own half of
// `y.split_at_mut(mid)`.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn halves(mid: usize, y: &mut [f32]) {
        let (lo, hi) = y.split_at_mut(mid);
        join!(on_warps(0..1, fill(1.0, lo)), on_warps(1..2, fill(2.0, hi))).await;
    }

    async fn fill(v: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {
    let dev = Device::simulator();
    let mut y = dev.alloc::<f32>(1000).unwrap();
    gpu_async::block_on(kernels::halves::launch(&dev, Grid::blocks(1), (300, &mut y))).unwrap();
    let want: Vec<f32> = (0..1000).map(|i| if i < 300 { 1.0 } else { 2.0 }).collect();
    assert_eq!(y.download().unwrap(), want);
}
