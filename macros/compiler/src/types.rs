//! The types the kernel language knows.

use std::fmt;

/// A scalar: the values registers hold. It is the runtime's `ScalarType`, defined once in
/// `gpu-async-wire`, so the compiler and the runtime cannot disagree on the scalar types, their
/// sizes or their names.
pub use gpu_async_wire::ScalarType as Scalar;

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
    /// `Tile<T, R, C>`: `rows` × `cols` elements filled by a TMA load from a matrix (the
    /// payload's `len` is `rows * cols`). On the GPU the rows are laid out with the swizzle a
    /// box of their width gets ([`tile_swizzle_bytes`]), which the tensor cores read.
    Tile {
        /// The element: `bf16`, `f16` or `f32`.
        elem: Scalar,
        /// Rows.
        rows: u32,
        /// Columns, contiguous in a row.
        cols: u32,
    },
    /// `(Tile<..>, Tile<..>)`: a pair of tiles, each loaded and read on its own (`stage.0`,
    /// `stage.1`), stored one after the other, each aligned as a tile payload is (`len` is their
    /// elements together).
    Tiles(Vec<(Scalar, u32, u32)>),
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
            ChanElem::Tile { .. } | ChanElem::Tiles(_) | ChanElem::Struct { .. } => None,
        }
    }

    /// The element, rows and columns of a tile payload.
    pub fn tile(&self) -> Option<(Scalar, u32, u32)> {
        match self {
            ChanElem::Tile { elem, rows, cols } => Some((*elem, *rows, *cols)),
            _ => None,
        }
    }

    /// The tiles of a tile payload: the one tile, or each of a pair.
    pub fn tiles(&self) -> Vec<(Scalar, u32, u32)> {
        match self {
            ChanElem::Tile { elem, rows, cols } => vec![(*elem, *rows, *cols)],
            ChanElem::Tiles(parts) => parts.clone(),
            _ => Vec::new(),
        }
    }

    /// Tile `part` of a tile payload (0 for a single tile).
    pub fn tile_part(&self, part: u32) -> Option<(Scalar, u32, u32)> {
        self.tiles().get(part as usize).copied()
    }
}

/// The bytes of a tile row the mma reads: 128, the span of the swizzle its descriptors name.
pub const MMA_ROW_BYTES: u32 = 128;

/// The K of one tensor-core instruction for 16-bit inputs.
pub const MMA_K_STEP: u32 = 16;

/// Why `M` x `N` is not an accumulator shape, if it is not one.
pub fn accumulator_shape_error(m: u64, n: u64) -> Option<String> {
    if m == 0 || m % 64 != 0 || m > 256 {
        return Some(format!(
            "an accumulator has 64 rows per warpgroup of the role that runs its mmas (64, 128, 192 or 256); found M = {m}"
        ));
    }
    if n == 0 || n % 8 != 0 || n > 256 {
        return Some(format!(
            "an accumulator's columns are the tensor cores' N: a multiple of 8 from 8 to 256; found N = {n}"
        ));
    }
    None
}

/// The bytes of a tile of `rows` x `cols` elements of `elem`: what one tile load copies.
pub fn tile_bytes(elem: Scalar, rows: u32, cols: u32) -> u64 {
    u64::from(rows) * u64::from(cols) * u64::from(elem.size())
}

/// The alignment of a tile of `cols` columns of `elem` in shared memory: its swizzle's repeat
/// (8 rows of the span), at least 128 bytes.
fn tile_align(elem: Scalar, cols: u32) -> u64 {
    tile_swizzle_bytes(elem, cols).map_or(128, |span| (8 * u64::from(span)).max(128))
}

/// The swizzle span in bytes (128, 64 or 32) of a tile whose rows are `cols` elements of
/// `elem`, or `None` (rows stored plainly): a row of exactly a span's bytes takes that span's
/// swizzle, as the tensor cores' operand layouts do, and so do the 128-byte column blocks of a
/// row of several 128-byte lines. It is the runtime's rule (`TileBox::load_box` and
/// `TileBox::swizzle_bytes`), which encodes the tensor map the load uses.
pub fn tile_swizzle_bytes(elem: Scalar, cols: u32) -> Option<u32> {
    let size = elem.size();
    gpu_async_wire::TileBox { rows: 1, cols }
        .load_box(size)
        .swizzle_bytes(size)
}

