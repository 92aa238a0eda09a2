//! Concurrency inside one role: `join!` of futures and `select!` between channel receives.

use gpu_async::gpu_async;

#[gpu_async]
pub mod joins {
    use gpu_async::device::*;

    /// One producer warp fills two channels from `x` and `y` (32 elements per item) with a
    /// `join!` of two loops; one consumer warp sums each channel with a `join!` that gives both
    /// totals: `out[0]` = sum of `x`, `out[1]` = sum of `y`.
    #[kernel(warps = 2)]
    pub async fn two_totals(x: &[u32], y: &[u32], out: &mut [u32]) {
        let (tx_a, rx_a) = channel::<[u32; 32], 2>();
        let (tx_b, rx_b) = channel::<[u32; 32], 1>();
        join!(
            on_warps(0..1, produce(x, y, tx_a, tx_b)),
            on_warps(1..2, consume(rx_a, rx_b, out)),
        )
        .await;
    }

    async fn produce(x: &[u32], y: &[u32], tx_a: Sender<[u32; 32], 2>, tx_b: Sender<[u32; 32], 1>) {
        join!(fill_a(x, tx_a), fill_b(y, tx_b)).await;
    }

    async fn fill_a(src: &[u32], mut tx: Sender<[u32; 32], 2>) {
        for i in 0..src.len() / 32 {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut()
                .zip(src[i * 32..i * 32 + 32].par_iter())
                .for_each(|(s, v)| *s = *v);
            slot.send();
        }
    }

    async fn fill_b(src: &[u32], mut tx: Sender<[u32; 32], 1>) {
        for i in 0..src.len() / 32 {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut()
                .zip(src[i * 32..i * 32 + 32].par_iter())
                .for_each(|(s, v)| *s = *v);
            slot.send();
        }
    }

    async fn consume(rx_a: Receiver<[u32; 32], 2>, rx_b: Receiver<[u32; 32], 1>, out: &mut [u32]) {
        let (a, b) = join!(total_a(rx_a), total_b(rx_b)).await;
        out[0..1].par_iter_mut().for_each(|o| *o = a);
        out[1..2].par_iter_mut().for_each(|o| *o = b);
    }

    async fn total_a(mut rx: Receiver<[u32; 32], 2>) -> u32 {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc = acc.wrapping_add(slot.par_iter().sum());
        }
        acc
    }

    async fn total_b(mut rx: Receiver<[u32; 32], 1>) -> u32 {
        let mut acc = 0u32;
        while let Some(slot) = rx.recv().await {
            acc = acc.wrapping_add(slot.par_iter().sum());
        }
        acc
    }

    /// Three independent tasks in one warp, written as async blocks: each counts the items of
    /// its channel and the last writes `n` ten times; the producer sends `n` items on each.
    /// `out` = `[items of a, items of b, 10 n]`.
    #[kernel(warps = 2)]
    pub async fn three_tasks(n: u32, out: &mut [u32]) {
        let (tx_a, rx_a) = channel::<[u32; 1], 2>();
        let (tx_b, rx_b) = channel::<[u32; 1], 2>();
        join!(
            on_warps(0..1, send_both(n, tx_a, tx_b)),
            on_warps(1..2, count_three(n, rx_a, rx_b, out)),
        )
        .await;
    }

    async fn send_both(n: u32, mut tx_a: Sender<[u32; 1], 2>, mut tx_b: Sender<[u32; 1], 2>) {
        for i in 0..n {
            let Some(mut a) = tx_a.reserve().await else {
                return;
            };
            a.par_iter_mut().for_each(|v| *v = i);
            a.send();
            let Some(mut b) = tx_b.reserve().await else {
                return;
            };
            b.par_iter_mut().for_each(|v| *v = i + 1);
            b.send();
        }
    }

    async fn count_three(
        n: u32,
        mut rx_a: Receiver<[u32; 1], 2>,
        mut rx_b: Receiver<[u32; 1], 2>,
        out: &mut [u32],
    ) {
        let (a, b, c) = join!(
            async {
                let mut k = 0u32;
                while let Some(_slot) = rx_a.recv().await {
                    k += 1;
                }
                k
            },
            async {
                let mut k = 0u32;
                while let Some(_slot) = rx_b.recv().await {
                    k += 1;
                }
                k
            },
            async { n * 10 },
        )
        .await;
        out[0..1].par_iter_mut().for_each(|o| *o = a);
        out[1..2].par_iter_mut().for_each(|o| *o = b);
        out[2..3].par_iter_mut().for_each(|o| *o = c);
    }

    /// A deadlock through a join: the consumer's second branch waits for `rx_never` to close
    /// before it drops `tx_back`, and the producer waits for `tx_back` to close before it drops
    /// `tx_never`. The first branch receives its one item and ends; the join cannot.
    #[kernel(warps = 2)]
    pub async fn stuck(out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 1>();
        let (tx_never, rx_never) = channel::<[u32; 1], 1>();
        let (tx_back, rx_back) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, send_one(tx, tx_never, rx_back)),
            on_warps(1..2, wait_both(rx, rx_never, tx_back, out)),
        )
        .await;
    }

    async fn send_one(
        mut tx: Sender<[u32; 1], 1>,
        tx_never: Sender<[u32; 1], 1>,
        mut rx_back: Receiver<[u32; 1], 1>,
    ) {
        let Some(mut slot) = tx.reserve().await else {
            return;
        };
        slot.par_iter_mut().for_each(|v| *v = 7);
        slot.send();
        while let Some(_slot) = rx_back.recv().await {}
        drop(tx_never);
    }

    async fn wait_both(
        mut rx: Receiver<[u32; 1], 1>,
        mut rx_never: Receiver<[u32; 1], 1>,
        tx_back: Sender<[u32; 1], 1>,
        out: &mut [u32],
    ) {
        join!(
            async {
                let slot = rx.recv().await.unwrap();
                let v = slot[0];
                out[0..1].par_iter_mut().for_each(|o| *o = v);
            },
            async {
                while let Some(_slot) = rx_never.recv().await {}
                drop(tx_back);
            },
        )
        .await;
    }
}

