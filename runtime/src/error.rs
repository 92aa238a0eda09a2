//! Errors of the host runtime and of kernels run on it.

use std::fmt;

use crate::schedule::{Schedule, SCHEDULE_ENV};
use crate::tensor_map::TensorMapError;

/// The result type of every fallible operation of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between the host and a kernel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed.
    #[error("CUDA call `{call}` failed: {message}")]
    Cuda {
        /// The driver call (or cudarc operation) that failed.
        call: &'static str,
        /// What the driver said.
        message: String,
    },
    /// No CUDA driver or no CUDA device could be used.
    #[error("no usable CUDA device: {0}")]
    NoCudaDevice(String),
    /// The launch was rejected before anything was submitted.
    #[error("invalid launch of kernel `{kernel}`: {reason}")]
    InvalidLaunch {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
        /// What is wrong and what to do instead.
        reason: String,
    },
    /// A matrix parameter (`&Matrix<T>`, passed as a [`MatrixView`](crate::MatrixView)) cannot
    /// be described by the TMA tensor map of one of the boxes the kernel loads from it: the
    /// launch was rejected before anything was submitted, naming the parameter, the rule broken
    /// (see [`TileMapSpec::check`](crate::tensor_map::TileMapSpec::check)) and the fix, where the
    /// driver would only answer `CUDA_ERROR_INVALID_VALUE`.
    ///
    /// Displayed as e.g. ``invalid launch of kernel `m::k`: matrix `a`: its row stride, 200
    /// bytes, is not a multiple of 16 bytes: ...``.
    #[error("invalid launch of kernel `{kernel}`: {error}")]
    TensorMap {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
        /// The parameter and the rule it breaks.
        error: TensorMapError,
    },
    /// A host-side buffer operation was given the wrong sizes or devices.
    #[error("{0}")]
    Buffer(String),
    /// An argument belongs to another device or backend than the operation needs (e.g. events of
    /// two devices passed to [`Event::elapsed_ms`](crate::Event::elapsed_ms)).
    #[error("{0}")]
    InvalidArgument(String),
    /// The launch was cancelled with [`Launch::cancel`](crate::Launch::cancel) (or by dropping
    /// it unfinished). What the kernel wrote to its buffers is unspecified.
    #[error("the launch of kernel `{kernel}` was cancelled")]
    Cancelled {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
    },
    /// The launch finished, but whether it failed can no longer be told: its failure record was
    /// overwritten by the failure of a later launch of the same stream before the launch's
    /// outcome was read. Failures are reported exactly for up to 4096 launches in flight per
    /// stream (see `docs/design.md`, "The abort protocol"); read outcomes (await or
    /// [`Launch::wait`](crate::Launch::wait)) before more are submitted on the stream.
    #[error("the outcome of the launch of kernel `{kernel}` is unknown: {reason}")]
    OutcomeUnknown {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
        /// Why, e.g. which later launch overwrote the record.
        reason: String,
    },
    /// Every role of a block waits on another: the kernel can never finish.
    ///
    /// Displayed as e.g. ``kernel `m::k` deadlocked in block 0 (simulator schedule `random:7`;
    /// replay it with GPU_ASYNC_SIM_SCHEDULE=random:7):`` followed by one line per role.
    #[error(
        "kernel `{kernel}` deadlocked in block {block}{}:\n{}",
        SchedulePart(schedule.as_ref()),
        RoleWaits(waits)
    )]
    Deadlock {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
        /// The block in which the deadlock happened.
        block: u32,
        /// What each unfinished role waits on.
        waits: Vec<RoleWait>,
        /// On the simulator, the schedule under which the block deadlocked: a device of
        /// [`Device::simulator_with`](crate::Device::simulator_with) with it (or
        /// [`Device::simulator`](crate::Device::simulator) with [`SCHEDULE_ENV`] set to its
        /// `Display`) replays the launch the same way. `None` on the GPU (the watchdog found it).
        schedule: Option<Schedule>,
    },
    /// Kernel code panicked (an index out of bounds, an `unwrap` of `None`, an explicit `panic!`).
    ///
    /// Displayed as e.g. ``kernel `m::k` panicked in role `load` of block 3 (thread 37) at
    /// src/k.rs:12:9: index out of bounds``; the thread and the location are left out when they
    /// are unknown.
    #[error(
        "kernel `{kernel}` panicked in role `{role}` of block {block}{}{}: {message}",
        ThreadPart(*thread),
        LocationPart(location)
    )]
    KernelPanic {
        /// The kernel's path, `module::kernel`.
        kernel: &'static str,
        /// The role whose code panicked (`kernel` for the kernel body itself).
        role: String,
        /// The block in which it happened.
        block: u32,
        /// The panic message.
        message: String,
        /// `file:line:column` of the failed check in the user's source; `-` when unknown.
        location: String,
        /// The thread of the block that panicked (`tid.x`), when known: the GPU reports it, the
        /// simulator does not (it runs each role on one host thread).
        thread: Option<u32>,
    },
}

