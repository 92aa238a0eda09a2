// select! waits on channel receives, written without .await.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 2)]
    pub async fn pair(x: &[u32], out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 32], 2>();
        let (tx2, rx2) = channel::<[u32; 32], 2>();
        join!(on_warps(0..1, fill(x, tx, tx2)), on_warps(1..2, take(rx, rx2, out))).await;
    }

    async fn fill(x: &[u32], mut tx: Sender<[u32; 32], 2>, tx2: Sender<[u32; 32], 2>) {
        for i in 0..x.len() / 32 {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.par_iter_mut().zip(x[i * 32..i * 32 + 32].par_iter()).for_each(|(s, v)| *s = *v);
            slot.send();
        }
        drop(tx2);
    }

    async fn take(mut rx: Receiver<[u32; 32], 2>, mut rx2: Receiver<[u32; 32], 2>, out: &mut [u32]) {
        let mut k = 0u32;
        loop {
            select! {
                Some(_s) = rx.recv().await => k += 1,
                Some(_s) = rx2.recv() => k += 2,
                else => break,
            }
        }
        out[0..1].par_iter_mut().for_each(|o| *o = k);
    }
}

fn main() {}
