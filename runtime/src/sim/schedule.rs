//! How the simulator follows a [`Schedule`], the order in which it runs the roles of a block
//! (fixed, seeded random, or one schedule of a bounded exhaustive exploration): the simulator's
//! options, and the per-block picker of the next role with its random generator and explorer.

use std::sync::{Arc, Mutex};

use crate::schedule::{ParseScheduleError, Schedule, SCHEDULE_ENV};

impl Default for Schedule {
    /// `Random` with [`SimOptions::DEFAULT_SEED`].
    fn default() -> Schedule {
        Schedule::Random {
            seed: SimOptions::DEFAULT_SEED,
        }
    }
}

/// Options of a simulator [`Device`](crate::Device), given to
/// [`Device::simulator_with`](crate::Device::simulator_with).
///
/// ```
/// use gpu_async::{Device, Schedule, SimOptions};
/// let fixed = Device::simulator_with(Schedule::Fixed);
/// let seeded = Device::simulator_with(SimOptions::new(Schedule::Random { seed: 7 }));
/// assert_eq!(seeded.simulator_schedule(), Some(Schedule::Random { seed: 7 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SimOptions {
    /// The order of the roles within a block.
    pub schedule: Schedule,
}

impl SimOptions {
    /// The seed of the default schedule, `Random { seed: DEFAULT_SEED }`.
    pub const DEFAULT_SEED: u64 = 0x0005_EED0_F6A5;

    /// Options with `schedule`.
    pub fn new(schedule: Schedule) -> SimOptions {
        SimOptions { schedule }
    }

    /// The options [`Device::simulator`](crate::Device::simulator) uses: the schedule in
    /// [`SCHEDULE_ENV`] when it is set (and not empty), else the default
    /// (`Random { seed: DEFAULT_SEED }`). Fails with
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the variable holds something
    /// that is not a schedule.
    pub fn from_env() -> crate::Result<SimOptions> {
        match std::env::var(SCHEDULE_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(SimOptions::default()),
            Err(std::env::VarError::NotUnicode(value)) => {
                Err(crate::Error::InvalidArgument(format!(
                    "{SCHEDULE_ENV}: {}",
                    ParseScheduleError(format!("{value:?}"))
                )))
            }
            Ok(value) if value.trim().is_empty() => Ok(SimOptions::default()),
            Ok(value) => value
                .parse::<Schedule>()
                .map(SimOptions::new)
                .map_err(|e| crate::Error::InvalidArgument(format!("{SCHEDULE_ENV}: {e}"))),
        }
    }
}

impl Default for SimOptions {
    /// `Random { seed: DEFAULT_SEED }` (the environment is not read; see
    /// [`SimOptions::from_env`]).
    fn default() -> SimOptions {
        SimOptions::new(Schedule::default())
    }
}

impl From<Schedule> for SimOptions {
    fn from(schedule: Schedule) -> SimOptions {
        SimOptions::new(schedule)
    }
}

/// SplitMix64: small, fast, and good enough to pick roles.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next();
        rng
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        // The bias of a modulo does not matter here (`n` is a handful of roles).
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One choice point of a replayed schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The option taken.
    pub(crate) taken: u32,
    /// How many there were.
    pub(crate) options: u32,
    /// Whether option 0 was the running role continuing (so another option is a preemption).
    pub(crate) could_continue: bool,
}

/// The choices of a [`Schedule::Replay`] device: replayed from `prefix`, then option 0.
#[derive(Debug, Clone, Default)]
pub(crate) struct Explorer {
    prefix: Vec<u32>,
    /// The choices made so far, with their options.
    pub(crate) trace: Vec<Choice>,
}

impl Explorer {
    pub(crate) fn new(prefix: Vec<u32>) -> Explorer {
        Explorer {
            prefix,
            trace: Vec::new(),
        }
    }

    /// Picks among `options` (the running role first when `could_continue`).
    fn choose(&mut self, options: &[usize], could_continue: bool) -> usize {
        let Some(&first) = options.first() else {
            return 0;
        };
        if options.len() == 1 {
            return first;
        }
        let wanted = self.prefix.get(self.trace.len()).copied().unwrap_or(0) as usize;
        // A test whose control flow changed between runs may offer fewer options: take the last.
        let taken = wanted.min(options.len() - 1);
        self.trace.push(Choice {
            taken: taken as u32,
            options: options.len() as u32,
            could_continue,
        });
        options[taken]
    }

    /// The choices made so far, without the trailing zeros (what replays this schedule).
    pub(crate) fn choices(&self) -> Vec<u32> {
        let mut choices: Vec<u32> = self.trace.iter().map(|c| c.taken).collect();
        while choices.last() == Some(&0) {
            choices.pop();
        }
        choices
    }

