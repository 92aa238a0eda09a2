//! Which blocks a traced launch records, and how many events per role: [`TraceOptions`].

use gpu_async_wire::trace::region_bytes;

use crate::error::{Error, Result};

/// Which blocks of the grid a traced launch records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceBlocks {
    /// Every block.
    All,
    /// Blocks `0, n, 2n, ...`: a sample across the whole launch (`n` at least 1).
    Every(u32),
    /// Blocks `0..n`: the first ones the GPU starts.
    First(u32),
}

/// What a traced launch records: which blocks, and how many events each role of each of them
/// keeps. An event is the start or the end of a wait or of a bulk copy; a role's run (its start
/// and end) is always kept. Events past `events_per_role` are dropped and counted
/// ([`RoleTimeline::dropped`](super::RoleTimeline::dropped)).
///
/// The default, one block in 64 and 256 events per role, is meant to keep a traced launch within
/// 3% of an untraced one (`docs/design.md`, *Tracing*, has the measurements) and its buffer small
/// (4 KiB per role of each traced block): 512 blocks of a 32768-block launch of a three-role
/// kernel are 6 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceOptions {
    /// The blocks traced.
    pub blocks: TraceBlocks,
    /// The events each role of each traced block keeps.
    pub events_per_role: u32,
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions {
            blocks: TraceBlocks::Every(64),
            events_per_role: 256,
        }
    }
}

impl TraceOptions {
    /// These options, tracing `blocks`.
    pub fn blocks(self, blocks: TraceBlocks) -> TraceOptions {
        TraceOptions { blocks, ..self }
    }

    /// These options, keeping `events` events per role of each traced block.
    pub fn events_per_role(self, events: u32) -> TraceOptions {
        TraceOptions {
            events_per_role: events,
            ..self
        }
    }
}

/// The trace of one launch laid out: block `b` is traced when `b % stride == 0` and `b / stride
/// < slots`, in slot `b / stride` of the buffer (see `gpu_async_wire::trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) stride: u32,
    pub(crate) slots: u32,
    pub(crate) capacity: u32,
    pub(crate) roles: u32,
}

impl Plan {
    /// The plan of `options` for a grid of `blocks` blocks of a kernel with `roles` roles; an
    /// error when its buffer cannot be addressed (`kernel` names the kernel).
    pub(crate) fn new(
        kernel: &'static str,
        options: TraceOptions,
        blocks: u32,
        roles: usize,
    ) -> Result<Plan> {
        let invalid = |reason: String| Error::InvalidLaunch { kernel, reason };
        let (stride, slots) = match options.blocks {
            TraceBlocks::All => (1, blocks),
            TraceBlocks::Every(0) => {
                return Err(invalid(
                    "`TraceBlocks::Every(0)` traces no block; every n-th block needs n >= 1"
                        .to_string(),
                ))
            }
            TraceBlocks::Every(n) => (n, blocks.div_ceil(n)),
            TraceBlocks::First(n) => (1, n.min(blocks)),
        };
        let roles = u32::try_from(roles).map_err(|_| invalid("too many roles".to_string()))?;
        // The kernel computes `slot * roles + role` and a region's size in 32-bit registers.
        let fits = u64::from(slots) * u64::from(roles) < u64::from(u32::MAX)
            && region_bytes(options.events_per_role) < u64::from(u32::MAX);
        if !fits {
            return Err(invalid(format!(
                "a trace of {slots} blocks of {roles} roles with {} events each is too large to \
                 address; trace fewer blocks or keep fewer events",
                options.events_per_role
            )));
        }
        Ok(Plan {
            stride,
            slots,
            capacity: options.events_per_role,
            roles,
        })
    }

    /// Whether block `block` is traced.
    pub(crate) fn traces(&self, block: u32) -> bool {
        block % self.stride == 0 && block / self.stride < self.slots
    }

    /// Bytes of the trace buffer.
    pub(crate) fn bytes(&self) -> u64 {
        u64::from(self.slots) * u64::from(self.roles) * region_bytes(self.capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_choose_the_blocks_the_options_name() {
        let plan = |blocks| Plan::new("k", TraceOptions::default().blocks(blocks), 130, 3);
        let every = plan(TraceBlocks::Every(64)).unwrap();
        assert_eq!((every.stride, every.slots), (64, 3));
        assert!(every.traces(0) && every.traces(128) && !every.traces(1) && !every.traces(192));
        let first = plan(TraceBlocks::First(200)).unwrap();
        assert_eq!((first.stride, first.slots), (1, 130));
        assert!(first.traces(129) && !first.traces(130));
        let all = plan(TraceBlocks::All).unwrap();
        assert_eq!(all.bytes(), 130 * 3 * (32 + 256 * 16));
        assert!(plan(TraceBlocks::Every(0)).is_err());
        let huge = Plan::new("k", TraceOptions::default().events_per_role(u32::MAX), 1, 1);
        assert!(matches!(huge, Err(Error::InvalidLaunch { .. })));
    }
}
