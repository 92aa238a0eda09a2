//! Async helpers awaited inside parallel loops: an iteration runs on one thread and cannot
//! suspend, so a helper awaited there must never wait, directly or through the helpers it
//! awaits (no channel operation, bulk copy, barrier, one-shot value, `join!`, `select!` or warp
//! operation). Such a helper is inlined into the iteration like a plain one; any other is an
//! error at the `.await`, naming where the helper waits.

use std::collections::HashMap;

use proc_macro2::Span;

use crate::diag::Diagnostics;
use crate::tir::{Block, Expr, ExprKind, FnId, Function, Stmt};

/// Reports every `.await` in a parallel loop of a helper that can suspend.
pub(super) fn report_par_awaits(functions: &[Function], diags: &mut Diagnostics) {
    let mut memo: HashMap<u32, Option<Suspension>> = HashMap::new();
    for f in functions {
        for &(callee, at) in &f.par_awaits {
            let Some(s) = suspends(functions, callee, &mut memo, &mut Vec::new()) else {
                continue;
            };
            let name = &functions[callee.0 as usize].name;
            let how = match &s.via {
                Some(via) => format!("`{name}` waits in `{via}`, which {}", s.what),
                None => format!("`{name}` {}", s.what),
            };
            diags.error(
                at,
                format!("`{name}(..).await` inside a parallel loop: the iterations run on all threads of the role at once and cannot wait, and {how}; await it before or after the parallel loop, or keep the waiting out of `{name}`"),
            );
            diags.error(s.span, format!("this is where `{name}` waits"));
        }
    }
}

/// Where a function can suspend: the `.await` (in the function itself, or of the helper
/// `via` that suspends), and what it waits for.
#[derive(Clone)]
struct Suspension {
    span: Span,
    what: String,
    via: Option<String>,
}

/// Whether `id` can suspend (with where), memoized; a cycle (reported elsewhere) does not.
fn suspends(
    functions: &[Function],
    id: FnId,
    memo: &mut HashMap<u32, Option<Suspension>>,
    active: &mut Vec<u32>,
) -> Option<Suspension> {
    if let Some(known) = memo.get(&id.0) {
        return known.clone();
    }
    if active.contains(&id.0) {
        return None;
    }
    active.push(id.0);
    let f = functions.get(id.0 as usize)?;
    let mut found = None;
    block(&f.body, &mut |e| {
        if found.is_some() {
            return;
        }
        found = match &e.kind {
            ExprKind::Await(inner) => match &inner.kind {
                ExprKind::Call(callee, _) => {
                    suspends(functions, *callee, memo, active).map(|s| Suspension {
                        span: e.span,
                        what: s.what,
                        via: Some(functions[callee.0 as usize].name.clone()),
                    })
                }
                ExprKind::Reserve(_) => waits(e, "waits for a free slot (`reserve()`)"),
                ExprKind::Recv(_) => waits(e, "waits for an item (`recv()`)"),
                ExprKind::MmaStages { .. } => waits(e, "waits for items (`mma_stages()`)"),
                ExprKind::CopyFrom(..) | ExprKind::CopyTo(..) => {
                    waits(e, "copies a slot (`copy_from`/`copy_to`)")
                }
                ExprKind::OneshotRecv(_) => waits(e, "waits for a one-shot value (`recv()`)"),
                ExprKind::BarrierWait(_) => waits(e, "waits at a barrier (`wait()`)"),
                ExprKind::JoinFutures(_) => waits(e, "runs a `join!`"),
                _ => None,
            },
            ExprKind::Warp(op, _) => {
                waits(e, &format!("meets the warp's lanes (`lane.{}`)", op.name()))
            }
            ExprKind::Select(..) => waits(e, "runs a `select!`"),
            _ => None,
        };
    });
    active.pop();
    memo.insert(id.0, found.clone());
    found
}

fn waits(e: &Expr, what: &str) -> Option<Suspension> {
    Some(Suspension {
        span: e.span,
        what: what.to_string(),
        via: None,
    })
}

/// Calls `f` on every expression of `b`, nested ones included (closures' bodies too).
pub(crate) fn for_each_expr(b: &Block, f: &mut impl FnMut(&Expr)) {
    block(b, f);
}

fn block(b: &Block, f: &mut impl FnMut(&Expr)) {
    for s in &b.stmts {
        match s {
            Stmt::Let(_, e) | Stmt::Expr(e) => expr(e, f),
            Stmt::LetElse(_, e, els) => {
                expr(e, f);
                block(els, f);
            }
            Stmt::For(_, _, e, body) | Stmt::WhileLet(_, _, e, body) | Stmt::While(_, e, body) => {
                expr(e, f);
                block(body, f);
            }
            Stmt::Break(_, Some(e), _) => expr(e, f),
            Stmt::Break(_, None, _) | Stmt::Continue(..) => {}
        }
    }
    if let Some(t) = &b.tail {
        expr(t, f);
    }
}

fn expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Block(b) | ExprKind::Loop(_, b) => block(b, f),
        ExprKind::ForEach(_, _, b, _)
        | ExprKind::ParMap(_, _, b)
        | ExprKind::AccumulatorApply { body: b, .. }
        | ExprKind::RowsApply { body: b, .. } => block(b, f),
        ExprKind::If(_, then, _) | ExprKind::IfLetSome { then, .. } => block(then, f),
        ExprKind::Match(_, arms) => {
            for a in arms {
                if let Some(g) = &a.guard {
                    expr(g, f);
                }
                expr(&a.body, f);
            }
        }
        _ => {}
    }
    for c in super::children(e) {
        expr(c, f);
    }
}
