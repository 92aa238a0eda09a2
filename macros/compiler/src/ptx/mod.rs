//! Phase 8, ptx: the PTX [`Writer`].
//!
//! Every role becomes a region of the one kernel entry, selected by warp index. Ring positions
//! and phase bits of each channel end live in registers of the role that owns the end; every
//! `.await` on a channel is an `mbarrier.try_wait.parity` loop; barrier arrivals are made by lane
//! 0 of each warp of a role after `bar.warp.sync` (so that they publish the whole warp's writes),
//! and bulk copies and state words by the role's first thread. Arithmetic is IEEE without
//! contraction (`.rn` on every float operation), as Rust computes it on the host.
//!
//! Parallel loops spread iteration `i` over the role's threads (`i = tid, tid + threads, ...`);
//! when every source has 4-byte elements and 16-byte-aligned bases, four consecutive elements go
//! to one thread as one 16-byte access, and a scalar loop handles the tail.
//!
//! The writer is one [`Writer`] whose `impl` is spread over this folder's modules, one concern
//! each: `types` (register classes and PTX type names), `kernel` (the entry and the roles'
//! regions), `insts` (the instruction dispatcher), `arithmetic`, `memory`, `atomics`, `warp`
//! (special registers, shuffles, votes), `control` (branches, panics, role loops), `unroll` (which
//! role loops are unrolled or versioned), `channels` (the channel protocol), `deferred` (the
//! panics of receives that unwrap, raised later), `waits` (blocking waits, the watchdog, failure
//! records), `barriers`, `join` (`join!` and `select!`), `parallel`
//! (parallel loops), `reduce` (reductions), `bulk` (bulk copies) and `trace` (the events of a
//! traced kernel, written only by [`write_kernel_traced`]).

mod acc_store;
mod arithmetic;
mod atomics;
mod barriers;
mod bulk;
mod channels;
mod control;
mod deferred;
mod error;
mod insts;
mod join;
mod kernel;
mod memory;
mod mma;
mod parallel;
mod reduce;
mod scan;
mod step_deltas;
mod tiles;
mod trace;
mod types;
mod unroll;
mod waits;
mod warp;

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write};

use crate::ir::{BinOp, Inst, Kernel, ParamKind, Value};
use crate::types::Scalar;
use crate::verify::Verified;
use gpu_async_wire::HiddenParam;

use join::JoinCtx;
use kernel::RoleCtx;
use types::{ptx_ty, Class};
use unroll::Unrolled;

pub use error::WriteError;
use error::WriteResult;

pub use crate::target::{PTX_TARGET, PTX_TARGET_BUDGETS, PTX_VERSION};

/// Writes a verified kernel as a PTX module. An inconsistency the writer finds is a compiler
/// bug: it is returned, not written.
pub fn write_kernel(kernel: &Verified<'_>) -> Result<String, WriteError> {
    let mut w = Writer::new(kernel);
    w.kernel()?;
    let mut out = String::new();
    w.finish(&mut out)?;
    Ok(out)
}

/// Writes a verified kernel as a PTX module that records a trace: the kernel of
/// [`write_kernel`], taking the trace parameters after the hidden ones and recording its roles'
/// runs, waits and copies (see `gpu_async_wire::trace`).
pub fn write_kernel_traced(kernel: &Verified<'_>) -> Result<String, WriteError> {
    let mut w = Writer::new(kernel);
    w.trace = Some(trace::Tracing::new(kernel.kernel()));
    w.kernel()?;
    let mut out = String::new();
    w.finish(&mut out)?;
    Ok(out)
}

/// [`write_kernel`] and [`write_kernel_traced`] of one kernel, what the writer knows of its
/// values found once for both.
pub fn write_kernel_both(kernel: &Verified<'_>) -> Result<(String, String), WriteError> {
    let facts = Facts::of(kernel.kernel());
    let mut w = Writer::with_facts(kernel, facts.clone());
    w.kernel()?;
    let mut plain = String::new();
    w.finish(&mut plain)?;
    let mut w = Writer::with_facts(kernel, facts);
    w.trace = Some(trace::Tracing::new(kernel.kernel()));
    w.kernel()?;
    let mut traced = String::new();
    w.finish(&mut traced)?;
    Ok((plain, traced))
}

/// What the writer knows of a kernel's values before it writes any code.
#[derive(Clone)]
struct Facts {
    constants: HashMap<Value, u64>,
    never_true: HashSet<Value>,
}

impl Facts {
    fn of(k: &Kernel) -> Self {
        let constants = crate::ir::integer_constants(
            std::iter::once(&k.prologue).chain(k.roles.iter().map(|r| &r.body)),
        );
        let never_true = never_true(k, &constants);
        Facts {
            constants,
            never_true,
        }
    }
}

