//! The typed IR: the checker's output. Every expression carries its type; names are resolved to
//! locals, functions and constants; constructs outside the kernel language are gone (reported).

use proc_macro2::Span;

use crate::types::{ArrayTy, ChanTy, Scalar, Ty};

mod program;

pub use program::{KernelAttr, Program, Signature, StaticTable, StructDef};

/// The deepest nesting of expressions in a function (each operator, call, method call, `if`,
/// `match`, block, loop and parenthesis is one level, and so is each `else if` of a chain). The
/// phases walk the code recursively, on rustc's stack (a proc macro runs on rustc's thread), and
/// the checker reports a function past this depth instead of going deeper.
pub const MAX_NESTING: usize = 64;

/// A local variable of a function (parameters first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalId(pub u32);

/// A function of the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FnId(pub u32);

/// A local's declaration.
#[derive(Debug, Clone)]
pub struct Local {
    /// The user's name.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Declared `mut`.
    pub mutable: bool,
    /// Where it is declared.
    pub span: Span,
    /// An array local indexed somewhere by a run-time value: it lives in local memory.
    pub dynamic_index: bool,
}

/// A checked function.
#[derive(Debug)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// `async fn`.
    pub is_async: bool,
    /// `warps = N` for kernels.
    pub kernel_warps: Option<u32>,
    /// `idle_warps` for kernels: warps without a role are intended.
    pub idle_warps: bool,
    /// Parameters, as locals `0..params`.
    pub params: Vec<LocalId>,
    /// The return type.
    pub ret: Ty,
    /// Every local.
    pub locals: Vec<Local>,
    /// The body.
    pub body: Block,
    /// The body has a `return`.
    pub has_return: bool,
    /// The async helpers awaited inside parallel loops' closures, with the `.await`'s span: each
    /// must never suspend (checked once every function is known).
    pub par_awaits: Vec<(FnId, Span)>,
    /// The function's name token.
    pub span: Span,
}

impl Function {
    /// The declaration of `id`.
    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }
}

/// A literal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    /// An integer.
    Int(u128),
    /// A float.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
}

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// A binary operator.
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
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicAnd,
    LogicOr,
}

impl BinOp {
    /// A comparison, whose result is `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    /// The operator as written in Rust.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::LogicAnd => "&&",
            BinOp::LogicOr => "||",
        }
    }
}

/// A method of the scalar types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFn {
    /// `x.sqrt()` (correctly rounded)
    Sqrt,
    /// `x.rsqrt()`, an extension: `1 / x.sqrt()`, both correctly rounded
    Rsqrt,
    /// `x.abs()` (floats, signed integers; wraps on `MIN` as `wrapping_abs` does)
    Abs,
    /// `x.floor()`
    Floor,
    /// `x.ceil()`
    Ceil,
    /// `x.trunc()`
    Trunc,
    /// `x.round()`: half away from zero
    Round,
    /// `x.min(y)`
    Min,
    /// `x.max(y)`
    Max,
    /// `x.copysign(y)`
    CopySign,
    /// `x.mul_add(a, b)`: `x * a + b` with one rounding
    MulAdd,
    /// `x.clamp(min, max)`, which panics when `min > max` (or either is NaN)
    Clamp,
    /// `x.powi(n)`, by repeated squaring as compiler-rt's `__powisf2` does
    Powi,
    /// `x.exp()`
    Exp,
    /// `x.exp2()`
    Exp2,
    /// `x.exp2_approx()`, an extension on `f32`: the GPU's fast `2^x` (`ex2.approx.ftz`)
    Exp2Approx,
    /// `x.ln()`
    Ln,
    /// `x.log2()`
    Log2,
    /// `x.sin()`
    Sin,
    /// `x.cos()`
    Cos,
    /// `x.tanh()`
    Tanh,
    /// `x.powf(y)`
    Powf,
    /// `x.is_nan()`
    IsNan,
    /// `x.to_bits()`
    ToBits,
    /// `x.wrapping_add(y)`
    WrappingAdd,
    /// `x.wrapping_sub(y)`
    WrappingSub,
    /// `x.wrapping_mul(y)`
    WrappingMul,
    /// `x.checked_add(y)`, `Option<T>`
    CheckedAdd,
    /// `x.checked_sub(y)`
    CheckedSub,
    /// `x.checked_mul(y)`
    CheckedMul,
    /// `x.checked_div(y)`
    CheckedDiv,
    /// `x.checked_rem(y)`
    CheckedRem,
    /// `x.saturating_add(y)`
    SaturatingAdd,
    /// `x.saturating_sub(y)`
    SaturatingSub,
    /// `x.count_ones()`
    CountOnes,
    /// `x.leading_zeros()`
    LeadingZeros,
    /// `x.trailing_zeros()`
    TrailingZeros,
}

