//! The lowering's state types: what an expression lowers to (`Val`), where a memory access
//! goes (`MemKey`), the frames of inlined functions with their scopes and loops, the kernel's
//! one-shot values, and the context of the parallel loop being lowered.
//!
//! Every topic module of the lowering builds and reads these, so they sit apart from all of them.

use std::collections::HashMap;

use proc_macro2::Span;

use crate::ir::{ChannelId, LoopId, ParSource, RoleId, Space, Value};
use crate::tir::{FnId, LocalId};
use crate::types::Scalar;

/// Where a memory access goes, for deciding which parallel loops need a barrier after them: a
/// kernel parameter, or the slots of a channel, told apart by the reserve that took them (each
/// reserve of the role's code gives another slot; received slots are read only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum MemKey {
    Param(usize),
    Slot(ChannelId, u32),
    /// A shared array, whose barriers `shared_sync` places.
    Array(u32),
}

/// A received slot: its channel, and where its ring position is: the receiving ring's held
/// register (`None`, the slot the last `recv` took), or a `u32` value of its own (a slot kept
/// while the role receives another, or held in a local that is reassigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SlotRef {
    pub(super) chan: ChannelId,
    /// Which of the role's receivers of the channel took it.
    pub(super) rx: u32,
    pub(super) at: Option<Value>,
}

/// What an expression lowers to: registers, or the static description of a place, a channel
/// end, a range or another value the lowering follows without registers of its own.
#[derive(Debug, Clone)]
pub(super) enum Val {
    Unit,
    Scalar(Value),
    /// A slice of global memory (`ptr` a `usize` address) or of a channel slot (`space` is
    /// `Shared`, `ptr` a `u32` shared address).
    Slice {
        ptr: Value,
        len: Value,
        elem: Scalar,
        mem: MemKey,
        tiles: bool,
        space: Space,
    },
    Range {
        start: Value,
        end: Value,
        tiles: bool,
    },
    OptRange {
        some: Value,
        start: Value,
        end: Value,
    },
    Tiles {
        next: Value,
        step: Value,
        len: Value,
        tile: Value,
    },
    Sender(ChannelId),
    /// A receiver: in the kernel body, its channel and its subscription (0 for the channel's
    /// own, then one per `subscribe()`); in a role, its channel and which of the role's
    /// receivers of it it is (0, or 1 and up for a second receiver of a broadcast).
    Receiver(ChannelId, u32),
    SendSlot(ChannelId),
    RecvSlot(SlotRef),
    /// The `Option` of a receive: whether it holds a slot, and the slot.
    OptRecvSlot {
        slot: SlotRef,
        some: Value,
    },
    /// The two parts of `split_at`.
    SlicePair(Box<Val>, Box<Val>),
    /// The chunks of a slice (`chunks(size)`): `taken` of them handed out so far.
    Chunks {
        slice: Box<Val>,
        size: Value,
        exact: bool,
        taken: u32,
    },
    /// `chunks.next()`: whether there was a chunk, and the chunk.
    OptSlice {
        some: Value,
        slice: Box<Val>,
    },
    /// The `Option` of a reserve: whether it holds a slot (`None`: it always does, nothing
    /// closes the channel from the receiving side).
    OptSendSlot {
        chan: ChannelId,
        some: Option<Value>,
    },
    ElemRef(usize),
    /// An element of a struct slot in a parallel loop: the source of each field.
    StructRef(Vec<usize>),
    /// An element of an atomic slice: its global address.
    AtomicRef(Value),
    /// A local array in registers (indexed by constants only): one value per element.
    Array(Vec<Value>),
    /// An `Accumulator<M, N>`: the thread's `N / 2` `f32` values of its warpgroup's fragment.
    Acc(Vec<Value>),
    /// A fragment (`acc.to_bf16()`): the thread's packed `u32` pairs, 4 per K step of 16.
    Frag(Vec<Value>),
    /// A `Rows<M>`: the values of the thread's two rows (`ir::fragment_place`).
    Rows(Vec<Value>),
    /// An issued mma not yet awaited (`let pending = acc.mma(&a, &b);`), by its number in the
    /// role: its await, or its drop, waits for it (and for those issued before it).
    PendingMma(u32),
    /// A `static` table of the module, in constant memory.
    ConstTable(u32),
    /// A tuple of scalars.
    Tuple(Vec<Value>),
    /// A block-local shared value: its cell.
    SharedCell(u32),
    /// A block-shared array: its number.
    SharedArray(u32),
    /// `tile[r]` of a 2D shared array: the array and the (checked) row.
    SharedRow {
        array: u32,
        row: Value,
    },
    /// An atomic element of a shared array: its shared address and the array.
    SharedAtomicRef {
        addr: Value,
        array: u32,
    },
    /// A matrix parameter: its number in the kernel's parameters, element type, and the values
    /// of its rows and columns (its address is for the launcher, which encodes its maps).
    Matrix {
        param: u32,
        elem: Scalar,
        rows: Value,
        cols: Value,
    },
    /// A barrier between roles: its number.
    Barrier(u32),
    /// The sending end of one-shot value `k`.
    OneshotTx(u32),
    /// The receiving end of one-shot value `k`.
    OneshotRx(u32),
    /// A local array in the thread's local memory: its address.
    LocalArray {
        addr: Value,
        elem: Scalar,
        len: u32,
    },
    /// A `compare_exchange` result: whether it stored, and the previous value.
    Cas {
        ok: Value,
        old: Value,
    },
}

