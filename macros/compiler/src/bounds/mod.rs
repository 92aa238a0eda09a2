//! Phase 5, bounds: the bounds checks the compiler proves never fire: a `panic_if` whose condition is false on every
//! path to it is removed.
//!
//! Why: a role that walks its tiles with `block_tiles(x.len(), T)` and slices `x[tile]` checks,
//! on every tile, that the range starts before it ends, that it ends within `x`, and that a bulk
//! copy of it fits the slot. `block_tiles` only yields ranges `start..min(start + T, len)` with
//! `start < len`, so none of those checks can fire, and ptxas cannot see it (the facts come from
//! the loop's exit test). On the H200, cutting them out of the pipeline example's PTX made it
//! 0.8% faster at 2 blocks per SM, where its single-warp load and store roles pay for every
//! instruction between a wait and a copy (`docs/design.md`, "Tile ranges need no bounds
//! checks").
//!
//! How: a forward walk over each role's structured code that knows, at each instruction, the
//! expressions of `usize` and `bool` values computed before it (constants, copies, `min`, `+`,
//! `-`, comparisons, `!`) and the booleans known true or false there: after a `panic_if c`,
//! `c` is false; after `if c { ..; break }`, `c` is false; inside `if c`, `c` is true. A value's
//! expression and facts are forgotten when it or one of its operands is written again, when
//! a branch of an `if` may have written it, and, for a loop, when the loop body writes it
//! anywhere (the body may run again). From these it proves `a <= b` by a few rules that hold for
//! unsigned 64-bit integers:
//!
//! - `a` and `b` are the same value (through copies), or `a < b` is known;
//! - `b = min(s, t)` with `a <= s` and `a <= t`; `a = min(p, q)` with `p <= b` or `q <= b`;
//! - `b = a + c` for a constant `c < 2^63`, when `a < L` is known for a slice length `L` (a
//!   kernel parameter's length, below 2^63 since it counts elements of at least one byte), so
//!   that the sum does not wrap;
//! - `a = m - s` with `s <= m` and `m = min(s + c, _)` (as above, no wrap): `a <= c`;
//! - both are constants.
//!
//! A check `a > b` with `a <= b` proven, `!x` with `x` known true, and `c1 == c2` of two different
//! constants are removed. Nothing else changes: the values stay computed (ptxas drops those no
//! longer used), and the simulator, which runs the kernel's Rust code, still checks: it can never
//! fail there either.

use crate::ir::{for_each_inst, BinOp, Block, Imm, Inst, Kernel, ParamKind, UnOp, Value};
use crate::types::Scalar;

/// Removes the checks of `k` that are proven never to fire; returns how many.
pub fn remove_proven_checks(k: &mut Kernel) -> usize {
    let n = k.values.len();
    let mut slice_lens = vec![false; n];
    for p in &k.params {
        if let ParamKind::Slice { len, .. } = p.kind {
            if let Some(s) = slice_lens.get_mut(len.0 as usize) {
                *s = true;
            }
        }
    }
    let lens: Vec<Value> = (0..n as u32)
        .map(Value)
        .filter(|v| slice_lens[v.0 as usize])
        .collect();
    let types: Vec<Scalar> = k.values.iter().map(|v| v.ty).collect();
    let mut removed = 0;
    for role in &mut k.roles {
        let mut facts = Facts {
            types: &types,
            exprs: vec![None; n],
            known: vec![None; n],
            trues: ValueSet::new(n),
            slice_lens: slice_lens.clone(),
            lens: lens.clone(),
            users: vec![Vec::new(); n],
            undo: Vec::new(),
            marks: 0,
        };
        removed += facts.walk(&mut role.body);
    }
    removed
}

/// What a value was computed from, as far as these proofs need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expr {
    Const(u64),
    Copy(Value),
    Not(Value),
    Binary(BinOp, Value, Value),
}

impl Expr {
    /// Whether the expression reads `v`.
    fn reads(self, v: Value) -> bool {
        match self {
            Expr::Const(_) => false,
            Expr::Copy(x) | Expr::Not(x) => x == v,
            Expr::Binary(_, a, b) => a == v || b == v,
        }
    }

    /// The values the expression reads (a value twice when it is both operands).
    fn operands(self) -> impl Iterator<Item = Value> {
        let (a, b) = match self {
            Expr::Const(_) => (None, None),
            Expr::Copy(x) | Expr::Not(x) => (Some(x), None),
            Expr::Binary(_, a, b) => (Some(a), Some(b)),
        };
        a.into_iter().chain(b)
    }
}

