//! Block-shared arrays: `shared_array::<T, N>()` and `shared_array_2d::<T, R, C>()` in the
//! kernel body, their elements (`arr[i]`, `tile[r][c]`, atomics `bins[i].fetch_add(..)`), their
//! methods (`len`, `par_iter`, `par_iter_mut`), and the rule for writing them by index: in a
//! parallel loop, each iteration writes its own elements.
//!
//! What would race and Rust's borrows already reject stays with rustc on the shadow code: two
//! roles taking one array as `&mut`, or a loop over `arr.par_iter_mut()` that reads `arr`. Writes
//! by index go through a closure's `&mut` capture, which Rust accepts whatever the index, so the
//! checker proves them one per iteration and rejects reads of the array in the same loop.

use std::collections::HashMap;

use super::{err, mk, Checker};
use crate::check::sig::array_args;
use crate::check::uniform::children;
use crate::target::SHARED_LIMIT;
use crate::tir::{BinOp, Block, Expr, ExprKind, Lit, LocalId, ParBinding, Stmt};
use crate::types::{ArrayTy, ParShape, Scalar, Ty};
use proc_macro2::Span;

/// Whether `ty` is a shared array, a reference to one, or a row of a 2D one.
pub(super) fn is_shared_array(ty: &Ty) -> bool {
    matches!(
        ty,
        Ty::SharedArray(_) | Ty::SharedArrayRef(..) | Ty::SharedRow(..)
    )
}

/// Whether `ty` is a place a parallel loop writes by index: a shared array (or a row of one),
/// or a `&mut` slice.
fn is_indexed_target(ty: &Ty) -> bool {
    is_shared_array(ty) || matches!(ty, Ty::Slice { mutable: true, .. })
}

/// The local an indexed place's base is (`arr`, `tile[r]`, `y`, `y[a..b]`), when it is one.
fn array_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Local(id) => Some(*id),
        ExprKind::Index(base, _) | ExprKind::AtomicIndex(base, _) if is_shared_array(&base.ty) => {
            array_local(base)
        }
        ExprKind::SubSlice(base, _) => array_local(base),
        _ => None,
    }
}

