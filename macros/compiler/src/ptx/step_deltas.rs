//! How the values of a parallel loop's body change from one step to the next, for the loops
//! written as straight-line steps ([`Writer::par_index_steps`]): thread `t` takes items `t`,
//! `t + T`, `t + 2T`, ..., and a value whose step `k` is its step 0 plus `k` times a constant
//! (or a constant times a loop-invariant value) is written in steps 1.. as one `add` (or `mad`)
//! from its step-0 register, not by repeating the arithmetic that made it.
//!
//! The transpose's `(r0 + i / 32) * n + c0 + i % 32` is the case that matters: written out per
//! step, its 64-bit index arithmetic came to about fifteen instructions per load, and ptxas
//! then placed the first load's shared store before the last step's load was issued, so that
//! the last load waited for the first one's data (on the H200, 8 warps of 4 steps ran at
//! 0.64x a device copy). Its address in step `k` is the step-0 address plus `k * 32 * n`.
//!
//! Every rule holds in the wrapping arithmetic of 32- and 64-bit registers, which is the
//! kernel language's: `(b + k*d) & (2^s - 1) == b & (2^s - 1)` when `2^s` divides `d`, and
//! narrowing keeps a step's low bits. `(b + k*d) >> s == (b >> s) + k*(d >> s)` when `2^s`
//! divides `d` holds only while `b + k*d` does not wrap, so the shift and the division take it
//! only for values with a known bound in every step (the index is below the loop's count, and
//! sums, products, shifts and masks of bounded values are bounded while below `2^width`): a
//! value such as `(i as u32).wrapping_sub(100) >> 4` crosses zero between steps, and is written
//! per step. Narrower integers (kept normalized in 32-bit registers),
//! signed division, shifts right and remainders, widening casts of a changing value, loads and
//! everything else have no delta and are written per step as before.

use std::collections::{HashMap, HashSet};

use super::error::WriteResult;
use super::Writer;
use crate::ir::{BinOp, Block, Inst, Value};

/// Step `k` of a value is its step 0 plus `k` times this (wrapping in the value's width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delta {
    /// A constant (0: the value is the same in every step).
    Const(u64),
    /// A constant times a value defined outside the loop.
    Scaled { factor: u64, by: Value },
}

impl Delta {
    fn times(self, c: u64) -> Delta {
        match self {
            Delta::Const(d) => Delta::Const(d.wrapping_mul(c)),
            Delta::Scaled { factor, by } => Delta::Scaled {
                factor: factor.wrapping_mul(c),
                by,
            },
        }
    }

    fn plus(self, other: Delta) -> Option<Delta> {
        match (self, other) {
            (Delta::Const(a), Delta::Const(b)) => Some(Delta::Const(a.wrapping_add(b))),
            (s @ Delta::Scaled { .. }, Delta::Const(0))
            | (Delta::Const(0), s @ Delta::Scaled { .. }) => Some(s),
            (Delta::Scaled { factor: a, by: x }, Delta::Scaled { factor: b, by: y }) if x == y => {
                Some(Delta::Scaled {
                    factor: a.wrapping_add(b),
                    by: x,
                })
            }
            _ => None,
        }
    }
}