    /// The prefix of the next schedule in depth-first order with at most `max_preemptions`
    /// preemptions, or `None` when every such schedule was run.
    pub(crate) fn next_prefix(&self, max_preemptions: u32) -> Option<Vec<u32>> {
        let mut used = Vec::with_capacity(self.trace.len() + 1);
        used.push(0u32);
        for c in &self.trace {
            let last = used.last().copied().unwrap_or(0);
            used.push(last + u32::from(c.could_continue && c.taken > 0));
        }
        (0..self.trace.len()).rev().find_map(|i| {
            let c = self.trace[i];
            let preempts = u32::from(c.could_continue);
            (c.taken + 1 < c.options && used[i] + preempts <= max_preemptions).then(|| {
                let mut prefix: Vec<u32> = self.trace[..i].iter().map(|c| c.taken).collect();
                prefix.push(c.taken + 1);
                prefix
            })
        })
    }
}

/// The per-block state of a schedule: picks the role of each step.
#[derive(Debug, Default)]
pub(crate) enum Picker {
    #[default]
    Fixed,
    Random(Rng),
    /// The device's explorer, shared by its launches.
    Replay(Arc<Mutex<Explorer>>),
}

impl Picker {
    /// Whether roles yield at every await on a channel (every schedule but the fixed one).
    pub(crate) fn yields(&self) -> bool {
        !matches!(self, Picker::Fixed)
    }

    /// The role of the next step among `candidates` (ascending, not empty). `last` is the role
    /// of the previous step when it can continue (it yielded, and picking another one is a
    /// preemption).
    pub(crate) fn pick(
        &mut self,
        candidates: &[usize],
        previous: Option<usize>,
        last: Option<usize>,
    ) -> usize {
        let first = candidates.first().copied().unwrap_or(0);
        match self {
            Picker::Fixed => {
                // Round robin from the role after the previous one: the old scheduler's rounds.
                let after = previous.map_or(0, |p| p + 1);
                candidates
                    .iter()
                    .copied()
                    .find(|&c| c >= after)
                    .unwrap_or(first)
            }
            Picker::Random(rng) => candidates
                .get(rng.below(candidates.len()))
                .copied()
                .unwrap_or(first),
            Picker::Replay(explorer) => {
                let continuing = last.filter(|l| candidates.contains(l));
                let mut options: Vec<usize> = Vec::with_capacity(candidates.len());
                options.extend(continuing);
                options.extend(
                    candidates
                        .iter()
                        .copied()
                        .filter(|&c| Some(c) != continuing),
                );
                match explorer.lock() {
                    Ok(mut explorer) => explorer.choose(&options, continuing.is_some()),
                    Err(poisoned) => poisoned.into_inner().choose(&options, continuing.is_some()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(prefix: Vec<u32>, points: &[(&[usize], Option<usize>)]) -> (Vec<usize>, Explorer) {
        let shared = Arc::new(Mutex::new(Explorer::new(prefix)));
        let mut picker = Picker::Replay(shared.clone());
        let picked = points
            .iter()
            .map(|(c, last)| picker.pick(c, *last, *last))
            .collect();
        let explorer = shared.lock().unwrap().clone();
        (picked, explorer)
    }

    #[test]
    fn replays_enumerate_depth_first_within_the_preemption_bound() {
        // Two points where no role can continue (free switches) of two options each: four
        // schedules whatever the bound.
        let points: &[(&[usize], Option<usize>)] = &[(&[0, 1], None), (&[0, 1], None)];
        let mut prefix = Some(Vec::new());
        let mut seen = Vec::new();
        while let Some(p) = prefix {
            let (picked, explorer) = run(p, points);
            seen.push(picked);
            prefix = explorer.next_prefix(0);
        }
        assert_eq!(seen, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);

        // Two points where role 0 could continue: switching is a preemption.
        let points: &[(&[usize], Option<usize>)] = &[(&[0, 1], Some(0)), (&[0, 1], Some(0))];
        for (bound, expected) in [(0, 1), (1, 3), (2, 4)] {
            let mut prefix = Some(Vec::new());
            let mut count = 0;
            while let Some(p) = prefix {
                let (_, explorer) = run(p, points);
                count += 1;
                prefix = explorer.next_prefix(bound);
            }
            assert_eq!(count, expected, "bound {bound}");
        }
    }

    #[test]
    fn the_running_role_is_option_zero() {
        let (picked, explorer) = run(vec![0, 1], &[(&[0, 1, 2], Some(2)), (&[0, 1, 2], Some(2))]);
        assert_eq!(picked, vec![2, 0]);
        assert_eq!(explorer.choices(), vec![0, 1]);
    }

    #[test]
    fn the_fixed_order_is_round_robin() {
        let mut picker = Picker::Fixed;
        assert_eq!(picker.pick(&[0, 1, 2], None, None), 0);
        assert_eq!(picker.pick(&[0, 1, 2], Some(0), Some(0)), 1);
        assert_eq!(picker.pick(&[0, 2], Some(2), None), 0);
    }
}
