// There is no console on the device: values go to an output buffer.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn checks(n: u32, y: &mut [u32]) {
        join!(on_warps(0..1, role(n, y))).await;
    }

    async fn role(n: u32, y: &mut [u32]) {
        println!("n = {}", n);
        y.par_iter_mut().for_each(|o| *o = n);
    }
}

fn main() {}
