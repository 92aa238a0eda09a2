// A one-shot value that no role receives would be sent into nothing.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 1)]
    pub async fn lonely(y: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(on_warps(0..1, send(tx, y))).await;
    }

    async fn send(tx: OneshotSender<u32>, y: &mut [u32]) {
        tx.send(7);
        y.par_iter_mut().for_each(|o| *o = 1);
    }
}

fn main() {}