/// Which scalars a [`MathFn`] takes as its receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathDomain {
    /// `f32` and `f64`.
    Float,
    /// `f32` alone.
    F32,
    /// Integers.
    Int,
    /// Floats and signed integers.
    Signed,
    /// Every number.
    Number,
}

impl MathFn {
    /// The method's name, its argument count, and the receivers it takes.
    pub fn lookup(name: &str) -> Option<(MathFn, usize, MathDomain)> {
        use MathDomain as D;
        Some(match name {
            "sqrt" => (MathFn::Sqrt, 0, D::Float),
            "rsqrt" => (MathFn::Rsqrt, 0, D::Float),
            "abs" => (MathFn::Abs, 0, D::Signed),
            "floor" => (MathFn::Floor, 0, D::Float),
            "ceil" => (MathFn::Ceil, 0, D::Float),
            "trunc" => (MathFn::Trunc, 0, D::Float),
            "round" => (MathFn::Round, 0, D::Float),
            "min" => (MathFn::Min, 1, D::Number),
            "max" => (MathFn::Max, 1, D::Number),
            "copysign" => (MathFn::CopySign, 1, D::Float),
            "mul_add" => (MathFn::MulAdd, 2, D::Float),
            "clamp" => (MathFn::Clamp, 2, D::Number),
            "powi" => (MathFn::Powi, 1, D::Float),
            "exp" => (MathFn::Exp, 0, D::Float),
            "exp2" => (MathFn::Exp2, 0, D::Float),
            "exp2_approx" => (MathFn::Exp2Approx, 0, D::F32),
            "ln" => (MathFn::Ln, 0, D::Float),
            "log2" => (MathFn::Log2, 0, D::Float),
            "sin" => (MathFn::Sin, 0, D::Float),
            "cos" => (MathFn::Cos, 0, D::Float),
            "tanh" => (MathFn::Tanh, 0, D::Float),
            "powf" => (MathFn::Powf, 1, D::Float),
            "is_nan" => (MathFn::IsNan, 0, D::Float),
            "to_bits" => (MathFn::ToBits, 0, D::Float),
            "wrapping_add" => (MathFn::WrappingAdd, 1, D::Int),
            "wrapping_sub" => (MathFn::WrappingSub, 1, D::Int),
            "wrapping_mul" => (MathFn::WrappingMul, 1, D::Int),
            "checked_add" => (MathFn::CheckedAdd, 1, D::Int),
            "checked_sub" => (MathFn::CheckedSub, 1, D::Int),
            "checked_mul" => (MathFn::CheckedMul, 1, D::Int),
            "checked_div" => (MathFn::CheckedDiv, 1, D::Int),
            "checked_rem" => (MathFn::CheckedRem, 1, D::Int),
            "saturating_add" => (MathFn::SaturatingAdd, 1, D::Int),
            "saturating_sub" => (MathFn::SaturatingSub, 1, D::Int),
            "count_ones" => (MathFn::CountOnes, 0, D::Int),
            "leading_zeros" => (MathFn::LeadingZeros, 0, D::Int),
            "trailing_zeros" => (MathFn::TrailingZeros, 0, D::Int),
            _ => return None,
        })
    }
}