/// Writes PTX for one kernel: the body first (allocating registers), then the header with the
/// register declarations, through [`Writer::finish`].
pub struct Writer<'k> {
    k: &'k Kernel,
    body: String,
    /// Registers of each class made so far, indexed by [`Class::index`].
    counts: [u32; Class::COUNT],
    /// Each value's register, indexed by the value's number.
    names: Vec<Option<String>>,
    labels: u32,
    smem: String,
    tid: String,
    role: Option<RoleCtx>,
    /// The abort protocol's registers: abort word address, launch id, record address, watchdog
    /// bound in ns, and whether the watchdog is on.
    abort: String,
    launch_id: String,
    record: String,
    watchdog: String,
    watchdog_on: String,
    /// Where the current code goes when the kernel aborts (the role's exit).
    abort_label: String,
    /// Where a panicking thread of the current parallel loop goes (the loop's end).
    par_exit: Option<String>,
    /// Out-of-line code (panic and timeout paths) written after the current role.
    stubs: String,
    /// Values that are integer constants (defined once, by a `Const`).
    constants: HashMap<Value, u64>,
    /// Conditions that are never true: comparisons of two constants that are false, such as a
    /// constant divisor's zero test. A panic on one of them is left out.
    never_true: HashSet<Value>,
    /// The `join!` whose branch is being written.
    join: Option<JoinCtx>,
    /// `join!`s written so far (their numbers).
    joins: u32,
    /// The role loop being written unrolled, if any.
    unroll: Option<Unrolled>,
    /// Bulk copies (their `(len, bulk)` values) known to have no tail where the code being
    /// written runs: the version of a role loop that [`unroll::whole_copies`] chose.
    whole: HashSet<(Value, Value)>,
    /// How many loops the code being written is inside (in the current role).
    loop_depth: u32,
    /// The trace's state, when the kernel is written with tracing ([`write_kernel_traced`]).
    trace: Option<trace::Tracing>,
}

impl<'k> Writer<'k> {
    /// A writer for the verified kernel `k`.
    pub fn new(k: &Verified<'k>) -> Self {
        Self::with_facts(k, Facts::of(k.kernel()))
    }

    /// A writer for `k` given what it knows of `k`'s values.
    fn with_facts(k: &Verified<'k>, facts: Facts) -> Self {
        let k = k.kernel();
        Writer {
            k,
            body: String::new(),
            counts: [0; Class::COUNT],
            names: vec![None; k.values.len()],
            labels: 0,
            smem: String::new(),
            tid: String::new(),
            role: None,
            abort: String::new(),
            launch_id: String::new(),
            record: String::new(),
            watchdog: String::new(),
            watchdog_on: String::new(),
            abort_label: "$exit".to_string(),
            par_exit: None,
            stubs: String::new(),
            constants: facts.constants,
            never_true: facts.never_true,
            join: None,
            joins: 0,
            unroll: None,
            whole: HashSet::new(),
            loop_depth: 0,
            trace: None,
        }
    }

    fn tmp(&mut self, c: Class) -> String {
        let n = &mut self.counts[c.index()];
        *n += 1;
        format!("{}{}", c.prefix(), *n - 1)
    }

