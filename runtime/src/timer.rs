//! Timers of a device: the time between two points of its default stream. Above streams and
//! events, which a timer is made of.

use std::fmt;

use crate::backend::Device;
use crate::error::Result;
use crate::stream::{Event, Stream};

impl Device {
    /// Starts a timer at the current point of the device's default stream (an event recorded
    /// there), so that [`Timer::stop`] measures the work issued in between: on CUDA the GPU's
    /// time between the two points, on the simulator the host's clock between the moments the
    /// stream's worker reached them (the simulator runs launches on the stream's worker thread,
    /// after they are issued, as the GPU does).
    pub fn start_timer(&self) -> Result<Timer> {
        let stream = self.default_stream();
        let start = stream.record_event()?;
        Ok(Timer { stream, start })
    }
}

/// A running timer of a [`Device`], from [`Device::start_timer`].
pub struct Timer {
    stream: Stream,
    start: Event,
}

impl Timer {
    /// Stops the timer and returns the milliseconds since [`Device::start_timer`]: the time
    /// between the two points of the device's default stream (this waits for the work in
    /// between).
    pub fn stop(self) -> Result<f64> {
        let end = self.stream.record_event()?;
        self.start.elapsed_ms(&end).map(f64::from)
    }

    /// Marks the end of the timed work without waiting for it: records the end point on the
    /// device's default stream now, so that the time measured is the device's from the start
    /// point to here, and not the host's wake-up after it. For one launch:
    /// `let end = timer.mark_end()?; launch.wait()?; end.ms()`.
    pub fn mark_end(self) -> Result<TimerEnd> {
        let end = self.stream.record_event()?;
        Ok(TimerEnd {
            start: self.start,
            end,
        })
    }
}

/// The two points of a [`Timer`] whose end was marked ([`Timer::mark_end`]).
pub struct TimerEnd {
    start: Event,
    end: Event,
}

impl TimerEnd {
    /// The milliseconds between the start and the end point (this waits for the end point to be
    /// reached).
    pub fn ms(self) -> Result<f64> {
        self.start.elapsed_ms(&self.end).map(f64::from)
    }
}

impl fmt::Debug for TimerEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerEnd")
            .field("start", &self.start)
            .field("end", &self.end)
            .finish()
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("stream", &self.stream)
            .field("start", &self.start)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Timer>();
        check::<TimerEnd>();
    }
}