/// An atomic read-modify-write, load or store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// `load(order)`
    Load,
    /// `store(v, order)`
    Store,
    /// `swap(v, order)`
    Swap,
    /// `fetch_add(v, order)`
    Add,
    /// `fetch_sub(v, order)`
    Sub,
    /// `fetch_and(v, order)`
    And,
    /// `fetch_or(v, order)`
    Or,
    /// `fetch_xor(v, order)`
    Xor,
    /// `fetch_max(v, order)`
    Max,
    /// `fetch_min(v, order)`
    Min,
    /// `compare_exchange(current, new, success, failure)` (and `_weak`, which never fails
    /// spuriously here)
    CompareExchange,
}

impl AtomicOp {
    /// The method's name and its value operands (orderings not counted).
    pub fn lookup(name: &str) -> Option<(AtomicOp, usize)> {
        Some(match name {
            "load" => (AtomicOp::Load, 0),
            "store" => (AtomicOp::Store, 1),
            "swap" => (AtomicOp::Swap, 1),
            "fetch_add" => (AtomicOp::Add, 1),
            "fetch_sub" => (AtomicOp::Sub, 1),
            "fetch_and" => (AtomicOp::And, 1),
            "fetch_or" => (AtomicOp::Or, 1),
            "fetch_xor" => (AtomicOp::Xor, 1),
            "fetch_max" => (AtomicOp::Max, 1),
            "fetch_min" => (AtomicOp::Min, 1),
            "compare_exchange" | "compare_exchange_weak" => (AtomicOp::CompareExchange, 2),
            _ => return None,
        })
    }
}

/// A `std::sync::atomic::Ordering`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemOrder {
    /// `Relaxed`
    Relaxed,
    /// `Acquire`
    Acquire,
    /// `Release`
    Release,
    /// `AcqRel`
    AcqRel,
    /// `SeqCst`
    SeqCst,
}

/// A warp operation of a `for_each_lane` body: every lane of the warp takes part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarpOp {
    /// `shuffle(v, src)`: lane `src % 32`'s value.
    Shuffle,
    /// `shuffle_xor(v, mask)`: lane `id ^ (mask % 32)`'s value.
    ShuffleXor,
    /// `shuffle_up(v, d)`: lane `id - d % 32`'s value, or the lane's own.
    ShuffleUp,
    /// `shuffle_down(v, d)`: lane `id + d % 32`'s value, or the lane's own.
    ShuffleDown,
    /// `ballot(p)`: bit `l` set when `p` holds on lane `l`.
    Ballot,
    /// `all(p)`
    All,
    /// `any(p)`
    Any,
    /// `sum(v)` in the reductions' butterfly order.
    Sum,
    /// `min(v)`
    Min,
    /// `max(v)`
    Max,
}

impl WarpOp {
    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            WarpOp::Shuffle => "shuffle",
            WarpOp::ShuffleXor => "shuffle_xor",
            WarpOp::ShuffleUp => "shuffle_up",
            WarpOp::ShuffleDown => "shuffle_down",
            WarpOp::Ballot => "ballot",
            WarpOp::All => "all",
            WarpOp::Any => "any",
            WarpOp::Sum => "sum",
            WarpOp::Min => "min",
            WarpOp::Max => "max",
        }
    }

    /// The operation of the method `name`.
    pub fn from_name(name: &str) -> Option<WarpOp> {
        [
            WarpOp::Shuffle,
            WarpOp::ShuffleXor,
            WarpOp::ShuffleUp,
            WarpOp::ShuffleDown,
            WarpOp::Ballot,
            WarpOp::All,
            WarpOp::Any,
            WarpOp::Sum,
            WarpOp::Min,
            WarpOp::Max,
        ]
        .into_iter()
        .find(|op| op.name() == name)
    }

    /// Whether every lane gets the same result (so it may steer control flow around later warp
    /// operations).
    pub fn is_uniform(self) -> bool {
        !matches!(
            self,
            WarpOp::Shuffle | WarpOp::ShuffleXor | WarpOp::ShuffleUp | WarpOp::ShuffleDown
        )
    }
}

