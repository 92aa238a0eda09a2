//! How the speed of the histogram with global atomics (`histogram::global_bins` of the histogram
//! example) depends on where its 256 bins lie: the same kernel, the same
//! input, with the bins at each 512-byte offset of a 4 KiB page. The bins are cudarc slices
//! placed by small cudarc allocations before them (the driver's pool hands out 512-byte steps),
//! then adopted with `DeviceBuffer::from_cudarc`; a last row uses a buffer of the runtime's own,
//! which starts on a 4 KiB boundary.
//!
//! ```text
//! cargo run --release --example histogram_placement -- [bytes] [blocks per multiprocessor]
//! ```
//!
//! Half of the input bytes fall in 16 bins, one 64-byte stretch of the bins: those atomics all go
//! to one 128-byte line, and which L2 slice serves it, and what else that slice serves, depends
//! on the address. Every run's bins are checked against a CPU count; times are the median of 20
//! runs after 3 warm-ups, each after an L2 flush ([`Timing`]). Needs a GPU: on the simulator it
//! says so and exits successfully.

use gpu_async::bench::{arg, median_of, Timing};
use gpu_async::cudarc::driver::DevicePtr;
use gpu_async::{BackendKind, Device, DeviceBuffer};

#[path = "histogram.rs"]
#[allow(dead_code)]
mod histogram_example;
use histogram_example::{grid_for, histogram, skewed_bytes};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> AnyResult<()> {
    let n: usize = arg(1, "a number of bytes", 1 << 26)?;
    let blocks_per_sm: u32 = arg(2, "blocks per multiprocessor", 4)?;
    let dev = Device::default()?;
    if dev.kind() != BackendKind::Cuda {
        println!(
            "histogram_placement measures where GPU memory lies and needs a GPU; this is {dev}"
        );
        return Ok(());
    }
    println!("backend: {dev}; {n} skewed bytes, {blocks_per_sm} blocks per SM");
    let stream = dev
        .cudarc_stream()
        .ok_or("the CUDA device has no cudarc stream")?;
    let grid = grid_for(&dev, blocks_per_sm)?;
    let xs = skewed_bytes(n, 18);
    let mut want = [0u32; 256];
    for &b in &xs {
        want[usize::from(b)] += 1;
    }
    let x = dev.upload(&xs)?;
    let mut timing = Timing::new(&dev)?;
    // Every allocation stays alive to the end, so that the pool cannot hand its place out again.
    let (mut crumbs, mut kept) = (Vec::new(), Vec::new());
    // 8 placements of the bins from cudarc slices (each after a 512-byte crumb: steps of 1.5 KiB
    // cover every 512-byte offset of a page), then the runtime's buffer.
    for row in 0..=8 {
        let mut bins = if row < 8 {
            crumbs.push(stream.alloc_zeros::<u8>(1)?);
            DeviceBuffer::from_cudarc(&dev, stream.alloc_zeros::<u32>(256)?)?
        } else {
            dev.upload(&[0u32; 256])?
        };
        // The address, through a cudarc slice and back.
        let slice = bins.into_cudarc()?;
        let address = {
            let (address, _sync) = slice.device_ptr(&stream);
            address
        };
        bins = DeviceBuffer::from_cudarc(&dev, slice)?;
        let ms = median_of(3, 20, || {
            timing.time_launch(|| histogram::global_bins::launch(&dev, grid, (&x, &mut bins)))
        })?;
        // One more run from zero, checked.
        bins.upload_from(&[0u32; 256])?;
        histogram::global_bins::launch(&dev, grid, (&x, &mut bins)).wait()?;
        let bad = bins
            .download()?
            .iter()
            .zip(&want)
            .filter(|(g, w)| g != w)
            .count();
        if bad != 0 {
            return Err(format!("{bad} bins differ from the CPU count").into());
        }
        kept.push(bins);
        println!(
            "{}: bins at {address:#x} ({:4} bytes past a 4 KiB boundary; the hot 16 bins at {:4}): \
             {ms:.3} ms, bins checked",
            if row < 8 { "cudarc slice  " } else { "runtime buffer" },
            address % 4096,
            (address + 0x40 * 4) % 4096,
        );
    }
    Ok(())
}
