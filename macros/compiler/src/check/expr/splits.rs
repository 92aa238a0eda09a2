//! Splitting a slice into parts for different roles: `split_at` / `split_at_mut`, the chunks of
//! `chunks` / `chunks_mut` / `chunks_exact` / `chunks_exact_mut` (handed out by `next()` in the
//! kernel body), and ranges of one `&mut` slice the kernel body proves disjoint (`&mut y[..mid]`
//! and `&mut y[mid..]`), which rustc would refuse as two mutable borrows: the shadow code takes
//! them with `split_disjoint_mut`, which rustc accepts.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use super::{err, mk, Checker};
use crate::tir::{Expr, ExprKind, LetPattern, Stmt};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `split_at`, `split_at_mut` and the `chunks` methods of a slice.
    pub(super) fn split_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Ty::Slice { elem, mutable } = receiver.ty else {
            return err(span);
        };
        let want_mut = name.ends_with("_mut");
        if want_mut && !mutable {
            self.diags
                .error(receiver.span, format!("`{name}` needs a `&mut [T]` slice"));
            return err(span);
        }
        if !self.want_args(m, 1) {
            return err(span);
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut arg = self.expr(&mut m.args[0], Some(&usize_ty));
        self.expect(&mut arg, &usize_ty);
        match name {
            "split_at" | "split_at_mut" => mk(
                ExprKind::SplitAt(Box::new(receiver), Box::new(arg)),
                Ty::SlicePair {
                    elem,
                    mutable: want_mut,
                },
                span,
            ),
            _ => {
                if !self.is_kernel() {
                    self.diags.error(m.method.span(), format!("`{name}` hands a slice's parts to roles in the kernel body (`let mut parts = y.{name}(n);`, then `parts.next().unwrap()` for each role); in a role, slice it with ranges"));
                    return err(span);
                }
                mk(
                    ExprKind::Chunks {
                        base: Box::new(receiver),
                        size: Box::new(arg),
                        exact: name.starts_with("chunks_exact"),
                    },
                    Ty::Chunks {
                        elem,
                        mutable: want_mut,
                    },
                    span,
                )
            }
        }
    }

    /// `next()` of chunks: a local of the kernel body, declared `mut`.
    pub(super) fn chunks_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        if let Ty::OptSlice { elem, mutable } = receiver.ty {
            if name != "unwrap" || !self.want_args(m, 0) {
                return self.unknown_method(name, &receiver.ty.clone(), m, span);
            }
            return mk(
                ExprKind::Unwrap(Box::new(receiver)),
                Ty::Slice { elem, mutable },
                span,
            );
        }
        let Ty::Chunks { elem, mutable } = receiver.ty else {
            return err(span);
        };
        if name != "next" {
            return self.unknown_method(name, &receiver.ty.clone(), m, span);
        }
        if !self.want_args(m, 0) {
            return err(span);
        }
        if let Some(id) = self.local_of(&receiver, "next") {
            if !self.locals[id.0 as usize].mutable {
                self.diags.error(
                    receiver.span,
                    "`next` advances the chunks: declare them `let mut`",
                );
            }
        }
        mk(
            ExprKind::ChunksNext(Box::new(receiver)),
            Ty::OptSlice { elem, mutable },
            span,
        )
    }

    /// The kernel body's `&mut p[range]` of one slice `p` taken more than once (for different
    /// roles, or kept in locals): when the ranges are provably disjoint (one's end is the other's
    /// start, written alike, or constants that do not overlap), each is replaced by a part, and
    /// the parts are taken before the first of them by one statement,
    /// `let [parts..] = split_disjoint_mut(p, [ranges..]);`, which rustc accepts and
    /// [`Checker::split_parts`] checks. Otherwise they are left as written, and rustc reports the
    /// second mutable borrow.
    pub(super) fn plan_disjoint_ranges(&mut self, block: &mut syn::Block) {
        let mut finder = Borrows::default();
        for (i, stmt) in block.stmts.iter_mut().enumerate() {
            finder.stmt = i;
            finder.visit_stmt_mut(stmt);
        }
        let mut by_slice: Vec<(String, Vec<Borrow>)> = Vec::new();
        for b in finder.found {
            match by_slice.iter_mut().find(|(s, _)| *s == b.slice) {
                Some((_, v)) => v.push(b),
                None => by_slice.push((b.slice.clone(), vec![b])),
            }
        }
        let mut inserts: Vec<(usize, syn::Stmt)> = Vec::new();
        let mut replacements: HashMap<(usize, usize), syn::Expr> = HashMap::new();
        for (slice, borrows) in by_slice {
            if borrows.len() > MAX_PARTS {
                self.diags.error(
                    borrows[MAX_PARTS].span,
                    format!("the kernel body takes more than {MAX_PARTS} parts of `{slice}`; hand each role a range of parts instead (`&mut {slice}[a..b]`), or split it in a role"),
                );
                continue;
            }
            if borrows.len() < 2 || !self.disjoint(&borrows) {
                continue;
            }
            let first = borrows.iter().map(|b| b.stmt).min().unwrap_or(0);
            let span = borrows[0].span;
            let parts: Vec<syn::Ident> = (0..borrows.len())
                .map(|k| format_ident!("__gpu_async_{}_{}", slice, k, span = span))
                .collect();
            let slice_ident = syn::Ident::new(&slice, span);
            let ranges = borrows.iter().map(|b| {
                let start = b.start.clone().unwrap_or_else(|| quote!(0usize));
                let end = b.end.clone().unwrap_or_else(|| quote!(#slice_ident.len()));
                quote_spanned!(b.span=> #start..#end)
            });
            let stmt: syn::Stmt = syn::parse_quote_spanned!(span=>
                let [#(#parts),*] = {
                    let __gpu_async_ranges = [#(#ranges),*];
                    ::gpu_async::device::split_disjoint_mut(#slice_ident, __gpu_async_ranges)
                };
            );
            inserts.push((first, stmt));
            for (b, part) in borrows.iter().zip(&parts) {
                replacements.insert((b.stmt, b.index), syn::parse_quote_spanned!(b.span=> #part));
            }
            self.splits.push(SplitPlan {
                slice,
                parts: parts.iter().map(|p| p.to_string()).collect(),
                open: borrows
                    .iter()
                    .map(|b| (b.start.is_none(), b.end.is_none()))
                    .collect(),
            });
        }
        if replacements.is_empty() {
            return;
        }
        let mut replacer = Replace {
            replacements,
            stmt: 0,
            seen: 0,
        };
        for (i, stmt) in block.stmts.iter_mut().enumerate() {
            replacer.stmt = i;
            replacer.seen = 0;
            replacer.visit_stmt_mut(stmt);
        }
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, stmt) in inserts {
            block.stmts.insert(at, stmt);
        }
    }

    /// The statement [`Checker::plan_disjoint_ranges`] inserted (`let [parts..] = ..;`, found
    /// by its parts' names): each part, `p[range]`, as a `let` of its own; `None` for any other
    /// statement. The ranges are checked where they are written in the shadow code.
    pub(super) fn split_parts(&mut self, local: &mut syn::Local) -> Option<Vec<Stmt>> {
        let syn::Pat::Slice(pattern) = &local.pat else {
            return None;
        };
        let first = match pattern.elems.first() {
            Some(syn::Pat::Ident(pi)) => pi.ident.to_string(),
            _ => return None,
        };
        let plan = self
            .splits
            .iter()
            .find(|p| p.parts.first() == Some(&first))?;
        let (slice_name, parts, open) = (plan.slice.clone(), plan.parts.clone(), plan.open.clone());
        let span = local.span();
        let slice = match self.lookup(&slice_name) {
            Some(id) => id,
            None => {
                self.diags
                    .error(span, format!("cannot find `{slice_name}`"));
                return Some(Vec::new());
            }
        };
        let slice_ty = self.locals[slice.0 as usize].ty.clone();
        let Ty::Slice {
            elem,
            mutable: true,
        } = slice_ty
        else {
            self.diags.error(span, format!("`&mut {slice_name}[..]` takes parts of a `&mut [T]` slice, not of a `{slice_ty}`"));
            return Some(Vec::new());
        };
        // `{ let __gpu_async_ranges = [ranges..]; .. }`: the ranges, checked in place.
        let init = local.init.as_mut()?;
        let syn::Expr::Block(b) = &mut *init.expr else {
            return None;
        };
        let syn::Stmt::Local(ranges) = b.block.stmts.first_mut()? else {
            return None;
        };
        let syn::Expr::Array(array) = &mut *ranges.init.as_mut()?.expr else {
            return None;
        };
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let base = mk(
            ExprKind::Local(slice),
            Ty::Slice {
                elem,
                mutable: true,
            },
            span,
        );
        let mut stmts = Vec::new();
        for ((name, range), (no_start, no_end)) in
            parts.iter().zip(array.elems.iter_mut()).zip(open)
        {
            let syn::Expr::Range(r) = range else {
                return None;
            };
            let bound =
                |this: &mut Self, e: Option<&mut Box<syn::Expr>>, open: bool, end: bool| match e {
                    Some(e) if !open => {
                        let mut v = this.expr(e, Some(&usize_ty));
                        this.expect(&mut v, &usize_ty);
                        v
                    }
                    _ if end => mk(
                        ExprKind::Len(Box::new(base.clone())),
                        usize_ty.clone(),
                        span,
                    ),
                    _ => mk(
                        ExprKind::Lit(crate::tir::Lit::Int(0)),
                        usize_ty.clone(),
                        span,
                    ),
                };
            let a = bound(self, r.start.as_mut(), no_start, false);
            let z = bound(self, r.end.as_mut(), no_end, true);
            let range = mk(ExprKind::Range(Box::new(a), Box::new(z)), Ty::Range, span);
            let ty = Ty::Slice {
                elem,
                mutable: true,
            };
            let part = mk(
                ExprKind::SubSlice(Box::new(base.clone()), Box::new(range)),
                ty.clone(),
                span,
            );
            let id = self.declare(name, ty, false, span);
            stmts.push(Stmt::Let(LetPattern::Local(id), part));
        }
        Some(stmts)
    }

    /// Whether the ranges of `borrows` are provably pairwise disjoint: every two are ordered by
    /// the relation "ends where the other starts" (written alike, or constants, a missing start
    /// being 0), closed transitively (every range starts at or before its end, which the shadow
    /// code's split checks, as the GPU's slicing does).
    ///
    /// The closure orders every two ranges exactly when the direct relation has a single
    /// topological order (each range in it directly before the next): Kahn's algorithm, with
    /// one range without a predecessor at every step. That is quadratic in the ranges of one
    /// slice, on integers (each bound is printed and evaluated once), where the closure itself
    /// was cubic: 4,000 ranges took minutes.
    fn disjoint(&mut self, borrows: &[Borrow]) -> bool {
        let value = |t: &Option<TokenStream>, default: Option<u128>| -> Option<u128> {
            let Some(t) = t else {
                return default;
            };
            let e: syn::Expr = syn::parse2(t.clone()).ok()?;
            // A bound that is not a constant is unknown here, not an error: the checker reports
            // what it must where the range is checked.
            let mut unknown = crate::diag::Diagnostics::new();
            crate::check::consts::eval_usize(&e, &self.scope.consts, &mut unknown).map(u128::from)
        };
        // Each bound as written, by a number per distinct text (`None`: left out).
        let mut texts: HashMap<String, usize> = HashMap::new();
        let mut key = |t: &Option<TokenStream>| {
            t.as_ref().map(|t| {
                let next = texts.len();
                *texts.entry(t.to_string()).or_insert(next)
            })
        };
        let n = borrows.len();
        let keys: Vec<(Option<usize>, Option<usize>)> = borrows
            .iter()
            .map(|b| (key(&b.start), key(&b.end)))
            .collect();
        let bounds: Vec<(Option<u128>, Option<u128>)> = borrows
            .iter()
            .map(|b| (value(&b.start, Some(0)), value(&b.end, None)))
            .collect();
        // Range i ends at or before range j starts.
        let before = |i: usize, j: usize| {
            let touch = keys[i].1.is_some() && keys[i].1 == keys[j].0;
            let consts = matches!((bounds[i].1, bounds[j].0), (Some(x), Some(y)) if x <= y);
            i != j && (touch || consts)
        };
        let mut preds: Vec<usize> = (0..n)
            .map(|j| (0..n).filter(|&i| before(i, j)).count())
            .collect();
        let mut ready: Vec<usize> = (0..n).filter(|&j| preds[j] == 0).collect();
        let mut placed = 0;
        while let Some(i) = ready.pop() {
            if !ready.is_empty() {
                // Two ranges with no range known to end before them: unordered.
                return false;
            }
            placed += 1;
            for (j, p) in preds.iter_mut().enumerate() {
                if before(i, j) {
                    *p -= 1;
                    if *p == 0 {
                        ready.push(j);
                    }
                }
            }
        }
        // Fewer placed than ranges: a cycle (`a..b` and `b..a`), not an order.
        placed == n
    }
}

/// Most `&mut p[range]` parts of one slice in a kernel body: their disjointness is proved in
/// time quadratic in their number, and a kernel has at most 32 roles to hand them to.
pub(crate) const MAX_PARTS: usize = 256;

/// Parts of one slice the kernel body takes (`plan_disjoint_ranges`): the slice's name, the
/// parts' names, and which ends each range leaves out (start, end).
pub(super) struct SplitPlan {
    slice: String,
    parts: Vec<String>,
    open: Vec<(bool, bool)>,
}

/// One `&mut p[range]` of the kernel body: the slice's name, the range's ends as written, and
/// where it is (statement, and its order among the borrows of that statement).
struct Borrow {
    slice: String,
    start: Option<TokenStream>,
    end: Option<TokenStream>,
    stmt: usize,
    index: usize,
    span: Span,
}

/// Finds the `&mut p[range]` of the kernel body (not inside closures or blocks of their own).
#[derive(Default)]
struct Borrows {
    found: Vec<Borrow>,
    stmt: usize,
}

impl VisitMut for Borrows {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let Some(args) = join_args(e) {
            // `join!(..)`: its roles' arguments, in order.
            let mut args = args;
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            return;
        }
        if let Some((slice, start, end)) = mut_range_borrow(e) {
            let index = self
                .found
                .iter()
                .rev()
                .take_while(|b| b.stmt == self.stmt)
                .count();
            self.found.push(Borrow {
                slice,
                start,
                end,
                stmt: self.stmt,
                index,
                span: e.span(),
            });
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Puts each part in place of its `&mut p[range]`.
struct Replace {
    replacements: HashMap<(usize, usize), syn::Expr>,
    stmt: usize,
    seen: usize,
}

impl VisitMut for Replace {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let (Some(mut args), syn::Expr::Macro(m)) = (join_args(e), &mut *e) {
            // `join!(..)`: replaced in its arguments, written back as its tokens.
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            m.mac.tokens = args.to_token_stream();
            return;
        }
        if mut_range_borrow(e).is_some() {
            if let Some(part) = self.replacements.get(&(self.stmt, self.seen)) {
                *e = part.clone();
            }
            self.seen += 1;
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// The arguments of `join!(..)`, parsed from its tokens.
fn join_args(e: &syn::Expr) -> Option<syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>> {
    let syn::Expr::Macro(m) = e else {
        return None;
    };
    let last = m.mac.path.segments.last()?;
    if last.ident != "join" {
        return None;
    }
    m.mac
        .parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        .ok()
}

/// `&mut p[a..b]` (any end left out) of a plain name `p`: the name and the ends.
fn mut_range_borrow(e: &syn::Expr) -> Option<(String, Option<TokenStream>, Option<TokenStream>)> {
    let syn::Expr::Reference(r) = e else {
        return None;
    };
    r.mutability?;
    let syn::Expr::Index(ix) = &*r.expr else {
        return None;
    };
    let syn::Expr::Path(p) = &*ix.expr else {
        return None;
    };
    let name = p.path.get_ident()?.to_string();
    let syn::Expr::Range(range) = &*ix.index else {
        return None;
    };
    if !matches!(range.limits, syn::RangeLimits::HalfOpen(_)) {
        return None;
    }
    Some((
        name,
        range.start.as_ref().map(|s| s.to_token_stream()),
        range.end.as_ref().map(|s| s.to_token_stream()),
    ))
}
