// The branches of a join! in a role of several warps run on each warp's own schedule: a
// role-code atomic, which the role's first thread runs for all of them between role barriers,
// cannot be inside one.
use gpu_async::gpu_async;

#[gpu_async]
mod kernels {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[kernel(warps = 3)]
    pub async fn pair(x: &[u32], tickets: &[AtomicU32], out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 64], 2>();
        join!(on_warps(0..1, fill(x, tx)), on_warps(1..3, take(rx, tickets, out))).await;
    }

    async fn fill(x: &[u32], mut tx: Sender<[u32; 64], 2>) {
        for i in 0..x.len() / 64 {
            let Some(mut slot) = tx.reserve().await else { return };
            slot.par_iter_mut().zip(x[i * 64..i * 64 + 64].par_iter()).for_each(|(s, v)| *s = *v);
            slot.send();
        }
    }

    async fn take(rx: Receiver<[u32; 64], 2>, tickets: &[AtomicU32], out: &mut [u32]) {
        join!(ticket(tickets), drain(rx)).await;
        out[0..1].par_iter_mut().for_each(|o| *o = 1);
    }

    async fn ticket(tickets: &[AtomicU32]) {
        tickets[0].fetch_add(1, Ordering::Relaxed);
    }

    async fn drain(mut rx: Receiver<[u32; 64], 2>) {
        while let Some(slot) = rx.recv().await {
            drop(slot);
        }
    }
}

fn main() {}
