//! The role/channel IR: a kernel after lowering. Each role is a structured block of instructions
//! over virtual registers ([`Value`]s), with channel operations kept abstract (`reserve`, `send`,
//! `recv`, ...) so that the PTX writer owns the ring positions and phase bits, and data-parallel
//! loops kept as [`ParFor`] so that the writer chooses how to spread and vectorize them.
//!
//! Entities are typed indices; `Display` prints the textual IR that the snapshots record.

mod display;
mod graph;

use crate::types::{ChanTy, Scalar};

/// A virtual register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A channel of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChannelId(pub u32);

/// A role of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoleId(pub u32);

/// A place in the user's source the GPU can report (a panic, or a wait the watchdog stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SiteId(pub u32);

/// What a [`Site`] is: a failed check that stops the kernel, or a barrier wait the watchdog
/// bounds. The runtime decodes the same kinds.
pub use gpu_async_wire::SiteKind;

/// A reportable place: its kind, its message, and the user's tokens it comes from.
#[derive(Debug, Clone)]
pub struct Site {
    /// Panic or wait.
    pub kind: SiteKind,
    /// The panic message, or what is waited for.
    pub message: String,
    /// The user's tokens (the generated code asks rustc for their file, line and column).
    pub span: proc_macro2::Span,
}

/// A loop, the target of `break` and `continue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoopId(pub u32);

/// A lowered kernel.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The entry's name.
    pub name: String,
    /// Warps per block.
    pub warps: u32,
    /// Warps without a role are intended (`#[kernel(.., idle_warps)]`); they leave at once.
    pub idle_warps: bool,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// The type (and a name hint) of every value.
    pub values: Vec<ValueInfo>,
    /// The channels.
    pub channels: Vec<Channel>,
    /// Code every thread runs before the roles start (kernel-level scalars).
    pub prologue: Block,
    /// The roles, in `join!` order.
    pub roles: Vec<Role>,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// Each role's barrier (roles of several warps that need one).
    pub role_barriers: Vec<Option<RoleBarrier>>,
    /// Shared-memory offset of each role's reduction scratch (8 bytes per warp; roles of several
    /// warps that reduce).
    pub reduce_scratch: Vec<Option<u32>>,
    /// The sites the GPU can report, indexed by [`SiteId`].
    pub sites: Vec<Site>,
    /// Bytes of local memory per thread for local arrays indexed at run time.
    pub local_bytes: u32,
    /// The module's `static` tables this kernel reads, in constant memory.
    pub const_tables: Vec<ConstTable>,
    /// The block's shared values (`shared::<T>()`): their types; cell `k` is at
    /// `cells_offset + 8 k` in shared memory.
    pub shared_cells: Vec<Scalar>,
    /// See `shared_cells`.
    pub cells_offset: u32,
    /// The block's shared arrays (`shared_array::<T, N>()`), zeroed when the block starts.
    pub shared_arrays: Vec<SharedArray>,
    /// The barriers between roles.
    pub barriers: Vec<KernelBarrier>,
    /// The roles' register budgets (`setmaxnreg`), when the kernel has them: set after lowering
    /// by [`crate::registers`].
    pub registers: Option<RegisterBudgets>,
    /// `.minnctapersm`: the blocks an SM must be able to hold, from `min_blocks_per_sm = N` or
    /// from the blocks shared memory admits; set after lowering by [`crate::registers`].
    pub min_blocks_per_sm: Option<u32>,
}

/// How the warps of a role meet at its role barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleBarrier {
    /// An mbarrier at this shared-memory offset, expecting one arrival per warp of the role. Its
    /// wait watches the abort word: a role whose other warps stopped cannot hang there.
    Mbarrier(u32),
    /// `bar.sync 0`, for a kernel's only role: every thread of the block takes part, and a thread
    /// that exits (warps without a role, a role leaving through its abort exit) releases the
    /// threads that wait for it, so it cannot hang either. It takes no shared memory and no
    /// initialization, and costs a warp one instruction where the mbarrier's arrival and wait
    /// take a dozen.
    Block,
}

impl RoleBarrier {
    /// The mbarrier's shared-memory offset, if it is one.
    pub fn mbarrier_offset(self) -> Option<u32> {
        match self {
            RoleBarrier::Mbarrier(offset) => Some(offset),
            RoleBarrier::Block => None,
        }
    }
}

/// Registers per thread for each role, set with `setmaxnreg` at the start of its region (sm_90a).
/// Every role is made of whole warpgroups (4 warps from a multiple of 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBudgets {
    /// Registers per thread at the entry (`.maxnreg`): the 64K-register file shared by the
    /// block's threads, in multiples of 8, at most 255.
    pub entry: u32,
    /// Each role's registers per thread, in `join!` order.
    pub roles: Vec<u32>,
    /// Written in `#[kernel(.., registers(..))]` rather than derived from the roles.
    pub explicit: bool,
}

impl Kernel {
    /// The barrier of one-shot value `k` (the one-shot barriers follow the plain ones).
    pub fn oneshot_barrier(&self, k: u32) -> Option<&KernelBarrier> {
        self.barriers
            .iter()
            .filter(|b| b.receiver.is_some())
            .nth(k as usize)
    }

    /// Whether a role issues tensor-core mmas (`wgmma`, an sm_90a instruction).
    pub fn uses_mma(&self) -> bool {
        let mut found = false;
        for r in &self.roles {
            for_each_inst(&r.body, &mut |i| found |= matches!(i, Inst::Mma { .. }));
        }
        found
    }

    /// The type of `v`.
    pub fn ty(&self, v: Value) -> Scalar {
        self.values[v.0 as usize].ty
    }

    /// The channel `c`.
    pub fn channel(&self, c: ChannelId) -> &Channel {
        &self.channels[c.0 as usize]
    }
}

