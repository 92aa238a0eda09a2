//! Static protocol checks on the lowered roles: cycles of waits that no interleaving can resolve.
//!
//! A role whose first channel operation, on every path, is a `recv` on channel `C` cannot move
//! before the role that sends on `C` sends something. If following these "first waits" from role
//! to role comes back to where it started, no role of the cycle ever sends: the kernel deadlocks
//! in every schedule, and it is a compile error on each `recv` of the cycle. Where the first
//! operation depends on a condition or a loop that may not run, nothing is decided here (the
//! simulator and the GPU's watchdog find those at run time).

use crate::diag::Diagnostics;
use crate::ir::{Block, Channel, Inst, Role, Site};

/// The first channel operation of a block, when it is certain.
enum First {
    /// A `recv` on this channel, with its site.
    Recv(usize, usize),
    /// An operation that lets other roles move (a reserve, send or close), or an uncertain path.
    Other,
    /// No channel operation in the block.
    Nothing,
}

fn first_op(block: &Block) -> First {
    for inst in &block.0 {
        match inst {
            Inst::Recv { chan, site, .. } => return First::Recv(chan.0 as usize, site.0 as usize),
            // A join's branches and a select's channels wait concurrently: not decided here.
            Inst::Reserve { .. }
            | Inst::Send { .. }
            | Inst::Close { .. }
            | Inst::CopyIn { .. }
            | Inst::TileLoad { .. }
            | Inst::CopyOut { .. }
            | Inst::Join { .. }
            | Inst::SelectRecv { .. } => return First::Other,
            Inst::If { then, else_, .. } => {
                // A branch with a channel operation or a way out of a loop makes the first
                // operation depend on the condition.
                let mut matters = false;
                for b in [then, else_] {
                    crate::ir::for_each_inst(b, &mut |i| {
                        matters |= matches!(
                            i,
                            Inst::Recv { .. }
                                | Inst::SelectRecv { .. }
                                | Inst::Join { .. }
                                | Inst::Reserve { .. }
                                | Inst::Send { .. }
                                | Inst::Close { .. }
                                | Inst::CopyIn { .. }
                                | Inst::TileLoad { .. }
                                | Inst::Break(_)
                        )
                    });
                }
                if matters {
                    return First::Other;
                }
            }
            // A loop's body runs at least once (it leaves only through `break`).
            Inst::Loop { body, .. } => match first_op(body) {
                First::Nothing => {}
                found => return found,
            },
            Inst::Break(_) | Inst::Continue(_) => return First::Other,
            _ => {}
        }
    }
    First::Nothing
}

/// Reports every cycle of first waits.
pub(crate) fn check_wait_cycles(
    roles: &[Role],
    channels: &[Channel],
    sites: &[Site],
    diags: &mut Diagnostics,
) {
    // waits_on[r] = (the role r first waits for, the site of that recv, the channel's name)
    let waits_on: Vec<Option<(usize, usize, &str)>> = roles
        .iter()
        .map(|r| match first_op(&r.body) {
            First::Recv(c, site) => channels
                .get(c)
                .and_then(|ch| ch.producer.map(|p| (p.0 as usize, site, ch.name.as_str()))),
            _ => None,
        })
        .collect();
    let mut reported = vec![false; roles.len()];
    for start in 0..roles.len() {
        let mut path = vec![start];
        let mut at = start;
        while let Some((next, _, _)) = waits_on[at] {
            if let Some(pos) = path.iter().position(|&r| r == next) {
                let cycle = &path[pos..];
                if cycle.iter().all(|&r| !reported[r]) {
                    let names: Vec<String> = cycle
                        .iter()
                        .chain(std::iter::once(&cycle[0]))
                        .map(|&r| format!("`{}`", roles[r].name))
                        .collect();
                    for &r in cycle {
                        reported[r] = true;
                        if let Some((waited, site, chan)) = waits_on[r] {
                            let message = if waited == r {
                                // A role that holds both ends and receives before it sends.
                                format!(
                                    "this `recv()` on `{chan}` can never complete: role `{}` holds both ends of the channel and waits here for an item that only it can send, later; send (or drop the sender) before receiving",
                                    roles[r].name
                                )
                            } else {
                                format!(
                                    "this `recv()` on `{chan}` can never complete: role `{}` waits here for role `{}` to send, and the roles {} each wait for the next before sending anything; send (or drop the sender) before receiving in one of them",
                                    roles[r].name,
                                    roles[waited].name,
                                    names.join(" -> ")
                                )
                            };
                            diags.error(sites[site].span, message);
                        }
                    }
                }
                break;
            }
            path.push(next);
            at = next;
        }
    }
}