/// A change to the facts, kept while a branch or a loop body is walked, so that the walk can
/// return to the facts before it without copying them.
enum Undo {
    /// `exprs[v]` was this.
    Expr(Value, Option<Expr>),
    /// `known[v]` was this.
    Known(Value, Option<bool>),
    /// `v` was in `slice_lens`.
    SliceLen(Value),
    /// A value was pushed to `users[v]`.
    UserPushed(Value),
    /// `users[v]` was this list, taken out.
    UsersTaken(Value, Vec<Value>),
}

/// The state of the walk at one point of the code.
struct Facts<'k> {
    types: &'k [Scalar],
    /// The expression of each value (by number) whose current content it still describes.
    exprs: Vec<Option<Expr>>,
    /// Booleans known true or false here.
    known: Vec<Option<bool>>,
    /// The booleans known true (`known_lt` looks among them).
    trues: ValueSet,
    /// Values holding a slice parameter's length (below 2^63), not written since.
    slice_lens: Vec<bool>,
    /// The slice parameters' lengths (those of them still in `slice_lens` count).
    lens: Vec<Value>,
    /// For each value, the values whose expression read it when it was recorded (some may
    /// have another expression since): what to forget when it is written.
    users: Vec<Vec<Value>>,
    /// The changes since the oldest mark still open.
    undo: Vec<Undo>,
    /// Marks open: changes are recorded only while one is.
    marks: usize,
}

/// How deep `le` may recurse: the tile ranges need 4; more would only cost compile time.
const DEPTH: u32 = 6;