/// A block-shared array: its elements, shape and place in shared memory.
#[derive(Debug, Clone)]
pub struct SharedArray {
    /// Its local's name, for messages.
    pub name: String,
    /// The element's scalar.
    pub elem: Scalar,
    /// The elements are atomics.
    pub atomic: bool,
    /// Rows (1 for a 1D array).
    pub rows: u32,
    /// Elements per row.
    pub cols: u32,
    /// Elements from one row to the next: `cols`, plus one of padding where a row is a multiple
    /// of 128 bytes (so that a warp reading a column reads 32 banks).
    pub row_stride: u32,
    /// Offset in the block's shared memory (16-byte aligned); set by the layout.
    pub offset: u32,
}

impl SharedArray {
    /// Bytes it takes, padding included.
    pub fn bytes(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.row_stride) * u64::from(self.elem.size())
    }
}

/// How an instruction touches a shared array, for the role barriers between accesses
/// ([`Inst::ArrayAccess`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArrayAccess {
    /// Plain or atomic loads.
    Read,
    /// Plain stores, atomic stores, swaps and compare-and-swaps.
    Write,
    /// Read-modify-writes of one kind (`add`/`sub`, `max`, `min`, `and`, `or`, `xor`), which
    /// commute with each other.
    Update(u8),
}

/// A value's declaration.
#[derive(Debug, Clone)]
pub struct ValueInfo {
    /// Its type.
    pub ty: Scalar,
    /// The user's name, where the value holds a named local.
    pub name: Option<String>,
}

/// A kernel parameter.
#[derive(Debug, Clone)]
pub struct Param {
    /// The user's name.
    pub name: String,
    /// How it is passed and which values hold it.
    pub kind: ParamKind,
}

/// How a parameter is passed.
#[derive(Debug, Clone)]
pub enum ParamKind {
    /// A scalar in one value.
    Scalar(Value),
    /// A slice in global memory: its address (`usize`, converted to a global address) and length.
    Slice {
        /// Element type.
        elem: Scalar,
        /// `&mut [T]`.
        mutable: bool,
        /// The address.
        ptr: Value,
        /// The length in elements.
        len: Value,
    },
    /// A matrix (`&Matrix<T>`, or `&mut Matrix<T>`): its address (`usize`), rows and columns
    /// (`usize`), then one tensor map per tile shape its loads and stores use, each a 128-byte
    /// parameter of its own.
    Matrix {
        /// Element type.
        elem: Scalar,
        /// `&mut Matrix<T>`.
        mutable: bool,
        /// The address.
        ptr: Value,
        /// Rows.
        rows: Value,
        /// Columns.
        cols: Value,
        /// The boxes of its tensor maps, in the order of the parameters that pass them.
        boxes: Vec<gpu_async_wire::TileBox>,
    },
}

impl ParamKind {
    /// The PTX parameters it takes, in declaration order: 1 for a scalar, 2 for a slice (address,
    /// length), 3 for a matrix (address, rows, columns) and then one per tensor map.
    pub fn ptx_params(&self) -> usize {
        match self {
            ParamKind::Scalar(_) => 1,
            ParamKind::Slice { .. } => 2,
            ParamKind::Matrix { boxes, .. } => 3 + boxes.len(),
        }
    }
}

/// The most a kernel's IR may count (its roles' code with their helpers inlined, as
/// `gpu-async-inspect` prints it), each instruction counting its [`Inst::cost`]. The phases after
/// lowering take time in proportion to the code, the PTX writer most, and ptxas and the driver
/// take seconds or more on the tens of megabytes of PTX a larger kernel would be: the costs are
/// set so that one counts about 60 B of PTX, and this is up to about 4 MB. The largest kernel of
/// the repository's examples and tests counts about 33,000 (2,095 instructions, most of them
/// `f64` functions in a parallel loop). The lowering reports a kernel past it.
pub const MAX_KERNEL_INSTS: usize = 65_536;

/// What an instruction of a parallel loop's body counts toward [`MAX_KERNEL_INSTS`]: the PTX
/// writer writes a parallel loop in several versions (vector widths, a tail), about 1 KB of PTX
/// per instruction of its body, against about 60 B elsewhere.
pub const PAR_INST_COST: usize = 16;

/// What a parallel loop itself counts toward [`MAX_KERNEL_INSTS`], its body apart: its versions'
/// heads and tails, and a reduction's or a scan's combining across the warps, are about 4 KB of
/// PTX whatever the body.
pub const PAR_LOOP_COST: usize = 64;

/// What a blocking wait counts toward [`MAX_KERNEL_INSTS`] (a `reserve`, a `recv`, each channel
/// of a `select!`, a close, a barrier's or a one-shot value's wait), and a bulk copy: the wait's
/// loop with its abort and watchdog paths, or the copy's alignment cases and tail, are about 2 KB
/// of PTX.
pub const WAIT_COST: usize = 32;

impl Inst {
    /// What the instruction counts toward [`MAX_KERNEL_INSTS`], its nested blocks apart;
    /// `in_par` when it is in a parallel loop's body.
    pub fn cost(&self, in_par: bool) -> usize {
        match self {
            Inst::ParFor(_) => PAR_LOOP_COST,
            Inst::SelectRecv { chans, .. } => WAIT_COST * chans.len().max(1),
            Inst::Reserve { .. }
            | Inst::Recv { .. }
            | Inst::Close { .. }
            | Inst::BarrierWait { .. }
            | Inst::OneshotWait { .. }
            | Inst::CopyIn { .. }
            | Inst::TileLoad { .. }
            | Inst::TileStore { .. }
            | Inst::CopyOut { .. } => WAIT_COST,
            // One line of PTX per step naming every accumulator register, about 1 KB each.
            Inst::Mma { k_steps, .. } => PAR_INST_COST * *k_steps as usize,
            // Two versions of a store of each value, about 150 B of PTX per value.
            Inst::AccStore { acc, .. } => 3 * acc.len(),
            // A branch per column block, and a store of each pair of values.
            Inst::AccTile { acc, .. } => acc.len(),
            _ if in_par => PAR_INST_COST,
            _ => 1,
        }
    }
}

