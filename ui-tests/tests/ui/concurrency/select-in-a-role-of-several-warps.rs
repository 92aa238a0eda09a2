// Each warp of a role would choose a select! arm on its own.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 4)]
    pub async fn pair(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 64], 2>();
        let (tx2, rx2) = channel::<[u32; 64], 2>();
        join!(
            on_warps(0..1, fill(n, tx)),
            on_warps(1..2, fill(n, tx2)),
            on_warps(2..4, take(rx, rx2, out)),
        )
        .await;
    }

    async fn fill(n: u32, mut tx: Sender<[u32; 64], 2>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.par_iter_mut().for_each(|v| *v = i);
            slot.send();
        }
    }

    async fn take(mut rx: Receiver<[u32; 64], 2>, mut rx2: Receiver<[u32; 64], 2>, out: &mut [u32]) {
        let mut k = 0u32;
        loop {
            select! {
                Some(_s) = rx.recv() => k += 1,
                Some(_s) = rx2.recv() => k += 2,
                else => break,
            }
        }
        out[0..1].par_iter_mut().for_each(|o| *o = k);
    }
}

fn main() {}
