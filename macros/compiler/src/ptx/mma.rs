//! Tensor-core mmas: `wgmma.mma_async` over shared-memory matrix descriptors, fenced before and
//! committed as one group after, and the wait for the group.
//!
//! Every thread of the warpgroup executes these (`.sync.aligned`): the lowering puts them in
//! role code of roles made of whole warpgroups, never under a per-thread condition.

use super::error::WriteError;
use super::error::WriteResult;
use super::types::{half_name, Class};
use super::Writer;
use crate::ir::{MmaA, MmaLayout, Value};
use crate::types::Scalar;

/// The bytes one K step of 16 advances a K-major operand by within a 128-byte line (16 16-bit
/// elements of a row).
const K_STEP_BYTES: u64 = 32;

/// The bytes one K step of 16 advances an N-major operand by: 16 of its 128-byte rows.
const N_MAJOR_STEP_BYTES: u64 = 16 * 128;

/// K steps in one 128-byte line of a K-major operand (64 16-bit elements).
const STEPS_PER_LINE: u64 = 4;

/// The bits of a shared-memory matrix descriptor besides the start address and the leading
/// byte offset: the stride byte offset (1024: 8 rows of 128 bytes, the swizzle's repeat), in
/// units of 16 bytes, and the 128-byte swizzle (mode 1 in bits 62..64).
const DESCRIPTOR_FIELDS: u64 = (1024 >> 4) << 32 | 1 << 62;

/// The leading byte offset of a K-major operand with the 128-byte swizzle, which it does not
/// use (16 bytes, 1 unit, as nvcc writes it).
const K_MAJOR_LEADING: u64 = 16;

/// The descriptor bits of an operand laid out as `layout`, besides its start address.
fn descriptor_fields(layout: MmaLayout) -> u64 {
    let leading = match layout {
        MmaLayout::KMajor { .. } => K_MAJOR_LEADING,
        // The next 64 N columns, the next column block.
        MmaLayout::NMajor { block } => u64::from(block),
    };
    (leading >> 4) << 16 | DESCRIPTOR_FIELDS
}

/// The byte offset of K step `s` of an operand laid out as `layout`.
fn step_offset(layout: MmaLayout, s: u64) -> u64 {
    match layout {
        MmaLayout::KMajor { block } => {
            s / STEPS_PER_LINE * u64::from(block) + s % STEPS_PER_LINE * K_STEP_BYTES
        }
        MmaLayout::NMajor { .. } => s * N_MAJOR_STEP_BYTES,
    }
}

