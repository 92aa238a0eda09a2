//! The cost of concurrency inside a role: the same work, two streams of `items`
//! handoffs each, consumed by two roles (one loop each, on its own warp), by one role that runs
//! both loops with `join!`, and by one role that takes both streams with `select!`. Two producer
//! warps send; one block. Prints nanoseconds per item (both streams' items counted) for a 4-byte
//! payload (the handshake alone) and a 512-byte one (16 bytes per lane).
//!
//! ```text
//! cargo run --release --example join_cost -- [items per stream]
//! ```

use gpu_async::bench::{arg, median_of, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

macro_rules! join_cost {
    ($m:ident, $len:expr) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            /// `out` = `[sum of stream a's first elements, same for b]`, from two roles.
            #[kernel(warps = 4)]
            pub async fn two_roles(items: u32, out_a: &mut [u32], out_b: &mut [u32]) {
                let (tx_a, rx_a) = channel::<[u32; $len], 2>();
                let (tx_b, rx_b) = channel::<[u32; $len], 2>();
                join!(
                    on_warps(0..1, produce(items, 0, tx_a)),
                    on_warps(1..2, produce(items, 1, tx_b)),
                    on_warps(2..3, consume(rx_a, out_a)),
                    on_warps(3..4, consume(rx_b, out_b)),
                )
                .await;
            }

            /// The same, both loops in one role with `join!`.
            #[kernel(warps = 3)]
            pub async fn joined(items: u32, out_a: &mut [u32], out_b: &mut [u32]) {
                let (tx_a, rx_a) = channel::<[u32; $len], 2>();
                let (tx_b, rx_b) = channel::<[u32; $len], 2>();
                join!(
                    on_warps(0..1, produce(items, 0, tx_a)),
                    on_warps(1..2, produce(items, 1, tx_b)),
                    on_warps(2..3, consume_both(rx_a, rx_b, out_a, out_b)),
                )
                .await;
            }

            /// The same, both streams in one role with `select!`.
            #[kernel(warps = 3)]
            pub async fn selected(items: u32, out_a: &mut [u32], out_b: &mut [u32]) {
                let (tx_a, rx_a) = channel::<[u32; $len], 2>();
                let (tx_b, rx_b) = channel::<[u32; $len], 2>();
                join!(
                    on_warps(0..1, produce(items, 0, tx_a)),
                    on_warps(1..2, produce(items, 1, tx_b)),
                    on_warps(2..3, select_both(rx_a, rx_b, out_a, out_b)),
                )
                .await;
            }

            async fn produce(items: u32, offset: u32, mut tx: Sender<[u32; $len], 2>) {
                for i in 0..items {
                    let Some(mut slot) = tx.reserve().await else {
                        return;
                    };
                    slot.par_iter_mut().for_each(|v| *v = i + offset);
                    slot.send();
                }
            }

            async fn consume(mut rx: Receiver<[u32; $len], 2>, out: &mut [u32]) {
                let mut acc = 0u32;
                while let Some(slot) = rx.recv().await {
                    acc = acc.wrapping_add(slot[0]);
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }

            async fn consume_both(
                rx_a: Receiver<[u32; $len], 2>,
                rx_b: Receiver<[u32; $len], 2>,
                out_a: &mut [u32],
                out_b: &mut [u32],
            ) {
                join!(consume(rx_a, out_a), consume(rx_b, out_b)).await;
            }

            async fn select_both(
                mut rx_a: Receiver<[u32; $len], 2>,
                mut rx_b: Receiver<[u32; $len], 2>,
                out_a: &mut [u32],
                out_b: &mut [u32],
            ) {
                let (mut a, mut b) = (0u32, 0u32);
                loop {
                    select! {
                        Some(slot) = rx_a.recv() => a = a.wrapping_add(slot[0]),
                        Some(slot) = rx_b.recv() => b = b.wrapping_add(slot[0]),
                        else => break,
                    }
                }
                out_a[0..1].par_iter_mut().for_each(|o| *o = a);
                out_b[0..1].par_iter_mut().for_each(|o| *o = b);
            }
        }
    };
}

join_cost!(w4, 1);
join_cost!(w512, 128);

type CostFn = for<'a> fn(
    &'a Device,
    Grid,
    (
        u32,
        &'a mut gpu_async::DeviceBuffer<u32>,
        &'a mut gpu_async::DeviceBuffer<u32>,
    ),
) -> gpu_async::Launch<'a>;

/// The variants, by payload and form.
pub fn variants() -> [(&'static str, &'static str, CostFn); 6] {
    [
        ("4 B", "two roles", w4::two_roles::launch),
        ("4 B", "one role, join!", w4::joined::launch),
        ("4 B", "one role, select!", w4::selected::launch),
        ("512 B", "two roles", w512::two_roles::launch),
        ("512 B", "one role, join!", w512::joined::launch),
        ("512 B", "one role, select!", w512::selected::launch),
    ]
}

/// Runs every variant over `items` per stream and checks both sums; returns the failures.
pub fn check(dev: &Device, items: u32) -> gpu_async::Result<Vec<String>> {
    let mut out_a = dev.alloc::<u32>(1)?;
    let mut out_b = dev.alloc::<u32>(1)?;
    let want_a = (0..items).fold(0u32, |a, i| a.wrapping_add(i));
    let want_b = (0..items).fold(0u32, |a, i| a.wrapping_add(i + 1));
    let mut failures = Vec::new();
    for (payload, form, launch) in variants() {
        launch(dev, Grid::blocks(1), (items, &mut out_a, &mut out_b)).wait()?;
        let got = (out_a.download()?[0], out_b.download()?[0]);
        if got != (want_a, want_b) {
            failures.push(format!(
                "{payload}, {form}: sums {got:?}, expected {:?}",
                (want_a, want_b)
            ));
        }
    }
    Ok(failures)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let items: u32 = arg(1, "a number of items per stream", 100_000)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let items = if dev.kind() == BackendKind::Cuda {
        items
    } else {
        items.min(1000)
    };
    let failures = check(&dev, items)?;
    if !failures.is_empty() {
        return Err(failures.join("; ").into());
    }
    println!(
        "check: {} variants, {items} items per stream, sums right",
        variants().len()
    );
    if dev.kind() != BackendKind::Cuda {
        return Ok(());
    }
    let mut timing = Timing::new(&dev)?;
    let mut out_a = dev.alloc::<u32>(1)?;
    let mut out_b = dev.alloc::<u32>(1)?;
    for (payload, form, launch) in variants() {
        let ms = median_of(2, 15, || {
            timing.time_launch(|| launch(&dev, Grid::blocks(1), (items, &mut out_a, &mut out_b)))
        })?;
        let ns = ms * 1e6 / f64::from(2 * items);
        println!("join cost {payload}, {form}: {ns:.1} ns per item");
    }
    Ok(())
}
