//! The verifier's errors: one [`VerifyError`] per violated invariant, naming what it concerns
//! (the role, channel, value, site, loop or barrier) in typed fields, and displayed as the
//! words of the internal-error report. Separate from the checks so that the list of invariants
//! reads in one place.

use std::fmt;

use crate::ir::{BinOp, ChannelId, LoopId, RoleId, SiteId, SiteKind, Space, UnOp, Value};
use crate::types::Scalar;

/// One violated invariant of a kernel's IR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    // The block: its warps, their roles, its shared memory.
    /// A block of no warps, or of more than 32.
    Warps { warps: u32 },
    /// A role's warp range is empty or runs past the block.
    RoleWarps {
        role: RoleId,
        name: String,
        first_warp: u32,
        end_warp: u32,
    },
    /// Two roles take one warp.
    WarpOwners {
        warp: u32,
        first: RoleId,
        second: RoleId,
    },
    /// A warp runs no role, in a kernel without idle warps.
    IdleWarp,
    /// More shared memory than an SM has.
    SharedBytes { bytes: u32 },

    // Channels as declared.
    /// A channel without a producer, without consumers, or whose producer consumes it.
    ChannelEnds { channel: ChannelId },
    /// A channel's slots, barriers or state words are misaligned.
    ChannelMisaligned { channel: ChannelId },
    /// A channel's slots or state words lie past the shared memory.
    ChannelOutsideShared { channel: ChannelId },
    /// A tile load into a channel whose payload is not a tile, from a parameter that is not a
    /// matrix of the tile's element, or through a tensor map the matrix does not have or whose
    /// box is not the tile's shape.
    TileLoadMap {
        channel: ChannelId,
        param: u32,
        map: u32,
    },
    /// A tile store from a channel whose payload is not a tile into a parameter that is not a
    /// `&mut Matrix<T>` of the tile's element, or through a tensor map the matrix does not have
    /// or whose box is not the tile's shape.
    TileStoreMap {
        channel: ChannelId,
        param: u32,
        map: u32,
    },
    /// A tensor-core mma outside role code of whole warpgroups, or in a parallel loop.
    MmaOutsideWarpgroups,
    /// An mma whose N is not a `wgmma` shape, whose accumulator is not `n / 2` values, or whose
    /// inputs are not 16-bit floats.
    MmaShape { n: u32, values: usize },

    // The sites and values instructions name.
    /// A site of the wrong kind.
    SiteKind {
        site: SiteId,
        found: SiteKind,
        needed: SiteKind,
    },
    /// A site that does not exist.
    NoSite { site: SiteId },
    /// A value of the wrong type; `what` says what the value is for.
    ValueType {
        what: &'static str,
        value: Value,
        found: Scalar,
        needed: Scalar,
    },
    /// A value that is not declared; `what` says what it is for, where the check says.
    Undeclared {
        what: Option<&'static str>,
        value: Value,
    },
    /// A value used where no definition reaches.
    UsedBeforeDefined { value: Value },

    // Channel ends, as instructions use them.
    /// A channel operation inside a parallel loop.
    ChannelInParallelLoop { channel: ChannelId },
    /// A channel that does not exist.
    NoChannel { channel: ChannelId },
    /// A role (or code outside any role) uses an end of the channel it does not own.
    NotChannelOwner {
        channel: ChannelId,
        role: Option<RoleId>,
        sending: bool,
    },

    // Instructions and their operands.
    /// A shuffle outside a lane loop.
    ShuffleOutsideLanes,
    /// A vote outside a lane loop.
    VoteOutsideLanes,
    /// A copy between values of different types.
    CopyTypes { dst: Value, src: Value },
    /// A unary operation on an operand it does not take, or to a result of another type.
    UnaryOperand { op: UnOp, src: Value },
    /// A binary operation on operands (or to a result) of types it does not take.
    BinaryOperands {
        op: BinOp,
        lhs: Scalar,
        rhs: Scalar,
        dst: Scalar,
    },
    /// An `fma` that is not of floats.
    FmaType { dst: Value, ty: Scalar },
    /// A read-modify-write in role code not marked to run once for the role, or an atomic
    /// marked so (`once`) in a parallel loop, outside a role, or that is a load.
    AtomicOnceOutsideRoleCode { once: bool },
    /// A select whose arms and result differ in type.
    SelectTypes { dst: Value },
    /// A bitcast between sizes, or to `bool`.
    BitcastSizes { dst: Value, src: Value },
    /// A store outside local memory other than a parallel loop's write by index (of a shared
    /// array's or a slice's element).
    StoreOutsideLocal { space: Space },
    /// A shared array that does not exist.
    NoSharedArray { array: u32 },
    /// A shared array that is misaligned or lies outside the shared memory.
    SharedArrayOutsideShared { array: u32 },
    /// A shared-array access mark that the barrier placement did not remove.
    ArrayAccessLeft { array: u32 },
    /// A scan whose destination is not a written source of its loop.
    ScanDestination { dst: usize },
    /// An element stored by the role's first thread outside role code.
    RoleStoreOutsideRole,
    /// A shared value that does not exist.
    NoSharedValue { cell: u32 },
    /// A shared value written in a parallel loop or outside role code.
    SharedValueOutsideRole,
    /// A constant table that does not exist.
    NoConstTable { table: u32 },
    /// A local address past the thread's local memory.
    LocalAddressPastEnd { offset: u32 },
    /// `break` or `continue` of a loop that does not enclose it.
    NotEnclosingLoop { id: LoopId },
    /// A `select!` in a role of several warps, each of which would choose an arm.
    SelectInWideRole { role: Option<RoleId> },
    /// A `select!` over no channels or more than 32.
    SelectChannels { count: usize },
    /// A `join!` in a parallel loop or outside role code.
    JoinOutsideRole,
    /// A `join!` inside a branch of another.
    NestedJoin,
    /// A `join!` branch that makes the role's warps meet (its state machine runs per warp).
    JoinBranchMeetsRole,
    /// A one-shot sent outside its sender role (or in a parallel loop).
    OneshotSender { oneshot: u32 },
    /// A one-shot received outside its receiver role (or in a parallel loop).
    OneshotReceiver { oneshot: u32 },
    /// A role waits at a barrier between roles that it does not take.
    BarrierNotTaken { role: RoleId, barrier: u32 },
    /// A barrier between roles that does not exist.
    NoBarrier { barrier: u32 },
    /// A barrier wait in a parallel loop or outside role code.
    BarrierWaitOutsideRole,
    /// A role of several warps meets at a role barrier without a barrier for it.
    NoRoleMbarrier { role: RoleId, name: String },
    /// A role barrier in a parallel loop or outside role code.
    RoleBarrierOutsideRole,
    /// A parallel loop inside another.
    NestedParallelLoop,
    /// A parallel loop without sources or an index.
    ParallelLoopWithoutSources,
    /// A lane loop with a reduction.
    LaneLoopReduction,
    /// A reduction whose combining block has a loop.
    CombineLoops,

    // Register budgets.
    /// An invariant of the register budgets or of the blocks per SM, in
    /// [`crate::registers::invariants`]'s words.
    Registers(String),
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use VerifyError as E;
        match self {
            E::Warps { warps } => write!(f, "{warps} warps per block"),
            E::RoleWarps {
                name,
                first_warp,
                end_warp,
                ..
            } => write!(f, "role {name} has warps {first_warp}..{end_warp}"),
            E::WarpOwners {
                warp,
                first,
                second,
            } => write!(
                f,
                "warp {warp} belongs to roles {} and {}",
                first.0, second.0
            ),
            E::IdleWarp => f.write_str("a warp runs no role"),
            E::SharedBytes { bytes } => write!(f, "{bytes} B of shared memory"),
            E::ChannelEnds { channel } => write!(
                f,
                "channel {} needs distinct producer and consumer roles",
                channel.0
            ),
            E::ChannelMisaligned { channel } => write!(f, "channel {} is misaligned", channel.0),
            E::TileStoreMap {
                channel,
                param,
                map,
            } => write!(
                f,
                "tile store from channel {} through map {map} of parameter {param}, which is not a `&mut Matrix` with a tensor map of the shape of the tile's column blocks",
                channel.0
            ),
            E::TileLoadMap {
                channel,
                param,
                map,
            } => write!(
                f,
                "tile load into channel {} through map {map} of parameter {param}, which is not a tensor map of the shape of the tile's column blocks",
                channel.0
            ),
            E::ChannelOutsideShared { channel } => {
                write!(f, "channel {} lies outside the shared memory", channel.0)
            }
            E::MmaOutsideWarpgroups => f.write_str(
                "a tensor-core mma outside role code of whole warpgroups, or in a parallel loop",
            ),
            E::MmaShape { n, values } => write!(
                f,
                "an mma of shape m64n{n}k16 with {values} accumulator values, which is not a wgmma shape on 16-bit floats"
            ),
            E::SiteKind {
                site,
                found,
                needed,
            } => write!(
                f,
                "{site} is a {found:?} site where a {needed:?} site is needed"
            ),
            E::NoSite { site } => write!(f, "{site} does not exist"),
            E::ValueType {
                what,
                value,
                found,
                needed,
            } => write!(f, "{what} {value} is a {found} where a {needed} is needed"),
            E::Undeclared {
                what: Some(what),
                value,
            } => write!(f, "{what} {value} is not declared"),
            E::Undeclared { what: None, value } => write!(f, "{value} is not declared"),
            E::UsedBeforeDefined { value } => write!(f, "{value} is used before it is defined"),
            E::ChannelInParallelLoop { channel } => {
                write!(f, "channel operation on {channel} inside a parallel loop")
            }
            E::NoChannel { channel } => write!(f, "{channel} does not exist"),
            E::NotChannelOwner { channel, .. } => {
                write!(f, "{channel} is used by a role that does not own that end")
            }
            E::ShuffleOutsideLanes => f.write_str("a shuffle outside a lane loop"),
            E::VoteOutsideLanes => f.write_str("a vote outside a lane loop"),
            E::CopyTypes { dst, src } => write!(f, "copy {dst} = {src} between types"),
            E::UnaryOperand { op, src } => write!(f, "bad unary {op:?} on {src}"),
            E::BinaryOperands { op, lhs, rhs, dst } => {
                write!(f, "bad operand types for {op:?}: {lhs}, {rhs} -> {dst}")
            }
            E::FmaType { dst, ty } => write!(f, "fma {dst} of type {ty}"),
            E::AtomicOnceOutsideRoleCode { once: true } => f.write_str(
                "an atomic marked to run once for the role outside role code, or a load so marked",
            ),
            E::AtomicOnceOutsideRoleCode { once: false } => f.write_str(
                "a read-modify-write atomic in role code not marked to run once for the role",
            ),
            E::SelectTypes { dst } => write!(f, "select {dst} between types"),
            E::BitcastSizes { dst, src } => write!(f, "bitcast {dst} = {src} between sizes"),
            E::StoreOutsideLocal { space } => write!(
                f,
                "a store to {space:?} memory outside local memory and a parallel loop"
            ),
            E::NoSharedArray { array } => write!(f, "shared array a{array} does not exist"),
            E::SharedArrayOutsideShared { array } => write!(
                f,
                "shared array a{array} is misaligned or lies outside the shared memory"
            ),
            E::ArrayAccessLeft { array } => {
                write!(
                    f,
                    "an access mark of shared array a{array} is left in the IR"
                )
            }
            E::ScanDestination { dst } => {
                write!(
                    f,
                    "a scan's destination {dst} is not a written source of its loop"
                )
            }
            E::RoleStoreOutsideRole => {
                f.write_str("an element stored once per role outside role code")
            }
            E::NoSharedValue { cell } => write!(f, "shared value {cell} does not exist"),
            E::SharedValueOutsideRole => f.write_str("a shared value is written outside role code"),
            E::NoConstTable { table } => write!(f, "constant table {table} does not exist"),
            E::LocalAddressPastEnd { offset } => {
                write!(f, "local address {offset} past the local memory")
            }
            E::NotEnclosingLoop { id } => write!(f, "{id} is not an enclosing loop"),
            E::SelectInWideRole { .. } => f.write_str("a select in a role of several warps"),
            E::SelectChannels { count } => write!(f, "select over {count} channels"),
            E::JoinOutsideRole => f.write_str("a join outside role code"),
            E::NestedJoin => f.write_str("a join inside a join"),
            E::JoinBranchMeetsRole => {
                f.write_str("a join branch meets the role's other warps (a role barrier)")
            }
            E::OneshotSender { oneshot } => {
                write!(f, "one-shot o{oneshot} is sent outside its sender role")
            }
            E::OneshotReceiver { oneshot } => {
                write!(
                    f,
                    "one-shot o{oneshot} is received outside its receiver role"
                )
            }
            E::BarrierNotTaken { role, barrier } => write!(
                f,
                "role {} waits at barrier b{barrier}, which it does not take",
                role.0
            ),
            E::NoBarrier { barrier } => write!(f, "barrier b{barrier} does not exist"),
            E::BarrierWaitOutsideRole => f.write_str("a barrier wait outside role code"),
            E::NoRoleMbarrier { name, .. } => {
                write!(
                    f,
                    "role {name} has a role barrier but no barrier for it (an mbarrier, or the block's where it is the kernel's only role)"
                )
            }
            E::RoleBarrierOutsideRole => f.write_str("a role barrier outside role code"),
            E::NestedParallelLoop => f.write_str("nested parallel loop"),
            E::ParallelLoopWithoutSources => {
                f.write_str("parallel loop without sources or an index")
            }
            E::LaneLoopReduction => f.write_str("a lane loop with a reduction"),
            E::CombineLoops => f.write_str("a reduction's combine block loops"),
            E::Registers(problem) => f.write_str(problem),
        }
    }
}

impl std::error::Error for VerifyError {}
