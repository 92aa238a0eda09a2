//! Phase 6, registers: the register budgets per role (`docs/design.md`, "Register budgets per
//! role"): roles that only move data give registers back with
//! `setmaxnreg.dec`, compute roles take them with `setmaxnreg.inc` (sm_90a).
//!
//! Decided after lowering, from the roles' code or from `#[kernel(.., registers(..))]`, and only
//! where `setmaxnreg` is valid: it sets the registers of a whole warpgroup (4 warps from a
//! multiple of 4), every warp of which must execute it, so every role starts a warpgroup and
//! every warpgroup belongs to one role (the warps past a role's end in its last warpgroup, idle,
//! execute the role's `setmaxnreg` and leave).
//! The budgets of a block must fit the registers it holds at its entry: the CTA's pool that
//! `setmaxnreg.dec` gives to and `setmaxnreg.inc` takes from (an `inc` waits until the pool has
//! enough, so a total past it would hang). `docs/design.md` has the facts and their sources.

use std::cmp::Ordering;

use crate::diag::Diagnostics;
use crate::ir::{for_each_inst, Inst, Kernel, RegisterBudgets, Role, Value};
use crate::parse::{MinBlocksAttr, RegistersAttr};
use crate::types::Scalar;

/// The budget of a role that only moves data: CUTLASS's for its producer warpgroups
/// (`LoadRegisterRequirement`).
pub const MOVER_BUDGET: u32 = 40;
use crate::target::{
    BLOCK_RESERVED_SHARED, MAX_BUDGET, MAX_ENTRY, MIN_BUDGET, REGISTER_FILE, SM_BLOCKS, SM_SHARED,
    SM_WARPS, WARPGROUP,
};

/// The `.minnctapersm` of a kernel: how many of its blocks fit in an SM's shared memory, when
/// that is fewer than its warps allow (`None` otherwise). Without it ptxas allocates registers as
/// if the warps were the limit (at 64 warps per SM, 32 registers per thread), though shared
/// memory keeps the SM from ever holding that many blocks; with it, ptxas may use the registers
/// that the blocks shared memory admits leave free, and so keep more loads in flight (measured
/// on the 64-FMA saxpy of 9 warps and 64 KiB: 30 registers without, 51 with). It never lowers
/// the residency a launch can reach, which shared memory already bounds.
pub fn min_blocks_per_sm(warps: u32, shared_bytes: u32) -> Option<u32> {
    let (by_warps, by_shared) = blocks_that_fit(warps, shared_bytes);
    (by_shared >= 1 && by_shared < by_warps).then_some(by_shared)
}

/// The blocks of `warps` warps and `shared_bytes` of shared memory that an SM can hold, as
/// bounded by its warps and block slots, and as bounded by its shared memory (with the 1 KiB it
/// keeps per block).
fn blocks_that_fit(warps: u32, shared_bytes: u32) -> (u32, u32) {
    let by_warps = (SM_WARPS / warps.max(1)).min(SM_BLOCKS);
    let by_shared = SM_SHARED / shared_bytes.saturating_add(BLOCK_RESERVED_SHARED);
    (by_warps, by_shared)
}

/// The `.minnctapersm` of `k`: the user's `min_blocks_per_sm = N` when it wrote one and an SM can
/// hold N blocks of `k` (its warps and its shared memory), else [`min_blocks_per_sm`]'s (none
/// for a kernel of tensor-core mmas). `None` when N cannot be honoured; the errors are
/// reported.
pub fn occupancy(
    k: &Kernel,
    attr: Option<MinBlocksAttr>,
    diags: &mut Diagnostics,
) -> Option<Option<u32>> {
    let Some(MinBlocksAttr { blocks, span }) = attr else {
        // A kernel of tensor-core mmas holds its accumulators in registers, half an N-wide
        // row per thread and mma: a bound from shared memory alone could leave it too few
        // (ptxas stops at the mma that does not fit), so it gets none.
        if k.uses_mma() {
            return Some(None);
        }
        return Some(min_blocks_per_sm(k.warps, k.shared_bytes));
    };
    let (by_warps, by_shared) = blocks_that_fit(k.warps, k.shared_bytes);
    if blocks > by_warps {
        diags.error(
            span,
            format!(
                "an SM holds at most {SM_WARPS} warps: {blocks} blocks of {} warps would be {}; write `min_blocks_per_sm = {by_warps}` or fewer, or give the kernel fewer warps",
                k.warps,
                blocks * k.warps
            ),
        );
        return None;
    }
    if blocks > by_shared {
        diags.error(
            span,
            format!(
                "an SM has {} KiB of shared memory and this kernel takes {} B per block (its channels, barriers and scratch, plus 1 KiB the hardware keeps per block): {by_shared} blocks fit, not {blocks}; write `min_blocks_per_sm = {by_shared}` or fewer, or make the channels smaller",
                SM_SHARED / 1024,
                k.shared_bytes.saturating_add(BLOCK_RESERVED_SHARED),
            ),
        );
        return None;
    }
    Some(Some(blocks))
}

