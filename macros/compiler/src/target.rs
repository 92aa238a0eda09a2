//! The facts of the one target every kernel is compiled for: an NVIDIA Hopper GPU (sm_90, the
//! H100 and H200). Every phase that needs a hardware limit reads it here, so that a second target
//! is one more module, not a search through the compiler. `docs/design.md` ("The target") gives
//! the sources.

/// The PTX ISA version every kernel declares.
pub const PTX_VERSION: &str = "8.0";
/// The target architecture.
pub const PTX_TARGET: &str = "sm_90";
/// The target of kernels that use sm_90a-only instructions (`setmaxnreg`, `wgmma`).
pub const PTX_TARGET_BUDGETS: &str = "sm_90a";

/// The most warps a block can have (1024 threads).
pub const MAX_WARPS: u32 = 32;
/// Warps per warpgroup: the unit of `setmaxnreg` (and of `wgmma`).
pub const WARPGROUP: u32 = 4;

/// Shared memory a block may use (227 KiB).
pub const SHARED_LIMIT: u32 = 227 * 1024;
/// Shared memory of an SM that its resident blocks share (228 KiB).
pub const SM_SHARED: u32 = 228 * 1024;
/// Shared memory the hardware reserves for each resident block (1 KiB).
pub const BLOCK_RESERVED_SHARED: u32 = 1024;
/// Warps an SM holds at most.
pub const SM_WARPS: u32 = 64;
/// Blocks an SM holds at most.
pub const SM_BLOCKS: u32 = 32;

/// 32-bit registers of an SM's register file, all of which one block may hold.
pub const REGISTER_FILE: u32 = 65536;
/// The most registers a thread can have at the entry (ptxas ignores a larger `.maxnreg`).
pub const MAX_ENTRY: u32 = 255;
/// `setmaxnreg`'s smallest count.
pub const MIN_BUDGET: u32 = 24;
/// `setmaxnreg`'s largest count.
pub const MAX_BUDGET: u32 = 256;

/// Constant memory a kernel can address (the user bank).
pub const CONST_LIMIT: usize = 64 * 1024;

/// Parameter space of a kernel entry in PTX ISA 8.0 (4352 B; ptxas rejects more, and allows
/// more only from PTX ISA 8.1).
pub const PARAM_LIMIT: u32 = 4352;

/// Parameter space the runtime's own kernel parameters take after the user's (the abort flag,
/// the launch number, the record and the watchdog: `.u64`, `.u32`, `.u64`, `.u64`).
pub const RUNTIME_PARAM_BYTES: u32 = 32;

/// Local memory a thread can address (512 KiB): where arrays indexed at run time live.
pub const LOCAL_LIMIT: u32 = 512 * 1024;
