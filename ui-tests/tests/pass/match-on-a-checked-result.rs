// `match` on the `Option` of a checked method: a `Some(x)` arm and a `None` arm.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn sums(x: &[i32], y: &mut [i32]) {
        join!(on_warps(0..1, role(x, y))).await;
    }

    async fn role(x: &[i32], y: &mut [i32]) {
        y.par_iter_mut().zip(x.par_iter()).for_each(|(o, v)| {
            *o = match v.checked_add(1) {
                Some(s) => s,
                None => 0,
            };
        });
    }
}

fn main() {
    let dev = Device::simulator();
    let xs = vec![1, i32::MAX, -5, i32::MAX - 1];
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<i32>(xs.len()).unwrap();
    gpu_async::block_on(kernels::sums::launch(&dev, Grid::blocks(1), (&x, &mut y))).unwrap();
    assert_eq!(y.download().unwrap(), vec![2, 0, -4, i32::MAX]);
}
