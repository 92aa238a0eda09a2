//! Atomic operations, on global memory at GPU scope and on shared arrays at CTA scope, with the
//! ordering's PTX semantics. A read-modify-write whose previous value is unused is a `red`
//! (for orderings `red` has: relaxed and release). Floats add with `atom.add.f32/f64`; they
//! have no `atom.max.f32`, so `fetch_max`/`fetch_min` of a float is one integer atomic on its
//! bits, chosen by the value's sign, which orders as `total_cmp` does (see
//! `gpu_async::device::AtomicF32`). In role code a read-modify-write runs once for the role
//! ([`Writer::atomic_once`]).

use super::error::{WriteError, WriteResult};
use super::types::{bits_ty, ptx_ty, Class};
use super::Writer;
use crate::ir::{SiteId, Space, Value};
use crate::tir::{AtomicOp, MemOrder};
use crate::types::Scalar;

impl Writer<'_> {
    /// An atomic operation at `addr` in `space` (`SeqCst` is a `fence.sc` followed by the
    /// acquire/release form).
    pub(super) fn atomic(
        &mut self,
        dst: Option<Value>,
        op: AtomicOp,
        space: Space,
        addr: Value,
        operands: &[Value],
        order: MemOrder,
    ) -> WriteResult {
        let a = self.reg(addr);
        let ty = match (dst, operands.first()) {
            (Some(d), _) => self.k.ty(d),
            (None, Some(v)) => self.k.ty(*v),
            (None, None) => {
                return Err(WriteError::inconsistent(
                    "an atomic operation with a result or an operand",
                    format!("{op:?} with neither"),
                ))
            }
        };
        let vals: Vec<String> = operands.iter().map(|v| self.reg(*v)).collect();
        let (scope, sp) = match space {
            Space::Shared => ("cta", "shared"),
            _ => ("gpu", "global"),
        };
        if order == MemOrder::SeqCst {
            self.line(format!("fence.sc.{scope};"))?;
        }
        let t = ptx_ty(ty);
        let b = if ty.is_wide_int() || ty == Scalar::F64 {
            "b64"
        } else {
            "b32"
        };
        match op {
            AtomicOp::Load => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let d = self.reg(dst.ok_or_else(|| no_result(op))?);
                return self.line(format!("ld.{sem}.{scope}.{sp}.{t} {d}, [{a}];"));
            }
            AtomicOp::Store => {
                let sem = if order == MemOrder::Relaxed {
                    "relaxed"
                } else {
                    "release"
                };
                return self.line(format!("st.{sem}.{scope}.{sp}.{t} [{a}], {};", vals[0]));
            }
            _ => {}
        }
        let sem = match order {
            MemOrder::Relaxed => "relaxed",
            MemOrder::Acquire => "acquire",
            MemOrder::Release => "release",
            MemOrder::AcqRel | MemOrder::SeqCst => "acq_rel",
        };
        // Without a result, a `red` where the ordering allows one, else an `atom` into a
        // scratch register.
        let red = dst.is_none() && matches!(order, MemOrder::Relaxed | MemOrder::Release);
        let d = match dst {
            Some(d) => self.reg(d),
            None => self.tmp(Class::of(ty)),
        };
        let head = |name: &str| {
            if red {
                format!("red.{sem}.{scope}.{sp}.{name}")
            } else {
                format!("atom.{sem}.{scope}.{sp}.{name}")
            }
        };
        let out = |d: &str| if red { String::new() } else { format!("{d}, ") };
        // Addition wraps the same for signed and unsigned: PTX has it as unsigned.
        let add_ty = match ty {
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            _ if ty.is_wide_int() => "u64",
            _ => "u32",
        };
        match op {
            AtomicOp::Add => self.line(format!(
                "{} {}[{a}], {};",
                head(&format!("add.{add_ty}")),
                out(&d),
                vals[0]
            )),
            AtomicOp::Sub => {
                let n = self.tmp(Class::of(ty));
                let neg = match ty {
                    Scalar::F32 => "f32",
                    Scalar::F64 => "f64",
                    _ if ty.is_wide_int() => "s64",
                    _ => "s32",
                };
                self.line(format!("neg.{neg} {n}, {};", vals[0]))?;
                self.line(format!(
                    "{} {}[{a}], {n};",
                    head(&format!("add.{add_ty}")),
                    out(&d)
                ))
            }
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Swap => {
                let name = match op {
                    AtomicOp::And => "and",
                    AtomicOp::Or => "or",
                    AtomicOp::Xor => "xor",
                    _ => "exch",
                };
                // `red` has no `exch`.
                let head = if op == AtomicOp::Swap {
                    format!("atom.{sem}.{scope}.{sp}.{name}")
                } else {
                    head(name)
                };
                let out = if op == AtomicOp::Swap || !red {
                    format!("{d}, ")
                } else {
                    String::new()
                };
                self.line(format!("{head}.{b} {out}[{a}], {};", vals[0]))
            }
            AtomicOp::Max | AtomicOp::Min if ty.is_float() => {
                self.float_max_min(op == AtomicOp::Max, ty, &head, red, &d, &a, &vals[0])
            }
            AtomicOp::Max | AtomicOp::Min => {
                let name = if op == AtomicOp::Max { "max" } else { "min" };
                self.line(format!(
                    "{} {}[{a}], {};",
                    head(&format!("{name}.{t}")),
                    out(&d),
                    vals[0]
                ))
            }
            AtomicOp::CompareExchange => self.line(format!(
                "atom.{sem}.{scope}.{sp}.cas.{b} {d}, [{a}], {}, {};",
                vals[0], vals[1]
            )),
            AtomicOp::Load | AtomicOp::Store => Err(WriteError::inconsistent(
                "a read-modify-write operation",
                format!("{op:?}"),
            )),
        }
    }

    /// An atomic operation in role code, which runs once for the role, as the role's code
    /// reads: its first thread runs it (the others branch around it), between role barriers, so
    /// that it follows the role's earlier accesses (an update from every thread of a parallel
    /// loop before it) and the role's later accesses follow it. Its result reaches every thread
    /// of the role: from lane 0 by a shuffle in a role of one warp; through the role's scratch
    /// in shared memory, between the barriers, in a larger one (the second barrier after the
    /// read, so that the role's next use of the scratch waits until every warp has read it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic_once(
        &mut self,
        dst: Option<Value>,
        op: AtomicOp,
        space: Space,
        addr: Value,
        operands: &[Value],
        order: MemOrder,
        site: SiteId,
    ) -> WriteResult {
        let (index, warps, leader) = {
            let r = self.role()?;
            (r.index, r.warps, r.leader.clone())
        };
        self.role_barrier(site)?;
        let done = self.label("atomic_once");
        self.line(format!("@!{leader} bra {done};"))?;
        self.atomic(dst, op, space, addr, operands, order)?;
        self.place_label(&done)?;
        let Some(dst) = dst else {
            return self.role_barrier(site);
        };
        let d = self.reg(dst);
        if warps == 1 {
            self.broadcast_lane0(dst)?;
            return self.role_barrier(site);
        }
        let Some(offset) = self.k.reduce_scratch.get(index).copied().flatten() else {
            return Err(WriteError::inconsistent(
                format!("the scratch of role {index}, of {warps} warps, for an atomic's result"),
                "none",
            ));
        };
        let smem = self.smem.clone();
        let bt = bits_ty(self.k.ty(dst));
        self.line(format!("@{leader} st.shared.{bt} [{smem}+{offset}], {d};"))?;
        self.role_barrier(site)?;
        self.line(format!("ld.shared.{bt} {d}, [{smem}+{offset}];"))?;
        self.role_barrier(site)
    }

    /// Every lane of the warp takes lane 0's `v` (two shuffles for a 64-bit value).
    fn broadcast_lane0(&mut self, v: Value) -> WriteResult {
        let r = self.reg(v);
        if matches!(Class::of(self.k.ty(v)), Class::B64 | Class::F64) {
            let (lo, hi) = (self.tmp(Class::B32), self.tmp(Class::B32));
            self.line(format!("mov.b64 {{{lo}, {hi}}}, {r};"))?;
            self.line(format!("shfl.sync.idx.b32 {lo}, {lo}, 0, 31, -1;"))?;
            self.line(format!("shfl.sync.idx.b32 {hi}, {hi}, 0, 31, -1;"))?;
            self.line(format!("mov.b64 {r}, {{{lo}, {hi}}};"))
        } else {
            let x = self.tmp(Class::B32);
            self.line(format!("mov.b32 {x}, {r};"))?;
            self.line(format!("shfl.sync.idx.b32 {x}, {x}, 0, 31, -1;"))?;
            self.line(format!("mov.b32 {r}, {x};"))
        }
    }

    /// `fetch_max` (`max`) or `fetch_min` of a float, by `total_cmp`: on the bits, a value
    /// whose sign bit is clear orders as a signed integer against any other (a stored negative
    /// is a negative integer), and one whose sign bit is set orders reversed, as an unsigned
    /// integer. So `max` is `atom.max.s32` for a clear sign and `atom.min.u32` for a set one,
    /// `min` is `atom.min.s32` and `atom.max.u32`; one of the two runs.
    #[allow(clippy::too_many_arguments)]
    fn float_max_min(
        &mut self,
        max: bool,
        ty: Scalar,
        head: &dyn Fn(&str) -> String,
        red: bool,
        d: &str,
        a: &str,
        v: &str,
    ) -> WriteResult {
        let (class, w, bits) = if ty == Scalar::F64 {
            (Class::B64, "64", "b64")
        } else {
            (Class::B32, "32", "b32")
        };
        let (vb, db, neg) = (self.tmp(class), self.tmp(class), self.tmp(Class::Pred));
        self.line(format!("mov.{bits} {vb}, {v};"))?;
        self.line(format!("setp.lt.s{w} {neg}, {vb}, 0;"))?;
        let (clear, set) = if max { ("max", "min") } else { ("min", "max") };
        let out = if red {
            String::new()
        } else {
            format!("{db}, ")
        };
        self.line(format!(
            "@!{neg} {} {out}[{a}], {vb};",
            head(&format!("{clear}.s{w}"))
        ))?;
        self.line(format!(
            "@{neg} {} {out}[{a}], {vb};",
            head(&format!("{set}.u{w}"))
        ))?;
        if !red {
            self.line(format!("mov.{bits} {d}, {db};"))?;
        }
        Ok(())
    }
}

/// Atomic operation `op`, which has a result, without one.
fn no_result(op: AtomicOp) -> WriteError {
    WriteError::inconsistent(format!("a result for the atomic {op:?}"), "none")
}
