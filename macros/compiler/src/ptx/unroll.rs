//! Which role loops are written other than as they are: unrolled into copies in which every
//! ring slot is a constant ([`Unrolled`], [`Writer::unroll_plan`]), or in two versions, one of
//! them without the tails of bulk copies that are tested once before the loop
//! ([`whole_copies`]). The decisions only read the IR; [`super::control`] writes the loops.

use std::collections::{HashMap, HashSet};

use super::channels::SEND;
use super::parallel::UNROLL;
use super::Writer;
use crate::ir::{Block, ChannelId, Inst, LoopId, Value};

/// A role loop being written as `factor` copies of its body, in which each ring's slot is a
/// constant: the ring's slot register is not read or written inside the copies, its phase
/// register still flips where the slot wraps, and every `break` of the loop first writes the
/// slot (and the held slot) the copy is at into the registers, for the code after the loop.
/// The loop is entered at slot 0 of every ring it uses (no code before it used them), and after
/// the `factor` copies each ring is back at slot 0, so the back edge keeps that true.
pub(super) struct Unrolled {
    pub(super) id: LoopId,
    /// The slot each ring is at, where the code being written is.
    pub(super) slots: HashMap<(ChannelId, u32), u32>,
    /// For receiving ends: the slot held (the one the last `recv` took).
    pub(super) held: HashMap<(ChannelId, u32), u32>,
}

/// The size of `block` for [`MAX_UNROLLED_BODY`]: `weight` per instruction, nested ones
/// included, and [`PAR_BODY_WEIGHT`] times that in the bodies of parallel loops.
fn unroll_size(block: &Block, weight: usize) -> usize {
    block
        .0
        .iter()
        .map(|inst| {
            weight
                + match inst {
                    Inst::If { then, else_, .. } => {
                        unroll_size(then, weight) + unroll_size(else_, weight)
                    }
                    Inst::Loop { body, .. } => unroll_size(body, weight),
                    Inst::Join { branches } => {
                        branches.iter().map(|b| unroll_size(b, weight)).sum()
                    }
                    Inst::ParFor(p) => {
                        let inner = weight * PAR_BODY_WEIGHT;
                        unroll_size(&p.body, inner)
                            + p.reduce
                                .as_ref()
                                .map_or(0, |r| unroll_size(&r.combine, inner))
                    }
                    _ => 0,
                }
        })
        .sum()
}

/// Most copies of a loop body an unrolled loop has. Each copy carries its waits' slow paths, so
/// the copies grow a role's code quickly, and every role's loop is hot at once: on the H200 the
/// pipeline with an 8-slot ring, unrolled 8 times (64-73 KiB of code), spent 31% of its warps'
/// stall samples fetching instructions and ran at 0.62-0.80x device copy where 4 copies (39
/// KiB) spent 3% (`docs/design.md`, "Role loops unrolled by their rings' depth").
const MAX_UNROLL: u32 = 4;
/// Most IR instructions (nested ones included, see [`PAR_BODY_WEIGHT`]) of a loop body that is
/// unrolled.
const MAX_UNROLLED_BODY: usize = 200;
/// What an instruction of a parallel loop's body counts for in [`MAX_UNROLLED_BODY`]: the
/// vector loop writes the body once per element of its [`UNROLL`] groups of four, the loop of
/// single groups four times more and the scalar tail once more. Counted once, the 64-FMA
/// kernel's compute loop was unrolled 4 times into 121 KiB of code and ran 20% slower on the
/// H200 than not unrolled (`docs/design.md`, "Role loops unrolled by their rings' depth").
const PAR_BODY_WEIGHT: usize = (UNROLL as usize + 1) * 4 + 1;

/// The greatest common divisor (`gcd(0, b) = b`).
fn gcd(a: u32, b: u32) -> u32 {
    if a == 0 {
        b
    } else {
        gcd(b % a, a)
    }
}

/// The bulk copies at the top level of the role loop `body` whose split (`len`, `bulk`) the body
/// does not change, and which can therefore be tested once, before the loop: when the bulk part
/// covers them whole, the loop runs a version of its body without their tail loops. The branch
/// after each copy that skips its tail, with the tail's code, was on the producer's path from
/// its wait to its send: 7.2 ns per item of a 16 KiB bulk handoff at depth 4 on the H200 (93.9
/// -> 86.7 without them; `docs/design.md`, "Bulk copies"). Only for loops without nested
/// loops, `continue`, `join!` or `select!`, whose labels a second version would repeat.
pub(super) fn whole_copies(id: LoopId, body: &Block) -> Vec<(Value, Value, ChannelId)> {
    let mut defined = HashSet::new();
    let mut plain = true;
    crate::ir::for_each_inst(body, &mut |i| {
        defined.extend(i.defs());
        plain &= !matches!(
            i,
            Inst::Loop { .. } | Inst::Join { .. } | Inst::SelectRecv { .. }
        ) && !matches!(i, Inst::Continue(c) if *c == id);
    });
    if !plain {
        return Vec::new();
    }
    let mut copies = Vec::new();
    for inst in &body.0 {
        let (len, bulk, chan) = match inst {
            Inst::CopyIn {
                chan, len, bulk, ..
            }
            | Inst::CopyOut {
                chan, len, bulk, ..
            } => (*len, *bulk, *chan),
            _ => continue,
        };
        if !defined.contains(&len) && !defined.contains(&bulk) {
            copies.push((len, bulk, chan));
        }
    }
    copies
}

