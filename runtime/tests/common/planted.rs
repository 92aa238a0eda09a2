//! A planted corpus: kernels with protocol mistakes that the compiler accepts (each compiles
//! through `#[gpu_async]`) and only a run finds. `tests/planted.rs` runs each one on the simulator
//! and checks the explanation: the role(s), the await each is stuck on with its source line, and
//! the schedule to replay it. Lines the tests look for carry a `// planted: <tag>` marker, at
//! their end or alone on the line above them. Two consumers that stop early (4 and 5) are kept
//! as what is not a mistake: the receiver they drop closes the channel, and the tests check that
//! they end.

use gpu_async::gpu_async;

#[gpu_async]
pub mod planted {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    pub const TILE: usize = 32;

    // 1. Wrong count, found as a panic: the producer sends `sent` tiles, the consumer has room
    //    for `out.len() / TILE` of them and writes the next one past the end of `out`.
    #[kernel(warps = 2)]
    pub async fn too_many_items(sent: usize, out: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, produce_n(sent, tx)),
            on_warps(1..2, store_each(rx, out)),
        )
        .await;
    }

    async fn produce_n(
        n: usize,
        mut tx: Sender<[f32; TILE], 2>, // planted: close-tx
    ) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            let v = i as f32;
            slot.par_iter_mut().for_each(|e| *e = v);
            slot.send();
        }
    }

    async fn store_each(mut rx: Receiver<[f32; TILE], 2>, out: &mut [f32]) {
        let mut k = 0usize;
        while let Some(slot) = rx.recv().await {
            out[k * TILE..(k + 1) * TILE] // planted: store-past-end
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o = *v);
            k += 1;
        }
    }

    // 2. Wrong count, found as a panic: `x` and `y` have different lengths, so the loader sends
    //    more tiles than the updater has tiles of `y` for.
    #[kernel(warps = 2)]
    pub async fn mismatched_tiles(x: &[f32], y: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, load_tiles(x, tx)),
            on_warps(1..2, update_tiles(rx, y)),
        )
        .await;
    }

    async fn load_tiles(x: &[f32], mut tx: Sender<[f32; TILE], 2>) {
        for tile in block_tiles(x.len(), TILE) {
            // planted: load-reserve
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            slot.copy_from(&x[tile]).await;
            slot.send();
        }
    }

    async fn update_tiles(mut rx: Receiver<[f32; TILE], 2>, y: &mut [f32]) {
        let mut tiles = block_tiles(y.len(), TILE);
        while let Some(slot) = rx.recv().await {
            let tile = tiles.next().unwrap(); // planted: no-tile-left
            y[tile]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(yi, xi)| *yi += *xi);
        }
    }

    // 3. Wrong count, found as a deadlock: the consumer waits for `expected` items before it
    //    acknowledges; the producer sends `sent < expected` and waits for the acknowledgement
    //    before it closes, so neither moves.
    #[kernel(warps = 2)]
    pub async fn short_count(sent: usize, expected: usize, out: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        let (ack_tx, ack_rx) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, produce_then_wait(sent, tx, ack_rx)),
            on_warps(1..2, consume_then_ack(expected, rx, ack_tx, out)),
        )
        .await;
    }

    async fn produce_then_wait(
        n: usize,
        mut tx: Sender<[f32; TILE], 2>,
        mut ack: Receiver<[u32; 1], 1>,
    ) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            let v = i as f32;
            slot.par_iter_mut().for_each(|e| *e = v);
            slot.send();
        }
        while let Some(_done) = ack.recv().await {} // planted: wait-ack
        drop(tx);
    }

    async fn consume_then_ack(
        n: usize,
        mut rx: Receiver<[f32; TILE], 2>,
        mut ack: Sender<[u32; 1], 1>,
        out: &mut [f32],
    ) {
        let mut k = 0usize;
        // planted: wait-item
        while let Some(slot) = rx.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
            k += 1;
            if k == n {
                break;
            }
        }
        let Some(mut done) = ack.reserve().await else {
            return;
        };
        done.par_iter_mut().for_each(|d| *d = 1);
        done.send();
    }

    // 4. A consumer that stops early: it stops at the first negative value while the producer has
    //    more items to send than the ring holds. The consumer's receiver is dropped where it
    //    stops, which closes the channel, and the producer's `reserve` answers `None`.
    #[kernel(warps = 2)]
    pub async fn stops_at_sentinel(x: &[f32], out: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, load_tiles(x, tx)),
            on_warps(1..2, sum_until_negative(rx, out)),
        )
        .await;
    }

    async fn sum_until_negative(mut rx: Receiver<[f32; TILE], 2>, out: &mut [f32]) {
        while let Some(slot) = rx.recv().await {
            if slot[0] < 0.0 {
                break;
            }
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
    }

    // 5. A consumer that stops early by its own count: it takes `taken` items, the producer
    //    sends `sent = taken + 2` through a ring of 2. Both items fit; the end-of-stream marker
    //    would not, but the consumer's receiver, dropped without having seen the end, closes the
    //    channel, and the producer's close has no one to tell.
    #[kernel(warps = 2)]
    pub async fn count_mismatch_at_close(sent: usize, taken: usize, out: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 2>();
        join!(
            on_warps(0..1, produce_n(sent, tx)),
            on_warps(1..2, take_n(taken, rx, out)),
        )
        .await;
    }

    async fn take_n(n: usize, mut rx: Receiver<[f32; TILE], 2>, out: &mut [f32]) {
        let mut k = 0usize;
        while k < n {
            while let Some(slot) = rx.recv().await {
                out[0..TILE]
                    .par_iter_mut()
                    .zip(slot.par_iter())
                    .for_each(|(o, v)| *o += *v);
                break;
            }
            k += 1;
        }
    }

    // 6. A producer that never closes: it keeps its sender until the consumer is done, and the
    //    consumer is done only when the channel is closed.
    #[kernel(warps = 2)]
    pub async fn never_closed(sent: usize, out: &mut [f32]) {
        let (tx, rx) = channel::<[f32; TILE], 4>();
        let (done_tx, done_rx) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, produce_until_done(sent, tx, done_rx)),
            on_warps(1..2, drain(rx, done_tx, out)),
        )
        .await;
    }

    async fn produce_until_done(
        n: usize,
        mut tx: Sender<[f32; TILE], 4>,
        mut done: Receiver<[u32; 1], 1>,
    ) {
        for i in 0..n {
            let Some(mut slot) = tx.reserve().await else {
                return;
            };
            let v = i as f32;
            slot.par_iter_mut().for_each(|e| *e = v);
            slot.send();
        }
        while let Some(_d) = done.recv().await {} // planted: wait-done
        drop(tx);
    }

    async fn drain(mut rx: Receiver<[f32; TILE], 4>, done: Sender<[u32; 1], 1>, out: &mut [f32]) {
        // planted: drain
        while let Some(slot) = rx.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
        drop(done);
    }

    // 7. A close that waits for a slot: the producer fills `a`, drops its sender (the end marker
    //    needs a slot) and only then sends on `b`; the consumer reads `b` before `a`.
    #[kernel(warps = 2)]
    pub async fn close_needs_a_slot(out: &mut [f32]) {
        let (a_tx, a_rx) = channel::<[f32; TILE], 2>();
        let (b_tx, b_rx) = channel::<[f32; TILE], 1>();
        join!(
            on_warps(0..1, fill_close_then_b(a_tx, b_tx)),
            on_warps(1..2, b_then_a(a_rx, b_rx, out)),
        )
        .await;
    }

    async fn fill_close_then_b(mut a: Sender<[f32; TILE], 2>, mut b: Sender<[f32; TILE], 1>) {
        for i in 0..2 {
            let Some(mut slot) = a.reserve().await else {
                return;
            };
            let v = i as f32;
            slot.par_iter_mut().for_each(|e| *e = v);
            slot.send();
        }
        drop(a); // planted: close-a
        let Some(mut last) = b.reserve().await else {
            return;
        };
        last.par_iter_mut().for_each(|e| *e = 9.0);
        last.send();
    }

    async fn b_then_a(
        mut a: Receiver<[f32; TILE], 2>,
        mut b: Receiver<[f32; TILE], 1>,
        out: &mut [f32],
    ) {
        // planted: recv-b
        while let Some(slot) = b.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
        while let Some(slot) = a.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
    }

    // 8. Closes in drop order: at the end of the producer, its senders are dropped in reverse
    //    order of declaration, `data` (full: its close waits) before `last`; the consumer waits
    //    for `last` to close before it drains `data`.
    #[kernel(warps = 2)]
    pub async fn close_order(out: &mut [f32]) {
        let (data_tx, data_rx) = channel::<[f32; TILE], 1>();
        let (last_tx, last_rx) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, fill_and_return(last_tx, data_tx)),
            on_warps(1..2, last_then_data(data_rx, last_rx, out)),
        )
        .await;
    }

    async fn fill_and_return(
        _last: Sender<[u32; 1], 1>,
        mut data: Sender<[f32; TILE], 1>, // planted: close-data
    ) {
        let Some(mut slot) = data.reserve().await else {
            return;
        };
        slot.par_iter_mut().for_each(|e| *e = 1.0);
        slot.send();
    }

    async fn last_then_data(
        mut data: Receiver<[f32; TILE], 1>,
        mut last: Receiver<[u32; 1], 1>,
        out: &mut [f32],
    ) {
        while let Some(_l) = last.recv().await {} // planted: recv-last
        while let Some(slot) = data.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(slot.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
    }

    // 9. A lost release: the consumer keeps a received slot of `a` while it waits on `b`, and
    //    the producer needs that slot back (a ring of one) before it sends on `b`.
    #[kernel(warps = 2)]
    pub async fn lost_release(out: &mut [f32]) {
        let (a_tx, a_rx) = channel::<[f32; TILE], 1>();
        let (b_tx, b_rx) = channel::<[f32; TILE], 1>();
        join!(
            on_warps(0..1, two_a_then_b(a_tx, b_tx)),
            on_warps(1..2, hold_a_wait_b(a_rx, b_rx, out)),
        )
        .await;
    }

    async fn two_a_then_b(mut a: Sender<[f32; TILE], 1>, mut b: Sender<[f32; TILE], 1>) {
        for i in 0..2 {
            // planted: reserve-a
            if let Some(mut slot) = a.reserve().await {
                let v = i as f32;
                slot.par_iter_mut().for_each(|e| *e = v);
                slot.send();
            }
        }
        let Some(mut slot) = b.reserve().await else {
            return;
        };
        slot.par_iter_mut().for_each(|e| *e = 9.0);
        slot.send();
    }

    async fn hold_a_wait_b(
        mut a: Receiver<[f32; TILE], 1>,
        mut b: Receiver<[f32; TILE], 1>,
        out: &mut [f32],
    ) {
        while let Some(held) = a.recv().await {
            // planted: recv-b-holding
            while let Some(other) = b.recv().await {
                out[0..TILE]
                    .par_iter_mut()
                    .zip(other.par_iter())
                    .for_each(|(o, v)| *o += *v);
            }
            out[0..TILE]
                .par_iter_mut()
                .zip(held.par_iter())
                .for_each(|(o, v)| *o += *v);
        }
    }

    // 10. A lost release across three roles: `hold_a_wait_b` keeps a slot of `a` while it waits
    //     on `c`; `relay` sends on `c` only after `two_a_then_b` sends on `b`, which it does only
    //     after its second item on `a`, which needs the held slot.
    #[kernel(warps = 3)]
    pub async fn lost_release_three(out: &mut [f32]) {
        let (a_tx, a_rx) = channel::<[f32; TILE], 1>();
        let (b_tx, b_rx) = channel::<[f32; TILE], 1>();
        let (c_tx, c_rx) = channel::<[f32; TILE], 1>();
        join!(
            on_warps(0..1, two_a_then_b(a_tx, b_tx)),
            on_warps(1..2, relay(b_rx, c_tx)),
            on_warps(2..3, hold_a_wait_b(a_rx, c_rx, out)),
        )
        .await;
    }

    async fn relay(mut rx: Receiver<[f32; TILE], 1>, mut tx: Sender<[f32; TILE], 1>) {
        // planted: relay
        while let Some(input) = rx.recv().await {
            let Some(mut output) = tx.reserve().await else {
                return;
            };
            output
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i);
            output.send();
        }
    }

    // 11. A cycle of two roles decided at run time: each echoes what it receives, and only
    //     `starter` can start the exchange, when `seeded`.
    #[kernel(warps = 2)]
    pub async fn echo_cycle(seeded: bool, rounds: usize, out: &mut [f32]) {
        let (ping_tx, ping_rx) = channel::<[f32; TILE], 1>();
        let (pong_tx, pong_rx) = channel::<[f32; TILE], 1>();
        join!(
            on_warps(0..1, relay(ping_rx, pong_tx)),
            on_warps(1..2, starter(seeded, rounds, pong_rx, ping_tx, out)),
        )
        .await;
    }

    async fn starter(
        seeded: bool,
        rounds: usize,
        mut rx: Receiver<[f32; TILE], 1>,
        mut tx: Sender<[f32; TILE], 1>,
        out: &mut [f32],
    ) {
        if seeded {
            let Some(mut first) = tx.reserve().await else {
                return;
            };
            first.par_iter_mut().for_each(|e| *e = 1.0);
            first.send();
        }
        let mut k = 0usize;
        // planted: starter
        while let Some(input) = rx.recv().await {
            out[0..TILE]
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o += *i);
            k += 1;
            if k == rounds {
                break;
            }
            let Some(mut again) = tx.reserve().await else {
                return;
            };
            again
                .par_iter_mut()
                .zip(input.par_iter())
                .for_each(|(o, i)| *o = *i + 1.0);
            again.send();
        }
        drop(tx);
    }

    // 12. A cycle of three roles decided at run time: `a -> b -> c -> a`, each relaying, and the
    //     ring is started only when `seeded`.
    #[kernel(warps = 3)]
    pub async fn relay_ring(seeded: bool, rounds: usize, out: &mut [f32]) {
        let (ab_tx, ab_rx) = channel::<[f32; TILE], 1>();
        let (bc_tx, bc_rx) = channel::<[f32; TILE], 1>();
        let (ca_tx, ca_rx) = channel::<[f32; TILE], 1>();
        join!(
            on_warps(0..1, starter(seeded, rounds, ca_rx, ab_tx, out)),
            on_warps(1..2, relay(ab_rx, bc_tx)),
            on_warps(2..3, relay(bc_rx, ca_tx)),
        )
        .await;
    }

    // 13. A cycle that appears only in some orders: the two roles take tickets from an atomic
    //     counter to decide who speaks first. `speaker` speaks first when it arrives first, as
    //     meant; `listener` has the test inverted and listens first when it arrives first, so
    //     when `listener` arrives first both listen. Which one arrives first is the schedule's
    //     choice (on the GPU, the warps' timing).
    #[kernel(warps = 2)]
    pub async fn ticket_race(one: &[u32], tickets: &[AtomicU32]) {
        let (ping_tx, ping_rx) = channel::<[u32; 1], 1>();
        let (pong_tx, pong_rx) = channel::<[u32; 1], 1>();
        join!(
            on_warps(0..1, speaker(one, tickets, ping_tx, pong_rx)),
            on_warps(1..2, listener(one, tickets, pong_tx, ping_rx)),
        )
        .await;
    }

    async fn speaker(
        one: &[u32],
        tickets: &[AtomicU32],
        mut tx: Sender<[u32; 1], 1>,
        mut rx: Receiver<[u32; 1], 1>,
    ) {
        // One iteration: the role takes one ticket (a reduction hands it to every thread).
        let ticket = one[0..1]
            .par_iter()
            .map(|_| tickets[0].fetch_add(1, Ordering::Relaxed))
            .sum();
        let first = ticket == 0;
        if first {
            let Some(mut hello) = tx.reserve().await else {
                return;
            };
            hello.par_iter_mut().for_each(|h| *h = 1);
            hello.send();
        }
        // planted: speaker-listens
        while let Some(_reply) = rx.recv().await {
            break;
        }
        if !first {
            let Some(mut hello) = tx.reserve().await else {
                return;
            };
            hello.par_iter_mut().for_each(|h| *h = 2);
            hello.send();
        }
    }

    async fn listener(
        one: &[u32],
        tickets: &[AtomicU32],
        mut tx: Sender<[u32; 1], 1>,
        mut rx: Receiver<[u32; 1], 1>,
    ) {
        // One iteration: the role takes one ticket (a reduction hands it to every thread).
        let ticket = one[0..1]
            .par_iter()
            .map(|_| tickets[0].fetch_add(1, Ordering::Relaxed))
            .sum();
        let first = ticket == 0;
        if !first {
            let Some(mut hello) = tx.reserve().await else {
                return;
            };
            hello.par_iter_mut().for_each(|h| *h = 3);
            hello.send();
        }
        // planted: listener-listens
        while let Some(_hello) = rx.recv().await {
            break;
        }
        if first {
            let Some(mut reply) = tx.reserve().await else {
                return;
            };
            reply.par_iter_mut().for_each(|h| *h = 4);
            reply.send();
        }
    }
}