/// The deepest nesting of blocks (the bodies of `if`, `loop`, parallel loops and `join`
/// branches) in a kernel's IR. The phases after lowering recurse on it, on rustc's stack; the
/// lowering reports a kernel past it. Twice the checker's limit on expressions
/// ([`crate::tir::MAX_NESTING`]), since a `match` arm is two blocks deep.
pub const MAX_BLOCK_NESTING: usize = 2 * crate::tir::MAX_NESTING;

/// A channel: a ring of `depth` slots in shared memory with `full`/`empty` barriers per slot.
#[derive(Debug, Clone)]
pub struct Channel {
    /// `tx/rx`, the user's names of its ends.
    pub name: String,
    /// Payload and depth.
    pub ty: ChanTy,
    /// The role that holds the sender.
    pub producer: Option<RoleId>,
    /// The roles that hold a receiver: one, or several for a broadcast (`rx.subscribe()`),
    /// each of which sees every item.
    pub consumers: Vec<RoleId>,
    /// Bytes between consecutive slots (the payload rounded up to 128).
    pub slot_stride: u32,
    /// Offset of slot 0's data in the block's shared memory.
    pub data_offset: u32,
    /// Offset of the `full` barriers (8 bytes each).
    pub full_offset: u32,
    /// Offset of the `empty` barriers (8 bytes each).
    pub empty_offset: u32,
    /// Offset of the per-slot state words (4 bytes each: 1 = an item, 0 = closed).
    pub state_offset: u32,
    /// Whether some role writes the slots with ordinary stores (not only bulk copies).
    pub generic_writes: bool,
    /// A receiver of the channel may close it before its end (a receiver dropped, or closed,
    /// where its role has not seen the end of the stream for sure): the sender's waits for a
    /// free slot then read the channel's open word, and `reserve` says whether it got a slot.
    pub closable: bool,
    /// For a closable channel: offset of its open word (4 bytes: the warps of the receiving
    /// roles that have not closed; 0 once every one has).
    pub open_offset: u32,
    /// For a closable channel received by more than one warp: offset of its debt words (two per
    /// slot, one per parity of the slot's `empty` phases, 4 bytes each). A receiving warp that
    /// closes while the phase in progress on a slot is one it has already arrived on (another
    /// receiving warp has not) owes the next phase: it adds itself to that phase's debt word,
    /// and the sender, waiting on that phase, arrives for it (`arrive_drop` with the count).
    pub debt_offset: Option<u32>,
    /// The consumer copies received slots to global memory with bulk copies (`copy_to`): the
    /// producer's ordinary writes must be fenced for the async proxy before it sends, and a
    /// release waits for the copies to have read the slot.
    pub bulk_reads: bool,
}

/// A role: a block of code run by every thread of a warp range.
#[derive(Debug, Clone)]
pub struct Role {
    /// The async fn it runs.
    pub name: String,
    /// First warp.
    pub first_warp: u32,
    /// One past the last warp.
    pub end_warp: u32,
    /// Its code.
    pub body: Block,
}

impl Role {
    /// Threads in the role.
    pub fn threads(&self) -> u32 {
        32 * (self.end_warp - self.first_warp)
    }
}

/// A sequence of instructions.
#[derive(Debug, Clone, Default)]
pub struct Block(pub Vec<Inst>);

/// A unary operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// Negation.
    Neg,
    /// Logical or bitwise not.
    Not,
    /// Absolute value.
    Abs,
    /// Square root, correctly rounded.
    Sqrt,
    /// Round towards negative infinity.
    Floor,
    /// Round towards positive infinity.
    Ceil,
    /// Round towards zero.
    Trunc,
    /// `2^x`, PTX's approximation with subnormal inputs and results flushed to zero
    /// (`ex2.approx.ftz.f32`; `f32` only): `x.exp2_approx()`.
    Ex2Approx,
    /// `log2(x)`, PTX's approximation (`f32` only; the math lowering builds on it).
    Lg2Approx,
}

/// A binary operation; the operands have the result's type except for shifts (any integer
/// amount) and comparisons (result `bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
    /// The magnitude of the left operand with the sign of the right one.
    CopySign,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// A comparison.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// How the tile of an mma operand lies in shared memory (16-bit elements in 128-byte lines with
/// the 128-byte swizzle, in column blocks of 64 elements: see `TileBox::column_blocks`), which
/// its descriptor names and its K steps follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmaLayout {
    /// K contiguous: the tile's rows are the operand's rows (M of A, N of B) and its columns
    /// are K, in column blocks `block` bytes apart; K step `s` is `32 (s % 4)` bytes into block
    /// `s / 4`.
    KMajor { block: u32 },
    /// N contiguous (a B tile of K rows and N columns): its column blocks of 64 N columns are
    /// `block` bytes apart (the descriptor's leading byte offset), and K step `s` is the 16
    /// rows from row `16 s`, `2048 s` bytes on; the mma reads it transposed (`imm-trans-b`).
    NMajor { block: u32 },
}

/// The A operand of an mma.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MmaA {
    /// A tile at the shared address `addr` (a `u32`: the warpgroup's 64 rows), laid out as
    /// `layout` (K-major).
    Tile { addr: Value, layout: MmaLayout },
    /// Registers: for each K step, the 4 `u32`s of packed pairs the thread holds (the
    /// accumulator fragment's layout: step `s` is its values `8 s .. 8 s + 8`, pairwise).
    Registers(Vec<Value>),
}

