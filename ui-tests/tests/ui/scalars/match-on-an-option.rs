// A checked result is read with `if let`, not `match` (not in the language yet).
use gpu_async::gpu_async;

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

fn main() {}
