//! Kernels for closing a channel from the receiving side: a consumer that stops after `k` of
//! `n` items (by dropping its receiver, by `close()`, or by returning), for rings of 1, 2, 4 and 8
//! slots, so that the producer is at every point of its ring when it learns of the close, often
//! waiting in `reserve`; and a broadcast whose receivers stop at different items.

macro_rules! stop_early {
    ($name:ident, $depth:literal) => {
        #[gpu_async::gpu_async]
        pub mod $name {
            use gpu_async::device::*;

            /// The producer sends up to `n` items (`i + 1`) until `reserve` answers `None`; the
            /// consumer sums the first `k` and stops. `out[0]` = the consumer's sum, `sent[0]`
            /// = the items the producer sent.
            #[kernel(warps = 2)]
            pub async fn dropped(n: u32, k: u32, sent: &mut [u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 4], $depth>();
                join!(
                    on_warps(0..1, produce(n, tx, sent)),
                    on_warps(1..2, take_then_drop(k, rx, out)),
                )
                .await;
            }

            /// As `dropped`, with an explicit `rx.close()` after `k` items; the consumer then
            /// receives again, which answers `None` (`out[1]` = 1).
            #[kernel(warps = 2)]
            pub async fn closed(n: u32, k: u32, sent: &mut [u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 4], $depth>();
                join!(
                    on_warps(0..1, produce(n, tx, sent)),
                    on_warps(1..2, take_then_close(k, rx, out)),
                )
                .await;
            }

            /// As `dropped`, the consumer leaving its loop with `break` after `k` items and its
            /// receiver dropped at the end of the role; its role has four warps.
            #[kernel(warps = 5)]
            pub async fn broken(n: u32, k: u32, sent: &mut [u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; 4], $depth>();
                join!(
                    on_warps(0..1, produce(n, tx, sent)),
                    on_warps(1..5, take_then_break(k, rx, out)),
                )
                .await;
            }

            async fn produce(n: u32, mut tx: Sender<[u32; 4], $depth>, out: &mut [u32]) {
                let mut sent = 0u32;
                for i in 0..n {
                    let Some(mut slot) = tx.reserve().await else {
                        break;
                    };
                    slot.par_iter_mut().for_each(|v| *v = i + 1);
                    slot.send();
                    sent += 1;
                }
                out[0] = sent;
            }

            async fn take_then_drop(k: u32, rx: Receiver<[u32; 4], $depth>, out: &mut [u32]) {
                let mut sum = 0u32;
                let mut taken = 0u32;
                while taken < k {
                    let Some(slot) = rx.recv().await else {
                        break;
                    };
                    sum += slot[0];
                    taken += 1;
                }
                drop(rx);
                out[0] = sum;
            }

            async fn take_then_close(k: u32, mut rx: Receiver<[u32; 4], $depth>, out: &mut [u32]) {
                let mut sum = 0u32;
                let mut taken = 0u32;
                while taken < k {
                    match rx.recv().await {
                        Some(slot) => sum += slot[0],
                        None => break,
                    }
                    taken += 1;
                }
                rx.close();
                out[0] = sum;
                let after = if let Some(_slot) = rx.recv().await {
                    0u32
                } else {
                    1
                };
                out[1] = after;
            }

            async fn take_then_break(k: u32, rx: Receiver<[u32; 4], $depth>, out: &mut [u32]) {
                let mut sum = 0u32;
                let mut taken = 0u32;
                while let Some(slot) = rx.recv().await {
                    if taken == k {
                        break;
                    }
                    sum += slot[0];
                    taken += 1;
                }
                out[0] = sum;
            }
        }
    };
}

stop_early!(depth1, 1);
stop_early!(depth2, 2);
stop_early!(depth4, 4);
stop_early!(depth8, 8);

#[gpu_async::gpu_async]
pub mod broadcast {
    use gpu_async::device::*;

    /// `n` items (`i + 1`) broadcast to two receivers; the first stops after `k1` items, the
    /// second after `k2`. `first[0]`, `second[0]` = their sums, `sent[0]` = the items sent.
    #[kernel(warps = 3)]
    pub async fn two_stops(
        n: u32,
        k1: u32,
        k2: u32,
        sent: &mut [u32],
        first: &mut [u32],
        second: &mut [u32],
    ) {
        let (tx, rx) = channel::<[u32; 4], 2>();
        let rx2 = rx.subscribe();
        join!(
            on_warps(0..1, produce(n, tx, sent)),
            on_warps(1..2, take(k1, rx, first)),
            on_warps(2..3, take(k2, rx2, second)),
        )
        .await;
    }

    async fn produce(n: u32, mut tx: Sender<[u32; 4], 2>, out: &mut [u32]) {
        let mut sent = 0u32;
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                break;
            };
            slot.par_iter_mut().for_each(|v| *v = i + 1);
            slot.send();
            sent += 1;
        }
        out[0] = sent;
    }

    async fn take(k: u32, rx: Receiver<[u32; 4], 2>, out: &mut [u32]) {
        let mut sum = 0u32;
        let mut taken = 0u32;
        while taken < k {
            let Some(slot) = rx.recv().await else {
                break;
            };
            sum += slot[0];
            taken += 1;
        }
        out[0] = sum;
    }
}
