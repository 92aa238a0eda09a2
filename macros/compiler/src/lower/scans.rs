//! Scans (`exclusive_sum` and the others): a [`ParFor`] whose body produces each item (the
//! source's element, or `map`'s value), whose [`ir::ParReduce`] combines them, and whose
//! [`ir::ParScanOut`] stores each item's result into the destination source.

use proc_macro2::Span;

use super::parallel::ParHead;
use super::values::{ParCtx, Val};
use super::Lowerer;
use crate::ir::{self, Inst, ParFor, SiteKind, Value};
use crate::tir::{self, ExprKind};
use crate::types::Scalar;

impl Lowerer<'_> {
    /// `src.exclusive_sum(dst, init)` and the other scans; the value is `init` combined with
    /// every item.
    pub(super) fn par_scan(&mut self, scan: &tir::ParScan, ty: Scalar, span: Span) -> Value {
        let identity = self.reduction_identity(&scan.op, ty);
        let init = self.scalar(&scan.init);
        let (inner, map) = match &scan.src.kind {
            ExprKind::ParMap(inner, binding, body) => (&**inner, Some((binding, body))),
            _ => (&*scan.src, None),
        };
        let mut sources = Vec::new();
        let mut head = ParHead::default();
        let leaf = self.par_sources(inner, &mut sources, &mut head);
        let items = sources.len();
        self.par_sources(&scan.dst, &mut sources, &mut head);
        if sources.len() != items + 1 {
            return init;
        }
        let Some(len) = self.par_len(&sources, &head) else {
            return init;
        };
        if let Some((binding, _)) = map {
            self.bind_par(binding, &leaf, &mut head);
        }
        let outer = self.par.replace(ParCtx {
            sources: sources.iter().map(|s| s.0.clone()).collect(),
            body_depth: self.cond_depth + 1,
        });
        if outer.is_some() {
            self.diags.error(span, "parallel loops cannot nest");
        }
        self.cond_depth += 1;
        let mut item = None;
        let body = self.sub_block(|l| {
            l.range_item(&head);
            item = Some(match map {
                Some((_, body)) => match l.scoped_block(body, None) {
                    Val::Scalar(v) => v,
                    _ => identity,
                },
                None if items > 0 => match l.par.as_mut().and_then(|p| p.sources.first_mut()) {
                    Some(src) => {
                        src.read = true;
                        src.elem_value
                    }
                    None => identity,
                },
                None => head.item.or(head.index).unwrap_or(identity),
            });
        });
        let ctx = std::mem::replace(&mut self.par, outer);
        let mut par_sources = ctx.map(|c| c.sources).unwrap_or_default();
        if par_sources.iter().any(|s| s.write) {
            self.diags.error(
                span,
                "a scan's items cannot write elements: write them in a `for_each` before or after",
            );
        }
        par_sources[items].write = true;
        let writes = self.source_accesses(&par_sources, &sources, span);
        let (acc, lhs, rhs, combine, out) = self.combine_block(&scan.op, ty, span);
        self.cond_depth -= 1;
        let (Some(item), Some(out)) = (item, out) else {
            return init;
        };
        let site = self.site(
            SiteKind::Wait,
            "the role barrier of this scan".to_string(),
            span,
        );
        self.emit(Inst::ParFor(ParFor {
            len,
            index: head.index,
            sources: par_sources,
            body,
            reduce: Some(ir::ParReduce {
                item,
                identity,
                acc,
                lhs,
                rhs,
                out,
                combine,
                site,
                scan: Some(ir::ParScanOut {
                    init,
                    dst: items,
                    inclusive: scan.inclusive,
                }),
            }),
            lanes: false,
        }));
        if !writes.is_empty() && self.role.is_some() {
            self.barrier_requests.push(writes);
            let site = self.site(
                SiteKind::Wait,
                "the role barrier after this scan".to_string(),
                span,
            );
            self.emit(Inst::RoleBarrier { site });
        }
        acc
    }
}
