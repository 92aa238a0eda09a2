// The fixed `buffer-read-by-one-role-while-another-writes-it`: one role sums `y`, then scales it,
// in that order; the other role has a buffer of its own.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn in_order(y: &mut [f32], total: &mut [f32], z: &mut [f32]) {
        join!(on_warps(0..1, sum_then_scale(y, total)), on_warps(1..2, ones(z))).await;
    }

    async fn sum_then_scale(y: &mut [f32], total: &mut [f32]) {
        let s: f32 = y.par_iter().sum();
        total[0] = s;
        y.par_iter_mut().for_each(|v| *v *= 2.0);
    }

    async fn ones(z: &mut [f32]) {
        z.par_iter_mut().for_each(|v| *v = 1.0);
    }
}

fn main() {
    let dev = Device::simulator();
    let mut y = dev.upload(&vec![1.0f32; 512]).unwrap();
    let mut total = dev.alloc::<f32>(1).unwrap();
    let mut z = dev.alloc::<f32>(256).unwrap();
    let launch = kernels::in_order::launch(&dev, Grid::blocks(1), (&mut y, &mut total, &mut z));
    gpu_async::block_on(launch).unwrap();
    assert_eq!(total.download().unwrap(), vec![512.0]);
    assert_eq!(y.download().unwrap(), vec![2.0; 512]);
    assert_eq!(z.download().unwrap(), vec![1.0; 256]);
}
