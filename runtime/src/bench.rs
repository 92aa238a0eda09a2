//! Small helpers for examples, tests and benchmarks: reproducible random inputs and median
//! timings with device events.

use crate::backend::Device;
use crate::error::Result;
use crate::launch::Launch;

/// `n` pseudo-random floats in [-1, 1), deterministic for a `seed` (SplitMix64), so that a failing
/// run can be replayed.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// Runs `work` `warmup` times untimed, then `runs` times, each timed on the device's stream with
/// events (wall clock on the simulator); returns the median in milliseconds.
pub fn median_ms(
    device: &Device,
    warmup: usize,
    runs: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warmup {
        work()?;
    }
    device.synchronize()?;
    median_of(0, runs, || {
        let timer = device.start_timer()?;
        work()?;
        timer.stop()
    })
}

/// Runs `run` `warmup` times, then `runs` times, and returns the median of the milliseconds it
/// measured. For launches, with [`time_launch`]:
///
/// ```ignore
/// let ms = median_of(3, 20, || time_launch(&dev, || kernel::launch(&dev, grid, (&x, &mut y))))?;
/// ```
pub fn median_of(warmup: usize, runs: usize, mut run: impl FnMut() -> Result<f64>) -> Result<f64> {
    for _ in 0..warmup {
        run()?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        times.push(run()?);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The milliseconds of one launch on `device`'s default stream: the start point, the launch that
/// `launch` enqueues, and the end point recorded right after the enqueue ([`Timer::mark_end`]),
/// so that the host's wake-up after the kernel is not counted; waits for the launch (its error,
/// if any, is returned).
///
/// [`Timer::mark_end`]: crate::Timer::mark_end
pub fn time_launch<'a>(device: &Device, launch: impl FnOnce() -> Launch<'a>) -> Result<f64> {
    let timer = device.start_timer()?;
    let launch = launch();
    let end = timer.mark_end()?;
    launch.wait()?;
    end.ms()
}

/// Gigabytes per second for `bytes` moved in `ms` milliseconds.
pub fn gb_per_s(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// A grid as an example's command line names it: `tiles` (the example's grid of blocks that
/// each take a few tiles) or a number of blocks per multiprocessor. Read it with [`arg`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridShape {
    /// `tiles`.
    Tiles,
    /// `N`: N blocks per multiprocessor.
    PerSm(u32),
}

impl std::str::FromStr for GridShape {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tiles" => Ok(GridShape::Tiles),
            n => n.parse().map(GridShape::PerSm),
        }
    }
}

/// The command-line argument at `position` (1 is the first), parsed, or `default` when absent;
/// an argument that does not parse is an error naming `what` was expected.
pub fn arg<T: std::str::FromStr>(position: usize, what: &str, default: T) -> Result<T, String> {
    match std::env::args().nth(position) {
        Some(s) => s.parse().map_err(|_| format!("expected {what}, got `{s}`")),
        None => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::GridShape;

    #[test]
    fn grid_shapes_parse_from_tiles_or_a_count() {
        assert_eq!("tiles".parse(), Ok(GridShape::Tiles));
        assert_eq!("4".parse(), Ok(GridShape::PerSm(4)));
        assert!("x".parse::<GridShape>().is_err());
        assert!("-1".parse::<GridShape>().is_err());
        assert!("Tiles".parse::<GridShape>().is_err());
    }
}