impl Writer<'_> {
    /// `wgmma.fence`, `k_steps` mmas m64n`n`k16, `wgmma.commit_group`: A a tile laid out as its
    /// layout says or registers, B the tile at the shared address `b` laid out as `b_layout`.
    pub(super) fn mma(
        &mut self,
        acc: &[Value],
        (a, (b, b_layout)): (&MmaA, (Value, MmaLayout)),
        n: u32,
        elem: Scalar,
        k_steps: u32,
    ) -> WriteResult {
        let regs: Vec<String> = acc.iter().map(|v| self.reg(*v)).collect();
        let regs = regs.join(",");
        // A's descriptor and layout, for a tile.
        let a_tile = match a {
            MmaA::Tile { addr, layout } => Some((self.descriptor(*addr, *layout)?, *layout)),
            MmaA::Registers(_) => None,
        };
        let b_desc = self.descriptor(b, b_layout)?;
        let input = match elem {
            Scalar::F16 => "f16",
            _ => "bf16",
        };
        // An N-major B is read transposed.
        let trans_b = u32::from(matches!(b_layout, MmaLayout::NMajor { .. }));
        // The operands of each K step (a descriptor's start address is in units of 16 bytes),
        // computed before the fence so that the mmas issue back to back.
        let mut steps = Vec::new();
        for s in 0..u64::from(k_steps) {
            let a_step = match (&a_tile, a) {
                (Some((desc, layout)), _) => self.step_descriptor(desc, *layout, s)?,
                (None, MmaA::Registers(values)) => {
                    let at = 4 * s as usize;
                    let four: Vec<String> = values
                        .get(at..at + 4)
                        .ok_or_else(|| {
                            WriteError::inconsistent(
                                "4 register A values per K step",
                                format!("{} values for {k_steps} steps", values.len()),
                            )
                        })?
                        .iter()
                        .map(|v| self.reg(*v))
                        .collect();
                    format!("{{{}}}", four.join(", "))
                }
                (None, MmaA::Tile { .. }) => {
                    return Err(WriteError::inconsistent(
                        "a tile A operand's descriptor",
                        "none",
                    ))
                }
            };
            let b_step = self.step_descriptor(&b_desc, b_layout, s)?;
            steps.push((a_step, b_step));
        }
        let scale = self.tmp(Class::Pred);
        self.line(format!("setp.ne.b32 {scale}, 1, 0;"))?;
        self.line("wgmma.fence.sync.aligned;")?;
        // The register-A form has no transpose flag for A.
        let flags = if a_tile.is_some() {
            format!("1, 1, 0, {trans_b}")
        } else {
            format!("1, 1, {trans_b}")
        };
        for (a_step, b_step) in steps {
            self.line(format!(
                "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{input}.{input} {{{regs}}}, {a_step}, {b_step}, {scale}, {flags};"
            ))?;
        }
        self.line("wgmma.commit_group.sync.aligned;")
    }

    /// The descriptor of K step `s` of an operand laid out as `layout` whose step 0 is `desc`.
    fn step_descriptor(&mut self, desc: &str, layout: MmaLayout, s: u64) -> WriteResult<String> {
        let offset = step_offset(layout, s) >> 4;
        if offset == 0 {
            return Ok(desc.to_string());
        }
        let d = self.tmp(Class::B64);
        self.line(format!("add.s64 {d}, {desc}, {offset};"))?;
        Ok(d)
    }

    /// `dst` = `lo` and `hi` rounded to `elem`, packed (see [`Writer::cvt_pair`]).
    pub(super) fn pack_pair(
        &mut self,
        dst: Value,
        (lo, hi): (Value, Value),
        elem: Scalar,
    ) -> WriteResult {
        let (d, l, h) = (self.reg(dst), self.reg(lo), self.reg(hi));
        self.cvt_pair(&d, (&l, &h), elem)
    }

    /// The `b32` register `dst` = `f32` registers `lo` and `hi` rounded to `elem` (`bf16` or
    /// `f16`, nearest even), `lo` in the low half: one `cvt.rn.bf16x2.f32` (`f16x2`), which
    /// takes the high half first.
    pub(super) fn cvt_pair(
        &mut self,
        dst: &str,
        (lo, hi): (&str, &str),
        elem: Scalar,
    ) -> WriteResult {
        self.line(format!(
            "cvt.rn.{}x2.f32 {dst}, {hi}, {lo};",
            half_name(elem)
        ))
    }

    /// `acc.row_max()` / `acc.row_sum()` (see [`Inst::RowReduce`]): each of the thread's two
    /// rows folded over its own values in increasing `k`, then combined with the lanes at
    /// distance 1 and 2, which hold the rest of the row.
    ///
    /// [`Inst::RowReduce`]: crate::ir::Inst::RowReduce
    pub(super) fn row_reduce(&mut self, dst: [Value; 2], acc: &[Value], max: bool) -> WriteResult {
        let op = if max { "max.f32" } else { "add.rn.f32" };
        for (h, d) in dst.iter().enumerate() {
            let d = self.reg(*d);
            let mut values = acc
                .iter()
                .enumerate()
                .filter(|(k, _)| crate::ir::fragment_place(*k).0 == h)
                .map(|(_, v)| *v);
            let Some(first) = values.next() else {
                return Err(WriteError::inconsistent(
                    "an accumulator of at least 4 values per thread",
                    format!("{}", acc.len()),
                ));
            };
            let first = self.reg(first);
            self.line(format!("mov.f32 {d}, {first};"))?;
            for v in values {
                let r = self.reg(v);
                self.line(format!("{op} {d}, {d}, {r};"))?;
            }
            for distance in [1, 2] {
                let (bits, other) = (self.tmp(Class::B32), self.tmp(Class::F32));
                self.line(format!("mov.b32 {bits}, {d};"))?;
                self.line(format!(
                    "shfl.sync.bfly.b32 {bits}, {bits}, {distance}, 31, -1;"
                ))?;
                self.line(format!("mov.b32 {other}, {bits};"))?;
                self.line(format!("{op} {d}, {d}, {other};"))?;
            }
        }
        Ok(())
    }

    /// The shared-memory matrix descriptor of the tile at shared address `addr` laid out as
    /// `layout`: bits 4..18 of the address, then [`descriptor_fields`].
    fn descriptor(&mut self, addr: Value, layout: MmaLayout) -> WriteResult<String> {
        let a = self.reg(addr);
        let (t, d) = (self.tmp(Class::B32), self.tmp(Class::B64));
        self.line(format!("bfe.u32 {t}, {a}, 4, 14;"))?;
        self.line(format!("cvt.u64.u32 {d}, {t};"))?;
        self.line(format!("or.b64 {d}, {d}, {};", descriptor_fields(layout)))?;
        Ok(d)
    }

    /// `wgmma.wait_group pending`: all but the last `pending` mma groups have completed.
    pub(super) fn mma_wait(&mut self, pending: u32) -> WriteResult {
        self.line(format!("wgmma.wait_group.sync.aligned {pending};"))
    }
}
