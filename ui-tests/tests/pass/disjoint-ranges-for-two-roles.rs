// The fixed `overlapping-ranges-given-to-two-roles`: `&mut y[..mid]` and `&mut y[mid..]` are
// disjoint, so each role gets its part (the kernel splits `y` at `mid`).
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn halves(mid: usize, y: &mut [f32]) {
        join!(
            on_warps(0..1, fill(1.0, &mut y[..mid])),
            on_warps(1..2, fill(2.0, &mut y[mid..])),
        )
        .await;
    }

    async fn fill(v: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {
    let dev = Device::simulator();
    let mut y = dev.alloc::<f32>(1000).unwrap();
    gpu_async::block_on(kernels::halves::launch(&dev, Grid::blocks(1), (700, &mut y))).unwrap();
    let want: Vec<f32> = (0..1000).map(|i| if i < 700 { 1.0 } else { 2.0 }).collect();
    assert_eq!(y.download().unwrap(), want);
}