/// Registers per thread at the entry of a block of `warps` warps: the register file shared by
/// its threads, in whole multiples of 8 (the allocation unit), at most 255. This is what ptxas
/// derives itself from `.reqntid` with `.minnctapersm 1` (checked for 4 to 32 warps).
pub fn entry_registers(warps: u32) -> u32 {
    (REGISTER_FILE / (32 * warps.max(1)) / 8 * 8).min(MAX_ENTRY)
}

/// What a kernel gets.
#[derive(Debug)]
pub enum Plan {
    /// Budgets, emitted as `setmaxnreg` at the start of each role.
    Budgets(RegisterBudgets),
    /// None (every thread keeps what ptxas gives the kernel), and why.
    Uniform(String),
    /// `registers(..)` cannot be honoured; the errors are reported.
    Invalid,
}

/// The register budgets of `k`: those of `attr` when the user wrote some, else derived from the
/// roles: a role that only moves data gets [`MOVER_BUDGET`], the other roles share the rest.
/// Budgets share the register file of an SM among the roles of one block, so a kernel that asks
/// for several blocks per SM (`min_blocks_per_sm`) has none.
pub fn plan(
    k: &Kernel,
    attr: Option<&RegistersAttr>,
    min_blocks: Option<MinBlocksAttr>,
    diags: &mut Diagnostics,
) -> Plan {
    match (attr, min_blocks) {
        (Some(a), _) if a.off => Plan::Uniform("turned off by `registers(off)`".to_string()),
        (Some(_), Some(m)) => {
            diags.error(
                m.span,
                "`min_blocks_per_sm` and `registers(..)` cannot be combined: register budgets give one block the whole register file of an SM, and `min_blocks_per_sm` shares it among several blocks; keep one of them",
            );
            Plan::Invalid
        }
        (None, Some(m)) => Plan::Uniform(format!(
            "`min_blocks_per_sm = {}` shares the register file among blocks, and budgets give one block all of it",
            m.blocks
        )),
        (Some(a), None) => explicit(k, a, diags),
        (None, None) => match derive(k) {
            Ok(b) => Plan::Budgets(b),
            Err(why) => Plan::Uniform(why),
        },
    }
}

/// The `setmaxnreg` that starts role `role`'s region: a decrease below the entry count, an
/// increase above it, nothing at it.
pub fn setmaxnreg(b: &RegisterBudgets, role: usize) -> Option<String> {
    let n = *b.roles.get(role)?;
    let action = match n.cmp(&b.entry) {
        Ordering::Less => "dec",
        Ordering::Greater => "inc",
        Ordering::Equal => return None,
    };
    Some(format!("setmaxnreg.{action}.sync.aligned.u32 {n};"))
}

/// Whether `r` only moves data: channel operations, bulk copies, waits, control flow and integer
/// arithmetic; no parallel loop (its vector steps keep elements in registers), no float
/// arithmetic and no tensor-core mma (its accumulator is registers).
pub fn moves_data_only(k: &Kernel, r: &Role) -> bool {
    let float = |v: &Value| !k.ty(*v).is_int() && k.ty(*v) != Scalar::Bool;
    let mut only = true;
    for_each_inst(&r.body, &mut |i| {
        only &= match i {
            Inst::ParFor(_)
            | Inst::Fma { .. }
            | Inst::Atomic { .. }
            | Inst::Shuffle { .. }
            | Inst::Vote { .. }
            | Inst::Mma { .. } => false,
            Inst::Unary { dst, src, .. } | Inst::Cast { dst, src } => !float(dst) && !float(src),
            Inst::Binary { dst, lhs, rhs, .. } => !float(dst) && !float(lhs) && !float(rhs),
            _ => true,
        }
    });
    only
}