#[gpu_async]
pub mod moves {
    use gpu_async::device::*;

    /// An `async move` block owns the sender it mentions: `tx` closes where the first branch
    /// ends (as in Rust), which `relay` waits for before it closes `tx2`, which the second
    /// branch drains. Closing `tx` where `both` ends instead would deadlock. `out[0]` = the sum
    /// of `2 i` for `i < n`.
    #[kernel(warps = 2)]
    pub async fn moved_sender(n: u32, out: &mut [u32]) {
        let (tx, rx) = channel::<[u32; 1], 2>();
        let (tx2, rx2) = channel::<[u32; 1], 2>();
        join!(
            on_warps(0..1, both(n, tx, rx2, out)),
            on_warps(1..2, relay(rx, tx2)),
        )
        .await;
    }

    async fn both(
        n: u32,
        mut tx: Sender<[u32; 1], 2>,
        mut rx2: Receiver<[u32; 1], 2>,
        out: &mut [u32],
    ) {
        let (_sent, total) = join!(
            async move {
                for i in 0..n {
                    let Some(mut slot) = tx.reserve().await else {
                        break;
                    };
                    slot.par_iter_mut().for_each(|v| *v = i);
                    slot.send();
                }
                n
            },
            async {
                let mut t = 0u32;
                while let Some(slot) = rx2.recv().await {
                    t += slot[0];
                }
                t
            },
        )
        .await;
        out[0..1].par_iter_mut().for_each(|o| *o = total);
    }

    async fn relay(mut rx: Receiver<[u32; 1], 2>, mut tx2: Sender<[u32; 1], 2>) {
        while let Some(slot) = rx.recv().await {
            let v = slot[0];
            let Some(mut o) = tx2.reserve().await else {
                return;
            };
            o.par_iter_mut().for_each(|x| *x = v * 2);
            o.send();
        }
    }
}

#[gpu_async]
pub mod selects {
    use gpu_async::device::*;

    /// Two producers send `na` items (1, 2, ..) and `nb` items (1000, 1001, ..); one consumer
    /// takes them with `select!` as they come until both channels close. `out` = `[sum a,
    /// count a, sum b, count b, 1 if each channel's items came in order]`.
    #[kernel(warps = 3)]
    pub async fn merge(na: u32, nb: u32, out: &mut [u32]) {
        let (tx_a, rx_a) = channel::<[u32; 1], 2>();
        let (tx_b, rx_b) = channel::<[u32; 1], 3>();
        join!(
            on_warps(0..1, send_a(na, tx_a)),
            on_warps(1..2, send_b(nb, tx_b)),
            on_warps(2..3, merge_both(rx_a, rx_b, out)),
        )
        .await;
    }