/// A constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Imm {
    /// An integer, as the bits of its type.
    Int(u64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// A `bool`.
    Bool(bool),
}

/// A special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// The block's index in the grid (`usize`).
    BlockIdx,
    /// Blocks in the grid (`usize`).
    GridDim,
    /// The thread's lane in its warp (`u32`, `%laneid`).
    LaneId,
    /// The thread's warp in its role (`u32`).
    RoleWarp,
}

/// A barrier between roles (`barrier()` in the kernel body).
#[derive(Debug, Clone)]
pub struct KernelBarrier {
    /// Its local's name, for messages.
    pub name: String,
    /// Shared-memory offset of its mbarrier.
    pub offset: u32,
    /// Arrivals per phase: the warps of the roles that take it.
    pub arrivals: u32,
    /// Those roles.
    pub roles: Vec<RoleId>,
    /// For a one-shot value's barrier: the role that waits without arriving.
    pub receiver: Option<RoleId>,
}

/// Where a [`Inst::Shuffle`] takes each lane's value from (the operand taken modulo 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShuffleMode {
    /// Lane `operand`.
    Idx,
    /// Lane `lane ^ operand`.
    Xor,
    /// Lane `lane - operand`, or the lane itself when that is below 0.
    Up,
    /// Lane `lane + operand`, or the lane itself when that is past 31.
    Down,
}

/// What a [`Inst::Vote`] computes over the warp's predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteMode {
    /// Bit `l` of a `u32` set when lane `l`'s predicate holds.
    Ballot,
    /// Whether it holds on every lane.
    All,
    /// Whether it holds on some lane.
    Any,
}

/// A memory space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// Device memory; addresses are `usize`.
    Global,
    /// The block's shared memory; addresses are `u32`.
    Shared,
    /// The thread's local memory (local arrays indexed at run time); addresses are `usize`.
    Local,
    /// Constant memory (`static` tables); addresses are `usize`.
    Const,
}

/// What a receive ([`Inst::Recv`]) does at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvEnd {
    /// `rx.recv().await`: the bool value is false at the end, and every later receive of the
    /// receiver answers `None` at once.
    Answer(Value),
    /// `rx.recv().await.unwrap()`: the end is the panic of the site, which the role raises at its
    /// next slow wait, loop watch, panic or end. No branch depends on the slot's state word, so
    /// the code after the receive does not wait for it (`docs/design.md`, "A receive that
    /// cannot meet the end"); until the role raises the panic, that code runs on the end
    /// marker's slot.
    Fail(SiteId),
}

impl RecvEnd {
    /// The value saying whether an item came, for a receive that answers the end.
    pub fn some(self) -> Option<Value> {
        match self {
            RecvEnd::Answer(some) => Some(some),
            RecvEnd::Fail(_) => None,
        }
    }
}