/// What a parallel reduction combines its items with.
#[derive(Debug, Clone)]
pub enum Reduction {
    /// `sum()`: wrapping or rounded addition from zero.
    Sum,
    /// `min()`: from `MAX` (integers) or NaN (floats).
    Min,
    /// `max()`: from `MIN` (integers) or NaN (floats).
    Max,
    /// `reduce(|| identity, |lhs, rhs| op)`.
    Custom {
        /// The identity's expression.
        identity: Box<Expr>,
        /// The closure's parameters.
        lhs: LocalId,
        /// The closure's parameters.
        rhs: LocalId,
        /// The closure's body; its value is the combination.
        op: Block,
    },
}

/// A scan over a role's threads (see [`ExprKind::ParScan`]).
#[derive(Debug, Clone)]
pub struct ParScan {
    /// The items: a parallel iterator of scalars (maybe mapped).
    pub src: Box<Expr>,
    /// Where the results go: a `par_iter_mut()` source.
    pub dst: Box<Expr>,
    /// The value the first item is combined with.
    pub init: Box<Expr>,
    /// `Sum`, or `Custom` with its identity and closure.
    pub op: Reduction,
    /// `inclusive_*`: each result includes its own item.
    pub inclusive: bool,
}

/// How a closure parameter pattern binds a parallel iterator's items.
#[derive(Debug, Clone)]
pub enum ParBinding {
    /// `x`: the item, bound to a local.
    Local(LocalId),
    /// `_`.
    Ignore,
    /// `(a, b)`.
    Pair(Box<ParBinding>, Box<ParBinding>),
}

/// A typed expression.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Its type.
    pub ty: Ty,
    /// The user's tokens.
    pub span: Span,
}

