//! Bulk copies (`copy_from`, `copy_to`) by roles of more than one warp, from sources that are
//! 16-byte aligned or not and tiles with or without a tail, on both backends: every element
//! compared with the source, bit for bit.

#[allow(dead_code, clippy::all)]
#[path = "common/bulk.rs"]
mod bulk;

#[path = "common/devices.rs"]
mod devices;

use devices::devices;
use gpu_async::{block_on, Grid};

#[test]
fn two_warp_roles_copy_in_and_out_whatever_the_alignment() -> gpu_async::Result<()> {
    for dev in devices() {
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
    }
    Ok(())
}