/// The column blocks a tile of `cols` columns of `elem` is stored as, and the columns of each
/// (see [`gpu_async_wire::TileBox::column_blocks`]).
pub fn tile_column_blocks(elem: Scalar, cols: u32) -> (u32, u32) {
    let blocks = gpu_async_wire::TileBox { rows: 1, cols }.column_blocks(elem.size());
    (blocks, cols / blocks)
}

/// The element types a matrix parameter and a tile hold: the tensor cores' 16-bit floats, and
/// `f32`.
pub fn is_tile_elem(s: Scalar) -> bool {
    matches!(s, Scalar::Bf16 | Scalar::F16 | Scalar::F32)
}

impl fmt::Display for ChanElem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChanElem::Scalar(s) => write!(f, "{s}"),
            ChanElem::Tile { elem, rows, cols } => write!(f, "Tile<{elem}, {rows}, {cols}>"),
            ChanElem::Tiles(parts) => {
                let parts: Vec<String> = parts
                    .iter()
                    .map(|(e, r, c)| format!("Tile<{e}, {r}, {c}>"))
                    .collect();
                write!(f, "({})", parts.join(", "))
            }
            ChanElem::Struct { name, .. } => f.write_str(name),
        }
    }
}

impl ChanTy {
    /// Byte offset of each field's array in a struct payload (`[0]` for a scalar payload).
    pub fn field_offsets(&self) -> Vec<u64> {
        match &self.elem {
            ChanElem::Scalar(_) | ChanElem::Tile { .. } => vec![0],
            ChanElem::Tiles(_) => self.part_offsets(),
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
            ChanElem::Scalar(s) | ChanElem::Tile { elem: s, .. } => {
                u64::from(self.len) * u64::from(s.size())
            }
            ChanElem::Tiles(parts) => {
                let offsets = self.part_offsets();
                match (parts.last(), offsets.last()) {
                    (Some((e, r, c)), Some(off)) => off + tile_bytes(*e, *r, *c),
                    _ => 0,
                }
            }
            ChanElem::Struct { fields, .. } => fields
                .iter()
                .map(|f| (u64::from(self.len) * u64::from(f.size())).div_ceil(16) * 16)
                .sum(),
        }
    }
}

impl ChanTy {
    /// The payload type as written: `[T; N]`, or `Tile<T, R, C>`.
    pub fn payload(&self) -> String {
        match &self.elem {
            ChanElem::Tile { .. } | ChanElem::Tiles(_) => self.elem.to_string(),
            _ => format!("[{}; {}]", self.elem, self.len),
        }
    }

    /// The alignment in bytes of a slot's data: 128 (bulk copies and wide accesses), or the
    /// span after which a tile's swizzle pattern repeats (8 rows of the swizzle's span), which
    /// the hardware applies to shared-memory address bits.
    pub fn slot_align(&self) -> u64 {
        self.elem
            .tiles()
            .iter()
            .map(|(e, _, c)| tile_align(*e, *c))
            .max()
            .unwrap_or(128)
    }

    /// The byte offset of each tile of a tile payload in its slot: one after the other, each
    /// aligned to its own swizzle's repeat.
    pub fn part_offsets(&self) -> Vec<u64> {
        let mut offset = 0u64;
        self.elem
            .tiles()
            .iter()
            .map(|(e, r, c)| {
                let here = offset.next_multiple_of(tile_align(*e, *c));
                offset = here + tile_bytes(*e, *r, *c);
                here
            })
            .collect()
    }
}

impl fmt::Display for ChanTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}", self.payload(), self.depth)
    }
}

/// A block-shared array: `shared_array::<T, N>()` or `shared_array_2d::<T, R, C>()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArrayTy {
    /// The element's scalar.
    pub elem: Scalar,
    /// The elements are atomics (`AtomicU32`, `AtomicF32`, ..), updated with their methods.
    pub atomic: bool,
    /// Rows, for a 2D array.
    pub rows: Option<u32>,
    /// Elements of a 1D array, or of each row of a 2D one.
    pub cols: u32,
}

impl ArrayTy {
    /// The element type as written: `f32`, or `AtomicU32` for atomic elements.
    pub fn elem_name(&self) -> String {
        if self.atomic {
            atomic_name(self.elem).to_string()
        } else {
            self.elem.to_string()
        }
    }
}

