//! Timers of a device: the GPU time between two points of its default stream, or the wall clock
//! on the simulator. Above streams and events, which a CUDA timer is made of.

use std::fmt;
use std::time::Instant;

use crate::backend::{Backend, Device};
use crate::error::Result;
use crate::stream::{Event, Stream};

impl Device {
    /// Starts a timer at the current point of the device's default stream: on CUDA an event
    /// recorded there, so `Timer::stop` measures the GPU time of the work issued in between; on
    /// the simulator the wall clock (simulated kernels run inside their launch call).
    pub fn start_timer(&self) -> Result<Timer> {
        let start = match self.backend() {
            Backend::Cuda(_) => {
                let stream = self.default_stream();
                let event = stream.record_event()?;
                TimerStart::Cuda(stream, event)
            }
            Backend::Sim => TimerStart::Wall(Instant::now()),
        };
        Ok(Timer { start })
    }
}

/// A running timer of a [`Device`], from [`Device::start_timer`].
pub struct Timer {
    start: TimerStart,
}

enum TimerStart {
    Cuda(Stream, Event),
    Wall(Instant),
}

impl Timer {
    /// Stops the timer and returns the milliseconds since [`Device::start_timer`]: on CUDA the
    /// time between the two points of the device's default stream (this waits for the work in
    /// between).
    pub fn stop(self) -> Result<f64> {
        match self.start {
            TimerStart::Cuda(stream, start) => {
                let end = stream.record_event()?;
                start.elapsed_ms(&end).map(f64::from)
            }
            TimerStart::Wall(start) => Ok(start.elapsed().as_secs_f64() * 1e3),
        }
    }
}

impl Timer {
    /// Marks the end of the timed work without waiting for it: on CUDA, records the end point
    /// on the device's default stream now, so that the time measured is the device's from the
    /// start point to here, and not the host's wake-up after it. For one launch:
    /// `let end = timer.mark_end()?; launch.wait()?; end.ms()`.
    pub fn mark_end(self) -> Result<TimerEnd> {
        let end = match self.start {
            TimerStart::Cuda(stream, start) => {
                let end = stream.record_event()?;
                TimerEnd::Cuda(start, end)
            }
            TimerStart::Wall(start) => TimerEnd::Wall(start.elapsed()),
        };
        Ok(end)
    }
}

/// The two points of a [`Timer`] whose end was marked ([`Timer::mark_end`]).
pub enum TimerEnd {
    /// Start and end events on the device's default stream.
    Cuda(Event, Event),
    /// The wall-clock time between them (the simulator).
    Wall(std::time::Duration),
}

impl TimerEnd {
    /// The milliseconds between the start and the end point (on CUDA this waits for the end
    /// point to be reached).
    pub fn ms(self) -> Result<f64> {
        match self {
            TimerEnd::Cuda(start, end) => start.elapsed_ms(&end).map(f64::from),
            TimerEnd::Wall(d) => Ok(d.as_secs_f64() * 1e3),
        }
    }
}

impl fmt::Debug for TimerEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimerEnd::Cuda(..) => f.write_str("TimerEnd(cuda events)"),
            TimerEnd::Wall(d) => write!(f, "TimerEnd({d:?})"),
        }
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = match self.start {
            TimerStart::Cuda(..) => "cuda events",
            TimerStart::Wall(_) => "wall clock",
        };
        f.debug_struct("Timer").field("clock", &clock).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Timer>();
    }
}