impl Val {
    /// The scalars a value is made of: one for a scalar, each element of a tuple.
    pub(super) fn scalars(&self) -> Vec<Value> {
        match self {
            Val::Scalar(v) => vec![*v],
            Val::Tuple(values) => values.clone(),
            _ => Vec::new(),
        }
    }
}

/// A block of an inlined function, as ownership sees it.
pub(super) struct Scope {
    /// Locals whose drop has an effect, in declaration order.
    pub(super) owned: Vec<(LocalId, Span)>,
    /// The loop this scope is the body of.
    pub(super) lp: Option<LoopScope>,
}

/// A loop, as `break` and `continue` see it.
#[derive(Debug, Clone)]
pub(super) struct LoopScope {
    pub(super) id: LoopId,
    pub(super) label: Option<String>,
    /// Where `break value` puts its value (`loop` expressions).
    pub(super) result: Option<Value>,
}

impl LoopScope {
    pub(super) fn new(id: LoopId, label: &Option<String>) -> Option<LoopScope> {
        Some(LoopScope {
            id,
            label: label.clone(),
            result: None,
        })
    }
}

/// A set of one function's locals, indexed by their number. Every scope exit (each `return`)
/// and every receive walks the owned locals and asks whether each was moved: with a hashed set,
/// 2,000 handoffs (`reserve` .. `else { return }`, `send`) took 2.4 s to lower in an
/// unoptimized build.
#[derive(Clone, Default)]
pub(super) struct LocalSet(Vec<bool>);

impl LocalSet {
    pub(super) fn contains(&self, local: &LocalId) -> bool {
        self.0.get(local.0 as usize).copied().unwrap_or(false)
    }

    /// Adds `local`; whether it was absent.
    pub(super) fn insert(&mut self, local: LocalId) -> bool {
        let i = local.0 as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, false);
        }
        !std::mem::replace(&mut self.0[i], true)
    }

    /// Removes `local`; whether it was present.
    pub(super) fn remove(&mut self, local: &LocalId) -> bool {
        self.0
            .get_mut(local.0 as usize)
            .is_some_and(|b| std::mem::replace(b, false))
    }
}

/// One inlined function instance.
pub(super) struct Frame {
    pub(super) func: FnId,
    pub(super) locals: HashMap<LocalId, Val>,
    pub(super) moved: LocalSet,
    /// Reserved slots reported as dropped without `send`: each is reported once, not once per
    /// path that drops it (every `return` drops every slot in scope).
    pub(super) unsent_reported: LocalSet,
    pub(super) copied: LocalSet,
    pub(super) scopes: Vec<Scope>,
    pub(super) decl_depth: HashMap<LocalId, u32>,
    /// For a function with `return`: the loop its body runs in (left by `return`) and the
    /// value it returns.
    pub(super) ret: Option<(LoopId, Vec<Value>)>,
}

impl Frame {
    pub(super) fn new(func: FnId) -> Frame {
        Frame {
            func,
            locals: HashMap::new(),
            moved: LocalSet::default(),
            unsent_reported: LocalSet::default(),
            copied: LocalSet::default(),
            scopes: vec![Scope {
                owned: Vec::new(),
                lp: None,
            }],
            decl_depth: HashMap::new(),
            ret: None,
        }
    }
}

/// A one-shot value of the kernel being lowered.
pub(super) struct Oneshot {
    pub(super) cell: u32,
    pub(super) name: String,
    pub(super) sender: Option<RoleId>,
    pub(super) receiver: Option<RoleId>,
    pub(super) span: Span,
}

/// The parallel loop being lowered: its sources, whose element reads and writes its body marks.
pub(super) struct ParCtx {
    pub(super) sources: Vec<ParSource>,
    /// `cond_depth` at the top of the body: a write deeper than this is conditional.
    pub(super) body_depth: u32,
}
