// One role reads `y` while another writes it: rustc refuses the shared borrow next to the `&mut` one.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn races(y: &mut [f32], total: &mut [f32]) {
        join!(on_warps(0..1, sum(y, total)), on_warps(1..2, scale(y))).await;
    }

    async fn sum(y: &[f32], total: &mut [f32]) {
        let s: f32 = y.par_iter().sum();
        total[0] = s;
    }

    async fn scale(y: &mut [f32]) {
        y.par_iter_mut().for_each(|v| *v *= 2.0);
    }
}

fn main() {}