/// One instruction.
#[derive(Debug, Clone)]
pub enum Inst {
    /// `dst = imm`
    Const { dst: Value, imm: Imm },
    /// `dst = src`
    Copy { dst: Value, src: Value },
    /// `dst = op src`
    Unary { dst: Value, op: UnOp, src: Value },
    /// `dst = lhs op rhs`
    Binary {
        dst: Value,
        op: BinOp,
        lhs: Value,
        rhs: Value,
    },
    /// `dst = a * b + c` with one rounding (`mul_add`).
    Fma {
        dst: Value,
        a: Value,
        b: Value,
        c: Value,
    },
    /// `dst = src as T`, with Rust's semantics.
    Cast { dst: Value, src: Value },
    /// An atomic operation at `addr` in `space` (global memory, or a shared array's atomic
    /// element): `dst` receives the previous value, or the loaded one; `Store` has none, and a
    /// read-modify-write whose previous value is unused has none (a `red`). `operands`: the
    /// value, or `[current, new]` for a compare-and-swap. `once`: in role code, the operation
    /// runs once for the role, on its first thread, between role barriers (waits at the site),
    /// and the result reaches every thread of the role (a shuffle in a role of one warp, the
    /// role's scratch in a larger one); `None` in a parallel loop, where each thread runs its
    /// own iterations' operations, and for a role-code `Load`, which every thread runs.
    Atomic {
        dst: Option<Value>,
        op: crate::tir::AtomicOp,
        space: Space,
        addr: Value,
        operands: Vec<Value>,
        order: crate::tir::MemOrder,
        once: Option<SiteId>,
    },
    /// `dst` = the shared address of shared array `array`'s first element.
    ArrayAddr { dst: Value, array: u32 },
    /// A mark the lowering leaves where a role touches shared array `array` (before a parallel
    /// loop, or in its body); the role's barrier placement turns the marks that must be ordered
    /// after earlier accesses into role barriers (`site`) and removes them all.
    ArrayAccess {
        array: u32,
        access: ArrayAccess,
        site: SiteId,
    },
    /// `*addr = value` in `space` (local arrays).
    Store {
        space: Space,
        addr: Value,
        value: Value,
    },
    /// `dst` = the address of byte `offset` of the thread's local-array memory.
    LocalAddr { dst: Value, offset: u32 },
    /// `dst` = the address of the kernel's constant table `table`.
    ConstAddr { dst: Value, table: u32 },
    /// `dst` = the block's shared value `cell`.
    LoadCell { dst: Value, cell: u32 },
    /// The role's first thread writes `value` into the block's shared value `cell`.
    StoreCell { cell: u32, value: Value },
    /// `dst = if cond { if_true } else { if_false }`, without a branch.
    Select {
        dst: Value,
        cond: Value,
        if_true: Value,
        if_false: Value,
    },
    /// `dst` has the bits of `src` (same size, another type: `to_bits`, `from_bits`).
    Bitcast { dst: Value, src: Value },
    /// `dst = special`
    Special { dst: Value, reg: Special },
    /// `dst = *addr`, one element.
    Load {
        dst: Value,
        space: Space,
        addr: Value,
    },
    /// Stop the kernel with the panic of `site` when `cond` holds.
    PanicIf { cond: Value, site: SiteId },
    /// Structured conditional on a uniform condition.
    If {
        cond: Value,
        then: Block,
        else_: Block,
    },
    /// A loop, left by `Break`.
    Loop { id: LoopId, body: Block },
    /// Leave the loop.
    Break(LoopId),
    /// Next iteration of the loop.
    Continue(LoopId),
    /// Wait for the sender's next slot to be free; it becomes the reserved slot. `some` (only on
    /// a closable channel): whether it did, or every receiver has closed the channel.
    Reserve {
        chan: ChannelId,
        site: SiteId,
        some: Option<Value>,
    },
    /// `dst` = shared address of the reserved (`send: true`) or received slot's data; for a
    /// received slot, of the ring position in `slot` (a `u32`), or of the ring's held slot.
    SlotAddr {
        dst: Value,
        chan: ChannelId,
        send: bool,
        slot: Option<Value>,
        /// Which of the role's receivers of the channel (see [`Inst::Recv`]).
        rx: u32,
    },
    /// Bulk async copy of `len` elements from the global address `src` into the reserved slot;
    /// the receiver's wait covers its completion. `bulk` (`usize`) is the bytes of the copy's
    /// 16-byte-aligned part, which one `cp.async.bulk` moves (0 when `src` is not 16-byte
    /// aligned); the role's threads copy the rest. The lowering computes it with ordinary
    /// instructions, so that a loop-invariant source has its split computed once.
    CopyIn {
        chan: ChannelId,
        src: Value,
        len: Value,
        bulk: Value,
    },
    /// `slot.load(matrix, [row, col])` (or `slot.1.load(..)`): tile `part` of the reserved
    /// slot filled from the matrix parameter
    /// `param` through its tensor map `map` (an index into its `boxes`) by one thread of the role,
    /// the box whose top-left element is (`row`, `col`) (`u32`s, each below 2^31), completing
    /// on the slot's `full` barrier, which expects the tile's bytes.
    TileLoad {
        chan: ChannelId,
        /// Which tile of the payload: 0, or 1 for the second of a pair.
        part: u32,
        param: u32,
        map: u32,
        row: Value,
        col: Value,
    },
    /// `tile.store(matrix, [row, col])` of a received tile slot: the tile written into the box
    /// at (`row`, `col`) (`u32`s) of matrix parameter `param` through its tensor map `map`, one
    /// TMA store (`cp.async.bulk.tensor`) per column block of the tile, issued by the role's
    /// bulk issuer as one bulk group. The channel's `bulk_reads` make its release wait for the
    /// group to have read the slot, and its `send` fence the sender's writes for the TMA.
    ///
    /// With `rows` (`store_rows`, a `u32` no larger than the tile's rows), only the tile's first
    /// `rows` rows are written: all of them by the TMA, fewer by the role's threads, each
    /// copying 16-byte chunks of the rows from the slot to the matrix with ordinary loads and
    /// stores, inside the matrix's edges.
    TileStore {
        chan: ChannelId,
        /// The received slot's ring position, or `None` for the ring's held slot.
        slot: Option<Value>,
        /// Which of the role's receivers of the channel (see [`Inst::Recv`]).
        rx: u32,
        param: u32,
        map: u32,
        row: Value,
        col: Value,
        rows: Option<Value>,
    },
    /// `acc.mma(&a, &b)` on the tensor cores, by every thread of a warpgroup: `wgmma.fence`,
    /// then `k_steps` instructions `wgmma.mma_async` of shape m64n`n`k16 on `elem` inputs, the
    /// `s`-th reading K step `s` of its operands at the shared addresses `a` (the warpgroup's
    /// 64 rows of the A tile) and `b` (the B tile), `u32`s of tiles stored in 128-byte lines
    /// with the 128-byte swizzle, as `a_layout` and `b_layout` say (the writer makes their
    /// shared-memory matrix descriptors), then `wgmma.commit_group`. `acc` (the thread's
    /// `n / 2` `f32` values of the warpgroup's 64 x `n` fragment) is read and written; the
    /// values are only complete after [`Inst::MmaWait`].
    Mma {
        acc: Vec<Value>,
        a: MmaA,
        b: Value,
        n: u32,
        elem: Scalar,
        k_steps: u32,
        b_layout: MmaLayout,
    },
    /// `dst` (a `u32`) = the `f32` values `lo` and `hi` rounded to `elem` (`bf16` or `f16`, to
    /// nearest even), `lo` in the low 16 bits: a pair of a register A operand of an mma.
    PackPair {
        dst: Value,
        lo: Value,
        hi: Value,
        elem: Scalar,
    },
    /// `wgmma.wait_group pending`: every mma the warpgroup issued has completed but the
    /// `pending` it issued last, and the accumulator values of the completed ones are written.
    MmaWait { pending: u32 },
    /// `acc.row_max()` (`max`) or `acc.row_sum()`: `dst[h]` = the reduction of row `h` of the
    /// thread's two rows (`ir::fragment_place`) over the accumulator's columns: the thread folds
    /// its own values of the row in increasing `k`, then the four lanes that hold the row
    /// combine theirs, `(t0 + t1) + (t2 + t3)` for lanes `4 q ..`, so that all four get the same
    /// bits (a butterfly over lane distances 1 and 2).
    RowReduce {
        dst: [Value; 2],
        acc: Vec<Value>,
        max: bool,
    },
    /// `rows.store(..)`: where `owner` (the first of the four lanes that hold the thread's
    /// rows), `values[h]` to the global address `addr + 32 h` (row `8 h` from the thread's
    /// first), when `8 h` is below `rows_left` (a `usize`: the rows of the destination from the
    /// thread's first on).
    RowsStore {
        values: [Value; 2],
        addr: Value,
        rows_left: Value,
        owner: Value,
    },
    /// `acc.store(..)`: each thread of the role stores its own accumulator values, converted to
    /// `elem`, to a row-major matrix in global memory whose rows are `row_bytes` apart: value
    /// `4 j + 2 h + e` (of the fragment layout, see [`Inst::Mma`]) goes `8 h` rows and `8 j + e`
    /// columns after the thread's first element, at the global address `addr`, when that row is
    /// below `rows_left` and that column below `cols_left` (`usize`s: what of the matrix lies
    /// from the thread's first element on; `addr` is only used for the elements inside). With
    /// `scale` (`alpha`, `beta`, `f32`s), each value stored is `alpha * v + beta * old`, `old`
    /// the element there (`mul`, then one `fma`), or `alpha * v` without reading it when `beta`
    /// is 0.
    AccStore {
        acc: Vec<Value>,
        elem: Scalar,
        addr: Value,
        row_bytes: Value,
        rows_left: Value,
        cols_left: Value,
        scale: Option<(Value, Value)>,
    },
    /// `acc.store_tile(&mut slot, col)`: the thread's values of the accumulator's columns
    /// `block * C ..` (`C` the tile's columns), converted to `elem`, written by ordinary shared
    /// stores into a reserved tile slot of `tile` (rows, columns) laid out as a TMA copy of it
    /// lays it out ([`crate::types::tile_swizzle_bytes`], column blocks of 128-byte rows).
    /// `first` is the shared address (`u32`) of the thread's first element there (its first
    /// row, column `2 (lane % 4)`) without the swizzle, `swizzle` the bits (`u32`) every
    /// address of the thread's rows is XORed with (0 without a swizzle), `block` (`u32`) which
    /// `C` columns of the accumulator go.
    AccTile {
        acc: Vec<Value>,
        elem: Scalar,
        tile: (u32, u32),
        first: Value,
        swizzle: Value,
        block: Value,
    },
    /// `copy_to`: the held slot's first `len` elements to global memory at `dst` (a bulk copy
    /// of the 16-byte-aligned part, `bulk` bytes as for [`Inst::CopyIn`], by one thread of the
    /// role, the rest by the role's threads).
    CopyOut {
        chan: ChannelId,
        dst: Value,
        len: Value,
        bulk: Value,
        /// The received slot's ring position, or `None` for the ring's held slot.
        slot: Option<Value>,
        /// Which of the role's receivers of the channel (see [`Inst::Recv`]).
        rx: u32,
    },
    /// Hand the reserved slot to the receiver.
    Send { chan: ChannelId },
    /// The sender is dropped: take a slot and mark it as the end of the stream.
    Close { chan: ChannelId, site: SiteId },
    /// Wait for the next full slot; what the end of the stream does is `end`'s. The slot taken
    /// is the ring's held slot, or, with `slot`, its ring position goes to that `u32` value (a
    /// role that holds several slots of the channel at once, or keeps one in a local it
    /// reassigns).
    ///
    /// `rx` says which of the role's receivers of the channel it is: 0, or 1 and up for a role
    /// that takes several receivers of one broadcast channel (each has a ring position of its
    /// own).
    Recv {
        chan: ChannelId,
        end: RecvEnd,
        site: SiteId,
        slot: Option<Value>,
        rx: u32,
    },
    /// Hand the received slot (the ring's held one, or the one at ring position `slot`) back to
    /// the sender.
    Release {
        chan: ChannelId,
        slot: Option<Value>,
        rx: u32,
    },
    /// `dst` = the ring position of the receiving ring's held slot (to keep it while the role
    /// receives another).
    HeldSlot {
        dst: Value,
        chan: ChannelId,
        rx: u32,
    },
    /// The receiver closes the channel: it releases every slot of the ring once, and the last
    /// receiving warp to close marks the channel closed in its open word.
    CloseRecv { chan: ChannelId, rx: u32 },
    /// The role's first thread stores `value` at `addr` (one element written from role code,
    /// whose value every thread of the role has).
    RoleStore {
        space: Space,
        addr: Value,
        value: Value,
    },
    /// The role's warps arrive at barrier `barrier` and wait for the other roles that take it.
    BarrierWait { barrier: u32, site: SiteId },
    /// The sender's warps arrive at one-shot value `oneshot`'s barrier (after its cell's store).
    OneshotSignal { oneshot: u32 },
    /// Wait until one-shot value `oneshot` was sent.
    OneshotWait { oneshot: u32, site: SiteId },
    /// A data-parallel loop spread over the role's threads.
    ParFor(ParFor),
    /// `dst` = `value` of another lane of the warp (every lane of the warp executes it; only
    /// in a lane loop).
    Shuffle {
        dst: Value,
        mode: ShuffleMode,
        value: Value,
        operand: Value,
    },
    /// `dst` = a vote over the warp's `pred`s (every lane executes it; only in a lane loop).
    Vote {
        dst: Value,
        mode: VoteMode,
        pred: Value,
    },
    /// All threads of the role meet, ordering their memory accesses.
    RoleBarrier { site: SiteId },
    /// `join!` in role code: every warp of the role runs the branches concurrently. A branch
    /// runs until an await finds its barrier's phase incomplete; then the warp goes on with
    /// another branch (a state machine with one state per warp). The join ends when every
    /// branch has ended. Branches contain no `Join` and no role barrier in roles of several
    /// warps (the lowering rejects them).
    Join { branches: Vec<Block> },
    /// `select!`: waits until the next slot of one of `chans` whose bit is set in `enabled` (a
    /// `u32`, not zero) is full, in order of `chans`, and takes it as `Recv` does: `chosen` is
    /// the index in `chans`, `some` false when the slot is the end of the stream.
    SelectRecv {
        chans: Vec<ChannelId>,
        enabled: Value,
        chosen: Value,
        some: Value,
        site: SiteId,
    },
}

