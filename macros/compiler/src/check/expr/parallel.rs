//! Parallel loops: `par_iter`, `zip`, `enumerate`, `for_each`, `map` and the reductions (`sum`,
//! `min`, `max`, `reduce`), with the closures they take and the bindings of their items.
//!
//! A closure's body runs on every thread of the role at once: it sees the captured locals
//! read-only, and cannot suspend.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{err, mk, Checker};
use crate::tir::{Block, Expr, ExprKind, ParBinding, Reduction};
use crate::types::{ParShape, Scalar, Ty};

impl Checker<'_> {
    /// A method of a parallel iterator: `zip`, `enumerate`, `map`, the loops and the reductions.
    pub(super) fn par_iter_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let Some(receiver) = self.par_iter_in_place(receiver) else {
            return err(span);
        };
        let rty = receiver.ty.clone();
        let ends_loop = matches!(
            name,
            "sum"
                | "min"
                | "max"
                | "reduce"
                | "fold"
                | "exclusive_sum"
                | "inclusive_sum"
                | "exclusive_scan"
                | "inclusive_scan"
        );
        if ends_loop && matches!(rty, Ty::ParIter(_)) && self.is_kernel() {
            // The kernel body runs on every thread before the roles start, without the role's
            // threads and scratch a reduction or a scan combines its parts with.
            self.diags.error(
                m.method.span(),
                format!("`{name}` over a parallel iterator is role code: compute it in a role (the kernel body only creates channels, scalars and parts of slices)"),
            );
            return err(span);
        }
        match (name, &rty) {
            ("zip", Ty::ParIter(a)) if self.want_args(m, 1) => {
                let other = self.expr(&mut m.args[0], None);
                let Some(other) = self.par_iter_in_place(other) else {
                    return err(span);
                };
                match &other.ty {
                    Ty::ParIter(b) => {
                        let shape = ParShape::Zip(Box::new(a.clone()), Box::new(b.clone()));
                        mk(
                            ExprKind::Zip(Box::new(receiver), Box::new(other)),
                            Ty::ParIter(shape),
                            span,
                        )
                    }
                    Ty::Error => err(span),
                    t => {
                        self.diags.error(other.span, format!("`zip` takes another parallel iterator (`x.par_iter()`), found `{t}`"));
                        err(span)
                    }
                }
            }
            ("enumerate", Ty::ParIter(a)) if self.want_args(m, 0) => {
                let shape = ParShape::Enumerate(Box::new(a.clone()));
                mk(
                    ExprKind::Enumerate(Box::new(receiver)),
                    Ty::ParIter(shape),
                    span,
                )
            }
            ("for_each", Ty::ParIter(shape)) if self.want_args(m, 1) => {
                if let ParShape::Mapped(_) = shape {
                    self.diags.error(m.method.span(), "`map` feeds a reduction (`sum`, `min`, `max`, `reduce`); to write elements, use `for_each` on the unmapped iterator");
                    return err(span);
                }
                self.for_each(receiver, shape.clone(), &mut m.args[0], span)
            }
            ("for_each_lane", Ty::ParIter(shape)) if self.want_args(m, 1) => {
                if let ParShape::Mapped(_) = shape {
                    self.diags.error(
                        m.method.span(),
                        "`map` feeds a reduction; run `for_each_lane` on the unmapped iterator",
                    );
                    return err(span);
                }
                self.for_each_lane(receiver, shape.clone(), &mut m.args[0], span)
            }
            ("map", Ty::ParIter(shape)) if self.want_args(m, 1) => {
                let shape = shape.clone();
                self.par_map(receiver, shape, &mut m.args[0], span)
            }
            (
                "exclusive_sum" | "inclusive_sum" | "exclusive_scan" | "inclusive_scan",
                Ty::ParIter(shape),
            ) => {
                let shape = shape.clone();
                self.par_scan(name, receiver, shape, m, span)
            }
            ("sum" | "min" | "max", Ty::ParIter(shape)) if self.want_args(m, 0) => {
                let Some(elem) = self.reduction_elem(shape, m.method.span()) else {
                    return err(span);
                };
                let red = match name {
                    "sum" => Reduction::Sum,
                    "min" => Reduction::Min,
                    _ => Reduction::Max,
                };
                mk(
                    ExprKind::ParReduce(Box::new(receiver), red),
                    Ty::Scalar(elem),
                    span,
                )
            }
            // `fold` is `reduce` under the name some users reach for first: the accumulator and
            // the items have one type, and `op` also combines partial results (associative).
            ("reduce" | "fold", Ty::ParIter(shape)) if self.want_args(m, 2) => {
                let Some(elem) = self.reduction_elem(shape, m.method.span()) else {
                    return err(span);
                };
                let (first, second) = m.args.iter_mut().fold((None, None), |(a, b), x| {
                    if a.is_none() {
                        (Some(x), b)
                    } else {
                        (a, Some(x))
                    }
                });
                let (Some(id_arg), Some(op_arg)) = (first, second) else {
                    return err(span);
                };
                self.custom_reduce(receiver, elem, id_arg, op_arg, span)
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// `e`, a parallel iterator, as the loop it starts needs it: made in place (`x.par_iter()`,
    /// maybe zipped, enumerated or mapped; a block of nothing but it stands for it). `None`
    /// after reporting one chosen by a branch or made in a block with statements. Any other `e`
    /// as it is.
    fn par_iter_in_place(&mut self, mut e: Expr) -> Option<Expr> {
        if !matches!(e.ty, Ty::ParIter(_)) {
            return Some(e);
        }
        loop {
            match e.kind {
                ExprKind::ParSource(_)
                | ExprKind::Zip(..)
                | ExprKind::Enumerate(_)
                | ExprKind::ParMap(..) => return Some(e),
                ExprKind::Block(Block {
                    stmts,
                    tail: Some(tail),
                }) if stmts.is_empty() => {
                    e = *tail;
                }
                _ => {
                    self.diags.error(e.span, "a parallel iterator runs where it is made: write `x.par_iter()` (or `x.par_iter_mut()`, with `zip`, `enumerate` or `map`) in place, not chosen by a branch or made in a block with statements");
                    return None;
                }
            }
        }
    }

    /// A parallel iterator over the elements of a slice or a slot (not inside another parallel
    /// loop's closure).
    pub(super) fn par_source(
        &mut self,
        receiver: Expr,
        elem: Scalar,
        mutable: bool,
        span: Span,
    ) -> Expr {
        if self.par_locals_start.is_some() {
            self.diags.error(
                span,
                "parallel iterators cannot nest: a `par_iter` closure runs on one thread",
            );
            return err(span);
        }
        mk(
            ExprKind::ParSource(Box::new(receiver)),
            Ty::ParIter(ParShape::Source { elem, mutable }),
            span,
        )
    }

    /// `iter.for_each(|item| body)`: the body runs once per item.
    fn for_each(&mut self, iter: Expr, shape: ParShape, arg: &mut syn::Expr, span: Span) -> Expr {
        let syn::Expr::Closure(c) = arg else {
            self.diags
                .error_at(arg, "`for_each` takes a closure, `|x| ...`");
            return err(span);
        };
        if c.inputs.len() != 1 {
            self.diags.error_at(
                &closure_params(c),
                "the `for_each` closure takes one parameter (a tuple pattern for zipped items), as in `|x|` or `|(a, b)|`",
            );
            return err(span);
        }
        let awaits_before = self.par_awaits.len();
        self.names.push(HashMap::new());
        let first_local = self.locals.len() as u32;
        let outer = self.par_locals_start.replace(first_local);
        let binding = self.par_binding(&c.inputs[0], &shape);
        let body_block = self.closure_body(&mut c.body);
        self.par_locals_start = outer;
        self.names.pop();
        let mut body_block = body_block;
        let strides = self.check_par_writes(&binding, &shape, &body_block, first_local);
        self.assert_strides(&strides, &mut body_block, c);
        if c.asyncness.is_some() || self.par_awaits.len() > awaits_before {
            // The body awaits helpers that never suspend (`check::suspend`): in the shadow code
            // a plain closure that runs it to its end at once.
            let at = c.body.span();
            c.asyncness = None;
            let run_now: syn::ExprPath =
                syn::parse_quote_spanned!(at=> ::gpu_async::device::run_now);
            // Built, not parsed: a body that begins with a block (`{ .. } << 1`) would end a
            // statement there if its tokens were read back inside `async { .. }`.
            let block = block_of(std::mem::replace(&mut *c.body, syn::Expr::PLACEHOLDER));
            let body = syn::Expr::Async(syn::ExprAsync {
                attrs: Vec::new(),
                async_token: syn::Token![async](at),
                capture: None,
                block,
            });
            *c.body = syn::Expr::Call(syn::ExprCall {
                attrs: Vec::new(),
                func: Box::new(syn::Expr::Path(run_now)),
                paren_token: syn::token::Paren(at),
                args: std::iter::once(body).collect(),
            });
        }
        mk(
            ExprKind::ForEach(Box::new(iter), binding, body_block, None),
            Ty::Unit,
            span,
        )
    }

    /// `iter.map(|item| value)`: the value must be a scalar.
    fn par_map(&mut self, iter: Expr, shape: ParShape, arg: &mut syn::Expr, span: Span) -> Expr {
        if let ParShape::Mapped(_) = shape {
            self.diags.error(
                span,
                "map the items once: combine the two closures into one",
            );
            return err(span);
        }
        let Some(c) = self.par_closure(arg, "map", 1) else {
            return err(span);
        };
        self.names.push(HashMap::new());
        let outer = self.par_locals_start.replace(self.locals.len() as u32);
        let first_local = self.locals.len() as u32;
        let binding = self.par_binding(&c.inputs[0], &shape);
        let mut body = self.closure_body(&mut c.body);
        self.par_locals_start = outer;
        self.names.pop();
        let strides = self.check_par_writes(&binding, &shape, &body, first_local);
        self.assert_strides(&strides, &mut body, c);
        let out = match body.tail.as_mut() {
            Some(t) => {
                if t.ty == Ty::IntLit {
                    self.fix_literals(t, Scalar::I32);
                } else if t.ty == Ty::FloatLit {
                    self.fix_literals(t, Scalar::F32);
                }
                let derefed = self.auto_deref((**t).clone());
                **t = derefed;
                t.ty.scalar()
            }
            None => None,
        };
        let Some(out) = out else {
            self.diags.error_at(
                &c.body,
                "the `map` closure's value must be a number (a reduction combines it)",
            );
            return err(span);
        };
        mk(
            ExprKind::ParMap(Box::new(iter), binding, body),
            Ty::ParIter(ParShape::Mapped(out)),
            span,
        )
    }

    /// The scalar a reduction over `shape` combines: a single source's element, or `map`'s.
    pub(super) fn reduction_elem(&mut self, shape: &ParShape, span: Span) -> Option<Scalar> {
        let elem = match shape {
            ParShape::Source { mutable: true, .. } => {
                self.diags.error(
                    span,
                    "a reduction reads its items: use `par_iter()`, not `par_iter_mut()`",
                );
                return None;
            }
            ParShape::Source { elem, .. } | ParShape::Mapped(elem) => *elem,
            ParShape::Indices => Scalar::Usize,
            ParShape::Zip(..) | ParShape::Enumerate(..) => {
                self.diags.error(span, "the items are tuples: map them to one scalar first, as in `.map(|(a, b)| *a * *b).sum()`");
                return None;
            }
            ParShape::Structs { .. } => {
                self.diags.error(span, "the items are structs: map them to one scalar first, as in `.map(|p| p.x).sum()`");
                return None;
            }
        };
        if elem == Scalar::Bool {
            self.diags.error(span, "a reduction combines numbers, not `bool`s: map them, as in `.map(|b| *b as u32).sum()`");
            return None;
        }
        if elem.is_half() {
            self.diags.error(
                span,
                format!("reduce `{elem}` values in `f32`: `.map(|v| v.to_f32()).sum()`"),
            );
            return None;
        }
        Some(elem)
    }

    /// `iter.reduce(|| identity, |a, b| op)`.
    fn custom_reduce(
        &mut self,
        iter: Expr,
        elem: Scalar,
        id_arg: &mut syn::Expr,
        op_arg: &mut syn::Expr,
        span: Span,
    ) -> Expr {
        match self.custom_op("reduce", elem, id_arg, op_arg, span) {
            Some(red) => mk(
                ExprKind::ParReduce(Box::new(iter), red),
                Ty::Scalar(elem),
                span,
            ),
            None => err(span),
        }
    }

    /// The closures `|| identity, |a, b| op` of `what` (`reduce`, a scan) over `elem`s.
    pub(super) fn custom_op(
        &mut self,
        what: &str,
        elem: Scalar,
        id_arg: &mut syn::Expr,
        op_arg: &mut syn::Expr,
        span: Span,
    ) -> Option<Reduction> {
        let ty = Ty::Scalar(elem);
        let idc = self.par_closure(id_arg, what, 0)?;
        let mut identity = self.in_closure(|c| c.expr(&mut idc.body, Some(&ty)));
        self.expect(&mut identity, &ty);
        let c = self.par_closure(op_arg, what, 2)?;
        self.names.push(HashMap::new());
        let outer = self.par_locals_start.replace(self.locals.len() as u32);
        let mut params = Vec::new();
        for p in c.inputs.iter() {
            let p = match p {
                syn::Pat::Type(t) => &*t.pat,
                p => p,
            };
            match p {
                syn::Pat::Ident(pi) => params.push(self.declare(
                    &pi.ident.to_string(),
                    ty.clone(),
                    false,
                    pi.ident.span(),
                )),
                other => {
                    self.diags.error_at(
                        other,
                        "name the two values the closure combines, as in `|a, b|`",
                    );
                    params.push(self.declare("_", ty.clone(), false, span));
                }
            }
        }
        let mut op = self.closure_body(&mut c.body);
        self.par_locals_start = outer;
        self.names.pop();
        match op.tail.as_mut() {
            Some(t) => self.expect(t, &ty),
            None => self.diags.error_at(
                &c.body,
                format!("the `{what}` closure's value must be a `{elem}`"),
            ),
        }
        Some(Reduction::Custom {
            identity: Box::new(identity),
            lhs: params[0],
            rhs: params[1],
            op,
        })
    }

    /// The closure of `map` or `reduce`: checks it is a plain closure and its parameter count.
    pub(super) fn par_closure<'c>(
        &mut self,
        arg: &'c mut syn::Expr,
        what: &str,
        params: usize,
    ) -> Option<&'c mut syn::ExprClosure> {
        let syn::Expr::Closure(c) = arg else {
            self.diags
                .error_at(arg, format!("`{what}` takes a closure here"));
            return None;
        };
        if let Some(a) = &c.asyncness {
            self.diags.error_at(
                a,
                "an async closure cannot run in a parallel loop: the iterations cannot suspend",
            );
            return None;
        }
        if c.inputs.len() != params {
            let shape = match params {
                0 => "no parameters, as in `|| 0.0`",
                1 => "one parameter (a tuple pattern for zipped items)",
                _ => "two parameters, as in `|a, b| a + b`",
            };
            self.diags.error_at(
                &closure_params(c),
                format!("this closure of `{what}` takes {shape}"),
            );
            return None;
        }
        Some(c)
    }

    /// A closure's body as a block (an expression body is its tail).
    pub(super) fn closure_body(&mut self, body: &mut syn::Expr) -> Block {
        self.in_closure(|c| match body {
            syn::Expr::Block(b) => c.block(&mut b.block),
            other => {
                let e = c.expr(other, None);
                Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(e)),
                }
            }
        })
    }

    /// Runs `f` on a closure's body: the loops around the closure are out of reach of its
    /// `break` and `continue`, as in Rust.
    fn in_closure<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let loops = std::mem::take(&mut self.loops);
        let outer = std::mem::replace(&mut self.in_closure, true);
        let r = f(self);
        self.in_closure = outer;
        self.loops = loops;
        r
    }

    /// Declares the names of a parallel closure's parameter: a reference to an element or a
    /// struct, `(a, b)` for `zip`, `(i, x)` for `enumerate`.
    pub(super) fn par_binding(&mut self, pat: &syn::Pat, shape: &ParShape) -> ParBinding {
        match pat {
            syn::Pat::Type(t) => self.par_binding(&t.pat, shape),
            syn::Pat::Paren(p) => self.par_binding(&p.pat, shape),
            syn::Pat::Wild(_) => ParBinding::Ignore,
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let ty = match shape {
                    ParShape::Source { elem, mutable } => Ty::ElemRef {
                        elem: *elem,
                        mutable: *mutable,
                    },
                    ParShape::Structs { id, name, mutable } => Ty::StructRef {
                        id: *id,
                        name: name.clone(),
                        mutable: *mutable,
                    },
                    ParShape::Indices => Ty::Scalar(Scalar::Usize),
                    _ => {
                        self.diags
                            .error_at(pi, "this item is a tuple: destructure it, as in `|(a, b)|`");
                        Ty::Error
                    }
                };
                ParBinding::Local(self.declare(&pi.ident.to_string(), ty, false, pi.ident.span()))
            }
            syn::Pat::Tuple(t) if t.elems.len() == 2 => match shape {
                ParShape::Zip(a, b) => ParBinding::Pair(
                    Box::new(self.par_binding(&t.elems[0], a)),
                    Box::new(self.par_binding(&t.elems[1], b)),
                ),
                ParShape::Enumerate(a) => {
                    let index = match &t.elems[0] {
                        syn::Pat::Ident(pi) => ParBinding::Local(self.declare(
                            &pi.ident.to_string(),
                            Ty::Scalar(Scalar::Usize),
                            false,
                            pi.ident.span(),
                        )),
                        syn::Pat::Wild(_) => ParBinding::Ignore,
                        other => {
                            self.diags.error_at(other, "bind the index to a name");
                            ParBinding::Ignore
                        }
                    };
                    ParBinding::Pair(Box::new(index), Box::new(self.par_binding(&t.elems[1], a)))
                }
                ParShape::Source { .. }
                | ParShape::Mapped(_)
                | ParShape::Structs { .. }
                | ParShape::Indices => {
                    self.diags
                        .error_at(t, "this item is a single element, not a tuple");
                    ParBinding::Ignore
                }
            },
            other => {
                self.diags
                    .error_at(other, "bind the closure's items to names, as in `|(y, x)|`");
                ParBinding::Ignore
            }
        }
    }
}

/// A closure's parameter list with its bars, `|a, b|`: where errors about its parameters go
/// (the list alone has no tokens when it is empty).
pub(super) fn closure_params(c: &syn::ExprClosure) -> proc_macro2::TokenStream {
    let (or1, inputs, or2) = (&c.or1_token, &c.inputs, &c.or2_token);
    quote::quote!(#or1 #inputs #or2)
}

/// `body` as a block: itself if it is a plain block, else a block whose tail it is.
pub(super) fn block_of(body: syn::Expr) -> syn::Block {
    match body {
        syn::Expr::Block(b) if b.attrs.is_empty() && b.label.is_none() => b.block,
        other => syn::Block {
            brace_token: syn::token::Brace(other.span()),
            stmts: vec![syn::Stmt::Expr(other, None)],
        },
    }
}
