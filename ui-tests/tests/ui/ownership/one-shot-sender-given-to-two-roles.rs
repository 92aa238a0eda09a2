// A one-shot sender given to two roles: it moves into the first.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn twice(out: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(
            on_warps(0..1, give(tx)),
            on_warps(1..2, give(tx)),
            on_warps(2..3, take(rx, out)),
        )
        .await;
    }

    async fn give(tx: OneshotSender<u32>) {
        tx.send(1);
    }

    async fn take(rx: OneshotReceiver<u32>, out: &mut [u32]) {
        let v = rx.recv().await;
        out[0] = v;
    }
}

fn main() {}