/// The expressions of the kernel language.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// A literal (constants are folded into literals).
    Lit(Lit),
    /// A local.
    Local(LocalId),
    /// `op x`
    Unary(UnOp, Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `x as T`
    Cast(Box<Expr>, Scalar),
    /// `*r` of an element reference (also inserted where Rust auto-dereferences).
    Deref(Box<Expr>),
    /// `s.len()` of a slice.
    Len(Box<Expr>),
    /// `s[i]`: one element of a slice or slot.
    Index(Box<Expr>, Box<Expr>),
    /// `s[r]`: a sub-slice.
    SubSlice(Box<Expr>, Box<Expr>),
    /// `a..b`
    Range(Box<Expr>, Box<Expr>),
    /// `a..=b`, as a `for` loop's range.
    InclusiveRange(Box<Expr>, Box<Expr>),
    /// A scalar method: the receiver first, then the arguments.
    Math(MathFn, Vec<Expr>),
    /// `r.start` (`false`) or `r.end` (`true`) of a range.
    RangeBound(Box<Expr>, bool),
    /// A call of a helper fn.
    Call(FnId, Vec<Expr>),
    /// `f.await`
    Await(Box<Expr>),
    /// `channel::<[T; N], D>()`
    Channel(ChanTy),
    /// `tx.reserve()`
    Reserve(Box<Expr>),
    /// `rx.recv()`
    Recv(Box<Expr>),
    /// `slot.copy_from(src)`
    CopyFrom(Box<Expr>, Box<Expr>),
    /// `slot.load(matrix, [row, col])` of a tile slot.
    TileLoad {
        /// The reserved slot.
        slot: Box<Expr>,
        /// The `&Matrix<T>`.
        matrix: Box<Expr>,
        /// The row of the tile's top-left element.
        row: Box<Expr>,
        /// Its column.
        col: Box<Expr>,
    },
    /// `tile.store(matrix, [row, col])` of a received tile slot, or
    /// `tile.store_rows(matrix, [row, col], rows)`, which writes only its first `rows` rows.
    TileStore {
        /// The received slot.
        slot: Box<Expr>,
        /// The `&mut Matrix<T>`.
        matrix: Box<Expr>,
        /// The row of the box's top-left element.
        row: Box<Expr>,
        /// Its column.
        col: Box<Expr>,
        /// `store_rows`: how many of the tile's rows are written (a `usize`).
        rows: Option<Box<Expr>>,
    },
    /// `acc.store_tile(&mut slot, col)`: the accumulator's columns `col..` into a reserved tile
    /// slot.
    AccumulatorTile {
        acc: Box<Expr>,
        /// The reserved slot (the `&mut` taken off).
        slot: Box<Expr>,
        col: Box<Expr>,
    },
    /// `matrix.rows()` (`false`) or `matrix.cols()` (`true`).
    MatrixDim(Box<Expr>, bool),
    /// `Accumulator::<M, N>::zero()`
    AccumulatorZero,
    /// `acc.to_bf16()` or `acc.to_f16()` (`elem`): the accumulator rounded, the register A
    /// operand of a later mma.
    AccumulatorToOperand {
        /// The accumulator, a local.
        acc: Box<Expr>,
        /// `bf16` or `f16`.
        elem: Scalar,
    },
    /// `acc.mma(&a, &b)`: a future that adds `a · bᵀ` to the accumulator (`acc.mma_kn(&a,
    /// &b)`: `a · b`); `a` and `b` are tiles of received slots (a slot, or `stage.0` of a pair).
    Mma {
        /// The accumulator, a local.
        acc: Box<Expr>,
        /// The `M` x `K` tile.
        a: Box<Expr>,
        /// The `N` x `K` tile, or with `b_kn` the `K` x `N` one.
        b: Box<Expr>,
        /// `mma_kn`: B is `K` x `N`.
        b_kn: bool,
    },
    /// `acc.mma_stages(&rx, count)`: a future that receives the next `count` stages of `rx`,
    /// each a pair of tiles `(a, b)`, and adds each `a · bᵀ` to the accumulator (with `b_kn`,
    /// `mma_stages_kn`: each `a · b`); its output is whether all `count` came (`false` when the
    /// channel ended first).
    MmaStages {
        /// The accumulator, a local.
        acc: Box<Expr>,
        /// The receiver, a local.
        rx: Box<Expr>,
        /// The number of stages, a `usize`.
        count: Box<Expr>,
        /// `mma_stages_kn`: each stage's B is `K` x `N`.
        b_kn: bool,
    },
    /// `acc.row_max()` (`max`) or `acc.row_sum()`: each row's maximum or sum over the
    /// accumulator's columns, a `Rows<M>`.
    RowReduce { acc: Box<Expr>, max: bool },
    /// `Rows::<M>::splat(v)`: every row's value `v` (an `f32`).
    RowsNew { value: Box<Expr> },
    /// `rows.apply(|x| body)` or `rows.apply_at(|i, x| body)`: each row's value becomes the
    /// body's `f32` value with `x` bound to it (and `i` to the row).
    RowsApply {
        /// The rows, a local.
        rows: Box<Expr>,
        row: Option<LocalId>,
        value: Option<LocalId>,
        body: Block,
    },
    /// `rows.store(out, row)`: row `i`'s value into `out[row + i]`, for the rows inside `out`.
    RowsStore {
        rows: Box<Expr>,
        out: Box<Expr>,
        row: Box<Expr>,
    },
    /// `rows[i]` inside the closure of `acc.apply_at(|i, j, v| ..)`, `i` its row parameter: the
    /// value of the element's row.
    RowOf { rows: Box<Expr>, row: LocalId },
    /// `acc.apply(|v| body)` or `acc.apply_at(|row, col, v| body)`: each element of the
    /// accumulator becomes the body's `f32` value with `v` bound to the element (and `row`,
    /// `col` to its place in the accumulator); `None` for a parameter written `_`.
    AccumulatorApply {
        /// The accumulator, a local.
        acc: Box<Expr>,
        /// `apply_at`'s row and column parameters (`usize`).
        row: Option<LocalId>,
        col: Option<LocalId>,
        /// The element's parameter (`f32`).
        value: Option<LocalId>,
        /// The closure's body, of type `f32`.
        body: Block,
    },
    /// `acc.store(out, cols, [row, col])`: the accumulator, converted to `out`'s element type,
    /// into the row-major matrix `out` of `cols` columns at (`row`, `col`), clipped at its
    /// edges.
    AccumulatorStore {
        /// The accumulator.
        acc: Box<Expr>,
        /// The `&mut [T]`.
        out: Box<Expr>,
        /// The matrix's columns.
        cols: Box<Expr>,
        /// The row of the accumulator's top-left element.
        row: Box<Expr>,
        /// Its column.
        col: Box<Expr>,
        /// `acc.store_scaled(.., alpha, beta)`: each element written is `alpha` times the
        /// accumulator's plus `beta` times the one there (not read when `beta` is 0), `f32`s.
        scale: Option<(Box<Expr>, Box<Expr>)>,
    },
    /// `slot.copy_to(dst)` of a received slot
    CopyTo(Box<Expr>, Box<Expr>),
    /// `slot.send()`
    Send(Box<Expr>),
    /// `drop(x)`
    Drop(Box<Expr>),
    /// `block_tiles(len, tile)`
    BlockTiles(Box<Expr>, Box<Expr>),
    /// `tiles.next()`
    TilesNext(Box<Expr>),
    /// `block_index()` (`false`) or `block_count()` (`true`).
    BlockPosition(bool),
    /// `opt.is_some()` (`true`) or `opt.is_none()` (`false`) of a `checked_*` result.
    OptIsSome(Box<Expr>, bool),
    /// `opt.unwrap()` (`None`: no default, a device panic) or `opt.unwrap_or(default)`.
    OptUnwrap(Box<Expr>, Option<Box<Expr>>),
    /// `shared::<T>()` in the kernel body.
    SharedNew(Scalar),
    /// `shared_array::<T, N>()` or `shared_array_2d::<T, R, C>()` in the kernel body.
    SharedArrayNew(ArrayTy),
    /// `barrier()` in the kernel body.
    BarrierNew,
    /// `rx.subscribe()` in the kernel body: another receiver of the channel (a broadcast).
    Subscribe(Box<Expr>),
    /// `oneshot::<T>()` in the kernel body.
    OneshotNew(Scalar),
    /// `tx.send(value)` of a one-shot sender.
    OneshotSend(Box<Expr>, Box<Expr>),
    /// `rx.recv()` of a one-shot receiver (awaited: the value).
    OneshotRecv(Box<Expr>),
    /// `sync.wait()` of a barrier (awaited).
    BarrierWait(Box<Expr>),
    /// `cell.get()`
    SharedGet(Box<Expr>),
    /// `cell.set(value)`
    SharedSet(Box<Expr>, Box<Expr>),
    /// The same bits as another type of the same size: `h.to_bits()` (to `u16`),
    /// `f16::from_bits(b)`, `f32::from_bits(b)`, `f64::from_bits(b)`.
    HalfBits(Box<Expr>, Scalar),
    /// `panic!(..)`, `unreachable!()`, `assert!(cond, ..)`, ...: a device panic with this
    /// message, when the condition (if any) is false.
    Panic(Option<Box<Expr>>, String),
    /// `(a, b, ..)`
    TupleLit(Vec<Expr>),
    /// `t.0`, or a scalar field of a struct (its component).
    TupleField(Box<Expr>, u32),
    /// An array field of a struct: the struct, its first component and the length.
    StructArray(Box<Expr>, u32, u32),
    /// `[value; N]`
    ArrayRepeat(Box<Expr>, u32),
    /// A `static` table of the module (its number in `Program::statics`).
    Static(u32),
    /// `[a, b, c]`
    ArrayList(Vec<Expr>),
    /// `x.get_unchecked(i)` / `get_unchecked(a..b)` / `get_unchecked_mut(a..b)`: the index or
    /// sub-slice inside, without its bounds checks.
    Unchecked(Box<Expr>),
    /// `atomics[i]`: the element's address.
    AtomicIndex(Box<Expr>, Box<Expr>),
    /// An operation on an atomic element: the element, the operation, its operands
    /// (`compare_exchange`: current, new), and the memory ordering.
    Atomic(Box<Expr>, AtomicOp, Vec<Expr>, MemOrder),
    /// `r.is_ok()` (`true`) or `r.is_err()` (`false`) of a `compare_exchange` result.
    CasIsOk(Box<Expr>, bool),
    /// `r.unwrap_or_else(|v| v)` of a `compare_exchange` result: the previous value.
    CasValue(Box<Expr>),
    /// `opt.unwrap()`
    Unwrap(Box<Expr>),
    /// `x.par_iter()` / `x.par_iter_mut()` of a slice or slot.
    ParSource(Box<Expr>),
    /// `a.zip(b)`
    Zip(Box<Expr>, Box<Expr>),
    /// `a.enumerate()`
    Enumerate(Box<Expr>),
    /// `iter.for_each(|pattern| body)`, or `iter.for_each_lane(async |lane, pattern| body)`
    /// with the lane's local.
    ForEach(Box<Expr>, ParBinding, Block, Option<LocalId>),
    /// `lane.id()` (`false`) or `lane.warp()` (`true`) in a `for_each_lane` body.
    LanePosition(bool),
    /// `lane.shuffle(v, src)`, `lane.sum(v)`, ...: a warp operation (its operands), awaited.
    Warp(WarpOp, Vec<Expr>),
    /// `iter.map(|pattern| body)`: the body's value is the item.
    ParMap(Box<Expr>, ParBinding, Block),
    /// `iter.sum()`, `.min()`, `.max()`, `.reduce(|| identity, |a, b| op)`.
    ParReduce(Box<Expr>, Reduction),
    /// `src.exclusive_sum(dst, init)` and the other scans: the items, the destination (a
    /// `par_iter_mut()`), `init`, what combines them (`Sum` or `Custom`), and whether each result
    /// includes its own item.
    ParScan(ParScan),
    /// `on_warps(start..end, role(args))`, or `on_warpgroups(..)` with its range in warps.
    OnWarps {
        /// First warp.
        start: u32,
        /// One past the last warp.
        end: u32,
        /// Warps per unit of the range as written: 1 for `on_warps`, 4 for `on_warpgroups`.
        group: u32,
        /// The range's tokens, for warp errors.
        range: proc_macro2::TokenStream,
        /// The role's call (a `Call` of an async fn).
        call: Box<Expr>,
    },
    /// `join!(roles...)`
    Join(Vec<Expr>),
    /// `join!(a, b, ..)` in role code: futures run concurrently on the role's warps; each is
    /// an awaited future (an `Await`) or an async block (a `Block`). Its value is the tuple of
    /// the branches' values (`()` when they all have none).
    JoinFutures(Vec<Expr>),
    /// `select! { Some(x) = rx.recv() => body, .. else => body }`.
    Select(Vec<SelectArm>, Option<Box<Expr>>),
    /// `{ ... }`
    Block(Block),
    /// `'label: loop { ... }`, whose value is what `break` gives it.
    Loop(Option<String>, Block),
    /// `match x { arms }` over an integer.
    Match(Box<Expr>, Vec<MatchArm>),
    /// `return value`
    Return(Option<Box<Expr>>),
    /// `(a..b).step_by(k)`
    StepBy(Box<Expr>, Box<Expr>),
    /// `(a..b).rev()`
    Rev(Box<Expr>),
    /// `if c { a } else { b }`
    If(Box<Expr>, Block, Option<Box<Expr>>),
    /// `if let Some(binding) = scrutinee { then } else { else_ }` over the `Option` of a receive
    /// or a reserve (a local holding one, or the awaited operation) or of `tiles.next()`, and a
    /// `match` on one with a `Some(binding)` and a `None` (or `_`) arm. The scrutinee is moved;
    /// a slot is bound in `then`, and released (received) or must be sent (reserved) there.
    IfLetSome {
        /// The `Option`'s expression.
        scrutinee: Box<Expr>,
        /// The slot's local, or `None` for `Some(_)`.
        binding: Option<LocalId>,
        /// Where it is `Some`.
        then: Block,
        /// Where it is `None`.
        else_: Option<Box<Expr>>,
    },
    /// `s.split_at(mid)` / `s.split_at_mut(mid)`: the two parts (`mid` at most the length).
    SplitAt(Box<Expr>, Box<Expr>),
    /// `s.chunks(n)` (and `chunks_mut`, `_exact`): the slice and the chunk length; `exact`
    /// leaves out a last chunk shorter than `n`.
    Chunks {
        /// The slice.
        base: Box<Expr>,
        /// Elements per chunk.
        size: Box<Expr>,
        /// `chunks_exact(_mut)`.
        exact: bool,
    },
    /// `chunks.next()`: the next chunk, if any (in the kernel body, in order).
    ChunksNext(Box<Expr>),
    /// `next.take()` of a local holding the `Option` of a receive: its value, leaving `None`.
    SlotTake(Box<Expr>),
    /// `rx.close()`: the receiver stops receiving, and the sender's `reserve` answers `None`
    /// once every receiver has closed.
    RecvClose(Box<Expr>),
    /// `place = value`
    Assign(Box<Expr>, Box<Expr>),
    /// `place op= value`
    CompoundAssign(BinOp, Box<Expr>, Box<Expr>),
}