/// ` (thread N)` of a [`Error::KernelPanic`] message, or nothing.
struct ThreadPart(Option<u32>);

impl fmt::Display for ThreadPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(thread) => write!(f, " (thread {thread})"),
            None => Ok(()),
        }
    }
}

/// ` at file:line:column` of a [`Error::KernelPanic`] message, or nothing when unknown (`-`).
struct LocationPart<'a>(&'a str);

impl fmt::Display for LocationPart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            "" | "-" => Ok(()),
            location => write!(f, " at {location}"),
        }
    }
}

/// ` (simulator schedule `s`; replay it with ...)` of a [`Error::Deadlock`] message, or nothing.
struct SchedulePart<'a>(Option<&'a Schedule>);

impl fmt::Display for SchedulePart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(schedule) => write!(
                f,
                " (simulator schedule `{schedule}`; replay it with {SCHEDULE_ENV}={schedule})"
            ),
            None => Ok(()),
        }
    }
}

/// What one role of a deadlocked block was waiting on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleWait {
    /// The role's name (the async fn it runs).
    pub role: String,
    /// The warps the role runs on.
    pub warps: std::ops::Range<u32>,
    /// The wait, e.g. ``rx.recv() on channel `rx` ``; `finished` for a role that ended.
    pub waiting_on: String,
    /// `file:line:column` of the await in the user's source.
    pub location: String,
}

struct RoleWaits<'a>(&'a [RoleWait]);

impl fmt::Display for RoleWaits<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, w) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "  role `{}` (warps {}..{}) {} at {}",
                w.role, w.warps.start, w.warps.end, w.waiting_on, w.location
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panic(location: &str, thread: Option<u32>) -> Error {
        Error::KernelPanic {
            kernel: "m::k",
            role: "load".to_string(),
            block: 3,
            message: "index out of bounds".to_string(),
            location: location.to_string(),
            thread,
        }
    }

    #[test]
    fn a_tensor_map_error_names_the_kernel_the_parameter_and_the_rule() {
        use crate::tensor_map::TensorMapRule;
        let err = Error::TensorMap {
            kernel: "m::gemm",
            error: TensorMapError {
                param: "a".to_string(),
                rule: TensorMapRule::AddressAlignment { address: 0x1008 },
            },
        };
        assert_eq!(
            err.to_string(),
            "invalid launch of kernel `m::gemm`: matrix `a`: its address, 0x1008, is not a \
             multiple of 16 bytes: start the matrix at a 16-byte aligned address (round it up to \
             0x1010)"
        );
    }

    #[test]
    fn kernel_panic_display_leaves_out_what_is_unknown() {
        assert_eq!(
            panic("src/k.rs:12:9", Some(37)).to_string(),
            "kernel `m::k` panicked in role `load` of block 3 (thread 37) at src/k.rs:12:9: \
             index out of bounds"
        );
        assert_eq!(
            panic("-", None).to_string(),
            "kernel `m::k` panicked in role `load` of block 3: index out of bounds"
        );
        assert_eq!(
            panic("-", Some(0)).to_string(),
            "kernel `m::k` panicked in role `load` of block 3 (thread 0): index out of bounds"
        );
        assert_eq!(
            panic("a.rs:1:2", None).to_string(),
            "kernel `m::k` panicked in role `load` of block 3 at a.rs:1:2: index out of bounds"
        );
    }
}
