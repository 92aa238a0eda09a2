//! The kernel-side API: what code inside a `#[gpu_async]` module calls.
//!
//! Each item has two faces. The `#[gpu_async]` compiler knows every item here by name and lowers
//! it to PTX (a channel becomes a ring of shared-memory slots guarded by `mbarrier`s, `.await`
//! becomes a barrier wait, `par_iter` a loop spread over the role's threads). The same items are
//! also real Rust, which is what rustc type- and borrow-checks in the kernel's *shadow code* (the
//! user's own functions, emitted unchanged but for inferred type ascriptions), and what the
//! simulator runs: bounded channels with the same slot discipline, roles as tasks on a
//! deterministic scheduler, parallel iterators as plain loops.
//!
//! ```ignore
//! use gpu_async::device::*;
//! let (tx, rx) = channel::<[f32; 2048], 3>();   // a 3-slot ring of 8 KiB slots
//! ```

mod atomic_float;
mod barrier;
mod block;
mod channel;
mod concurrent;
mod lanes;
mod matrix;
mod mma;
mod oneshot;
mod par;
mod role;
mod scan;
mod shared;
mod shared_array;
mod split;
mod tiles;

pub use crate::matrix::TileScalar;
pub use atomic_float::{AtomicF32, AtomicF64};
pub use barrier::{barrier, Barrier, BarrierWait};
pub use block::{block_count, block_index};
pub use channel::{
    channel, CopyFrom, CopyTo, Payload, PayloadElem, Receiver, Recv, RecvSlot, Reserve, SendSlot,
    Sender,
};
#[doc(hidden)]
pub use concurrent::{
    join1, join2, join3, join4, join5, join6, join7, join8, select1, select2, select3, select4,
    select5, select6, select7, select8, Join1, Join2, Join3, Join4, Join5, Join6, Join7, Join8,
    Select1, Select2, Select3, Select4, Select5, Select6, Select7, Select8, Selected1, Selected2,
    Selected3, Selected4, Selected5, Selected6, Selected7, Selected8,
};
pub use half::{bf16, f16};
pub use lanes::{Lane, LaneValue, WarpOp, WARP_LANES};
pub use matrix::{Matrix, Tile};
pub use mma::{Accumulator, Fragment, Mma, MmaOperandA, MmaOutput, MmaScalar, Rows};
pub use oneshot::{oneshot, OneshotReceiver, OneshotRecv, OneshotSender};
#[doc(hidden)]
pub use par::run_now;
pub use par::{reduction_order, IntoParIter, ParItem, ParIter, ParScalar, ParSlice, ParSliceMut};
pub use role::{join_roles, on_warpgroups, on_warps, JoinRoles, Role};
pub use scan::scan_order;
pub use shared::{shared, Shared};
pub use shared_array::{shared_array, shared_array_2d, SharedArray, SharedArray2d, SharedElem};
#[doc(hidden)]
pub use split::split_disjoint_mut;
pub use tiles::{block_tiles, BlockTiles};

/// One iteration of a loop of kernel code: the shadow code calls this at the top of every
/// `loop`, `while` and `for` body of a `#[gpu_async]` module, so that the simulator can stop a
/// role that loops without awaiting (a cancelled launch, the watchdog). Nearly free: a
/// thread-local countdown, with a look at the launch's cancel flag and the clock every 1024
/// calls; nothing outside a simulated launch.
#[doc(hidden)]
#[track_caller]
#[inline]
pub fn __loop_tick() {
    crate::sim::tick(std::panic::Location::caller());
}

/// Float methods the kernel language has beyond the standard library's.
pub trait FloatExt: Copy {
    /// `1 / self.sqrt()`, each step correctly rounded: the same bits on the host, the simulator
    /// and the GPU.
    fn rsqrt(self) -> Self;
}

impl FloatExt for f32 {
    fn rsqrt(self) -> f32 {
        1.0 / self.sqrt()
    }
}

impl FloatExt for f64 {
    fn rsqrt(self) -> f64 {
        1.0 / self.sqrt()
    }
}

/// `f32` methods the kernel language has for the GPU's fast approximations.
pub trait F32Ext: Copy {
    /// `2^self`, fast: on the GPU one `ex2.approx.ftz.f32`, within 2 ulp of the exact value
    /// for normal results, with subnormal inputs read as 0 and subnormal results flushed to 0.
    /// The simulator computes the correctly rounded `2^self` and flushes a subnormal result to
    /// 0, so the two agree within that tolerance, not bit for bit. `-inf` gives 0 and a NaN a
    /// NaN on both.
    ///
    /// For the softmax of attention, where a few ulp of each weight do not show after the
    /// weights are rounded to `bf16`; [`f32::exp2`] is the correctly rounded one.
    fn exp2_approx(self) -> f32;
}

impl F32Ext for f32 {
    fn exp2_approx(self) -> f32 {
        let r = self.exp2();
        if r.is_subnormal() {
            0.0
        } else {
            r
        }
    }
}