/// A statement.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `let pat = init;`
    Let(LetPattern, Expr),
    /// `expr;` (or a tail-less block's last expression)
    Expr(Expr),
    /// `'label: for var in iter { body }` over a range (maybe `.rev()` or `.step_by(k)`) or
    /// `block_tiles`.
    For(Option<String>, LocalId, Expr, Block),
    /// `while let Some(var) = scrutinee { body }` over `rx.recv().await`, `tx.reserve().await` or
    /// `tiles.next()`.
    WhileLet(Option<String>, LocalId, Expr, Block),
    /// `let Some(var) = scrutinee else { diverge };` over an `Option` (a receive, a reserve,
    /// `tiles.next()`, a `checked_*` result): `else` runs where it is `None` and does not end.
    LetElse(LocalId, Expr, Block),
    /// `while cond { body }`
    While(Option<String>, Expr, Block),
    /// `break 'label value;`
    Break(Option<String>, Option<Expr>, Span),
    /// `continue 'label;`
    Continue(Option<String>, Span),
}

/// The device panic of a `select!` without an `else` arm whose channels have all closed (the
/// same message on both backends).
pub const SELECT_DISABLED: &str =
    "all branches of `select!` are disabled (their channels have closed) and it has no `else` arm";

/// An arm of `select!`: `Some(binding) = recv => body`.
#[derive(Debug, Clone)]
pub struct SelectArm {
    /// `rx.recv()` (a `Recv`, not awaited).
    pub recv: Expr,
    /// The received slot's local.
    pub binding: LocalId,
    /// The arm's value.
    pub body: Expr,
}

/// One pattern of a `match` arm over an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchPat {
    /// A literal, as the bits of the scrutinee's type.
    Value(u64),
    /// `lo..=hi`
    Range(u64, u64),
    /// `_` or a binding-free catch-all.
    Wild,
}

/// An arm of a `match`.
#[derive(Debug, Clone)]
pub struct MatchArm {
    /// `a | b | c`
    pub patterns: Vec<MatchPat>,
    /// `x` in `x if x > 8 => ..`: the scrutinee, bound to a local.
    pub binding: Option<LocalId>,
    /// `if guard`
    pub guard: Option<Expr>,
    /// The arm's value.
    pub body: Expr,
}

/// The left side of a `let`.
#[derive(Debug, Clone)]
pub enum LetPattern {
    /// `let x`
    Local(LocalId),
    /// `let (a, b)`, for `channel()`.
    Pair(LocalId, LocalId),
    /// `let (a, _, c) = tuple;`
    Tuple(Vec<Option<LocalId>>),
    /// `let _`
    Ignore,
}

/// A block.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// Its statements.
    pub stmts: Vec<Stmt>,
    /// Its value, if it ends in an expression without `;`.
    pub tail: Option<Box<Expr>>,
}