/// Registers per thread an mma role needs besides its accumulators: the tiles' addresses and
/// descriptors, its loop's counters and the ring's positions (the GEMM example's compute role
/// uses about 30).
const MMA_OTHER_REGISTERS: u32 = 32;

/// For a role of mmas: the `f32` registers per thread its accumulators hold (every value an mma
/// of it reads and writes, counted once), and the registers it needs at least, with
/// [`MMA_OTHER_REGISTERS`], in multiples of 8. `None` for a role without mmas.
fn accumulator_need(r: &Role) -> Option<(u32, u32)> {
    let mut values = std::collections::HashSet::new();
    for_each_inst(&r.body, &mut |i| {
        if let Inst::Mma { acc, .. } = i {
            values.extend(acc.iter().copied());
        }
    });
    let held = values.len() as u32;
    (held > 0).then(|| (held, (held + MMA_OTHER_REGISTERS).div_ceil(8) * 8))
}

/// Why a kernel without register budgets cannot hold a role's accumulators, if it cannot: each
/// thread has the registers of the entry (the register file over the block's threads), or over
/// `min_blocks_per_sm` blocks' threads, and a role of mmas needs its accumulators' plus
/// `MMA_OTHER_REGISTERS` (this module's) for the rest of its code.
pub fn accumulators_fit(k: &Kernel) -> Result<(), String> {
    let threads = 32 * k.warps.max(1);
    let (have, source) = match k.min_blocks_per_sm {
        Some(b) if b > 1 => (
            (REGISTER_FILE / (b * threads) / 8 * 8).min(MAX_ENTRY),
            format!("{b} blocks of {threads} threads per SM (`min_blocks_per_sm = {b}`)"),
        ),
        _ => (
            entry_registers(k.warps),
            format!("a block of {threads} threads"),
        ),
    };
    for r in &k.roles {
        let Some((held, needed)) = accumulator_need(r) else {
            continue;
        };
        if have < needed {
            return Err(format!(
                "role `{}` holds {held} accumulator registers per thread (the `f32` values of its accumulators: N / 2 for each), and {source} leaves each thread {have} ({REGISTER_FILE} over them, in multiples of 8): ptxas could not keep them; it needs at least {needed}: give the kernel fewer warps, or its accumulators fewer columns",
                r.name
            ));
        }
    }
    Ok(())
}

/// Warpgroups of role `r`: a role that ends inside a warpgroup counts the whole of it (its last
/// warps are idle and take the role's budget, see [`group_end`]).
fn groups(r: &Role) -> u32 {
    (r.end_warp - r.first_warp).div_ceil(WARPGROUP)
}

/// The end of role `r`'s last warpgroup: the warps from `r.end_warp` to it are idle and run the
/// role's `setmaxnreg` before they leave (`setmaxnreg` sets the registers of a whole warpgroup,
/// every warp of which must execute it).
pub fn group_end(r: &Role) -> u32 {
    r.end_warp.div_ceil(WARPGROUP) * WARPGROUP
}

/// Why `k`'s roles do not cover the block in whole warpgroups, if they do not. A role starts a
/// warpgroup; it may end inside one when the kernel has `idle_warps` (a loader that one thread
/// issues needs a warp, not four).
fn misaligned(k: &Kernel) -> Option<String> {
    if let Some(r) = k.roles.iter().find(|r| r.first_warp % WARPGROUP != 0) {
        return Some(format!(
            "role `{}` runs on warps {}..{}, which do not start a warpgroup",
            r.name, r.first_warp, r.end_warp
        ));
    }
    // Another role in the rest of a role's last warpgroup would not start a warpgroup: only
    // whether those warps are meant to idle is left to check.
    if let Some(r) = k
        .roles
        .iter()
        .find(|r| r.end_warp % WARPGROUP != 0 && !k.idle_warps)
    {
        return Some(format!(
            "role `{}` ends inside a warpgroup (warps {}..{}) and the kernel has no `idle_warps` for the rest of it",
            r.name, r.first_warp, r.end_warp
        ));
    }
    if k.warps % WARPGROUP != 0 {
        return Some(format!(
            "the block's {} warps are not whole warpgroups",
            k.warps
        ));
    }
    let covered: u32 = k.roles.iter().map(|r| groups(r) * WARPGROUP).sum();
    if covered < k.warps {
        return Some(format!(
            "{} of the block's {} warps are in no role's warpgroup",
            k.warps - covered,
            k.warps
        ));
    }
    None
}

