//! The static description of a compiled kernel, emitted by `#[gpu_async]` next to its PTX.

pub use gpu_async_wire::{ParamKind, ScalarType, SiteKind, TileBox, HIDDEN_PARAMS};

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
