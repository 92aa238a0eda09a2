//! Kernels for the end of a channel's stream: a close at every ring position of the first two
//! laps, and a broadcast's receivers seeing the same end.

#[gpu_async::gpu_async]
pub mod ends {
    use gpu_async::device::*;

    /// The producer sends `n` items (`65536 + i`) into a ring of 3 and closes it; the consumer
    /// sums what it receives until `None`. `out[0]` = the sum.
    #[kernel(warps = 2)]
    pub async fn count_then_close(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 3>();
        join!(
            on_warps(0..1, produce(n, tx)),
            on_warps(1..2, consume(rx, out)),
        )
        .await;
    }

    async fn produce(n: u32, mut tx: Sender<[u32; 1], 3>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = 65536 + i);
            slot.send();
        }
    }

    async fn consume(mut rx: Receiver<[u32; 1], 3>, out: &mut [u32]) {
        let mut sum = 0u32;
        while let Some(slot) = rx.recv().await {
            sum += slot[0];
        }
        // A receiver that has seen the end sees it again.
        while let Some(slot) = rx.recv().await {
            sum += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = sum);
    }

    /// A broadcast of `n` items to two receiving roles, which each sum what they get until the
    /// end. `first[0]`, `second[0]` = their sums.
    #[kernel(warps = 3)]
    pub async fn broadcast_then_close(n: u32, first: &mut [u32], second: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 2>();
        let rx2 = rx.subscribe();
        join!(
            on_warps(0..1, produce_two(n, tx)),
            on_warps(1..2, sum_into(rx, first)),
            on_warps(2..3, sum_into(rx2, second)),
        )
        .await;
    }

    async fn produce_two(n: u32, mut tx: Sender<[u32; 1], 2>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = 3 * i + 1);
            slot.send();
        }
    }

    async fn sum_into(mut rx: Receiver<[u32; 1], 2>, out: &mut [u32]) {
        let mut sum = 0u32;
        while let Some(slot) = rx.recv().await {
            sum += slot[0];
        }
        out[0..1].par_iter_mut().for_each(|o| *o = sum);
    }
}