    async fn send_a(n: u32, mut tx: Sender<[u32; 1], 2>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = i + 1);
            slot.send();
        }
    }

    async fn send_b(n: u32, mut tx: Sender<[u32; 1], 3>) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = i + 1000);
            slot.send();
        }
    }

    async fn merge_both(
        mut rx_a: Receiver<[u32; 1], 2>,
        mut rx_b: Receiver<[u32; 1], 3>,
        out: &mut [u32],
    ) {
        let (mut sum_a, mut count_a, mut sum_b, mut count_b) = (0u32, 0u32, 0u32, 0u32);
        let (mut next_a, mut next_b, mut in_order) = (1u32, 1000u32, 1u32);
        loop {
            select! {
                Some(slot) = rx_a.recv() => {
                    let v = slot[0];
                    if v != next_a {
                        in_order = 0;
                    }
                    next_a = v + 1;
                    sum_a = sum_a.wrapping_add(v);
                    count_a += 1;
                }
                Some(slot) = rx_b.recv() => {
                    let v = slot[0];
                    if v != next_b {
                        in_order = 0;
                    }
                    next_b = v + 1;
                    sum_b = sum_b.wrapping_add(v);
                    count_b += 1;
                }
                else => break,
            }
        }
        out[0..1].par_iter_mut().for_each(|o| *o = sum_a);
        out[1..2].par_iter_mut().for_each(|o| *o = count_a);
        out[2..3].par_iter_mut().for_each(|o| *o = sum_b);
        out[3..4].par_iter_mut().for_each(|o| *o = count_b);
        out[4..5].par_iter_mut().for_each(|o| *o = in_order);
    }

    /// `select!` inside a `join!` branch, next to a branch that counts a third channel: the
    /// select's value is which channel the item came from. `out` = `[items from a, items
    /// from b, items of c]`.
    #[kernel(warps = 2)]
    pub async fn select_in_join(n: u32, out: &mut [u32]) {
        let (tx_a, rx_a) = channel::<[u32; 1], 1>();
        let (tx_b, rx_b) = channel::<[u32; 1], 2>();
        let (tx_c, rx_c) = channel::<[u32; 4], 2>();
        join!(
            on_warps(0..1, send_three(n, tx_a, tx_b, tx_c)),
            on_warps(1..2, take_three(rx_a, rx_b, rx_c, out)),
        )
        .await;
    }

    async fn send_three(
        n: u32,
        mut tx_a: Sender<[u32; 1], 1>,
        mut tx_b: Sender<[u32; 1], 2>,
        mut tx_c: Sender<[u32; 4], 2>,
    ) {
        for i in 0..n {
            if i % 3 == 0 {
                let Some(mut slot) = tx_a.reserve().await else {
                    return;
                };
                slot.par_iter_mut().for_each(|v| *v = i);
                slot.send();
            } else {
                let Some(mut slot) = tx_b.reserve().await else {
                    return;
                };
                slot.par_iter_mut().for_each(|v| *v = i);
                slot.send();
            }
            let Some(mut slot) = tx_c.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = i);
            slot.send();
        }
    }

    async fn take_three(
        mut rx_a: Receiver<[u32; 1], 1>,
        mut rx_b: Receiver<[u32; 1], 2>,
        mut rx_c: Receiver<[u32; 4], 2>,
        out: &mut [u32],
    ) {
        let (from_both, of_c) = join!(
            async {
                let (mut a, mut b) = (0u32, 0u32);
                loop {
                    let which = select! {
                        Some(_slot) = rx_a.recv() => 0u32,
                        Some(_slot) = rx_b.recv() => 1u32,
                        else => 2u32,
                    };
                    if which == 2 {
                        break;
                    }
                    if which == 0 {
                        a += 1;
                    } else {
                        b += 1;
                    }
                }
                a + (b << 16)
            },
            async {
                let mut k = 0u32;
                while let Some(_slot) = rx_c.recv().await {
                    k += 1;
                }
                k
            },
        )
        .await;
        out[0..1]
            .par_iter_mut()
            .for_each(|o| *o = from_both & 0xffff);
        out[1..2].par_iter_mut().for_each(|o| *o = from_both >> 16);
        out[2..3].par_iter_mut().for_each(|o| *o = of_c);
    }

    /// `select!` without `else`: once both channels have closed, a device panic.
    #[kernel(warps = 2)]
    pub async fn no_else(n: u32, out: &mut [u32]) {
        let (tx_a, rx_a) = channel::<[u32; 1], 1>();
        let (tx_b, rx_b) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, send_pair(n, tx_a, tx_b)),
            on_warps(1..2, count_forever(rx_a, rx_b, out)),
        )
        .await;
    }

    async fn send_pair(n: u32, mut tx_a: Sender<[u32; 1], 1>, tx_b: Sender<[u32; 1], 1>) {
        for i in 0..n {
            let Some(mut slot) = tx_a.reserve().await else {
                return;
            };
            slot.par_iter_mut().for_each(|v| *v = i);
            slot.send();
        }
        drop(tx_b);
    }

    async fn count_forever(
        mut rx_a: Receiver<[u32; 1], 1>,
        mut rx_b: Receiver<[u32; 1], 1>,
        out: &mut [u32],
    ) {
        let mut k = 0u32;
        loop {
            select! {
                Some(_slot) = rx_a.recv() => k += 1,
                Some(_slot) = rx_b.recv() => k += 100,
            }
            out[0..1].par_iter_mut().for_each(|o| *o = k);
        }
    }
}
