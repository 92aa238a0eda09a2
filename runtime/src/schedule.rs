//! The simulator's schedules as values: [`Schedule`], its text syntax, and the environment
//! variable that sets one. Apart from the simulator that follows them (`sim`), because errors
//! name the schedule that replays a deadlock, and the simulator reports its errors.

use std::fmt;
use std::str::FromStr;

/// The environment variable that sets the schedule of [`Device::simulator`](crate::Device::simulator)
/// (and of the simulator [`Device::default`](crate::Device::default) falls back to): a value in
/// the syntax of [`Schedule`]'s `Display`, e.g. `GPU_ASYNC_SIM_SCHEDULE=random:42` or
/// `GPU_ASYNC_SIM_SCHEDULE=replay:0.2.1`. A deadlock the simulator reports says which value
/// replays it. Devices made with [`Device::simulator_with`](crate::Device::simulator_with) do
/// not read it.
pub const SCHEDULE_ENV: &str = "GPU_ASYNC_SIM_SCHEDULE";

/// How the simulator orders the roles of a block (see [`SimOptions`](crate::SimOptions)).
///
/// A role *step* runs one role from one `.await` on a channel (`reserve()` or `recv()`) to the
/// next one, or until it waits or finishes. Between steps the schedule picks the role of the next
/// step among those that can move (a role waiting on a channel is not picked again until that
/// channel changes). When no role can move while some are unfinished, the block is deadlocked.
///
/// `Display` and `FromStr` use the syntax of [`SCHEDULE_ENV`]: `fixed`, `random:<seed>` (or just
/// `<seed>`), and `replay:<c0>.<c1>...` (e.g. `replay:0.0.1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// The roles in their `join!` order, round after round, each running until it waits or
    /// finishes (it never yields at an await that can complete): the simulator's first
    /// scheduler.
    Fixed,
    /// At every await on a channel the running role yields, and the role of the next step is
    /// drawn at random (uniformly) among those that can move; so both the order of the roles and
    /// how many steps one runs before another are random. Block `b` of a launch draws from a
    /// generator seeded with `seed` and `b`: the same seed gives the same schedule for every
    /// launch of a kernel on every machine, whatever ran before.
    Random {
        /// The seed.
        seed: u64,
    },
    /// One schedule of an exhaustive exploration ([`explore`](crate::explore)), by its choices:
    /// the roles yield at every await; at the `i`-th step where more than one role can move,
    /// option `choices[i]` is taken (option 0 is the role that ran the previous step when it can
    /// continue, then the other roles that can move in their `join!` order), and option 0 after
    /// the last choice. The choices run on across the blocks and launches of the device, in the
    /// order they run; so a replay device must run the same launches as the exploration's test.
    Replay {
        /// The option taken at each choice point.
        choices: Vec<u32>,
    },
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Fixed => f.write_str("fixed"),
            Schedule::Random { seed } => write!(f, "random:{seed}"),
            Schedule::Replay { choices } => {
                f.write_str("replay:")?;
                if choices.is_empty() {
                    return f.write_str("0");
                }
                for (i, c) in choices.iter().enumerate() {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    write!(f, "{c}")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a string is not a [`Schedule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseScheduleError(pub(crate) String);

impl fmt::Display for ParseScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a simulator schedule: write `fixed`, `random:<seed>`, `<seed>` or \
             `replay:<choice>.<choice>...`",
            self.0
        )
    }
}

impl std::error::Error for ParseScheduleError {}

impl FromStr for Schedule {
    type Err = ParseScheduleError;

    fn from_str(s: &str) -> Result<Schedule, ParseScheduleError> {
        let err = || ParseScheduleError(s.to_string());
        let text = s.trim();
        let (head, rest) = match text.split_once(':') {
            Some((head, rest)) => (head.trim(), Some(rest.trim())),
            None => (text, None),
        };
        match (head, rest) {
            ("fixed", None) => Ok(Schedule::Fixed),
            ("random", Some(seed)) => seed
                .parse::<u64>()
                .map(|seed| Schedule::Random { seed })
                .map_err(|_| err()),
            ("replay", Some(choices)) => {
                let mut parsed = choices
                    .split('.')
                    .map(|c| c.trim().parse::<u32>().map_err(|_| err()))
                    .collect::<Result<Vec<u32>, _>>()?;
                // Option 0 is what a replay takes after its last choice anyway.
                while parsed.last() == Some(&0) {
                    parsed.pop();
                }
                Ok(Schedule::Replay { choices: parsed })
            }
            (seed, None) => seed
                .parse::<u64>()
                .map(|seed| Schedule::Random { seed })
                .map_err(|_| err()),
            _ => Err(err()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_print_and_parse_back() {
        for s in [
            Schedule::Fixed,
            Schedule::Random { seed: 42 },
            Schedule::Replay {
                choices: vec![0, 2, 1],
            },
            Schedule::Replay { choices: vec![] },
        ] {
            assert_eq!(s.to_string().parse::<Schedule>(), Ok(s));
        }
        assert_eq!("17".parse::<Schedule>(), Ok(Schedule::Random { seed: 17 }));
        assert_eq!(
            "replay:1.0.0".parse::<Schedule>(),
            Ok(Schedule::Replay { choices: vec![1] })
        );
        for bad in [
            "", "random", "random:x", "fixed:1", "replay:a", "replay", "x:1",
        ] {
            let err = bad.parse::<Schedule>().unwrap_err();
            assert!(
                err.to_string().contains("not a simulator schedule"),
                "{err}"
            );
        }
    }
}
