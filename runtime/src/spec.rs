//! The static description of a compiled kernel, emitted by `#[gpu_async]` next to its PTX.

/// A scalar type that can cross the host/device boundary: a kernel parameter or a buffer element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScalarType {
    /// `bool`, passed to PTX as a `.u32` holding 0 or 1.
    Bool,
    /// `i8`, passed to PTX as a sign-extended `.s32`.
    I8,
    /// `i16`, passed to PTX as a sign-extended `.s32`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `isize`: 64 bits on the device, as on the 64-bit hosts CUDA supports.
    Isize,
    /// `u8`, passed to PTX as a `.u32`.
    U8,
    /// `u16`, passed to PTX as a `.u32`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `usize`: 64 bits on the device, as on the 64-bit hosts CUDA supports.
    Usize,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `half::f16`.
    F16,
    /// `half::bf16`.
    Bf16,
}

impl ScalarType {
    /// Size in bytes of one element in device memory.
    pub const fn size(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::Bf16 => 2,
            ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::I64
            | ScalarType::Isize
            | ScalarType::U64
            | ScalarType::Usize
            | ScalarType::F64 => 8,
        }
    }
}

/// How one kernel parameter is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A scalar by value: one PTX parameter.
    Scalar(ScalarType),
    /// A slice in global memory: two PTX parameters, the address (`.u64`) and the length in
    /// elements (`.u64`).
    Slice {
        /// The element type.
        elem: ScalarType,
        /// `&mut [T]` rather than `&[T]`.
        mutable: bool,
    },
}

/// One kernel parameter, in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter's name in the kernel signature.
    pub name: &'static str,
    /// How it is passed.
    pub kind: ParamKind,
}

/// One role of a kernel: an async fn pinned to a range of warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleSpec {
    /// The role's name (the async fn it runs).
    pub name: &'static str,
    /// First warp of the role.
    pub first_warp: u32,
    /// One past the last warp of the role.
    pub end_warp: u32,
}

/// What happens at a [`SiteSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    /// A check that stops the kernel when it fails (a bound, an `unwrap`, a division by zero).
    Panic,
    /// A wait on a barrier (an `.await` on a channel, a role barrier), which the watchdog bounds.
    Wait,
}

/// A place in the user's source that the GPU can report: where a device panic happened, or
/// which wait the watchdog stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteSpec {
    /// Panic or wait.
    pub kind: SiteKind,
    /// The panic message, or what is waited for.
    pub message: &'static str,
    /// The source file.
    pub file: &'static str,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

/// Kernel parameters that every generated kernel takes after the user's, for the abort protocol:
/// the device's abort word (`.u64` address), this launch's id (`.u32`, never 0), the address of the
/// host-visible failure record (`.u64`), and the watchdog bound in nanoseconds (`.u64`, 0 = off).
pub const HIDDEN_PARAMS: usize = 4;

/// Everything the runtime needs to know about a compiled kernel.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    /// The PTX entry's name (the kernel fn's name).
    pub entry: &'static str,
    /// `module::kernel`, for messages.
    pub path: &'static str,
    /// The PTX module text.
    pub ptx: &'static str,
    /// Warps per block; the block has `32 * warps` threads.
    pub warps: u32,
    /// Dynamic shared memory per block, in bytes (channel rings and their barriers).
    pub shared_bytes: u32,
    /// The parameters, in declaration order.
    pub params: &'static [ParamSpec],
    /// The roles, in `join!` order.
    pub roles: &'static [RoleSpec],
    /// The panic and wait sites the GPU may report, indexed by the site number it writes.
    pub sites: &'static [SiteSpec],
    /// The kernel takes the [`HIDDEN_PARAMS`] of the abort protocol after its own (every kernel
    /// `#[gpu_async]` generates does; hand-written PTX may not).
    pub abort_protocol: bool,
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is one of the [`ScalarType`]s: kernel scalar parameters and buffer elements.
pub trait KernelScalar: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// Its scalar type.
    const TYPE: ScalarType;
    /// Its bytes as the kernel parameter ABI passes them (bool widened to a `u32`).
    fn param_bytes(self) -> Vec<u8>;
}

macro_rules! kernel_scalar {
    ($($t:ty => $s:ident, |$v:ident| $bytes:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl KernelScalar for $t {
            const TYPE: ScalarType = ScalarType::$s;
            fn param_bytes(self) -> Vec<u8> {
                let $v = self;
                $bytes
            }
        }
    )*};
}

kernel_scalar! {
    bool => Bool, |v| (v as u32).to_ne_bytes().to_vec();
    i8 => I8, |v| i32::from(v).to_ne_bytes().to_vec();
    i16 => I16, |v| i32::from(v).to_ne_bytes().to_vec();
    i32 => I32, |v| v.to_ne_bytes().to_vec();
    i64 => I64, |v| v.to_ne_bytes().to_vec();
    isize => Isize, |v| (v as i64).to_ne_bytes().to_vec();
    u8 => U8, |v| u32::from(v).to_ne_bytes().to_vec();
    u16 => U16, |v| u32::from(v).to_ne_bytes().to_vec();
    u32 => U32, |v| v.to_ne_bytes().to_vec();
    u64 => U64, |v| v.to_ne_bytes().to_vec();
    usize => Usize, |v| (v as u64).to_ne_bytes().to_vec();
    f32 => F32, |v| v.to_ne_bytes().to_vec();
    f64 => F64, |v| v.to_ne_bytes().to_vec();
    half::f16 => F16, |v| v.to_bits().to_ne_bytes().to_vec();
    half::bf16 => Bf16, |v| v.to_bits().to_ne_bytes().to_vec();
}