impl Checker<'_> {
    /// `shared_array::<T, N>()` or `shared_array_2d::<T, R, C>()`: only in the kernel body.
    pub(super) fn shared_array_new(
        &mut self,
        c: &mut syn::ExprCall,
        last_seg: &syn::PathSegment,
        name: &str,
        span: Span,
    ) -> Expr {
        let two_d = name == "shared_array_2d";
        if !c.args.is_empty() {
            self.diags
                .error_at(&c.args, format!("`{name}` takes no arguments"));
        }
        let args: Vec<&syn::GenericArgument> = match &last_seg.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
            _ => Vec::new(),
        };
        let Some(arr) = array_args(&args, two_d, self.scope, self.diags, &c.func) else {
            return err(span);
        };
        // Checked before anything is made for the array: its bytes, unpadded, fit a block's
        // shared memory (the layout checks the padded rows with the kernel's other shared
        // memory).
        let bytes =
            u128::from(arr.rows.unwrap_or(1)) * u128::from(arr.cols) * u128::from(arr.elem.size());
        if bytes > u128::from(SHARED_LIMIT) {
            let sizes = &args[1..];
            self.diags.error_at(
                &quote::quote!(#(#sizes),*),
                format!("a shared array of {bytes} B is past the {SHARED_LIMIT} B of shared memory a block can have on sm_90: make it smaller, or split the work into tiles that fit"),
            );
            return err(span);
        }
        if !self.is_kernel() {
            self.diags.error_at(&c.func, "shared arrays are made in the kernel body, before `join!`, and passed to the roles as `&mut arr` (to write) or `&arr` (to read)");
        }
        mk(
            ExprKind::SharedArrayNew(arr.clone()),
            Ty::SharedArray(arr),
            span,
        )
    }

    /// `&arr` and `&mut arr` of a shared array made in the kernel body.
    pub(super) fn shared_array_reference(&mut self, inner: Expr, mutable: bool) -> Expr {
        let Ty::SharedArray(a) = inner.ty.clone() else {
            return inner;
        };
        let span = inner.span;
        mk(
            ExprKind::Block(Block {
                stmts: Vec::new(),
                tail: Some(Box::new(inner)),
            }),
            Ty::SharedArrayRef(a, mutable),
            span,
        )
    }

    /// `arr[i]` (an element, or an atomic for `fetch_add` and the others), `tile[r]` (a row,
    /// indexed again) and `tile[r][c]`.
    pub(super) fn shared_array_index(&mut self, base: Expr, mut index: Expr, span: Span) -> Expr {
        let usize_ty = Ty::Scalar(Scalar::Usize);
        if index.ty == Ty::Range {
            self.diags.error(
                index.span,
                "sub-slices of a shared array are not supported: index its elements, or iterate it with `par_iter()`",
            );
            return err(span);
        }
        self.expect(&mut index, &usize_ty);
        let (a, mutable, row) = match &base.ty {
            Ty::SharedArray(a) => (a.clone(), true, false),
            Ty::SharedArrayRef(a, m) => (a.clone(), *m, false),
            Ty::SharedRow(a, m) => (a.clone(), *m, true),
            _ => return err(span),
        };
        if a.rows.is_some() && !row {
            return mk(
                ExprKind::Index(Box::new(base), Box::new(index)),
                Ty::SharedRow(a, mutable),
                span,
            );
        }
        if a.atomic {
            return mk(
                ExprKind::AtomicIndex(Box::new(base), Box::new(index)),
                Ty::AtomicRef(a.elem),
                span,
            );
        }
        mk(
            ExprKind::Index(Box::new(base), Box::new(index)),
            Ty::Scalar(a.elem),
            span,
        )
    }

    /// `arr[i] = v` or `tile[r][c] = v` (or `op=`): in a parallel loop, through `&mut`. That
    /// each iteration writes its own elements is checked over the whole loop
    /// ([`Self::check_par_writes`]).
    pub(super) fn shared_array_place(&mut self, place: &Expr, span: Span) {
        let ExprKind::Index(base, _) = &place.kind else {
            return;
        };
        let mutable = match &base.ty {
            Ty::SharedArray(_) => true,
            Ty::SharedArrayRef(_, m) | Ty::SharedRow(_, m) => *m,
            _ => false,
        };
        if self.par_locals_start.is_none() {
            self.diags.error(span, "role code runs on every thread of the role at once: write a shared array in a parallel loop, where each iteration writes its own element (`arr.par_iter_mut()`, or `arr[i] = v` in `(0..n).into_par_iter().for_each(|i| ..)`)");
        } else if !mutable {
            self.diags.error(span, "cannot write a shared array through `&SharedArray`: the role takes it as `&mut SharedArray<..>`");
        }
    }

    /// `y[i] = v` (or `op=`) of a slice in a parallel loop: through `&mut [T]`, one element per
    /// iteration ([`Self::check_par_writes`]).
    pub(super) fn slice_element_place(&mut self, place: &Expr, span: Span) {
        if let ExprKind::Index(base, _) = &place.kind {
            if !matches!(base.ty, Ty::Slice { mutable: true, .. }) {
                self.diags.error(
                    span,
                    "cannot write an element through `&[T]`: take the slice as `&mut [T]`",
                );
            }
        }
    }

    /// A method of a shared array: `len`, `par_iter`, `par_iter_mut`.
    pub(super) fn shared_array_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        let (a, mutable): (ArrayTy, bool) = match &rty {
            Ty::SharedArray(a) => (a.clone(), true),
            Ty::SharedArrayRef(a, m) => (a.clone(), *m),
            _ => return self.unknown_method(name, &rty, m, span),
        };
        match name {
            "len" if self.want_args(m, 0) => mk(
                ExprKind::Lit(Lit::Int(u128::from(a.rows.unwrap_or(a.cols)))),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            "par_iter" | "par_iter_mut" if self.want_args(m, 0) => {
                let want_mut = name == "par_iter_mut";
                if let Some(r) = a.rows {
                    let c = a.cols;
                    self.diags.error(m.method.span(), format!("a 2D shared array is iterated by index: `(0..{r} * {c}).into_par_iter().for_each(|i| tile[i / {c}][i % {c}] = ..)`"));
                    return err(span);
                }
                if a.atomic {
                    let n = a.cols;
                    self.diags.error(m.method.span(), format!("an array of atomics is iterated by index: `(0..{n}).into_par_iter().for_each(|i| {{ let v = arr[i].load(Ordering::Relaxed); .. }})`"));
                    return err(span);
                }
                if want_mut && !mutable {
                    self.diags.error(
                        receiver.span,
                        "`par_iter_mut` writes the array: the role takes it as `&mut SharedArray<..>`",
                    );
                }
                self.par_source(receiver, a.elem, want_mut, span)
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }

    /// `f32::from_bits(b)` (of a `u32`) and `f64::from_bits(b)` (of a `u64`).
    pub(super) fn float_from_bits(
        &mut self,
        ty_name: &str,
        c: &mut syn::ExprCall,
        span: Span,
    ) -> Expr {
        let (float, bits) = if ty_name == "f64" {
            (Scalar::F64, Scalar::U64)
        } else {
            (Scalar::F32, Scalar::U32)
        };
        if c.args.len() != 1 {
            self.diags.error_at(
                &c.func,
                format!("`{ty_name}::from_bits` takes one `{bits}`"),
            );
            return err(span);
        }
        let want = Ty::Scalar(bits);
        let a = self.expr(&mut c.args[0], Some(&want));
        let mut a = self.auto_deref(a);
        self.expect(&mut a, &want);
        mk(
            ExprKind::HalfBits(Box::new(a), float),
            Ty::Scalar(float),
            span,
        )
    }

    /// After a parallel loop's closure: each write by index (`arr[i] = v`, `tile[r][c] = v`,
    /// `y[i] = v`) must take the loop's index `i` in a form that cannot repeat across
    /// iterations, and the loop must not read what it writes by index. Returns the strides the
    /// proof needs at run time: `y[(i / K) * n + i % K]` writes one element per iteration when
    /// `n >= K`, which the loop then asserts.
    pub(super) fn check_par_writes(
        &mut self,
        binding: &ParBinding,
        shape: &ParShape,
        body: &Block,
        first_local: u32,
    ) -> Vec<(LocalId, u128, Span)> {
        let mut index = Vec::new();
        index_locals(binding, shape, &mut index);
        let mut walk = Walk::default();
        walk.block(body);
        let lets: HashMap<LocalId, &Expr> = walk
            .lets
            .iter()
            .filter(|(id, _)| !self.locals[id.0 as usize].mutable)
            .map(|(id, e)| (*id, *e))
            .collect();
        let forms = Forms {
            index: &index,
            lets: &lets,
            first_local,
        };
        let mut written = Vec::new();
        let mut strides = Vec::new();
        for place in &walk.writes {
            let (ExprKind::Index(base, last), Some(array)) = (&place.kind, place_root(place))
            else {
                continue;
            };
            let last_span = last.span;
            let _ = base;
            written.push(array);
            let ok = match &place.kind {
                ExprKind::Index(base, c) if matches!(base.ty, Ty::SharedRow(..)) => {
                    match &base.kind {
                        ExprKind::Index(_, r) => {
                            let (fr, fc) = (forms.of(r, 0), forms.of(c, 0));
                            matches!((fr, fc), (Form::Inj, Form::Inv) | (Form::Inv, Form::Inj))
                                || matches!((fr, fc), (Form::Quot(a), Form::Rem(b)) | (Form::Rem(a), Form::Quot(b)) if a == b)
                        }
                        _ => false,
                    }
                }
                ExprKind::Index(_, i) => match forms.linear(i) {
                    Some(Linear::Owned) => true,
                    Some(Linear::Stride(n, k)) => {
                        strides.push((n, k, place.span));
                        true
                    }
                    None => false,
                },
                _ => true,
            };
            if !ok {
                let name = self.locals[array.0 as usize].name.clone();
                let what = if index.is_empty() {
                    "this loop has no index: iterate `(0..n).into_par_iter()` or `.enumerate()`"
                        .to_string()
                } else {
                    let i = self.locals[index[0].0 as usize].name.clone();
                    format!("index it with the loop's index `{i}`: `{name}[{i}]`, `{name}[{i} + k]`, `{name}[({i} / K) * n + {i} % K]`, or `{name}[{i} / C][{i} % C]` for a 2D array")
                };
                self.diags.error(last_span, format!("two iterations of this parallel loop may write the same element of `{name}`: each iteration must write its own elements; {what}"));
            }
        }
        for (array, span) in &walk.reads {
            if written.contains(array) {
                let name = self.locals[array.0 as usize].name.clone();
                self.diags.error(*span, format!("this loop writes `{name}` by index, so it cannot read it: another iteration may be writing that element; read `{name}` in a later loop or after this one (the compiler puts a role barrier between them)"));
            }
        }
        strides.sort_by_key(|(n, k, _)| (n.0, *k));
        strides.dedup_by_key(|(n, k, _)| (n.0, *k));
        strides
    }

    /// The checks `strides` (from [`Self::check_par_writes`]) at the top of a parallel loop's
    /// body, in the tir and in the shadow code: `assert!(n >= K, ..)`.
    pub(super) fn assert_strides(
        &mut self,
        strides: &[(LocalId, u128, Span)],
        body: &mut Block,
        closure: &mut syn::ExprClosure,
    ) {
        for &(n, k, span) in strides.iter().rev() {
            let local = &self.locals[n.0 as usize];
            let ty = local.ty.clone();
            let Ty::Scalar(s) = ty else { continue };
            let message = format!(
                "the rows of this parallel write overlap: its stride `{}` is below {k}",
                local.name
            );
            let cond = mk(
                ExprKind::Binary(
                    BinOp::Ge,
                    Box::new(mk(ExprKind::Local(n), Ty::Scalar(s), span)),
                    Box::new(mk(ExprKind::Lit(Lit::Int(k)), Ty::Scalar(s), span)),
                ),
                Ty::Scalar(Scalar::Bool),
                span,
            );
            body.stmts.insert(
                0,
                Stmt::Expr(mk(
                    ExprKind::Panic(Some(Box::new(cond)), message.clone()),
                    Ty::Unit,
                    span,
                )),
            );
            let ident = syn::Ident::new(&local.name, span);
            let k = proc_macro2::Literal::u128_unsuffixed(k);
            let check: syn::Stmt =
                syn::parse_quote_spanned!(span=> ::core::assert!(#ident >= #k, #message););
            // Built, not parsed: the old body's tokens could read back otherwise after the
            // check (see `parallel::block_of`).
            let old = std::mem::replace(&mut *closure.body, syn::Expr::PLACEHOLDER);
            let mut block = super::parallel::block_of(old);
            block.stmts.insert(0, check);
            *closure.body = syn::Expr::Block(syn::ExprBlock {
                attrs: Vec::new(),
                label: None,
                block,
            });
        }
    }
}

/// The local a write by index (`arr[i]`, `tile[r][c]`, `y[i]`) writes into.
fn place_root(place: &Expr) -> Option<LocalId> {
    match &place.kind {
        ExprKind::Index(base, _) => array_local(base),
        _ => None,
    }
}

/// The index locals of a closure's binding: the range's item, `enumerate`'s index.
fn index_locals(binding: &ParBinding, shape: &ParShape, out: &mut Vec<LocalId>) {
    match (binding, shape) {
        (ParBinding::Local(id), ParShape::Indices) => out.push(*id),
        (ParBinding::Pair(a, b), ParShape::Enumerate(inner)) => {
            if let ParBinding::Local(id) = **a {
                out.push(id);
            }
            index_locals(b, inner, out);
        }
        (ParBinding::Pair(a, b), ParShape::Zip(x, y)) => {
            index_locals(a, x, out);
            index_locals(b, y, out);
        }
        _ => {}
    }
}

/// How an index depends on the loop's index `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Not at all: the same in every iteration.
    Inv,
    /// One-to-one: `i`, `i + k`, `k + i`, `i - k`, `i ^ k`.
    Inj,
    /// `i / k` (plus a constant part).
    Quot(u128),
    /// `i % k` (plus a constant part).
    Rem(u128),
    /// Anything else.
    Other,
}

/// What an index into a slice or a 1D array is, as a function of the loop's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linear {
    /// One-to-one: `i` plus a part that is the same in every iteration.
    Owned,
    /// `(i / K) * n + i % K` (plus a constant part): one-to-one when `n >= K`.
    Stride(LocalId, u128),
}

/// The factor of a term of a linear index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coef {
    One,
    Lit(u128),
    Local(LocalId),
}

