// A local array is a thread's value, of at most 1024 elements: larger data goes in a slice.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn k(y: &mut [f32], n: u32) {
        join!(on_warps(0..1, work(y, n))).await;
    }

    async fn work(y: &mut [f32], n: u32) {
        let mut v = [0.0f32; 100000];
        v[n as usize] = 1.0;
        let t = v[3];
        y.par_iter_mut().for_each(|o| *o = t);
    }
}

fn main() {}
