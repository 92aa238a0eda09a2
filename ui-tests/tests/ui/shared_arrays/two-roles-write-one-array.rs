// Two roles take one shared array to write it: they would race, and Rust's borrows say so.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn both() {
        let mut table = shared_array::<f32, 64>();
        join!(
            on_warps(0..1, fill(&mut table)),
            on_warps(1..2, fill(&mut table)),
        )
        .await;
    }

    async fn fill(table: &mut SharedArray<f32, 64>) {
        table.par_iter_mut().for_each(|t| *t = 1.0);
    }
}

fn main() {}