    fn reg(&mut self, v: Value) -> String {
        if let Some(Some(n)) = self.names.get(v.0 as usize) {
            return n.clone();
        }
        let name = self.tmp(Class::of(self.k.ty(v)));
        let i = v.0 as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, None);
        }
        self.names[i] = Some(name.clone());
        name
    }

    /// Gives `v` a new register at its next use (a copy of code that defines it again).
    fn forget(&mut self, v: Value) {
        if let Some(name) = self.names.get_mut(v.0 as usize) {
            *name = None;
        }
    }

    fn label(&mut self, what: &str) -> String {
        self.labels += 1;
        format!("${what}_{}", self.labels)
    }

    fn line(&mut self, s: impl fmt::Display) -> WriteResult {
        writeln!(self.body, "    {s}")?;
        Ok(())
    }

    fn place_label(&mut self, l: &str) -> WriteResult {
        writeln!(self.body, "{l}:")?;
        Ok(())
    }

    /// The role being written.
    fn role(&self) -> WriteResult<&RoleCtx> {
        self.role.as_ref().ok_or_else(WriteError::outside_role)
    }

    /// Writes the module: header, register declarations, then the body.
    pub fn finish(self, out: &mut impl Write) -> fmt::Result {
        let k = self.k;
        writeln!(out, "//")?;
        writeln!(
            out,
            "// Generated by gpu-async from the kernel `{}`: do not edit.",
            k.name
        )?;
        writeln!(out, "//")?;
        writeln!(out, ".version {PTX_VERSION}")?;
        let target = if k.registers.is_some() || k.uses_mma() {
            PTX_TARGET_BUDGETS
        } else {
            PTX_TARGET
        };
        writeln!(out, ".target {target}")?;
        writeln!(out, ".address_size 64")?;
        writeln!(out)?;
        // Tile slots are aligned to their swizzle pattern's repeat, up to 1024 bytes: the
        // hardware swizzles shared-memory address bits, so the base must be aligned as well.
        let align = k
            .channels
            .iter()
            .map(|c| c.ty.slot_align())
            .max()
            .unwrap_or(128)
            .max(128);
        writeln!(out, ".extern .shared .align {align} .b8 gpu_async_smem[];")?;
        for (i, t) in k.const_tables.iter().enumerate() {
            // The module's `static` table, in constant memory.
            writeln!(out, "// static {}", t.name)?;
            let bytes: Vec<String> = t.bytes.iter().map(u8::to_string).collect();
            writeln!(
                out,
                ".const .align 8 .b8 gpu_async_const_{i}[{}] = {{{}}};",
                t.bytes.len(),
                bytes.join(", ")
            )?;
        }
        writeln!(out)?;
        writeln!(out, ".visible .entry {}(", k.name)?;
        let mut params = Vec::new();
        let mut index = 0;
        for p in &k.params {
            match &p.kind {
                ParamKind::Scalar(v) => {
                    // Narrow integers and `bool` travel as 32-bit parameters (the host widens
                    // them, sign-extending the signed ones).
                    let ty = match k.ty(*v) {
                        Scalar::Bool => "u32",
                        s => ptx_ty(s),
                    };
                    params.push(format!("    .param .{ty} {}_param_{index}", k.name));
                    index += 1;
                }
                ParamKind::Slice { .. } => {
                    params.push(format!("    .param .u64 {}_param_{index}", k.name));
                    params.push(format!("    .param .u64 {}_param_{}", k.name, index + 1));
                    index += 2;
                }
                ParamKind::Matrix { boxes, .. } => {
                    for _ in 0..3 {
                        params.push(format!("    .param .u64 {}_param_{index}", k.name));
                        index += 1;
                    }
                    // Each tensor map by value, as nvcc passes a `__grid_constant__ CUtensorMap`.
                    for _ in boxes {
                        params.push(format!(
                            "    .param .align 128 .b8 {}_param_{index}[128]",
                            k.name
                        ));
                        index += 1;
                    }
                }
            }
        }
        for hidden in HiddenParam::ALL {
            let ty = hidden.ptx_type();
            params.push(format!("    .param .{ty} {}_param_{index}", k.name));
            index += 1;
        }
        self.trace_param_decls(&mut params, index);
        writeln!(out, "{}", params.join(",\n"))?;
        writeln!(out, ")")?;
        writeln!(out, ".reqntid {}, 1, 1", 32 * k.warps)?;
        if let Some(b) = &k.registers {
            // The registers each thread holds at the entry, which the roles' `setmaxnreg`s
            // redistribute (without it ptxas ignores them).
            writeln!(out, ".maxnreg {}", b.entry)?;
        } else if let Some(blocks) = k.min_blocks_per_sm {
            // The blocks an SM must hold: ptxas allocates registers so that they fit.
            writeln!(out, ".minnctapersm {blocks}")?;
        }
        writeln!(out, "{{")?;
        for class in [
            Class::Pred,
            Class::B16,
            Class::B32,
            Class::B64,
            Class::F32,
            Class::F64,
        ] {
            let n = self.counts[class.index()];
            if n > 0 {
                writeln!(out, "    .reg {} {}<{n}>;", class.decl(), class.prefix())?;
            }
        }
        if k.local_bytes > 0 {
            // Local arrays indexed at run time: each thread's own memory (ptxas reports it as
            // the stack frame).
            writeln!(
                out,
                "    .local .align 16 .b8 gpu_async_local[{}];",
                k.local_bytes.div_ceil(16) * 16
            )?;
        }
        writeln!(out)?;
        out.write_str(&self.body)?;
        writeln!(out, "}}")
    }
}

/// The comparisons of two integer constants, each defined once, that are false (see
/// [`Writer::never_true`]). Only values below 2^63 are compared, whose order does not depend
/// on the type's signedness.
fn never_true(k: &Kernel, constants: &HashMap<Value, u64>) -> HashSet<Value> {
    // Definitions per value, indexed by the value's number.
    let mut defs: Vec<u32> = vec![0; k.values.len()];
    let mut comparisons = Vec::new();
    let blocks = std::iter::once(&k.prologue).chain(k.roles.iter().map(|r| &r.body));
    for block in blocks {
        crate::ir::for_each_inst(block, &mut |inst| {
            for d in inst.defs() {
                if let Some(n) = defs.get_mut(d.0 as usize) {
                    *n += 1;
                }
            }
            if let Inst::Binary { dst, op, lhs, rhs } = inst {
                if op.is_comparison() {
                    comparisons.push((*dst, *op, *lhs, *rhs));
                }
            }
        });
    }
    comparisons
        .into_iter()
        .filter(|(dst, op, lhs, rhs)| {
            let (Some(&a), Some(&b)) = (constants.get(lhs), constants.get(rhs)) else {
                return false;
            };
            let holds = match op {
                BinOp::Eq => a == b,
                BinOp::Ne => a != b,
                BinOp::Lt => a < b,
                BinOp::Le => a <= b,
                BinOp::Gt => a > b,
                BinOp::Ge => a >= b,
                _ => return false,
            };
            a < 1 << 63 && b < 1 << 63 && !holds && defs.get(dst.0 as usize) == Some(&1)
        })
        .map(|(dst, ..)| dst)
        .collect()
}