impl Facts<'_> {
    /// Walks `block`, removing the checks proven false; returns how many it removed. The facts
    /// after it are those at its end.
    fn walk(&mut self, block: &mut Block) -> usize {
        let mut removed = 0;
        let mut out = Vec::with_capacity(block.0.len());
        for mut inst in std::mem::take(&mut block.0) {
            match &mut inst {
                Inst::PanicIf { cond, .. } => {
                    if self.is_false(*cond, DEPTH) {
                        removed += 1;
                        continue;
                    }
                    let cond = *cond;
                    out.push(inst);
                    self.learn(cond, false);
                    continue;
                }
                Inst::If { cond, then, else_ } => {
                    let cond = *cond;
                    let mark = self.mark();
                    self.learn(cond, true);
                    removed += self.walk(then);
                    self.rollback(mark);
                    let mark = self.mark();
                    self.learn(cond, false);
                    removed += self.walk(else_);
                    self.rollback(mark);
                    let (then_leaves, else_leaves) = (leaves(then), leaves(else_));
                    let written = written_in(&[&*then, &*else_]);
                    self.forget_all(&written);
                    // Past an `if` whose one branch always leaves, the other one was taken.
                    if then_leaves && !else_leaves && else_.0.is_empty() {
                        self.learn(cond, false);
                    } else if else_leaves && !then_leaves && then.0.is_empty() {
                        self.learn(cond, true);
                    }
                }
                Inst::Loop { body, .. } => {
                    // The body may run again after writing anything it writes.
                    let written = written_in(&[&*body]);
                    self.forget_all(&written);
                    let mark = self.mark();
                    removed += self.walk(body);
                    self.rollback(mark);
                }
                other => {
                    // Nested code (parallel loops, `join!` branches) is not walked; what it
                    // writes is forgotten.
                    let mut written: Vec<Value> = other.defs();
                    match other {
                        Inst::Join { branches } => {
                            let blocks: Vec<&Block> = branches.iter().collect();
                            written.extend(written_in(&blocks));
                        }
                        Inst::ParFor(p) => {
                            let mut blocks = vec![&p.body];
                            if let Some(r) = &p.reduce {
                                blocks.push(&r.combine);
                            }
                            written.extend(written_in(&blocks));
                        }
                        _ => {}
                    }
                    self.forget_all(&written);
                    if let Some((dst, e)) = expression(other) {
                        // An expression that reads its own destination describes the old value.
                        if !e.reads(dst) {
                            self.set_expr(dst, e);
                        }
                    }
                }
            }
            out.push(inst);
        }
        block.0 = out;
        removed
    }

    /// Starts recording changes; [`Facts::rollback`] to the mark undoes those after it.
    fn mark(&mut self) -> usize {
        self.marks += 1;
        self.undo.len()
    }

    /// Undoes the changes after `mark`, and closes it.
    fn rollback(&mut self, mark: usize) {
        while self.undo.len() > mark {
            match self.undo.pop() {
                Some(Undo::Expr(v, old)) => self.exprs[v.0 as usize] = old,
                Some(Undo::Known(v, old)) => {
                    self.known[v.0 as usize] = old;
                    if old == Some(true) {
                        self.trues.insert(v);
                    } else {
                        self.trues.remove(v);
                    }
                }
                Some(Undo::SliceLen(v)) => self.slice_lens[v.0 as usize] = true,
                Some(Undo::UserPushed(v)) => {
                    self.users[v.0 as usize].pop();
                }
                Some(Undo::UsersTaken(v, list)) => self.users[v.0 as usize] = list,
                None => {}
            }
        }
        self.marks -= 1;
    }

    /// Records `change` if a mark is open.
    fn record(&mut self, change: Undo) {
        if self.marks > 0 {
            self.undo.push(change);
        }
    }

    /// `exprs[v] = e`.
    fn set_expr(&mut self, v: Value, e: Expr) {
        let old = self.exprs[v.0 as usize].replace(e);
        self.record(Undo::Expr(v, old));
        for o in e.operands() {
            self.users[o.0 as usize].push(v);
            self.record(Undo::UserPushed(o));
        }
    }

    /// Forgets `exprs[v]`.
    fn remove_expr(&mut self, v: Value) {
        if let Some(old) = self.exprs[v.0 as usize].take() {
            self.record(Undo::Expr(v, Some(old)));
        }
    }

    /// `known[b] = value`.
    fn set_known(&mut self, b: Value, value: bool) {
        let old = self.known[b.0 as usize].replace(value);
        self.record(Undo::Known(b, old));
        if value {
            self.trues.insert(b);
        } else {
            self.trues.remove(b);
        }
    }

    /// Forgets what is known of each of `written` and every expression that reads one.
    fn forget_all(&mut self, written: &[Value]) {
        for &w in written {
            self.remove_expr(w);
            if let Some(old) = self.known[w.0 as usize].take() {
                self.record(Undo::Known(w, Some(old)));
                self.trues.remove(w);
            }
            if std::mem::take(&mut self.slice_lens[w.0 as usize]) {
                self.record(Undo::SliceLen(w));
            }
            let users = std::mem::take(&mut self.users[w.0 as usize]);
            if !users.is_empty() {
                for &u in &users {
                    if self.exprs[u.0 as usize].is_some_and(|e| e.reads(w)) {
                        self.remove_expr(u);
                    }
                }
                if self.marks > 0 {
                    self.undo.push(Undo::UsersTaken(w, users));
                }
            }
        }
    }

    /// Records that `b` holds `value` here (and what follows from `!`).
    fn learn(&mut self, b: Value, value: bool) {
        self.set_known(b, value);
        if let Some(Expr::Not(x)) = self.exprs[b.0 as usize] {
            self.set_known(x, !value);
        }
    }

    /// `v` through copies.
    fn root(&self, mut v: Value) -> Value {
        for _ in 0..16 {
            match self.exprs[v.0 as usize] {
                Some(Expr::Copy(src)) => v = src,
                _ => break,
            }
        }
        v
    }

    fn expr(&self, v: Value) -> Option<Expr> {
        self.exprs[self.root(v).0 as usize]
    }

    fn constant(&self, v: Value) -> Option<u64> {
        match self.expr(v) {
            Some(Expr::Const(c)) => Some(c),
            _ => None,
        }
    }

    fn is_usize(&self, v: Value) -> bool {
        self.types.get(v.0 as usize) == Some(&Scalar::Usize)
    }

    fn is_true(&self, b: Value, depth: u32) -> bool {
        let b = self.root(b);
        if self.known[b.0 as usize] == Some(true) {
            return true;
        }
        match self.exprs[b.0 as usize] {
            Some(Expr::Not(x)) if depth > 0 => self.is_false(x, depth - 1),
            _ => false,
        }
    }

    fn is_false(&self, b: Value, depth: u32) -> bool {
        let b = self.root(b);
        if self.known[b.0 as usize] == Some(false) {
            return true;
        }
        if depth == 0 {
            return false;
        }
        match self.exprs[b.0 as usize] {
            Some(Expr::Not(x)) => self.is_true(x, depth - 1),
            Some(Expr::Binary(BinOp::Gt, a, c)) if self.is_usize(a) => self.le(a, c, depth - 1),
            Some(Expr::Binary(BinOp::Eq, a, c)) => matches!(
                (self.constant(a), self.constant(c)),
                (Some(x), Some(y)) if x != y
            ),
            _ => false,
        }
    }

    /// `a < l` is known here.
    fn known_lt(&self, a: Value, l: Value) -> bool {
        let (a, l) = (self.root(a), self.root(l));
        self.trues.values.iter().any(|b| {
            matches!(self.exprs[b.0 as usize], Some(Expr::Binary(BinOp::Lt, x, y))
                    if self.root(x) == a && self.root(y) == l && self.is_usize(x))
        })
    }

    /// `a < L` is known for a slice length `L`: `a + c` does not wrap for a constant `c < 2^63`.
    fn below_a_slice_length(&self, a: Value) -> bool {
        self.lens
            .iter()
            .any(|l| self.slice_lens[l.0 as usize] && self.known_lt(a, *l))
    }

    /// `a <= b`, both `usize`, proven here.
    fn le(&self, a: Value, b: Value, depth: u32) -> bool {
        let (a, b) = (self.root(a), self.root(b));
        if a == b || self.known_lt(a, b) {
            return true;
        }
        if let (Some(x), Some(y)) = (self.constant(a), self.constant(b)) {
            return x <= y;
        }
        if depth == 0 {
            return false;
        }
        let d = depth - 1;
        if let Some(Expr::Binary(BinOp::Min, s, t)) = self.exprs[b.0 as usize] {
            if self.le(a, s, d) && self.le(a, t, d) {
                return true;
            }
        }
        if let Some(Expr::Binary(BinOp::Min, p, q)) = self.exprs[a.0 as usize] {
            if self.le(p, b, d) || self.le(q, b, d) {
                return true;
            }
        }
        if let Some(Expr::Binary(BinOp::Add, x, c)) = self.exprs[b.0 as usize] {
            if self.root(x) == a && self.no_wrap(a, c) {
                return true;
            }
        }
        if let (Some(Expr::Binary(BinOp::Sub, m, s)), Some(k)) =
            (self.exprs[a.0 as usize], self.constant(b))
        {
            // `m - s <= c <= k` when `s <= m` and `m = min(s + c, _)` without wrapping.
            if self.le(s, m, d) {
                if let Some(Expr::Binary(BinOp::Min, t, _)) = self.expr(m) {
                    if let Some(Expr::Binary(BinOp::Add, x, c)) = self.expr(t) {
                        if self.root(x) == self.root(s) && self.no_wrap(s, c) {
                            return self.constant(c).is_some_and(|c| c <= k);
                        }
                    }
                }
            }
        }
        false
    }

    /// `a + c` does not wrap: `c` is a constant below 2^63 and `a` below a slice length.
    fn no_wrap(&self, a: Value, c: Value) -> bool {
        self.constant(c).is_some_and(|c| c < 1 << 63) && self.below_a_slice_length(a)
    }
}

