// A loop that writes a shared array through `par_iter_mut` reads it: another iteration may be
// writing the element read. Rust's borrows reject it.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn shift() {
        let mut table = shared_array::<f32, 64>();
        join!(on_warps(0..1, rotate(&mut table))).await;
    }

    async fn rotate(table: &mut SharedArray<f32, 64>) {
        table
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, t)| *t = table[(i + 1) % 64]);
    }
}

fn main() {}