impl fmt::Display for ArrayTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rows {
            Some(r) => write!(f, "SharedArray2d<{}, {r}, {}>", self.elem_name(), self.cols),
            None => write!(f, "SharedArray<{}, {}>", self.elem_name(), self.cols),
        }
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
    /// `(a..b).into_par_iter()`: items are the `usize` indices.
    Indices,
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
    /// A block-shared array, made in the kernel body.
    SharedArray(ArrayTy),
    /// `&SharedArray<..>` (`false`) or `&mut SharedArray<..>` (`true`), as roles take it.
    SharedArrayRef(ArrayTy, bool),
    /// `tile[r]`: a row of a 2D shared array (whether the array is `&mut`), indexed again.
    SharedRow(ArrayTy, bool),
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
    /// `(&[T], &[T])` or `(&mut [T], &mut [T])` from `split_at` / `split_at_mut`.
    SlicePair {
        /// Element type.
        elem: Scalar,
        /// `&mut`.
        mutable: bool,
    },
    /// The chunks of a slice (`chunks`, `chunks_mut`, `chunks_exact`, `chunks_exact_mut`), handed
    /// out by `next()` in the kernel body.
    Chunks {
        /// Element type.
        elem: Scalar,
        /// `&mut`.
        mutable: bool,
    },
    /// `Option<&[T]>` / `Option<&mut [T]>`, from `chunks.next()`.
    OptSlice {
        /// Element type.
        elem: Scalar,
        /// `&mut`.
        mutable: bool,
    },
    /// `&Matrix<T>`: a row-major matrix in global memory, read by tile loads; `&mut Matrix<T>`
    /// (`true`), also written by tile stores.
    Matrix(Scalar, bool),
    /// `stage.0` of a slot of a pair of tiles: that tile, loaded (`reserved`) or read in place.
    TilePart {
        /// The channel's type.
        chan: ChanTy,
        /// Which tile of the pair.
        part: u32,
        /// Of a reserved slot (`load` fills it) rather than a received one.
        reserved: bool,
    },
    /// `slot[r]` of a tile slot, or `stage.0[r]` of tile `part` of a pair: a row, indexed again
    /// (`slot[r][c]`).
    TileRow(ChanTy, u32),
    /// `Fragment<T, M, K>`: an accumulator rounded to `T` (`bf16` or `f16`) in the registers of
    /// the role's warpgroups, the A operand of a later mma (`acc.to_bf16()`).
    Fragment {
        /// `bf16` or `f16`.
        elem: Scalar,
        /// Rows: 64 per warpgroup of the role.
        m: u32,
        /// Columns, the mma's K: the accumulator's N.
        k: u32,
    },
    /// `Accumulator<M, N>`: an `M` x `N` block of `f32` in the registers of the role's
    /// warpgroups (64 rows each), which tensor-core mmas accumulate into.
    Accumulator {
        /// Rows: 64 per warpgroup of the role.
        m: u32,
        /// Columns: a multiple of 8 from 8 to 256.
        n: u32,
    },
    /// `Rows<M>`: one `f32` per row of an `M`-row accumulator (`acc.row_max()`), each held by
    /// the four lanes that hold the row's elements.
    Rows {
        /// Rows: 64 per warpgroup of the role.
        m: u32,
    },
    /// `Mma`, the future of `acc.mma(&a, &b)`: an issued mma, which its await (or its drop)
    /// waits for; a local may keep it.
    PendingMma,
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
    /// `Option<SendSlot>` from `reserve().await` (`None` once every receiver has closed).
    OptSendSlot(ChanTy),
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

    /// The item of an `Option` type (a receive's or a reserve's slot, `tiles.next()`'s range, a
    /// `checked_*` result's scalar), which `let Some(x) = .. else`, `if let`, `while let` and
    /// `match` bind.
    pub fn option_item(&self) -> Option<Ty> {
        Some(match self {
            Ty::OptRecvSlot(c) => Ty::RecvSlot(c.clone()),
            Ty::OptSendSlot(c) => Ty::SendSlot(c.clone()),
            Ty::OptRange => Ty::Range,
            Ty::Opt(s) => Ty::Scalar(*s),
            Ty::OptSlice { elem, mutable } => Ty::Slice {
                elem: *elem,
                mutable: *mutable,
            },
            _ => return None,
        })
    }

    /// A value that is dropped with an effect (closing a channel from either end, releasing a
    /// slot).
    pub fn has_drop_effect(&self) -> bool {
        matches!(
            self,
            Ty::Sender(_)
                | Ty::Receiver(_)
                | Ty::RecvSlot(_)
                | Ty::SendSlot(_)
                | Ty::OptRecvSlot(_)
                | Ty::OptSendSlot(_)
                | Ty::PendingMma
        )
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
            Ty::SlicePair { elem, mutable } => {
                let m = if *mutable { "mut " } else { "" };
                write!(f, "(&{m}[{elem}], &{m}[{elem}])")
            }
            Ty::Chunks { elem, mutable } => {
                write!(f, "Chunks{}<{elem}>", if *mutable { "Mut" } else { "" })
            }
            Ty::OptSlice { elem, mutable } => {
                write!(f, "Option<&{}[{elem}]>", if *mutable { "mut " } else { "" })
            }
            Ty::ChanPair(c) => write!(f, "(Sender<{c}>, Receiver<{c}>)"),
            Ty::Sender(c) => write!(f, "Sender<{c}>"),
            Ty::Receiver(c) => write!(f, "Receiver<{c}>"),
            Ty::SendSlot(c) => write!(f, "SendSlot<{c}>"),
            Ty::RecvSlot(c) => write!(f, "RecvSlot<{c}>"),
            Ty::OptRecvSlot(c) => write!(f, "Option<RecvSlot<{c}>>"),
            Ty::OptSendSlot(c) => write!(f, "Option<SendSlot<{c}>>"),
            Ty::Matrix(s, false) => write!(f, "&Matrix<{s}>"),
            Ty::Matrix(s, true) => write!(f, "&mut Matrix<{s}>"),
            Ty::Accumulator { m, n } => write!(f, "Accumulator<{m}, {n}>"),
            Ty::Fragment { elem, m, k } => write!(f, "Fragment<{elem}, {m}, {k}>"),
            Ty::Rows { m } => write!(f, "Rows<{m}>"),
            Ty::PendingMma => f.write_str("Mma"),
            Ty::TileRow(c, part) => match c.elem.tile_part(*part) {
                Some((elem, _, cols)) => write!(f, "[{elem}; {cols}]"),
                None => write!(f, "{}", c.elem),
            },
            Ty::TilePart { chan, part, .. } => match chan.elem.tile_part(*part) {
                Some((e, r, c)) => write!(f, "Tile<{e}, {r}, {c}>"),
                None => write!(f, "{}", chan.elem),
            },
            Ty::Future(t) => write!(f, "impl Future<Output = {t}>"),
            Ty::Array(s, n) => write!(f, "[{s}; {n}]"),
            Ty::Struct(_, name) | Ty::Enum(_, name) => f.write_str(name),
            Ty::Generic(i) => write!(f, "T{i}"),
            Ty::Shared(s) => write!(f, "Shared<{s}>"),
            Ty::Opt(s) => write!(f, "Option<{s}>"),
            Ty::SharedRef(s) => write!(f, "&Shared<{s}>"),
            Ty::SharedArray(a) => write!(f, "{a}"),
            Ty::SharedArrayRef(a, m) => write!(f, "&{}{a}", if *m { "mut " } else { "" }),
            Ty::SharedRow(a, _) => write!(f, "[{}; {}]", a.elem_name(), a.cols),
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

/// The atomic type of a scalar: `std::sync::atomic`'s for the integers, the device's
/// `AtomicF32`/`AtomicF64` for the floats.
pub fn atomic_name(s: Scalar) -> &'static str {
    match s {
        Scalar::I32 => "AtomicI32",
        Scalar::F32 => "AtomicF32",
        Scalar::F64 => "AtomicF64",
        Scalar::U64 => "AtomicU64",
        Scalar::I64 => "AtomicI64",
        Scalar::Usize => "AtomicUsize",
        _ => "AtomicU32",
    }
}

/// The scalar of an atomic type's name (`AtomicU32` and the other 32- and 64-bit integers,
/// `AtomicF32`, `AtomicF64`).
pub fn atomic_scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "AtomicF32" => Scalar::F32,
        "AtomicF64" => Scalar::F64,
        "AtomicU32" => Scalar::U32,
        "AtomicI32" => Scalar::I32,
        "AtomicU64" => Scalar::U64,
        "AtomicI64" => Scalar::I64,
        "AtomicUsize" => Scalar::Usize,
        _ => return None,
    })
}
