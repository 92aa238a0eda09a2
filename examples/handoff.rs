//! The cost of one channel handoff: one producer warp, one consumer warp, one block, a
//! ring of depth 1, 2 or 4, and three payloads: 4 bytes (the handshake alone), 16 bytes per lane
//! (512 bytes written by the producer's 32 lanes) and a 16 KiB bulk copy from global memory. The
//! consumer reads one element of each slot and releases it. Prints nanoseconds per item and
//! cycles per item at the SM clock the device reports; `examples/peers/handoff.cu` is the same
//! protocol hand-written with raw mbarriers, and with `__syncthreads`.
//!
//! ```text
//! cargo run --release --example handoff -- [items] [SM clock in MHz]
//! ```

use gpu_async::bench::{arg, median_of, Timing};
use gpu_async::{gpu_async, BackendKind, Device, Grid};

macro_rules! handoff {
    ($m:ident, $len:expr, $depth:expr, lanes) => {
        handoff!($m, $len, $depth, |slot, i, _src| {
            slot.par_iter_mut().for_each(|v| *v = i as u32);
        });
    };
    ($m:ident, $len:expr, $depth:expr, bulk) => {
        handoff!($m, $len, $depth, |slot, _i, src| {
            slot.copy_from(&src[0..$len]).await;
        });
    };
    ($m:ident, $len:expr, $depth:expr, |$slot:ident, $i:ident, $src:ident| { $($fill:tt)* }) => {
        #[gpu_async]
        pub mod $m {
            use gpu_async::device::*;

            /// `items` handoffs; `out[0]` = the sum of the first element of every payload.
            #[kernel(warps = 2)]
            pub async fn handoff(items: u32, src: &[u32], out: &mut [u32]) {
                let (tx, rx) = channel::<[u32; $len], $depth>();
                join!(
                    on_warps(0..1, produce(src, items, tx)),
                    on_warps(1..2, consume(rx, out)),
                )
                .await;
            }

            async fn produce($src: &[u32], items: u32, mut tx: Sender<[u32; $len], $depth>) {
                for $i in 0..items as usize {
                    let Some(mut $slot) = tx.reserve().await else { return };
                    $($fill)*
                    $slot.send();
                }
            }

            async fn consume(mut rx: Receiver<[u32; $len], $depth>, out: &mut [u32]) {
                let mut acc = 0u32;
                while let Some(slot) = rx.recv().await {
                    acc += slot[0];
                }
                out[0..1].par_iter_mut().for_each(|o| *o = acc);
            }
        }
    };
}

handoff!(w4_d1, 1, 1, lanes);
handoff!(w4_d2, 1, 2, lanes);
handoff!(w4_d4, 1, 4, lanes);
handoff!(w512_d1, 128, 1, lanes);
handoff!(w512_d2, 128, 2, lanes);
handoff!(w512_d4, 128, 4, lanes);
handoff!(b16k_d1, 4096, 1, bulk);
handoff!(b16k_d2, 4096, 2, bulk);
handoff!(b16k_d4, 4096, 4, bulk);

type HandoffFn = for<'a> fn(
    &'a Device,
    Grid,
    (
        u32,
        &'a gpu_async::DeviceBuffer<u32>,
        &'a mut gpu_async::DeviceBuffer<u32>,
    ),
) -> gpu_async::Launch<'a>;

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let items: u32 = arg(1, "a number of items", 100_000)?;
    let dev = Device::default()?;
    println!("backend: {dev}");
    let items = if dev.kind() == BackendKind::Cuda {
        items
    } else {
        items.min(1000)
    };
    let cases: [(&str, HandoffFn, usize); 9] = [
        ("4 B, depth 1", w4_d1::handoff::launch, 1),
        ("4 B, depth 2", w4_d2::handoff::launch, 1),
        ("4 B, depth 4", w4_d4::handoff::launch, 1),
        (
            "512 B (16 B per lane), depth 1",
            w512_d1::handoff::launch,
            128,
        ),
        (
            "512 B (16 B per lane), depth 2",
            w512_d2::handoff::launch,
            128,
        ),
        (
            "512 B (16 B per lane), depth 4",
            w512_d4::handoff::launch,
            128,
        ),
        ("16 KiB bulk copy, depth 1", b16k_d1::handoff::launch, 4096),
        ("16 KiB bulk copy, depth 2", b16k_d2::handoff::launch, 4096),
        ("16 KiB bulk copy, depth 4", b16k_d4::handoff::launch, 4096),
    ];
    // The bulk cases copy `src` (4096 elements); the others get an empty `src` and write the
    // payload with the producer's lanes.
    let src = dev.upload(&(0..4096u32).collect::<Vec<_>>())?;
    let empty = dev.alloc::<u32>(0)?;
    let mut timing = Timing::new(&dev)?;
    let mut out = dev.alloc::<u32>(1)?;
    // Cycles are nanoseconds at this clock (the H200's 1980 MHz boost clock by default; the
    // peer converts with the same number, so the ratio does not depend on it).
    let clock_mhz: u32 = arg(2, "an SM clock in MHz", 1980)?;
    for (name, launch, len) in cases {
        let s = if len == 4096 { &src } else { &empty };
        launch(&dev, Grid::blocks(1), (items, s, &mut out)).wait()?;
        let got = out.download()?[0];
        let want = if len == 4096 {
            0
        } else {
            (0..items).fold(0u32, |a, i| a.wrapping_add(i))
        };
        if got != want {
            return Err(format!("{name}: consumer saw {got}, expected {want}").into());
        }
        if dev.kind() == BackendKind::Cuda {
            let ms = median_of(2, 10, || {
                timing.time_launch(|| launch(&dev, Grid::blocks(1), (items, s, &mut out)))
            })?;
            let ns = ms * 1e6 / f64::from(items);
            println!(
                "handoff {name}: {ns:.1} ns per item, {:.0} cycles at {clock_mhz} MHz",
                ns * f64::from(clock_mhz) / 1000.0
            );
        } else {
            println!("handoff {name}: {items} items checked");
        }
    }
    Ok(())
}
