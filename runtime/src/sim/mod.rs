//! The simulator backend: runs a kernel's shadow code (the user's async fns over the real types of
//! [`crate::device`]) on the CPU, one block after another.
//!
//! Each block's kernel future is driven by a single-threaded, deterministic executor: `join!`
//! polls the roles in a fixed order, channels are bounded rings with the GPU's slot discipline, and
//! parallel iterators are plain loops. Every channel operation that changes state counts as
//! progress; when a whole round of polling makes none while roles are unfinished, every role is
//! waiting on another and the block can never finish: the launch fails with [`Error::Deadlock`],
//! naming each role and the await (with its source location) it is stuck on, instead of hanging.
//! A panic in kernel code (an index out of bounds, say) fails the launch with
//! [`Error::KernelPanic`] naming the role, the block and the panic's source location.
//!
//! To learn that location without printing the panic, the simulator installs a panic hook once
//! per process. It chains to the hook that was installed before it: a panic outside a simulated
//! kernel goes to the previous hook unchanged; one inside a simulated kernel is recorded for the
//! launch's error instead of printed. A program that later replaces the hook loses only the
//! location (the error then says `-`).

mod atomic;

pub use atomic::{AtomicScalar, AtomicView};

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::pin;
use std::sync::Once;
use std::task::{Context, Poll, Waker};

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result, RoleWait};
use crate::grid::Grid;
use crate::spec::{KernelScalar, KernelSpec};

/// What the running block knows about itself; one per host thread.
#[derive(Default)]
struct BlockState {
    block: u32,
    grid: u32,
    progress: u64,
    roles: Vec<RoleState>,
    current: Option<usize>,
}

struct RoleState {
    name: &'static str,
    warps: Range<u32>,
    finished: bool,
    wait: Option<(&'static str, &'static Location<'static>)>,
}

thread_local! {
    /// Set while this thread polls a simulated kernel: its panics are recorded, not printed.
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    /// Where the last captured panic happened.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CAPTURING.with(Cell::get) {
                let location = info.location().map(|l| l.to_string());
                PANIC_LOCATION.with(|p| *p.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
}

thread_local! {
    static BLOCK: RefCell<BlockState> = RefCell::new(BlockState { grid: 1, ..Default::default() });
}

fn with_block<R>(f: impl FnOnce(&mut BlockState) -> R) -> R {
    BLOCK.with(|b| f(&mut b.borrow_mut()))
}

/// `(block index, blocks in the grid)` of the running block; `(0, 1)` outside a launch.
pub(crate) fn block_position() -> (u32, u32) {
    with_block(|b| (b.block, b.grid))
}

/// A channel changed state (or a role finished): the block is not stuck.
pub(crate) fn note_progress() {
    with_block(|b| b.progress += 1);
}

/// The running role is about to return `Pending` from the await at `at`.
pub(crate) fn note_wait(what: &'static str, at: &'static Location<'static>) {
    with_block(|b| {
        if let Some(role) = b.current.and_then(|i| b.roles.get_mut(i)) {
            role.wait = Some((what, at));
        }
    });
}

pub(crate) fn register_roles(roles: impl Iterator<Item = (&'static str, Range<u32>)>) {
    with_block(|b| {
        b.roles = roles
            .map(|(name, warps)| RoleState {
                name,
                warps,
                finished: false,
                wait: None,
            })
            .collect();
        b.progress += 1;
    });
}

/// The order in which `join!` polls its `n` roles in this round.
pub(crate) fn poll_order(n: usize) -> Range<usize> {
    0..n
}

pub(crate) fn enter_role(index: usize) {
    with_block(|b| {
        b.current = Some(index);
        if let Some(role) = b.roles.get_mut(index) {
            role.wait = None;
        }
    });
}

/// Threads of the role being polled (32 per warp); 32 outside a role.
pub(crate) fn current_role_threads() -> usize {
    with_block(|b| {
        b.current
            .and_then(|i| b.roles.get(i))
            .map_or(32, |r| 32 * r.warps.len().max(1))
    })
}

pub(crate) fn leave_role() {
    with_block(|b| b.current = None);
}

pub(crate) fn role_finished(index: usize) {
    with_block(|b| {
        if let Some(role) = b.roles.get_mut(index) {
            role.finished = true;
        }
        b.progress += 1;
    });
}

/// A launch on the simulator: hands the generated launcher host views of the buffers and runs
/// the kernel's blocks.
pub struct SimTarget {
    spec: &'static KernelSpec,
    grid: Grid,
    device_id: u64,
}

impl SimTarget {
    pub(crate) fn new(spec: &'static KernelSpec, grid: Grid, device_id: u64) -> SimTarget {
        SimTarget {
            spec,
            grid,
            device_id,
        }
    }

    fn check_device<T: KernelScalar>(&self, name: &str, buf: &DeviceBuffer<T>) -> Result<()> {
        if buf.device_id() != self.device_id {
            return Err(Error::InvalidLaunch {
                kernel: self.spec.path,
                reason: format!(
                    "the buffer passed as `{name}` belongs to another device; upload it to the launch's device"
                ),
            });
        }
        Ok(())
    }

    fn not_simulated(&self, name: &str) -> Error {
        Error::InvalidLaunch {
            kernel: self.spec.path,
            reason: format!("the buffer passed as `{name}` does not live in the simulator"),
        }
    }

    /// The host view of a read-only slice parameter.
    pub fn view<'a, T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &'a DeviceBuffer<T>,
    ) -> Result<&'a [T]> {
        self.check_device(name, buf)?;
        buf.host_slice().ok_or_else(|| self.not_simulated(name))
    }

    /// The host view of a mutable slice parameter.
    pub fn view_mut<'a, T: KernelScalar>(
        &self,
        name: &'static str,
        buf: &'a mut DeviceBuffer<T>,
    ) -> Result<&'a mut [T]> {
        self.check_device(name, buf)?;
        let err = self.not_simulated(name);
        buf.host_slice_mut().ok_or(err)
    }

    /// Runs `block` once per block of the grid, in order, stopping at the first error.
    pub fn run_blocks(&mut self, mut block: impl FnMut(&mut SimBlock) -> Result<()>) -> Result<()> {
        let grid = self.grid.block_count();
        for index in 0..grid {
            with_block(|b| {
                *b = BlockState {
                    block: index,
                    grid,
                    ..Default::default()
                }
            });
            let result = block(&mut SimBlock {
                kernel: self.spec.path,
                block: index,
            });
            with_block(|b| {
                *b = BlockState {
                    grid: 1,
                    ..Default::default()
                }
            });
            result?;
        }
        Ok(())
    }
}

