//! Bulk copies (`copy_from`, `copy_to`) by roles of more than one warp, from sources that are
//! 16-byte aligned or not and tiles with or without a tail, on both backends: every element
//! compared with the source, bit for bit.

#[allow(dead_code, clippy::all)]
#[path = "common/bulk.rs"]
mod bulk;

use gpu_async::{block_on, Device, Grid};
use gpu_async_testing::on_each_device;

#[on_each_device]
fn two_warp_roles_copy_in_and_out_whatever_the_alignment(dev: Device) -> gpu_async::Result<()> {
    // Skips of 0 and 4 elements keep the source 16-byte aligned; 1 and 5 do not.
    for skip in [0usize, 1, 4, 5] {
        for n in [0usize, 1, 255, 256, 257, 1000, 40_009] {
            let xs = gpu_async::bench::random_f32(n + skip, 9);
            let x = dev.upload(&xs)?;
            let mut y = dev.upload(&vec![f32::NAN; n])?;
            block_on(bulk::bulk::shifted_copy::launch(
                &dev,
                Grid::blocks(3),
                (skip, &x, &mut y),
            ))?;
            let got = y.download()?;
            let bad = got
                .iter()
                .zip(&xs[skip..])
                .filter(|(g, x)| g.to_bits() != x.to_bits())
                .count();
            assert_eq!(bad, 0, "on {dev}: skip {skip}, n = {n}");
        }
    }
    Ok(())
}

#[on_each_device]
fn a_source_copied_in_every_round_is_whole_or_has_its_tail_copied(
    dev: Device,
) -> gpu_async::Result<()> {
    // Aligned (skip 0, 4) and whole (n a multiple of 4): the loop's version without tails;
    // every other case the version with them, a tail of 1-3 elements or, unaligned, all.
    for skip in [0usize, 1, 4, 5] {
        for n in [0usize, 1, 3, 4, 36, 63, 64] {
            let xs: Vec<u32> = (0..(skip + n) as u32)
                .map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995)
                .collect();
            let x = dev.upload(&xs)?;
            let mut sum = dev.upload(&vec![u32::MAX; n + 1])?;
            let rounds = 5u32;
            block_on(bulk::bulk::repeated_copy::launch(
                &dev,
                Grid::blocks(2),
                (rounds, skip, &x, &mut sum),
            ))?;
            let once = xs[skip..].iter().fold(0u32, |a, &v| a.wrapping_add(v));
            let want = once.wrapping_mul(rounds);
            assert_eq!(sum.download()?[0], want, "on {dev}: skip {skip}, n = {n}");
        }
    }
    Ok(())
}