fn derive(k: &Kernel) -> Result<RegisterBudgets, String> {
    if let Some(why) = misaligned(k) {
        return Err(format!(
            "{why} (`setmaxnreg` sets the registers of 4 warps from a multiple of 4)"
        ));
    }
    let movers: Vec<bool> = k.roles.iter().map(|r| moves_data_only(k, r)).collect();
    if !movers.contains(&true) {
        return Err("no role only moves data".to_string());
    }
    if !movers.contains(&false) {
        return Err("every role only moves data".to_string());
    }
    let entry = entry_registers(k.warps);
    let all = k.warps / WARPGROUP;
    let mover_groups: u32 = k
        .roles
        .iter()
        .zip(&movers)
        .filter(|(_, m)| **m)
        .map(|(r, _)| groups(r))
        .sum();
    let compute = ((all * entry - MOVER_BUDGET * mover_groups) / (all - mover_groups) / 8 * 8)
        .min(MAX_BUDGET);
    if compute < entry + 8 {
        return Err(format!(
            "with {} warps every thread has {entry} registers already: the compute roles would gain nothing",
            k.warps
        ));
    }
    // A share below what a role's accumulators need would only move the failure to ptxas.
    for (r, _) in k.roles.iter().zip(&movers).filter(|(_, m)| !**m) {
        if let Some((held, needed)) = accumulator_need(r).filter(|(_, n)| *n > compute) {
            return Err(format!(
                "role `{}` holds {held} accumulator registers per thread and needs {needed}, more than the {compute} the computing roles would share",
                r.name
            ));
        }
    }
    Ok(RegisterBudgets {
        entry,
        roles: movers
            .iter()
            .map(|&m| if m { MOVER_BUDGET } else { compute })
            .collect(),
        explicit: false,
    })
}

