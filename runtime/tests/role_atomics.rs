//! Atomics in role code run once for the role, and every thread of the role gets the result:
//! blocks take tickets from a global counter, a role of one warp and a role of four warps each
//! write a ticket's chunk with a parallel loop (so a thread that got another value writes another
//! chunk, or another value), count their tickets with a `red`, elect one block with a
//! compare-and-swap, and the last block to finish resets the counters for the next launch. Both
//! backends, two launches on the same counters.

use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

#[gpu_async::gpu_async]
pub mod role_atomics {
    use gpu_async::device::*;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    /// Elements per ticket.
    pub const CHUNK: usize = 256;
    /// Tickets per launch.
    pub const TICKETS: u32 = 40;
    /// What a ticket adds to the 64-bit counter: its count is in the high word.
    pub const WIDE_STEP: u64 = 1 << 32;

    /// `narrow` (u32 counters) and `wide` (u64 counters): `[next ticket, tickets taken, elected,
    /// blocks finished]`. Each ticket's chunk of `by_one` (one warp) and `by_four` (four warps)
    /// gets `ticket + 1` in every element.
    #[kernel(warps = 5)]
    pub async fn tickets(
        narrow: &[AtomicU32],
        wide: &[AtomicU64],
        by_one: &mut [u32],
        by_four: &mut [u64],
    ) {
        join!(
            on_warps(0..1, take_narrow(narrow, by_one)),
            on_warps(1..5, take_wide(wide, by_four))
        )
        .await;
    }

    async fn take_narrow(counters: &[AtomicU32], out: &mut [u32]) {
        loop {
            let t = counters[0].fetch_add(1, Ordering::Relaxed);
            if t >= TICKETS {
                break;
            }
            counters[1].fetch_add(1, Ordering::Relaxed);
            let start = t as usize * CHUNK;
            out[start..start + CHUNK]
                .par_iter_mut()
                .for_each(|o| *o = t + 1);
        }
        if counters[2]
            .compare_exchange(
                0,
                block_index() as u32 + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            counters[1].fetch_add(1000, Ordering::Relaxed);
        }
        // Every block has taken its last ticket once all have counted themselves here.
        if counters[3].fetch_add(1, Ordering::AcqRel) == block_count() as u32 - 1 {
            counters[0].store(0, Ordering::Relaxed);
            counters[3].store(0, Ordering::Relaxed);
        }
    }

    async fn take_wide(counters: &[AtomicU64], out: &mut [u64]) {
        loop {
            let t = counters[0].fetch_add(WIDE_STEP, Ordering::Relaxed) >> 32;
            if t >= TICKETS as u64 {
                break;
            }
            counters[1].fetch_add(1, Ordering::Relaxed);
            let start = t as usize * CHUNK;
            out[start..start + CHUNK]
                .par_iter_mut()
                .for_each(|o| *o = t + 1);
        }
        let won = counters[2]
            .compare_exchange(
                0,
                block_index() as u64 + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok();
        if won {
            counters[1].fetch_add(1000, Ordering::Relaxed);
        }
        if counters[3].fetch_add(1, Ordering::AcqRel) == block_count() as u64 - 1 {
            counters[0].store(0, Ordering::Relaxed);
            counters[3].store(0, Ordering::Relaxed);
        }
    }

    /// `out[0]` = the count of even items of `x` in the block's shared bins, read by a
    /// `fetch_add` of 1000 in role code that follows the parallel loop updating them; `out[1]`
    /// = the bin after it; `out[2]` = a second role-code `fetch_add` (its result unused) seen by
    /// a load.
    #[kernel(warps = 4)]
    pub async fn shared_bins(x: &[u32], out: &mut [u32]) {
        let bins = shared_array::<AtomicU32, 2>();
        join!(on_warps(0..4, tally(x, &bins, out))).await;
    }

    async fn tally(x: &[u32], bins: &SharedArray<AtomicU32, 2>, out: &mut [u32]) {
        x.par_iter().for_each(|v| {
            bins[(*v % 2) as usize].fetch_add(1, Ordering::Relaxed);
        });
        let evens = bins[0].fetch_add(1000, Ordering::Relaxed);
        out[0] = evens;
        out[1] = bins[0].fetch_add(0, Ordering::Relaxed);
        bins[1].fetch_add(7, Ordering::Relaxed);
        (0..1).into_par_iter().for_each(|i| {
            out[i + 2] = bins[1].load(Ordering::Relaxed);
        });
    }
}

use role_atomics::{CHUNK, TICKETS};

#[on_each_device]
fn role_code_atomics_on_shared_arrays_follow_the_loops_before_them(
    dev: Device,
) -> gpu_async::Result<()> {
    let x: Vec<u32> = (0..1000u32).map(|i| i * 7 + 3).collect();
    let evens = x.iter().filter(|v| *v % 2 == 0).count() as u32;
    let mut out = dev.upload(&[0u32; 3])?;
    block_on(role_atomics::shared_bins::launch(
        &dev,
        Grid::blocks(1),
        (&dev.upload(&x)?, &mut out),
    ))?;
    assert_eq!(
        out.download()?,
        [evens, evens + 1000, 1000 - evens + 7],
        "on {dev}"
    );
    Ok(())
}

#[on_each_device]
fn role_code_atomics_run_once_for_the_role(dev: Device) -> gpu_async::Result<()> {
    let blocks = 7u32;
    let mut narrow = dev.upload(&[0u32; 4])?;
    let mut wide = dev.upload(&[0u64; 4])?;
    let n = TICKETS as usize * CHUNK;
    let want_one: Vec<u32> = (0..n).map(|i| (i / CHUNK) as u32 + 1).collect();
    let want_four: Vec<u64> = want_one.iter().map(|&v| u64::from(v)).collect();
    for launch in 0..2 {
        let mut by_one = dev.upload(&vec![0u32; n])?;
        let mut by_four = dev.upload(&vec![0u64; n])?;
        block_on(role_atomics::tickets::launch(
            &dev,
            Grid::blocks(blocks),
            (&mut narrow, &mut wide, &mut by_one, &mut by_four),
        ))?;
        assert!(
            by_one.download()? == want_one,
            "on {dev}, launch {launch}: one warp's chunks"
        );
        assert!(
            by_four.download()? == want_four,
            "on {dev}, launch {launch}: four warps' chunks"
        );
        let (narrow_now, wide_now) = (narrow.download()?, wide.download()?);
        // One count per ticket, and 1000 from the one block elected in the first launch (the
        // election stays won: the second launch's compare-and-swaps all fail); the next ticket
        // and the finished blocks back at zero.
        let taken = (launch + 1) * TICKETS + 1000;
        assert_eq!(narrow_now[0], 0, "on {dev}, launch {launch}");
        assert_eq!(narrow_now[1], taken, "on {dev}, launch {launch}");
        assert!(
            (1..=blocks).contains(&narrow_now[2]),
            "on {dev}: {narrow_now:?}"
        );
        assert_eq!(narrow_now[3], 0, "on {dev}, launch {launch}");
        assert_eq!(wide_now[0], 0, "on {dev}, launch {launch}");
        assert_eq!(wide_now[1], u64::from(taken), "on {dev}, launch {launch}");
        assert!(
            (1..=u64::from(blocks)).contains(&wide_now[2]),
            "on {dev}: {wide_now:?}"
        );
        assert_eq!(wide_now[3], 0, "on {dev}, launch {launch}");
    }
    Ok(())
}