impl Coef {
    fn times(self, other: Coef) -> Option<Coef> {
        match (self, other) {
            (Coef::One, c) | (c, Coef::One) => Some(c),
            (Coef::Lit(a), Coef::Lit(b)) => a.checked_mul(b).map(Coef::Lit),
            _ => None,
        }
    }
}

struct Forms<'a> {
    index: &'a [LocalId],
    lets: &'a HashMap<LocalId, &'a Expr>,
    first_local: u32,
}

impl Forms<'_> {
    /// The index `e` as a [`Linear`] form, when it is one.
    fn linear(&self, e: &Expr) -> Option<Linear> {
        let mut terms = Vec::new();
        self.terms(e, Coef::One, &mut terms, 0)?;
        match terms.as_slice() {
            [(Form::Inj, Coef::One)] => Some(Linear::Owned),
            [(Form::Rem(a), Coef::One), (Form::Quot(b), c)]
            | [(Form::Quot(b), c), (Form::Rem(a), Coef::One)]
                if a == b =>
            {
                match c {
                    Coef::Lit(s) if *s >= *a => Some(Linear::Owned),
                    Coef::Local(n) => Some(Linear::Stride(*n, *a)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The terms of `e` (times `coef`) that depend on the index: `i`, `i / K`, `i % K`, each
    /// with its factor; the parts the same in every iteration are left out.
    fn terms(&self, e: &Expr, coef: Coef, out: &mut Vec<(Form, Coef)>, depth: u32) -> Option<()> {
        if depth > 32 {
            return None;
        }
        let d = depth + 1;
        match self.of(e, d) {
            Form::Inv => return Some(()),
            f @ (Form::Inj | Form::Quot(_) | Form::Rem(_)) if self.atom(e) => {
                out.push((f, coef));
                return Some(());
            }
            _ => {}
        }
        match &e.kind {
            ExprKind::Local(id) => self.terms(self.lets.get(id)?, coef, out, d),
            ExprKind::Block(b) if b.stmts.is_empty() => self.terms(b.tail.as_ref()?, coef, out, d),
            ExprKind::Binary(BinOp::Add, a, b) => {
                self.terms(a, coef, out, d)?;
                self.terms(b, coef, out, d)
            }
            ExprKind::Binary(BinOp::Sub, a, b) if self.of(b, d) == Form::Inv => {
                self.terms(a, coef, out, d)
            }
            ExprKind::Binary(BinOp::Mul, a, b) => match (self.factor(a), self.factor(b)) {
                (_, Some(c)) => self.terms(a, coef.times(c)?, out, d),
                (Some(c), _) => self.terms(b, coef.times(c)?, out, d),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `e` is one index term itself (`i`, `i / K`, `i % K`, through `let`s).
    fn atom(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(id) => {
                self.index.contains(id) || self.lets.get(id).is_some_and(|x| self.atom(x))
            }
            ExprKind::Binary(BinOp::Div | BinOp::Rem, _, _) => true,
            _ => false,
        }
    }

    /// `e` as a factor the same in every iteration: a literal or a captured local.
    fn factor(&self, e: &Expr) -> Option<Coef> {
        match &e.kind {
            ExprKind::Lit(Lit::Int(v)) => Some(Coef::Lit(*v)),
            ExprKind::Local(id) => match self.lets.get(id) {
                Some(init) => self.factor(init),
                None if id.0 < self.first_local => Some(Coef::Local(*id)),
                None => None,
            },
            _ => None,
        }
    }

    fn of(&self, e: &Expr, depth: u32) -> Form {
        if depth > 32 {
            return Form::Other;
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Local(id) if self.index.contains(id) => Form::Inj,
            ExprKind::Local(id) => match self.lets.get(id) {
                Some(init) => self.of(init, d),
                None if id.0 < self.first_local => Form::Inv,
                None => Form::Other,
            },
            ExprKind::Lit(_) => Form::Inv,
            ExprKind::Binary(op, a, b) => {
                let (fa, fb) = (self.of(a, d), self.of(b, d));
                let index_of =
                    |x: &Expr| match &x.kind {
                        ExprKind::Local(id) => self.index.contains(id)
                            || self.lets.get(id).is_some_and(
                                |e| matches!(&e.kind, ExprKind::Local(j) if self.index.contains(j)),
                            ),
                        _ => false,
                    };
                match (op, fa, fb) {
                    (_, Form::Inv, Form::Inv) => Form::Inv,
                    (BinOp::Add | BinOp::Xor, Form::Inj, Form::Inv)
                    | (BinOp::Add | BinOp::Xor, Form::Inv, Form::Inj)
                    | (BinOp::Sub, Form::Inj, Form::Inv) => Form::Inj,
                    (BinOp::Add, f @ (Form::Quot(_) | Form::Rem(_)), Form::Inv)
                    | (BinOp::Add, Form::Inv, f @ (Form::Quot(_) | Form::Rem(_)))
                    | (BinOp::Sub, f @ (Form::Quot(_) | Form::Rem(_)), Form::Inv) => f,
                    (BinOp::Div | BinOp::Rem, Form::Inj, Form::Inv) if index_of(a) => {
                        match b.kind {
                            ExprKind::Lit(Lit::Int(k)) if k > 0 => {
                                if *op == BinOp::Div {
                                    Form::Quot(k)
                                } else {
                                    Form::Rem(k)
                                }
                            }
                            _ => Form::Other,
                        }
                    }
                    _ => Form::Other,
                }
            }
            ExprKind::Block(b) if b.stmts.is_empty() => match &b.tail {
                Some(t) => self.of(t, d),
                None => Form::Other,
            },
            ExprKind::Atomic(..) | ExprKind::Call(..) | ExprKind::Warp(..) => Form::Other,
            _ => {
                if children(e).iter().all(|c| self.of(c, d) == Form::Inv) {
                    Form::Inv
                } else {
                    Form::Other
                }
            }
        }
    }
}

/// What a closure body does with indexed places: its `let`s, its writes by index (an `op=`
/// reads its own element, which is no read of another iteration's), and its other reads of
/// shared arrays and slices.
#[derive(Default)]
struct Walk<'a> {
    lets: Vec<(LocalId, &'a Expr)>,
    writes: Vec<&'a Expr>,
    reads: Vec<(LocalId, Span)>,
}

impl<'a> Walk<'a> {
    fn block(&mut self, b: &'a Block) {
        for s in &b.stmts {
            match s {
                Stmt::Let(crate::tir::LetPattern::Local(id), e) => {
                    self.lets.push((*id, e));
                    self.expr(e);
                }
                Stmt::Let(_, e) | Stmt::Expr(e) => self.expr(e),
                Stmt::For(_, _, iter, body)
                | Stmt::WhileLet(_, _, iter, body)
                | Stmt::LetElse(_, iter, body) => {
                    self.expr(iter);
                    self.block(body);
                }
                Stmt::While(_, cond, body) => {
                    self.expr(cond);
                    self.block(body);
                }
                Stmt::Break(_, Some(e), _) => self.expr(e),
                Stmt::Break(..) | Stmt::Continue(..) => {}
            }
        }
        if let Some(t) = &b.tail {
            self.expr(t);
        }
    }

    /// The operands of a write's place (its indexes), but not the place itself.
    fn place_operands(&mut self, place: &'a Expr) {
        if let ExprKind::Index(base, i) = &place.kind {
            self.expr(i);
            if is_shared_array(&base.ty) {
                self.place_operands(base);
            }
        }
    }

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Assign(place, value) | ExprKind::CompoundAssign(_, place, value) if matches!(&place.kind, ExprKind::Index(base, _) if is_indexed_target(&base.ty)) =>
            {
                self.writes.push(place);
                self.place_operands(place);
                self.expr(value);
                return;
            }
            ExprKind::Index(base, _) | ExprKind::AtomicIndex(base, _)
                if (is_shared_array(&base.ty) && !matches!(base.ty, Ty::SharedRow(..)))
                    || matches!(base.ty, Ty::Slice { .. }) =>
            {
                if let Some(id) = array_local(base) {
                    self.reads.push((id, e.span));
                }
            }
            _ => {}
        }
        for c in children(e) {
            self.expr(c);
        }
        match &e.kind {
            ExprKind::Block(b) | ExprKind::Loop(_, b) => self.block(b),
            ExprKind::If(_, then, _) => self.block(then),
            ExprKind::Match(_, arms) => {
                for a in arms {
                    if let Some(g) = &a.guard {
                        self.expr(g);
                    }
                    self.expr(&a.body);
                }
            }
            _ => {}
        }
    }
}
