//! The types the kernel language knows.

use std::fmt;

/// A scalar: the values registers hold.
///
/// On the device, integers narrower than 32 bits live in 32-bit registers, kept normalized
/// (sign-extended for the signed types, zero-extended for the unsigned ones) after every
/// operation, so comparisons, division and widening casts need no extra work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `bool`
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `isize` (64 bits on the device, as on the host)
    Isize,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `usize` (64 bits on the device, as on the host)
    Usize,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `half::f16` (arithmetic in `f32`, rounded back, as the `half` crate does)
    F16,
    /// `half::bf16` (arithmetic in `f32`, rounded back, as the `half` crate does)
    Bf16,
}

impl Scalar {
    /// Every scalar, for tests and tables.
    pub const ALL: [Scalar; 15] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::Isize,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::Usize,
        Scalar::F32,
        Scalar::F64,
        Scalar::F16,
        Scalar::Bf16,
    ];

    /// The Rust name.
    pub fn rust_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::Isize => "isize",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
        }
    }

    /// From a Rust type name.
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.rust_name() == name)
    }

    /// Bytes in memory (`bool` is one byte in slices and slots).
    pub fn size(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::Bf16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::Isize | Scalar::U64 | Scalar::Usize | Scalar::F64 => 8,
        }
    }

    /// Bits of the value (1 for `bool`).
    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            s => s.size() * 8,
        }
    }

    /// An integer type.
    pub fn is_int(self) -> bool {
        !matches!(
            self,
            Scalar::Bool | Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16
        )
    }

    /// `f16` or `bf16`: stored in 16 bits, computed in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16)
    }

    /// A floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// A signed integer type.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::Isize
        )
    }

    /// An integer held in a 64-bit register.
    pub fn is_wide_int(self) -> bool {
        self.is_int() && self.size() == 8
    }

    /// The smallest and largest value of an integer type, as `i128`.
    pub fn int_range(self) -> Option<(i128, i128)> {
        if !self.is_int() {
            return None;
        }
        let bits = self.bits();
        Some(if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        })
    }

    /// The register bits of the integer `v` (taken modulo 2^bits, as Rust's `as` does) in this
    /// type: narrow integers are sign- or zero-extended to 32 bits, as registers hold them.
    pub fn int_bits(self, v: i128) -> u64 {
        match self {
            Scalar::I8 => u64::from(v as i8 as i32 as u32),
            Scalar::I16 => u64::from(v as i16 as i32 as u32),
            Scalar::I32 => u64::from(v as i32 as u32),
            Scalar::U8 => u64::from(v as u8),
            Scalar::U16 => u64::from(v as u16),
            Scalar::U32 => u64::from(v as u32),
            Scalar::Bool => u64::from(v != 0),
            _ => v as u64,
        }
    }

    /// The name of the `gpu_async::ScalarType` variant.
    pub fn spec_variant(self) -> &'static str {
        match self {
            Scalar::Bool => "Bool",
            Scalar::I8 => "I8",
            Scalar::I16 => "I16",
            Scalar::I32 => "I32",
            Scalar::I64 => "I64",
            Scalar::Isize => "Isize",
            Scalar::U8 => "U8",
            Scalar::U16 => "U16",
            Scalar::U32 => "U32",
            Scalar::U64 => "U64",
            Scalar::Usize => "Usize",
            Scalar::F32 => "F32",
            Scalar::F64 => "F64",
            Scalar::F16 => "F16",
            Scalar::Bf16 => "Bf16",
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// The most scalars one value may hold: an array's elements, or a struct's components (its array
/// fields' elements counted). A kernel's values are its threads' own, in registers (at most 255
/// per thread) or, for an array indexed at run time, in the thread's local memory, and they are
/// initialized and copied element by element; data larger than this belongs in a slice or a
/// channel slot. Checked before anything is allocated for a value.
pub const MAX_VALUE_SCALARS: u32 = 1024;

/// A channel's shape: `[elem; len]` payloads in a ring of `depth` slots.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChanTy {
    /// Payload element type.
    pub elem: ChanElem,
    /// Elements per payload.
    pub len: u32,
    /// Slots in the ring.
    pub depth: u32,
}

/// The element of a channel payload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChanElem {
    /// A scalar: the payload is an array of them.
    Scalar(Scalar),
    /// A struct of the module: on the GPU the payload is stored field by field (an array per
    /// field, each 16-byte aligned), so that parallel loops over one field stay contiguous.
    Struct {
        /// Its number in `Program::structs`.
        id: u32,
        /// Its name.
        name: String,
        /// Its fields' types, in declaration order.
        fields: Vec<Scalar>,
    },
}

impl ChanElem {
    /// The scalar of a scalar payload.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            ChanElem::Scalar(s) => Some(*s),
            ChanElem::Struct { .. } => None,
        }
    }
}

impl fmt::Display for ChanElem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChanElem::Scalar(s) => write!(f, "{s}"),
            ChanElem::Struct { name, .. } => f.write_str(name),
        }
    }
}

