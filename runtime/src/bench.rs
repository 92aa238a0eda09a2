//! Small helpers for examples, tests and benchmarks: reproducible random inputs and median
//! timings with device events.

use crate::backend::{BackendKind, Device};
use crate::buffer::DeviceBuffer;
use crate::error::Result;
use crate::launch::{Launch, TracedLaunch};
use crate::trace::Trace;
use std::time::{Duration, Instant};

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

/// Times device work the way the benchmarks compare it with their peers: device events around
/// each run, and before each run, untimed, a copy of 128 MiB between two scratch buffers on the
/// same stream (CUDA only).
///
/// The copy does two things, as `triton.testing.do_bench`'s zeroing of a 256 MB buffer does:
/// it evicts the L2 (60 MB on an H200), so no run starts with the previous run's data cached,
/// and it keeps the GPU busy (about 65 µs on an H200) while the host enqueues the start event,
/// the run and the end event, so that the time measured is the GPU's alone and not the host's
/// submission of the run. Without it, on an idle stream, the start event fires as soon as it is
/// enqueued and the time includes the host's work up to the launch (about 2.5 µs more for a
/// typed launch than for a CUDA C++ `<<<>>>` launch, measured on the H200; `docs/design.md`,
/// "Benchmarks time the GPU, after an L2 flush"). The CUDA C++ and PyTorch peers time the same way
/// (`examples/peers/`). What a launch costs the host is measured apart, by
/// `examples/launch_overhead.rs`.
///
/// On the simulator the runs are timed with the wall clock and nothing is flushed.
pub struct Timing {
    device: Device,
    /// The flush's source and destination (CUDA only).
    scratch: Option<(DeviceBuffer<u32>, DeviceBuffer<u32>)>,
}

impl Timing {
    /// Bytes of each scratch buffer: the flush reads this many and writes this many.
    pub const FLUSH_BYTES: usize = 128 << 20;

    /// A timing of work on `device`'s default stream; allocates the two scratch buffers on CUDA.
    pub fn new(device: &Device) -> Result<Self> {
        let scratch = match device.kind() {
            BackendKind::Cuda => {
                let words = Self::FLUSH_BYTES / 4;
                Some((device.alloc::<u32>(words)?, device.alloc::<u32>(words)?))
            }
            BackendKind::Simulator => None,
        };
        Ok(Timing {
            device: device.clone(),
            scratch,
        })
    }

    /// Enqueues the flush on the device's default stream (nothing on the simulator).
    fn flush(&mut self) -> Result<()> {
        if let Some((src, dst)) = &mut self.scratch {
            dst.copy_from_buffer(src)?;
        }
        Ok(())
    }

    /// Runs `work` `warmup` times untimed, then `runs` times, each after a flush and timed on the
    /// device's default stream with events (the wall clock on the simulator); returns the median
    /// in milliseconds. `work` enqueues asynchronous work (a copy, a launch that it does not wait
    /// for).
    pub fn median_ms(
        &mut self,
        warmup: usize,
        runs: usize,
        mut work: impl FnMut() -> Result<()>,
    ) -> Result<f64> {
        for _ in 0..warmup {
            work()?;
        }
        self.device.synchronize()?;
        median_of(0, runs, || {
            self.flush()?;
            let timer = self.device.start_timer()?;
            work()?;
            timer.stop()
        })
    }

    /// The milliseconds of one launch on the device's default stream: a flush, the start point,
    /// the launch that `launch` enqueues, and the end point recorded right after the enqueue
    /// ([`Timer::mark_end`]), so that the host's wake-up after the kernel is not counted either;
    /// waits for the launch (its error, if any, is returned). With [`median_of`]:
    ///
    /// ```ignore
    /// let mut timing = Timing::new(&dev)?;
    /// let ms = median_of(3, 20, || timing.time_launch(|| kernel::launch(&dev, grid, (&x, &mut y))))?;
    /// ```
    ///
    /// [`Timer::mark_end`]: crate::Timer::mark_end
    pub fn time_launch<'a>(&mut self, launch: impl FnOnce() -> Launch<'a>) -> Result<f64> {
        self.flush()?;
        let timer = self.device.start_timer()?;
        let launch = launch();
        let end = timer.mark_end()?;
        launch.wait()?;
        end.ms()
    }
}

impl Timing {
    /// [`Timing::time_launch`] for a traced launch: the milliseconds of the traced kernel (its
    /// trace buffer is read back and decoded after the end point), and its trace. A launch that
    /// failed returns its error.
    pub fn time_traced<'a>(
        &mut self,
        launch: impl FnOnce() -> TracedLaunch<'a>,
    ) -> Result<(f64, Trace)> {
        self.flush()?;
        let timer = self.device.start_timer()?;
        let launch = launch();
        let end = timer.mark_end()?;
        let trace = launch.wait().into_result()?;
        Ok((end.ms()?, trace))
    }
}

/// Runs `run` `warmup` times, then `runs` times, and returns the median of the milliseconds it
/// measured; for launches, with [`Timing::time_launch`].
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

/// Runs `run` again and again until `duration` of wall-clock time has passed, and returns how
/// many times it ran; with [`Timing::time_launch`], before [`median_of`].
///
/// It brings the GPU to the clock that sustained work gets. An H200 holds its 700 W power limit
/// by lowering its SM clock under sustained tensor-core load: attention and its peers ran at
/// 1690-1860 MHz after a second of back-to-back launches instead of 1980 (read with
/// `nvidia-smi`, the power cap flagged), 4-13% slower. Timed from an idle card, twenty 3 ms
/// launches straddle that drop, and their median lands on either side of it by chance; two
/// programs timed one after the other then compare a cool card with a hot one.
pub fn warm_for(duration: Duration, mut run: impl FnMut() -> Result<f64>) -> Result<usize> {
    let start = Instant::now();
    let mut count = 0;
    while start.elapsed() < duration {
        run()?;
        count += 1;
    }
    Ok(count)
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
    use super::{warm_for, GridShape};
    use crate::error::Error;
    use std::time::{Duration, Instant};

    #[test]
    fn warming_runs_until_its_time_has_passed() {
        let start = Instant::now();
        let runs = warm_for(Duration::from_millis(30), || {
            std::thread::sleep(Duration::from_millis(5));
            Ok(5.0)
        })
        .unwrap();
        // Each run takes at least 5 ms: the sixth ends past 30 ms at the latest.
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!((1..=6).contains(&runs), "{runs}");
        assert_eq!(warm_for(Duration::ZERO, || Ok(1.0)).unwrap(), 0);
    }

    #[test]
    fn warming_stops_at_the_first_error() {
        let mut runs = 0;
        let outcome = warm_for(Duration::from_secs(60), || {
            runs += 1;
            Err(Error::InvalidArgument("no device".into()))
        });
        assert!(matches!(outcome, Err(Error::InvalidArgument(_))));
        assert_eq!(runs, 1);
    }

    #[test]
    fn grid_shapes_parse_from_tiles_or_a_count() {
        assert_eq!("tiles".parse(), Ok(GridShape::Tiles));
        assert_eq!("4".parse(), Ok(GridShape::PerSm(4)));
        assert!("x".parse::<GridShape>().is_err());
        assert!("-1".parse::<GridShape>().is_err());
        assert!("Tiles".parse::<GridShape>().is_err());
    }
}
