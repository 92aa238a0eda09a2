// An element written from role code is stored by the role's first thread: a shared value another
// role writes meanwhile (`cell.get()`) may differ between the role's threads.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn racy(out: &mut [u32]) {
        let count = shared::<u32>();
        join!(
            on_warps(0..1, bump(&count)),
            on_warps(1..3, report(&count, out)),
        )
        .await;
    }

    async fn bump(count: &Shared<u32>) {
        count.set(1);
    }

    async fn report(count: &Shared<u32>, out: &mut [u32]) {
        out[0] = count.get();
    }
}

fn main() {}
