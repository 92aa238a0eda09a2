//! Bounded exhaustive exploration: a test run once per schedule, each on a fresh simulator.
//! Above the devices, since it makes one simulator device per schedule and hands it to the test.

use std::fmt;

use crate::backend::Device;
use crate::error::{Error, Result};
use crate::schedule::Schedule;

/// The bounds of an [`explore`]ation.
///
/// - `max_preemptions`: a schedule switches away from a role that could have continued at most
///   this many times (switching after a role waits or finishes is free). Most ordering bugs need
///   one or two preemptions, and the bound keeps the number of schedules polynomial in the
///   number of steps rather than exponential.
/// - `max_schedules`: at most this many schedules are run (at least one). The exploration stops
///   earlier when every schedule within `max_preemptions` has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Exhaustive {
    /// The most schedules run.
    pub max_schedules: u32,
    /// The most preemptions in one schedule.
    pub max_preemptions: u32,
}

impl Default for Exhaustive {
    /// 1000 schedules of at most 2 preemptions.
    fn default() -> Exhaustive {
        Exhaustive {
            max_schedules: 1000,
            max_preemptions: 2,
        }
    }
}

/// What a successful [`explore`]ation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exploration {
    /// The number of schedules run.
    pub schedules: u32,
    /// Whether they were all the schedules within the preemption bound (`false`: the exploration
    /// stopped at `max_schedules`).
    pub complete: bool,
}

/// The first schedule of an [`explore`]ation under which the test failed.
#[derive(Debug)]
pub struct ScheduleFailure {
    /// Its position in the exploration, from 0.
    pub index: u32,
    /// The schedule: a [`Schedule::Replay`] that runs it again on a device of
    /// [`Device::simulator_with`] (or [`Device::simulator`] with
    /// [`SCHEDULE_ENV`](crate::SCHEDULE_ENV) set to its `Display`).
    pub schedule: Schedule,
    /// What the test returned.
    pub error: Error,
}

impl fmt::Display for ScheduleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "schedule {} of the exploration (`{}`) failed: {}",
            self.index, self.schedule, self.error
        )
    }
}

impl std::error::Error for ScheduleFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Runs `test` once per schedule of a bounded exhaustive exploration, each time on a new
/// simulator device, and stops at the first schedule under which it returns an error.
///
/// Schedules are enumerated depth first over the choice points of the device's launches (the
/// steps where more than one role can move; see [`Schedule`]): the first schedule runs each
/// role until it waits or finishes, then the first role that can move; each later one changes
/// the last choice that has an option left within `bounds.max_preemptions`. Because every
/// schedule runs `test` from the start on a fresh device, its buffers, uploads and atomics are
/// fresh too: `test` should create everything it launches on, from one thread, and do the same
/// thing every time.
///
/// ```
/// use gpu_async::{explore, Exhaustive};
/// let explored = explore(Exhaustive { max_schedules: 10, max_preemptions: 1 }, |_dev| Ok(()))
///     .unwrap();
/// assert_eq!((explored.schedules, explored.complete), (1, true));
/// ```
pub fn explore(
    bounds: Exhaustive,
    mut test: impl FnMut(&Device) -> Result<()>,
) -> std::result::Result<Exploration, Box<ScheduleFailure>> {
    let max = bounds.max_schedules.max(1);
    let mut prefix = Vec::new();
    for index in 0..max {
        let device = Device::simulator_with(Schedule::Replay {
            choices: prefix.clone(),
        });
        let result = test(&device);
        let explorer = device
            .sim()
            .and_then(|sim| sim.config.explorer())
            .unwrap_or_default();
        if let Err(error) = result {
            return Err(Box::new(ScheduleFailure {
                index,
                schedule: Schedule::Replay {
                    choices: explorer.choices(),
                },
                error,
            }));
        }
        match explorer.next_prefix(bounds.max_preemptions) {
            Some(next) => prefix = next,
            None => {
                return Ok(Exploration {
                    schedules: index + 1,
                    complete: true,
                })
            }
        }
    }
    Ok(Exploration {
        schedules: max,
        complete: false,
    })
}