/// A data-parallel loop: iteration `i` (for `i < len`) binds element `i` of each source to its
/// `elem` value (loaded first when `read`, stored after the body when `write`) and runs `body`.
#[derive(Debug, Clone)]
pub struct ParFor {
    /// The iteration count.
    pub len: Value,
    /// The iteration index, for `enumerate`.
    pub index: Option<Value>,
    /// The zipped sources.
    pub sources: Vec<ParSource>,
    /// The per-element code; it has no channel operations and no awaits.
    pub body: Block,
    /// For a reduction: how the items the body produces are combined.
    pub reduce: Option<ParReduce>,
    /// A lane loop (`for_each_lane`): iteration `i` on role thread `i % T` in warp-uniform
    /// steps (the length is a multiple of 32, checked before), so the body's warp operations
    /// have every lane of the warp; never vectorized; a failing check stops its thread (`exit`),
    /// which warp operations no longer wait for.
    pub lanes: bool,
}

/// The reduction of a [`ParFor`], in the order the language defines: item `i` goes to the
/// role's thread `(i / 4) % T`, which folds its items in increasing order from `identity`; then
/// a butterfly over each warp's lanes (partners at distance 16, 8, 4, 2, 1; the lower lane's
/// value on the left), then the warps' totals in warp order. With `scan`, a scan instead (see
/// [`ParScanOut`]).
#[derive(Debug, Clone)]
pub struct ParReduce {
    /// The item one iteration produces (defined by the body).
    pub item: Value,
    /// The identity, computed before the loop.
    pub identity: Value,
    /// Each thread's accumulator; after the loop, the role's result, the same on every thread.
    pub acc: Value,
    /// `out = combine(lhs, rhs)`.
    pub lhs: Value,
    /// See `lhs`.
    pub rhs: Value,
    /// See `lhs`.
    pub out: Value,
    /// The combining code: no loops, no memory writes (it runs at three places).
    pub combine: Block,
    /// The role barrier between the warps' totals and their fold (roles of several warps).
    pub site: SiteId,
    /// A scan: each item's result goes to a destination, in the scans' order.
    pub scan: Option<ParScanOut>,
}