impl Writer<'_> {
    /// Whether the role loop `id` is written as copies of `body` with constant ring slots
    /// ([`Unrolled`]), and how many copies: when every channel operation of the body is at its
    /// top level (so each runs once per completed iteration), the rings it uses were not used
    /// before (so they are at slot 0), the body has no nested loop (whose labels would repeat),
    /// no `continue` (which would skip copies), no `join!`, `select!` or close, and the copies
    /// bring every ring back to slot 0: the least common multiple of each ring's period (its
    /// depth over the gcd of the depth and its steps per iteration), from 2 to [`MAX_UNROLL`].
    pub(super) fn unroll_plan(&self, id: LoopId, body: &Block) -> Option<(u32, Unrolled)> {
        let role = self.role.as_ref()?;
        // Steps (sends, receives) per iteration of each ring the top level uses.
        let mut steps: HashMap<(ChannelId, u32), u32> = HashMap::new();
        for inst in &body.0 {
            let (key, step) = match inst {
                Inst::Reserve { chan, .. }
                | Inst::CopyIn { chan, .. }
                | Inst::TileLoad { chan, .. } => ((*chan, SEND), 0),
                Inst::Send { chan } => ((*chan, SEND), 1),
                Inst::SlotAddr { chan, send, rx, .. } => {
                    ((*chan, if *send { SEND } else { *rx }), 0)
                }
                Inst::Recv { chan, rx, .. } => ((*chan, *rx), 1),
                Inst::Release { chan, rx, .. }
                | Inst::CopyOut { chan, rx, .. }
                | Inst::HeldSlot { chan, rx, .. } => ((*chan, *rx), 0),
                Inst::Loop { .. }
                | Inst::Continue(_)
                | Inst::Close { .. }
                | Inst::CloseRecv { .. }
                | Inst::Join { .. }
                | Inst::SelectRecv { .. } => return None,
                _ => continue,
            };
            *steps.entry(key).or_insert(0) += step;
        }
        // Nested blocks: no channel operation, loop, `continue`, `join!` or `select!`.
        let mut nested_ok = true;
        for inst in &body.0 {
            let nested: Vec<&Block> = match inst {
                Inst::If { then, else_, .. } => vec![then, else_],
                Inst::ParFor(p) => vec![&p.body],
                _ => Vec::new(),
            };
            for b in nested {
                crate::ir::for_each_inst(b, &mut |i| {
                    nested_ok &= !matches!(
                        i,
                        Inst::Reserve { .. }
                            | Inst::CopyIn { .. }
                            | Inst::TileLoad { .. }
                            | Inst::Send { .. }
                            | Inst::SlotAddr { .. }
                            | Inst::Recv { .. }
                            | Inst::Release { .. }
                            | Inst::HeldSlot { .. }
                            | Inst::CopyOut { .. }
                            | Inst::Close { .. }
                            | Inst::CloseRecv { .. }
                            | Inst::Loop { .. }
                            | Inst::Continue(_)
                            | Inst::Join { .. }
                            | Inst::SelectRecv { .. }
                    );
                });
            }
        }
        let size = unroll_size(body, 1);
        if !nested_ok || size > MAX_UNROLLED_BODY || steps.is_empty() {
            return None;
        }
        let mut factor = 1u32;
        for (key, &n) in &steps {
            if role.touched.contains(key) || !role.rings.contains_key(key) {
                return None;
            }
            let depth = self.k.channel(key.0).ty.depth.max(1);
            let period = depth / gcd(n % depth, depth);
            factor = factor / gcd(factor, period) * period;
            if factor > MAX_UNROLL {
                return None;
            }
        }
        if factor < 2 {
            return None;
        }
        let slots = steps.keys().map(|&key| (key, 0)).collect();
        let held = steps
            .keys()
            .filter(|key| key.1 != SEND)
            .map(|&key| (key, 0))
            .collect();
        Some((factor, Unrolled { id, slots, held }))
    }
}