/// The value an instruction defines and its expression, for the instructions the proofs read.
fn expression(inst: &Inst) -> Option<(Value, Expr)> {
    match inst {
        Inst::Const {
            dst,
            imm: Imm::Int(v),
        } => Some((*dst, Expr::Const(*v))),
        Inst::Copy { dst, src } => Some((*dst, Expr::Copy(*src))),
        Inst::Unary {
            dst,
            op: UnOp::Not,
            src,
        } => Some((*dst, Expr::Not(*src))),
        Inst::Binary { dst, op, lhs, rhs }
            if matches!(
                op,
                BinOp::Min | BinOp::Add | BinOp::Sub | BinOp::Lt | BinOp::Gt | BinOp::Eq
            ) =>
        {
            Some((*dst, Expr::Binary(*op, *lhs, *rhs)))
        }
        _ => None,
    }
}

/// Every value written in `blocks`, nested code included.
fn written_in(blocks: &[&Block]) -> Vec<Value> {
    let mut out = Vec::new();
    for b in blocks {
        for_each_inst(b, &mut |inst: &Inst| out.extend(inst.defs()));
    }
    out
}

/// A set of values that inserts and removes in constant time and lists its members.
struct ValueSet {
    values: Vec<Value>,
    /// Each value's position in `values` plus one, or zero when it is not in the set.
    at: Vec<u32>,
}

impl ValueSet {
    /// An empty set of values below `n`.
    fn new(n: usize) -> Self {
        ValueSet {
            values: Vec::new(),
            at: vec![0; n],
        }
    }

    fn insert(&mut self, v: Value) {
        if self.at[v.0 as usize] == 0 {
            self.values.push(v);
            self.at[v.0 as usize] = self.values.len() as u32;
        }
    }

    fn remove(&mut self, v: Value) {
        let i = std::mem::take(&mut self.at[v.0 as usize]) as usize;
        if i == 0 {
            return;
        }
        self.values.swap_remove(i - 1);
        if let Some(moved) = self.values.get(i - 1) {
            self.at[moved.0 as usize] = i as u32;
        }
    }
}

/// `block` always leaves the code after it: it ends with `break` or `continue`.
fn leaves(block: &Block) -> bool {
    matches!(block.0.last(), Some(Inst::Break(_) | Inst::Continue(_)))
}
