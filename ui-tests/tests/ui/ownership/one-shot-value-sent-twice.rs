// A one-shot value is sent once: `send` takes the sender.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn once(out: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(on_warps(0..1, give(tx)), on_warps(1..2, take(rx, out))).await;
    }

    async fn give(tx: OneshotSender<u32>) {
        tx.send(1);
        tx.send(2);
    }

    async fn take(rx: OneshotReceiver<u32>, out: &mut [u32]) {
        let v = rx.recv().await;
        out[0] = v;
    }
}

fn main() {}