/// A scan (`exclusive_sum` and the others): in rounds of `4 T` items, thread `t` takes items
/// `4t .. 4t + 4` of the round and folds them; each warp scans its lanes' totals (Hillis–Steele,
/// partners at distance 1, 2, 4, 8, 16), the warps' totals go through shared memory (a double
/// buffer, one role barrier per round) and each thread folds those of the warps before its own
/// from `identity`; item `j`'s result is `((carry ⊕ warps before) ⊕ lanes before) ⊕` the
/// thread's items before it (exclusive) or up to it (inclusive), stored to source `dst`; the
/// carry starts at `init` and takes each round's total. After the loop `acc` is the final carry.
#[derive(Debug, Clone)]
pub struct ParScanOut {
    /// The value the first item is combined with.
    pub init: Value,
    /// The source (of the loop's) that receives the results; the body does not touch it.
    pub dst: usize,
    /// Each result includes its own item.
    pub inclusive: bool,
}

/// A `static` table in constant memory: its name and bytes (little-endian elements).
#[derive(Debug, Clone)]
pub struct ConstTable {
    /// The user's name.
    pub name: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// One source of a [`ParFor`].
#[derive(Debug, Clone)]
pub struct ParSource {
    /// Where the elements live.
    pub space: Space,
    /// Address of element 0.
    pub base: Value,
    /// Element type.
    pub elem: Scalar,
    /// The value that holds the current element inside the body.
    pub elem_value: Value,
    /// The body reads the element.
    pub read: bool,
    /// The body writes the element.
    pub write: bool,
}

impl Inst {
    /// Whether every thread of the role meets here (a role barrier, a reduction over the
    /// role's threads, or a role-code atomic, which runs between role barriers): the warps of a
    /// role of several warps cannot do it inside a `join!` branch, which each warp runs on its
    /// own schedule.
    pub fn meets_role_threads(&self) -> bool {
        matches!(
            self,
            Inst::RoleBarrier { .. }
                | Inst::Mma { .. }
                | Inst::MmaWait { .. }
                | Inst::Atomic { once: Some(_), .. }
        ) || matches!(self, Inst::ParFor(p) if p.reduce.is_some())
    }

