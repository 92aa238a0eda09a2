// The fixed `one-shot-sender-given-to-two-roles`: one role has the sender, sends once; another
// has the receiver.
use gpu_async::{gpu_async, Device, Grid};

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn once(out: &mut [u32]) {
        let (tx, rx) = oneshot::<u32>();
        join!(on_warps(0..1, give(tx)), on_warps(1..2, take(rx, out))).await;
    }

    async fn give(tx: OneshotSender<u32>) {
        tx.send(7);
    }

    async fn take(rx: OneshotReceiver<u32>, out: &mut [u32]) {
        let v = rx.recv().await;
        out[0] = v;
    }
}

fn main() {
    let dev = Device::simulator();
    let mut out = dev.alloc::<u32>(1).unwrap();
    gpu_async::block_on(kernels::once::launch(&dev, Grid::blocks(1), (&mut out,))).unwrap();
    assert_eq!(out.download().unwrap(), vec![7]);
}
