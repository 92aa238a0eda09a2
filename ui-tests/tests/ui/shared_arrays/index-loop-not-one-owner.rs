// Two iterations write the same element: the index is not one per iteration.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn halves() {
        let mut bins = shared_array::<u32, 256>();
        join!(on_warps(0..1, fill(&mut bins))).await;
    }

    async fn fill(bins: &mut SharedArray<u32, 256>) {
        (0..256).into_par_iter().for_each(|i| {
            bins[i / 2] = i as u32;
        });
    }
}

fn main() {}