    /// The values this instruction itself writes (not those of nested blocks; a parallel loop's
    /// own element, index and reduction values are its).
    pub fn defs(&self) -> Vec<Value> {
        match self {
            Inst::Const { dst, .. }
            | Inst::Copy { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Fma { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::LocalAddr { dst, .. }
            | Inst::ConstAddr { dst, .. }
            | Inst::LoadCell { dst, .. }
            | Inst::ArrayAddr { dst, .. }
            | Inst::Select { dst, .. }
            | Inst::Bitcast { dst, .. }
            | Inst::PackPair { dst, .. }
            | Inst::Special { dst, .. }
            | Inst::Load { dst, .. }
            | Inst::SlotAddr { dst, .. }
            | Inst::HeldSlot { dst, .. }
            | Inst::Shuffle { dst, .. }
            | Inst::Vote { dst, .. } => vec![*dst],
            Inst::RowReduce { dst, .. } => dst.to_vec(),
            Inst::Reserve { some, .. } => some.iter().copied().collect(),
            Inst::Mma { acc, .. } => acc.clone(),
            Inst::Atomic { dst, .. } => dst.iter().copied().collect(),
            Inst::Recv { end, slot, .. } => end.some().into_iter().chain(*slot).collect(),
            Inst::SelectRecv { chosen, some, .. } => vec![*chosen, *some],
            Inst::ParFor(p) => {
                let mut out: Vec<Value> = p.sources.iter().map(|s| s.elem_value).collect();
                out.extend(p.index);
                if let Some(r) = &p.reduce {
                    out.extend([r.acc, r.lhs, r.rhs]);
                }
                out
            }
            Inst::Store { .. }
            | Inst::ArrayAccess { .. }
            | Inst::StoreCell { .. }
            | Inst::PanicIf { .. }
            | Inst::If { .. }
            | Inst::Loop { .. }
            | Inst::Break(_)
            | Inst::Continue(_)
            | Inst::CloseRecv { .. }
            | Inst::RoleStore { .. }
            | Inst::CopyIn { .. }
            | Inst::TileLoad { .. }
            | Inst::TileStore { .. }
            | Inst::MmaWait { .. }
            | Inst::AccStore { .. }
            | Inst::AccTile { .. }
            | Inst::RowsStore { .. }
            | Inst::CopyOut { .. }
            | Inst::Send { .. }
            | Inst::Close { .. }
            | Inst::Release { .. }
            | Inst::BarrierWait { .. }
            | Inst::OneshotSignal { .. }
            | Inst::OneshotWait { .. }
            | Inst::RoleBarrier { .. }
            | Inst::Join { .. } => Vec::new(),
        }
    }
}

/// Where a thread's accumulator value `k` lies from the thread's first element (the fragment
/// layout of [`Inst::Mma`]): value `4 j + 2 h + e` is `8 h` rows and `8 j + e` columns on;
/// returns `h` and the column offset.
pub fn fragment_place(k: usize) -> (usize, u64) {
    let k = k as u64;
    let (j, h, e) = (k / 4, (k / 2) % 2, k % 2);
    (h as usize, 8 * j + e)
}

/// The integer constants of `block` (nested blocks included): values whose only definition is
/// an integer `Const`, or the `min` of two such values.
pub fn integer_constants<'b>(
    blocks: impl IntoIterator<Item = &'b Block>,
) -> std::collections::HashMap<Value, u64> {
    // Per value (indexed by its number): its definitions, and the last one's constant.
    let mut defs: Vec<(u32, Option<u64>)> = Vec::new();
    let mut visit = |inst: &Inst| {
        let imm = match inst {
            Inst::Const {
                imm: Imm::Int(v), ..
            } => Some(*v),
            _ => None,
        };
        for d in inst.defs() {
            let i = d.0 as usize;
            if defs.len() <= i {
                defs.resize(i + 1, (0, None));
            }
            defs[i].0 += 1;
            defs[i].1 = imm;
        }
    };
    let blocks: Vec<&Block> = blocks.into_iter().collect();
    for block in &blocks {
        for_each_inst(block, &mut visit);
    }
    let mut constants: std::collections::HashMap<Value, u64> = defs
        .iter()
        .enumerate()
        .filter_map(|(v, &(n, imm))| match (n, imm) {
            (1, Some(i)) => Some((Value(v as u32), i)),
            _ => None,
        })
        .collect();
    // The length of zipped sources is the `min` of theirs: when they are constants (channel
    // slots), so is it. Folded until nothing changes (a chain of zips nests the `min`s); only
    // values below 2^63, whose order does not depend on signedness.
    loop {
        let mut folded = Vec::new();
        let mut visit = |inst: &Inst| {
            if let Inst::Binary {
                dst,
                op: BinOp::Min,
                lhs,
                rhs,
            } = inst
            {
                if let (Some(&a), Some(&b), Some((1, _))) = (
                    constants.get(lhs),
                    constants.get(rhs),
                    defs.get(dst.0 as usize),
                ) {
                    if a < 1 << 63 && b < 1 << 63 && !constants.contains_key(dst) {
                        folded.push((*dst, a.min(b)));
                    }
                }
            }
        };
        for block in &blocks {
            for_each_inst(block, &mut visit);
        }
        if folded.is_empty() {
            return constants;
        }
        constants.extend(folded);
    }
}

/// Visits every block of `block`, nested ones included, mutably, in program order.
pub fn for_each_inst_mut(block: &mut Block, f: &mut impl FnMut(&mut Inst)) {
    for inst in block.0.iter_mut() {
        f(inst);
        match inst {
            Inst::If { then, else_, .. } => {
                for_each_inst_mut(then, f);
                for_each_inst_mut(else_, f);
            }
            Inst::Loop { body, .. } => for_each_inst_mut(body, f),
            Inst::Join { branches } => {
                for b in branches {
                    for_each_inst_mut(b, f);
                }
            }
            Inst::ParFor(p) => {
                for_each_inst_mut(&mut p.body, f);
                if let Some(r) = p.reduce.as_mut() {
                    for_each_inst_mut(&mut r.combine, f);
                }
            }
            _ => {}
        }
    }
}

/// Visits every instruction of `block`, nested ones included, in program order.
pub fn for_each_inst(block: &Block, f: &mut impl FnMut(&Inst)) {
    for inst in &block.0 {
        for_each_inst_in(inst, f);
    }
}

/// Visits `inst` and the instructions nested in it, in program order.
pub fn for_each_inst_in(inst: &Inst, f: &mut impl FnMut(&Inst)) {
    f(inst);
    match inst {
        Inst::If { then, else_, .. } => {
            for_each_inst(then, f);
            for_each_inst(else_, f);
        }
        Inst::Loop { body, .. } => for_each_inst(body, f),
        Inst::Join { branches } => {
            for b in branches {
                for_each_inst(b, f);
            }
        }
        Inst::ParFor(p) => {
            for_each_inst(&p.body, f);
            if let Some(r) = p.reduce.as_ref() {
                for_each_inst(&r.combine, f);
            }
        }
        _ => {}
    }
}