impl ChanTy {
    /// Byte offset of each field's array in a struct payload (`[0]` for a scalar payload).
    pub fn field_offsets(&self) -> Vec<u64> {
        match &self.elem {
            ChanElem::Scalar(_) => vec![0],
            ChanElem::Struct { fields, .. } => {
                let mut offset = 0;
                fields
                    .iter()
                    .map(|f| {
                        let here = offset;
                        offset += (u64::from(self.len) * u64::from(f.size())).div_ceil(16) * 16;
                        here
                    })
                    .collect()
            }
        }
    }

    /// Bytes of one payload.
    pub fn payload_bytes(&self) -> u64 {
        match &self.elem {
            ChanElem::Scalar(s) => u64::from(self.len) * u64::from(s.size()),
            ChanElem::Struct { fields, .. } => fields
                .iter()
                .map(|f| (u64::from(self.len) * u64::from(f.size())).div_ceil(16) * 16)
                .sum(),
        }
    }
}

impl fmt::Display for ChanTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}; {}], {}", self.elem, self.len, self.depth)
    }
}

/// The shape of a parallel iterator: which sources it zips and whether it counts.
#[derive(Debug, Clone, PartialEq)]
pub enum ParShape {
    /// One source, whose items are `&elem` or `&mut elem`.
    Source {
        /// Element type.
        elem: Scalar,
        /// `par_iter_mut`.
        mutable: bool,
    },
    /// `a.zip(b)`: items are `(a, b)`.
    Zip(Box<ParShape>, Box<ParShape>),
    /// `a.enumerate()`: items are `(usize, a)`.
    Enumerate(Box<ParShape>),
    /// `a.map(f)`: items are the scalars `f` returns.
    Mapped(Scalar),
    /// A slot of structs: items are `&S` or `&mut S`.
    Structs {
        /// The struct's number.
        id: u32,
        /// Its name.
        name: String,
        /// `par_iter_mut`.
        mutable: bool,
    },
}

/// The type of an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// A scalar value.
    Scalar(Scalar),
    /// An integer literal whose type context has not fixed yet.
    IntLit,
    /// A float literal whose type context has not fixed yet.
    FloatLit,
    /// `()`.
    Unit,
    /// `&[T]` or `&mut [T]` in global memory.
    Slice {
        /// Element type.
        elem: Scalar,
        /// `&mut`.
        mutable: bool,
    },
    /// `&T` or `&mut T` handed out by a parallel iterator.
    ElemRef {
        /// Element type.
        elem: Scalar,
        /// `&mut`.
        mutable: bool,
    },
    /// `Option<T>` of a scalar, from the `checked_*` methods.
    Opt(Scalar),
    /// `Shared<T>`: a block-local value in shared memory, made in the kernel body.
    Shared(Scalar),
    /// `&Shared<T>`, as roles take it.
    SharedRef(Scalar),
    /// `(OneshotSender<T>, OneshotReceiver<T>)` from `oneshot::<T>()`.
    OneshotPair(Scalar),
    /// `OneshotSender<T>`: sends one value.
    OneshotSender(Scalar),
    /// `OneshotReceiver<T>`: receives it.
    OneshotReceiver(Scalar),
    /// `Barrier`, made in the kernel body.
    Barrier,
    /// `&Barrier`, as roles take it.
    BarrierRef,
    /// The `i`-th type parameter of a generic helper fn (its instances replace it).
    Generic(u32),
    /// An enum of the module without payloads (its number and name); a `u32` discriminant on
    /// the device.
    Enum(u32, String),
    /// A struct of the module (its number in `Program::structs`, and its name).
    Struct(u32, String),
    /// `(a, b, ..)` of scalars (an element may be an untyped literal until context fixes it).
    Tuple(Vec<Ty>),
    /// `[T; N]`: a local array (registers, or the thread's local memory when it is indexed by
    /// run-time values).
    Array(Scalar, u32),
    /// `&[AtomicU32]` (and the other atomic integers) in global memory.
    AtomicSlice(Scalar),
    /// `&AtomicU32`: one element of an atomic slice.
    AtomicRef(Scalar),
    /// `Result<T, T>` of `compare_exchange`: `Ok(previous)` when it stored, else `Err(previous)`.
    CasResult(Scalar),
    /// `Range<usize>`.
    Range,
    /// `BlockTiles`, the iterator of `block_tiles`.
    Tiles,
    /// `Option<Range<usize>>`, from `BlockTiles::next`.
    OptRange,
    /// `(Sender, Receiver)` from `channel()`.
    ChanPair(ChanTy),
    /// `Sender<[T; N], D>`.
    Sender(ChanTy),
    /// `Receiver<[T; N], D>`.
    Receiver(ChanTy),
    /// A reserved slot.
    SendSlot(ChanTy),
    /// A received slot.
    RecvSlot(ChanTy),
    /// `Option<RecvSlot>` from `recv().await`.
    OptRecvSlot(ChanTy),
    /// A future whose output is the boxed type.
    Future(Box<Ty>),
    /// A parallel iterator.
    ParIter(ParShape),
    /// `on_warps(..)`.
    Role,
    /// The `lane` of a `for_each_lane` closure.
    Lane,
    /// `&S` or `&mut S`: an element of a channel slot of structs, handed out by a parallel
    /// iterator.
    StructRef {
        /// The struct's number.
        id: u32,
        /// Its name.
        name: String,
        /// `&mut`.
        mutable: bool,
    },
    /// The type of `return`, `break` and `continue`, which never produce a value.
    Never,
    /// A type the checker already reported an error for.
    Error,
}