impl Writer<'_> {
    /// The deltas of the values `body` defines when `index` advances by `stride` per step, for
    /// the integer values of 32 or 64 bits whose rule is known (see the module's comment).
    pub(super) fn step_deltas(
        &self,
        body: &Block,
        index: Option<Value>,
        (stride, items): (u64, u64),
    ) -> HashMap<Value, Delta> {
        let defined: HashSet<Value> = index
            .into_iter()
            .chain(body.0.iter().flat_map(Inst::defs))
            .collect();
        let mut deltas: HashMap<Value, Delta> = HashMap::new();
        // Exclusive bounds of values in every step, where known: the index is below `items`.
        let mut bounds: HashMap<Value, u128> = HashMap::new();
        if let Some(i) = index {
            deltas.insert(i, Delta::Const(stride));
            bounds.insert(i, u128::from(items));
        }
        let delta_of = |deltas: &HashMap<Value, Delta>, v: Value| -> Option<Delta> {
            if defined.contains(&v) {
                deltas.get(&v).copied()
            } else {
                Some(Delta::Const(0))
            }
        };
        for inst in &body.0 {
            let (dst, delta) = match inst {
                Inst::Const { dst, .. } => (*dst, Some(Delta::Const(0))),
                Inst::Copy { dst, src } => (*dst, delta_of(&deltas, *src)),
                Inst::Cast { dst, src } => {
                    let (from, to) = (self.k.ty(*src), self.k.ty(*dst));
                    let ints = register_int(from) && register_int(to);
                    let delta = match delta_of(&deltas, *src) {
                        Some(Delta::Const(0)) => Some(Delta::Const(0)),
                        // The same bits read as another type of the same width.
                        d if ints && to.size() == from.size() => d,
                        // Narrowing keeps the low bits of a constant delta; a delta scaled by a
                        // value keeps that value's width, which the narrower `mad` cannot take.
                        Some(Delta::Const(c)) if ints && to.size() < from.size() => {
                            Some(Delta::Const(c))
                        }
                        _ => None,
                    };
                    (*dst, delta)
                }
                Inst::Binary { dst, op, lhs, rhs } => {
                    let bounded = self.bound(&bounds, &defined, *lhs).is_some();
                    let d = match (delta_of(&deltas, *lhs), delta_of(&deltas, *rhs)) {
                        (Some(a), Some(b)) => self.binary_delta(*op, (*lhs, a, bounded), (*rhs, b)),
                        _ => None,
                    };
                    (*dst, d)
                }
                _ => {
                    for d in inst.defs() {
                        deltas.remove(&d);
                    }
                    continue;
                }
            };
            if let Some(b) = self.bound_of(inst, &bounds, &defined) {
                bounds.insert(dst, b);
            }
            let ty = self.k.ty(dst);
            match delta {
                Some(d) if register_int(ty) || d == Delta::Const(0) => {
                    deltas.insert(dst, d);
                }
                _ => {
                    deltas.remove(&dst);
                }
            }
        }
        deltas
    }

    /// The exclusive bound of `v` in every step: its entry in `bounds` for a value of the body,
    /// one more than its value for a constant from outside it, none otherwise.
    fn bound(
        &self,
        bounds: &HashMap<Value, u128>,
        defined: &HashSet<Value>,
        v: Value,
    ) -> Option<u128> {
        if defined.contains(&v) {
            return bounds.get(&v).copied();
        }
        self.constants.get(&v).map(|&c| u128::from(c) + 1)
    }

    /// The exclusive bound of the value `inst` defines in every step, when its operands' bounds
    /// give one below `2^width` (no step's value wraps).
    fn bound_of(
        &self,
        inst: &Inst,
        bounds: &HashMap<Value, u128>,
        defined: &HashSet<Value>,
    ) -> Option<u128> {
        let bound = |v: Value| self.bound(bounds, defined, v);
        let (dst, b) = match inst {
            Inst::Const { dst, .. } => (*dst, self.constants.get(dst).map(|&c| u128::from(c) + 1)?),
            Inst::Copy { dst, src } | Inst::Cast { dst, src } => (*dst, bound(*src)?),
            Inst::Binary { dst, op, lhs, rhs } => {
                if self.k.ty(*lhs).is_signed() {
                    return None;
                }
                let (a, c) = (bound(*lhs)?, bound(*rhs)?);
                // The largest values, `a - 1` and `c - 1` (a bound is at least 1 here).
                let (x, y) = (a.checked_sub(1)?, c.checked_sub(1)?);
                let b = match op {
                    BinOp::Add => x.checked_add(y)?,
                    BinOp::Mul => x.checked_mul(y)?,
                    BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?)?,
                    // The largest quotient is by the smallest divisor or shift, known for a
                    // constant only.
                    BinOp::Shr => match self.constants.get(rhs) {
                        Some(&sh) => x.checked_shr(u32::try_from(sh).ok()?).unwrap_or(0),
                        None => x,
                    },
                    BinOp::Div => match self.constants.get(rhs) {
                        Some(&d) => x / u128::from(d.max(1)),
                        None => x,
                    },
                    BinOp::Rem => x.min(y.saturating_sub(1)),
                    BinOp::And => x.min(y),
                    _ => return None,
                };
                (*dst, b.checked_add(1)?)
            }
            _ => return None,
        };
        let ty = self.k.ty(dst);
        (register_int(ty) && b <= 1u128 << ty.bits()).then_some(b)
    }

    /// The delta of `lhs op rhs` given its operands' deltas (and whether `lhs` has a bound in
    /// every step).
    fn binary_delta(
        &self,
        op: BinOp,
        lhs: (Value, Delta, bool),
        rhs: (Value, Delta),
    ) -> Option<Delta> {
        let (lhs_bounded, lhs) = (lhs.2, (lhs.0, lhs.1));
        let ty = self.k.ty(lhs.0);
        if !register_int(ty) {
            let same = lhs.1 == Delta::Const(0) && rhs.1 == Delta::Const(0);
            return same.then_some(Delta::Const(0));
        }
        let constant = |v: Value| self.constants.get(&v).copied();
        let zero = Delta::Const(0);
        match op {
            BinOp::Add => lhs.1.plus(rhs.1),
            BinOp::Sub => match rhs.1 {
                Delta::Const(c) => lhs.1.plus(Delta::Const(c.wrapping_neg())),
                Delta::Scaled { factor, by } => lhs.1.plus(Delta::Scaled {
                    factor: factor.wrapping_neg(),
                    by,
                }),
            },
            BinOp::Mul => {
                let scaled = |changing: Delta, other: Value| match (constant(other), changing) {
                    (Some(c), d) => Some(d.times(c)),
                    (None, Delta::Const(d)) => Some(Delta::Scaled {
                        factor: d,
                        by: other,
                    }),
                    (None, Delta::Scaled { .. }) => None,
                };
                match (lhs.1, rhs.1) {
                    (a, b) if a == zero && b == zero => Some(zero),
                    (d, b) if b == zero => scaled(d, rhs.0),
                    (a, d) if a == zero => scaled(d, lhs.0),
                    _ => None,
                }
            }
            BinOp::Shl => {
                let s = constant(rhs.0).filter(|&s| s < u64::from(ty.bits()))?;
                (rhs.1 == zero).then(|| lhs.1.times(1u64 << s))
            }
            // Unsigned division and shift by a power of two of a value that wraps in no step:
            // the step's multiple divides.
            BinOp::Div | BinOp::Shr if !ty.is_signed() && rhs.1 == zero && lhs_bounded => {
                let s = match op {
                    BinOp::Div => power_of_two(constant(rhs.0)?)?,
                    _ => constant(rhs.0).filter(|&s| s < u64::from(ty.bits()))? as u32,
                };
                match lhs.1 {
                    Delta::Const(d) if d.trailing_zeros() >= s => Some(Delta::Const(d >> s)),
                    _ => None,
                }
            }
            // Unsigned remainder by a power of two, or the mask of its low bits: the same in
            // every step when the step's multiple has those bits clear.
            BinOp::Rem | BinOp::And if !ty.is_signed() && rhs.1 == zero => {
                let s = match op {
                    BinOp::Rem => power_of_two(constant(rhs.0)?)?,
                    _ => power_of_two(constant(rhs.0)?.checked_add(1)?)?,
                };
                match lhs.1 {
                    Delta::Const(d) if d.trailing_zeros() >= s => Some(zero),
                    _ => None,
                }
            }
            _ => (lhs.1 == zero && rhs.1 == zero).then_some(zero),
        }
    }

    /// Writes step `k`'s `dst` from its step-0 register `base` and its delta; `false` when
    /// `dst` is not an integer the delta applies to (the caller writes the instruction).
    pub(super) fn write_step_value(
        &mut self,
        dst: Value,
        base: &str,
        delta: Delta,
        k: u64,
    ) -> WriteResult<bool> {
        let ty = self.k.ty(dst);
        if delta == Delta::Const(0) {
            // The same register as step 0's: nothing to compute.
            let i = dst.0 as usize;
            if self.names.len() <= i {
                self.names.resize(i + 1, None);
            }
            self.names[i] = Some(base.to_string());
            return Ok(true);
        }
        if !register_int(ty) {
            return Ok(false);
        }
        let width = if ty.size() == 8 { "u64" } else { "u32" };
        let mask = if ty.size() == 8 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        let d = self.reg(dst);
        match delta {
            Delta::Const(c) => {
                let step = c.wrapping_mul(k) & mask;
                self.line(format!("add.{width} {d}, {base}, {step};"))?;
            }
            Delta::Scaled { factor, by } => {
                let step = factor.wrapping_mul(k) & mask;
                let by = self.reg(by);
                self.line(format!("mad.lo.{width} {d}, {by}, {step}, {base};"))?;
            }
        }
        Ok(true)
    }
}

/// An integer held whole in a 32- or 64-bit register (wrapping arithmetic in its width).
fn register_int(ty: crate::types::Scalar) -> bool {
    ty.is_int() && ty.size() >= 4
}

/// `s` when `n` is `2^s`.
fn power_of_two(n: u64) -> Option<u32> {
    n.is_power_of_two().then(|| n.trailing_zeros())
}

/// The value `inst` defines when it is arithmetic a [`Delta`] can stand for.
pub(super) fn stepped_def(inst: &Inst) -> Option<Value> {
    match inst {
        Inst::Const { dst, .. }
        | Inst::Copy { dst, .. }
        | Inst::Cast { dst, .. }
        | Inst::Binary { dst, .. } => Some(*dst),
        _ => None,
    }
}
