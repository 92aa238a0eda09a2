//! The nesting limit, checked on a function before anything walks it: each expression, type and
//! pattern inside another is one level deeper ([`MAX_NESTING`]). The walk stops one level past
//! the limit, so it never goes deep itself; the checker's own recursion, the copies of generic
//! helpers and the messages that print code then only meet bounded trees.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::expr::{opening_span, span_of};
use crate::tir::MAX_NESTING;

/// Where `f`'s signature or body first goes deeper than [`MAX_NESTING`] levels, if it does:
/// `(in_signature, span)`.
pub(crate) fn too_deep(f: &syn::ItemFn) -> Option<(bool, Span)> {
    let mut probe = Probe {
        depth: 0,
        found: None,
    };
    probe.visit_signature(&f.sig);
    if let Some(span) = probe.found {
        return Some((true, span));
    }
    probe.visit_block(&f.block);
    probe.found.map(|span| (false, span))
}

/// The error for code nested past the limit.
pub(crate) fn message() -> String {
    format!("expressions nested deeper than {MAX_NESTING} levels are not supported in kernels: give inner parts names with `let`, or move them into a helper fn")
}

struct Probe {
    depth: usize,
    found: Option<Span>,
}

impl Probe {
    /// One level deeper at `span`: false (and the span kept) past the limit.
    fn enter(&mut self, span: impl FnOnce() -> Span) -> bool {
        if self.found.is_some() {
            return false;
        }
        if self.depth >= MAX_NESTING {
            self.found = Some(span());
            return false;
        }
        self.depth += 1;
        true
    }
}

impl<'a> Visit<'a> for Probe {
    fn visit_expr(&mut self, e: &'a syn::Expr) {
        if self.enter(|| opening_span(e, span_of(e))) {
            syn::visit::visit_expr(self, e);
            self.depth -= 1;
        }
    }

    fn visit_type(&mut self, t: &'a syn::Type) {
        if self.enter(|| type_span(t)) {
            syn::visit::visit_type(self, t);
            self.depth -= 1;
        }
    }

    fn visit_pat(&mut self, p: &'a syn::Pat) {
        if self.enter(|| pat_span(p)) {
            syn::visit::visit_pat(self, p);
            self.depth -= 1;
        }
    }
}

/// The span of a type's first token (without printing it, for the common types).
fn type_span(t: &syn::Type) -> Span {
    match t {
        syn::Type::Array(a) => a.bracket_token.span.open(),
        syn::Type::Slice(s) => s.bracket_token.span.open(),
        syn::Type::Paren(p) => p.paren_token.span.open(),
        syn::Type::Tuple(p) => p.paren_token.span.open(),
        syn::Type::Group(g) => g.group_token.span,
        syn::Type::Reference(r) => r.and_token.spans[0],
        syn::Type::Ptr(p) => p.star_token.spans[0],
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span()),
        other => other.span(),
    }
}

/// The span of a pattern's first token (without printing it, for the common patterns).
fn pat_span(p: &syn::Pat) -> Span {
    match p {
        syn::Pat::Ident(i) => i.ident.span(),
        syn::Pat::Paren(p) => p.paren_token.span.open(),
        syn::Pat::Tuple(t) => t.paren_token.span.open(),
        syn::Pat::Slice(s) => s.bracket_token.span.open(),
        syn::Pat::Reference(r) => r.and_token.spans[0],
        syn::Pat::Wild(w) => w.underscore_token.span,
        other => other.span(),
    }
}