/// One block of a simulated launch.
pub struct SimBlock {
    kernel: &'static str,
    block: u32,
}

impl SimBlock {
    /// Drives the block's kernel future to completion on the deterministic scheduler.
    pub fn run<F: Future<Output = ()>>(&mut self, kernel: F) -> Result<()> {
        let mut kernel = pin!(kernel);
        let mut cx = Context::from_waker(Waker::noop());
        install_panic_hook();
        loop {
            let before = with_block(|b| b.progress);
            CAPTURING.with(|c| c.set(true));
            let polled = catch_unwind(AssertUnwindSafe(|| kernel.as_mut().poll(&mut cx)));
            CAPTURING.with(|c| c.set(false));
            match polled {
                Ok(Poll::Ready(())) => return Ok(()),
                Ok(Poll::Pending) => {
                    if with_block(|b| b.progress) == before {
                        return Err(self.deadlock());
                    }
                }
                Err(payload) => return Err(self.panic(payload)),
            }
        }
    }

    fn deadlock(&self) -> Error {
        let waits = with_block(|b| {
            b.roles
                .iter()
                .map(|r| {
                    let (waiting_on, location) = match (r.finished, r.wait) {
                        (true, _) => ("has finished".to_string(), String::from("-")),
                        (false, Some((what, at))) => (what.to_string(), at.to_string()),
                        (false, None) => (
                            "waits on a future outside gpu-async".to_string(),
                            "-".to_string(),
                        ),
                    };
                    RoleWait {
                        role: r.name.to_string(),
                        warps: r.warps.clone(),
                        waiting_on,
                        location,
                    }
                })
                .collect()
        });
        Error::Deadlock {
            kernel: self.kernel,
            block: self.block,
            waits,
        }
    }

    fn panic(&self, payload: Box<dyn std::any::Any + Send>) -> Error {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-string payload".to_string()
        };
        let role = with_block(|b| {
            b.current
                .and_then(|i| b.roles.get(i))
                .map_or_else(|| "kernel".to_string(), |r| r.name.to_string())
        });
        with_block(|b| b.current = None);
        Error::KernelPanic {
            kernel: self.kernel,
            role,
            block: self.block,
            message,
            location: PANIC_LOCATION
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "-".to_string()),
            thread: None,
        }
    }
}