fn explicit(k: &Kernel, attr: &RegistersAttr, diags: &mut Diagnostics) -> Plan {
    let names = || {
        k.roles
            .iter()
            .map(|r| format!("`{}`", r.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut ok = true;
    for b in &attr.budgets {
        if !k.roles.iter().any(|r| r.name == b.role) {
            diags.error(
                b.span,
                format!(
                    "`{}` is not a role of this kernel: a budget names the async fn a role runs ({})",
                    b.role,
                    names()
                ),
            );
            ok = false;
        }
    }
    if let Some(why) = misaligned(k) {
        diags.error(
            attr.span,
            format!(
                "register budgets need whole warpgroups, but {why}: `setmaxnreg` sets the registers of 4 warps from a multiple of 4, all of which run it; give each warpgroup to one role (`warps` a multiple of 4, `on_warps(0..4, ..)`, `on_warps(4..12, ..)`; a role may end inside its last warpgroup with the rest idle: `#[kernel(warps = 12, idle_warps, ..)]` and `on_warps(0..1, ..)`), or remove `registers(..)`"
            ),
        );
        ok = false;
    }
    if !ok {
        return Plan::Invalid;
    }
    let entry = entry_registers(k.warps);
    let all = k.warps / WARPGROUP;
    let pool = all * entry;
    let given: Vec<Option<u32>> = k
        .roles
        .iter()
        .map(|r| {
            attr.budgets
                .iter()
                .find(|b| b.role == r.name)
                .map(|b| b.registers)
        })
        .collect();
    let listed: u32 = k
        .roles
        .iter()
        .zip(&given)
        .filter_map(|(r, g)| g.map(|g| g * groups(r)))
        .sum();
    let rest_groups: u32 = k
        .roles
        .iter()
        .zip(&given)
        .filter(|(_, g)| g.is_none())
        .map(|(r, _)| groups(r))
        .sum();
    let share = (rest_groups > 0)
        .then(|| (pool.saturating_sub(listed) / rest_groups / 8 * 8).min(MAX_BUDGET));
    let threads = 32 * k.warps;
    let file = format!(
        "the block's {threads} threads hold {entry} registers each at the entry ({REGISTER_FILE} / {threads}, in multiples of 8), {pool} per thread over its {all} warpgroups"
    );
    let listing = || {
        k.roles
            .iter()
            .zip(&given)
            .filter_map(|(r, g)| g.map(|g| format!("`{}` {g} x {}", r.name, groups(r))))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    if listed > pool {
        // The largest budget lowered until the total fits, when that is enough.
        let example = k
            .roles
            .iter()
            .zip(&given)
            .filter_map(|(r, g)| g.map(|g| (r, g)))
            .max_by_key(|(_, g)| *g)
            .and_then(|(r, g)| {
                let others = listed - g * groups(r);
                let fit = pool.checked_sub(others)? / groups(r) / 8 * 8;
                (fit >= MIN_BUDGET).then(|| format!(" (for example `{} = {fit}`)", r.name))
            })
            .unwrap_or_default();
        diags.error(
            attr.span,
            format!(
                "these budgets need {listed} registers per thread over the warpgroups ({}), past the register file: {file}; lower them to {pool} in all{example}",
                listing()
            ),
        );
        return Plan::Invalid;
    }
    if share.is_some_and(|s| s < MIN_BUDGET) {
        let rest: Vec<String> = k
            .roles
            .iter()
            .zip(&given)
            .filter(|(_, g)| g.is_none())
            .map(|(r, _)| format!("`{}`", r.name))
            .collect();
        diags.error(
            attr.span,
            format!(
                "these budgets ({}) leave {} registers per thread for the {rest_groups} warpgroups of the roles without one ({}), below the {MIN_BUDGET} each needs: {file}; lower them, or give those roles budgets too",
                listing(),
                pool - listed,
                rest.join(", ")
            ),
        );
        return Plan::Invalid;
    }
    let roles: Vec<u32> = given.iter().map(|g| g.or(share).unwrap_or(entry)).collect();
    let mut fits = true;
    for ((r, &n), g) in k.roles.iter().zip(&roles).zip(&given) {
        let Some((held, needed)) = accumulator_need(r) else {
            continue;
        };
        if n < needed {
            let at = attr
                .budgets
                .iter()
                .find(|b| b.role == r.name)
                .map_or(attr.span, |b| b.span);
            let whose = if g.is_some() {
                "its budget"
            } else {
                "the share it is left"
            };
            diags.error(
                at,
                format!(
                    "role `{}` holds {held} accumulator registers per thread (the `f32` values of its accumulators: N / 2 for each), and {whose} is {n} registers: ptxas could not keep them; give it at least {needed}",
                    r.name
                ),
            );
            fits = false;
        }
    }
    if !fits {
        return Plan::Invalid;
    }
    if roles.iter().all(|&n| n == entry) {
        return Plan::Uniform(format!(
            "every role's budget is the {entry} registers per thread it has at the entry"
        ));
    }
    Plan::Budgets(RegisterBudgets {
        entry,
        roles,
        explicit: true,
    })
}

/// The invariants of `k.registers` and `k.min_blocks_per_sm`, for the verifier.
pub fn invariants(k: &Kernel) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(n) = k.min_blocks_per_sm {
        // What `occupancy` checked: N blocks of the kernel fit an SM.
        let (by_warps, by_shared) = blocks_that_fit(k.warps, k.shared_bytes);
        if n == 0 || n > by_warps || n > by_shared {
            errors.push(format!(
                "`.minnctapersm {n}` for blocks of {} warps and {} B of shared memory",
                k.warps, k.shared_bytes
            ));
        }
    }
    let Some(b) = &k.registers else {
        return errors;
    };
    if let Some(why) = misaligned(k) {
        errors.push(format!("register budgets, but {why}"));
        return errors;
    }
    if b.roles.len() != k.roles.len() {
        errors.push(format!(
            "{} register budgets for {} roles",
            b.roles.len(),
            k.roles.len()
        ));
        return errors;
    }
    if b.entry != entry_registers(k.warps) {
        errors.push(format!("entry registers {} for {} warps", b.entry, k.warps));
    }
    for (r, &n) in k.roles.iter().zip(&b.roles) {
        if !(MIN_BUDGET..=MAX_BUDGET).contains(&n) || n % 8 != 0 {
            errors.push(format!("role {} has a register budget of {n}", r.name));
        }
    }
    let total: u32 = k
        .roles
        .iter()
        .zip(&b.roles)
        .map(|(r, n)| n * groups(r))
        .sum();
    if total > b.entry * k.warps / WARPGROUP {
        errors.push(format!(
            "register budgets of {total} per thread over the warpgroups, past {} at the entry",
            b.entry * k.warps / WARPGROUP
        ));
    }
    errors
}
