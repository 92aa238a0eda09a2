//! Shared-memory layout: the channel rings, the shared arrays, the barriers, the reduction
//! scratch, the shared values and the state words.

use proc_macro2::Span;

use crate::diag::Diagnostics;
use crate::ir::{Channel, RoleBarrier, SharedArray};

use crate::target::SHARED_LIMIT;

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// Places each channel's slots (128-byte aligned, for bulk copies and wide accesses; a tile slot
/// on its swizzle pattern's repeat, `ChanTy::slot_align`), the shared
/// arrays (16-byte aligned, one after another, so that one loop zeroes them), then all barriers
/// (the channels', then one per role in `role_needs_barrier`), state words, the open words of the
/// channels their receivers can close and the debt words of those received by several warps
/// (`receiving_warps`, per channel); returns the total and each role's barrier, or reports the
/// total past the limit with the breakdown. A kernel's only role meets at `bar.sync 0`
/// ([`RoleBarrier::Block`]), which takes no shared memory.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lay_out(
    channels: &mut [Channel],
    receiving_warps: &[u32],
    arrays: &mut [SharedArray],
    role_needs_barrier: &[bool],
    role_scratch_bytes: &[u32],
    cells: u32,
    spans: &[Span],
    diags: &mut Diagnostics,
) -> (u32, Vec<Option<RoleBarrier>>, Vec<Option<u32>>, u32) {
    let mut offset: u64 = 0;
    let mut breakdown = Vec::new();
    for c in channels.iter_mut() {
        // 128 bytes, or a tile's swizzle repeat, which the hardware applies to address bits.
        let align = c.ty.slot_align();
        let stride = round_up(c.ty.payload_bytes(), align);
        offset = round_up(offset, align);
        c.data_offset = offset.min(u64::from(u32::MAX)) as u32;
        c.slot_stride = stride.min(u64::from(u32::MAX)) as u32;
        let bytes = stride * u64::from(c.ty.depth);
        breakdown.push(format!(
            "channel `{}`: {} slots of {} B = {} B",
            c.name, c.ty.depth, stride, bytes
        ));
        offset += bytes;
    }
    offset = round_up(offset, 16);
    for a in arrays.iter_mut() {
        a.offset = offset.min(u64::from(u32::MAX)) as u32;
        let shape = if a.rows > 1 {
            format!("{} x {}", a.rows, a.cols)
        } else {
            a.cols.to_string()
        };
        let padded = if a.row_stride != a.cols {
            format!(", rows padded to {}", a.row_stride)
        } else {
            String::new()
        };
        breakdown.push(format!(
            "shared array `{}`: [{shape}] of {}{padded} = {} B",
            a.name,
            a.elem,
            a.bytes()
        ));
        offset = round_up(offset + a.bytes(), 16);
    }
    offset = round_up(offset, 8);
    for c in channels.iter_mut() {
        c.full_offset = offset as u32;
        offset += 8 * u64::from(c.ty.depth);
        c.empty_offset = offset as u32;
        offset += 8 * u64::from(c.ty.depth);
    }
    let mut role_barriers = Vec::new();
    let only_role = role_needs_barrier.len() == 1;
    for &needed in role_needs_barrier {
        role_barriers.push(match (needed, only_role) {
            (false, _) => None,
            (true, true) => Some(RoleBarrier::Block),
            (true, false) => {
                offset += 8;
                Some(RoleBarrier::Mbarrier(offset as u32 - 8))
            }
        });
    }
    let mut scratch = Vec::new();
    for &bytes in role_scratch_bytes {
        scratch.push((bytes > 0).then_some(offset as u32));
        if bytes > 0 {
            breakdown.push(format!(
                "role scratch (reductions, atomics' results): {bytes} B"
            ));
        }
        offset += u64::from(bytes);
    }
    let cells_offset = offset as u32;
    if cells > 0 {
        breakdown.push(format!("shared values: {} B", 8 * cells));
    }
    offset += 8 * u64::from(cells);
    for c in channels.iter_mut() {
        c.state_offset = offset as u32;
        offset += 4 * u64::from(c.ty.depth);
    }
    for c in channels.iter_mut().filter(|c| c.closable) {
        c.open_offset = offset as u32;
        offset += 4;
    }
    for (c, &warps) in channels.iter_mut().zip(receiving_warps) {
        if c.closable && warps > 1 {
            c.debt_offset = Some(offset as u32);
            offset += 8 * u64::from(c.ty.depth);
        }
    }
    let total = round_up(offset, 16);
    if total > u64::from(SHARED_LIMIT) {
        let span = spans.first().copied().unwrap_or_else(Span::call_site);
        diags.error(
            span,
            format!(
                "the kernel needs {total} B of shared memory per block, past the {SHARED_LIMIT} B a block can have on sm_90: {}; shrink the payloads or the depths{}",
                breakdown.join("; "),
                if arrays.is_empty() { "" } else { ", or the shared arrays" }
            ),
        );
        return (0, role_barriers, scratch, cells_offset);
    }
    (total as u32, role_barriers, scratch, cells_offset)
}
