// The branches of a join! in a role of several warps run on each warp's own schedule:
// a reduction over the role's threads cannot be inside one.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;

    #[kernel(warps = 3)]
    pub async fn pair(x: &[u32], out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 64], 2>();
        let (tx2, rx2) = channel::<[u32; 64], 2>();
        join!(on_warps(0..1, fill(x, tx, tx2)), on_warps(1..3, take(rx, rx2, out))).await;
    }

    async fn fill(x: &[u32], mut tx: Sender<[u32; 64], 2>, tx2: Sender<[u32; 64], 2>) {
        for i in 0..x.len() / 64 {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.par_iter_mut().zip(x[i * 64..i * 64 + 64].par_iter()).for_each(|(s, v)| *s = *v);
            slot.send();
        }
        drop(tx2);
    }

    async fn take(rx: Receiver<[u32; 64], 2>, rx2: Receiver<[u32; 64], 2>, out: &mut [u32]) {
        let (a, b) = join!(total(rx), total(rx2)).await;
        out[0..1].par_iter_mut().for_each(|o| *o = a + b);
    }

    async fn total(mut rx: Receiver<[u32; 64], 2>) -> u32 {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc += slot.par_iter().sum();
        }
        acc
    }
}

fn main() {}