impl Ty {
    /// The scalar, if this is a scalar (or an element reference, which reads as one).
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            Ty::ElemRef { elem, .. } => Some(*elem),
            _ => None,
        }
    }

    /// A value that is dropped with an effect (closing a channel, releasing a slot).
    pub fn has_drop_effect(&self) -> bool {
        matches!(self, Ty::Sender(_) | Ty::RecvSlot(_) | Ty::SendSlot(_))
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::IntLit => f.write_str("{integer}"),
            Ty::FloatLit => f.write_str("{float}"),
            Ty::Unit => f.write_str("()"),
            Ty::Slice { elem, mutable } => {
                write!(f, "&{}[{elem}]", if *mutable { "mut " } else { "" })
            }
            Ty::ElemRef { elem, mutable } => {
                write!(f, "&{}{elem}", if *mutable { "mut " } else { "" })
            }
            Ty::Range => f.write_str("Range<usize>"),
            Ty::Tiles => f.write_str("BlockTiles"),
            Ty::Lane => f.write_str("Lane"),
            Ty::Barrier => f.write_str("Barrier"),
            Ty::OneshotPair(s) => write!(f, "(OneshotSender<{s}>, OneshotReceiver<{s}>)"),
            Ty::OneshotSender(s) => write!(f, "OneshotSender<{s}>"),
            Ty::OneshotReceiver(s) => write!(f, "OneshotReceiver<{s}>"),
            Ty::BarrierRef => f.write_str("&Barrier"),
            Ty::StructRef { name, mutable, .. } => {
                write!(f, "&{}{name}", if *mutable { "mut " } else { "" })
            }
            Ty::OptRange => f.write_str("Option<Range<usize>>"),
            Ty::ChanPair(c) => write!(f, "(Sender<{c}>, Receiver<{c}>)"),
            Ty::Sender(c) => write!(f, "Sender<[{}; {}], {}>", c.elem, c.len, c.depth),
            Ty::Receiver(c) => write!(f, "Receiver<[{}; {}], {}>", c.elem, c.len, c.depth),
            Ty::SendSlot(c) => write!(f, "SendSlot<[{}; {}], {}>", c.elem, c.len, c.depth),
            Ty::RecvSlot(c) => write!(f, "RecvSlot<[{}; {}], {}>", c.elem, c.len, c.depth),
            Ty::OptRecvSlot(c) => {
                write!(f, "Option<RecvSlot<[{}; {}], {}>>", c.elem, c.len, c.depth)
            }
            Ty::Future(t) => write!(f, "impl Future<Output = {t}>"),
            Ty::Array(s, n) => write!(f, "[{s}; {n}]"),
            Ty::Struct(_, name) | Ty::Enum(_, name) => f.write_str(name),
            Ty::Generic(i) => write!(f, "T{i}"),
            Ty::Shared(s) => write!(f, "Shared<{s}>"),
            Ty::Opt(s) => write!(f, "Option<{s}>"),
            Ty::SharedRef(s) => write!(f, "&Shared<{s}>"),
            Ty::Tuple(ts) => {
                let parts: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
                // A 1-tuple keeps its comma, as in Rust: `(u32,)`.
                let comma = if ts.len() == 1 { "," } else { "" };
                write!(f, "({}{comma})", parts.join(", "))
            }
            Ty::AtomicSlice(s) => write!(f, "&[{}]", atomic_name(*s)),
            Ty::AtomicRef(s) => write!(f, "&{}", atomic_name(*s)),
            Ty::CasResult(s) => write!(f, "Result<{s}, {s}>"),
            Ty::ParIter(_) => f.write_str("ParIter"),
            Ty::Role => f.write_str("Role"),
            Ty::Never => f.write_str("!"),
            Ty::Error => f.write_str("{error}"),
        }
    }
}

/// The `std::sync::atomic` type of an atomic integer scalar.
pub fn atomic_name(s: Scalar) -> &'static str {
    match s {
        Scalar::I32 => "AtomicI32",
        Scalar::U64 => "AtomicU64",
        Scalar::I64 => "AtomicI64",
        Scalar::Usize => "AtomicUsize",
        _ => "AtomicU32",
    }
}

/// The scalar of an atomic type's name (`AtomicU32` and the other 32- and 64-bit integers).
pub fn atomic_scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "AtomicU32" => Scalar::U32,
        "AtomicI32" => Scalar::I32,
        "AtomicU64" => Scalar::U64,
        "AtomicI64" => Scalar::I64,
        "AtomicUsize" => Scalar::Usize,
        _ => return None,
    })
}
