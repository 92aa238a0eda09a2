// A role gets all of `y` while another gets a part of it: the part borrows `y` mutably while the other role holds it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn parts(mid: usize, y: &mut [f32]) {
        let (lo, _hi) = y.split_at_mut(mid);
        join!(on_warps(0..1, fill(1.0, lo)), on_warps(1..2, fill(2.0, y))).await;
    }

    async fn fill(v: f32, y: &mut [f32]) {
        y.par_iter_mut().for_each(|o| *o = v);
    }
}

fn main() {}
