//! Places and what reads them: assignment targets, indexing (checked, and `get_unchecked` in
//! `unsafe`), slicing ranges, fields, references, and the methods of slices and local arrays.

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::{err, mk, span_of, Checker};
use crate::tir::{Block, Expr, ExprKind, Lit};
use crate::types::{ChanElem, Scalar, Ty};

impl Checker<'_> {
    /// `place = value`.
    pub(super) fn assign(&mut self, a: &mut syn::ExprAssign, span: Span) -> Expr {
        let place = self.place(&mut a.left);
        let mut value = self.expr(&mut a.right, Some(&place.ty));
        let target = match &place.ty {
            Ty::ElemRef { elem, .. } => Ty::Scalar(*elem),
            t => t.clone(),
        };
        self.expect(&mut value, &target);
        mk(
            ExprKind::Assign(Box::new(place), Box::new(value)),
            Ty::Unit,
            span,
        )
    }

    /// The left side of an assignment: a mutable scalar local, or `*r` of a mutable element.
    pub(super) fn place(&mut self, e: &mut syn::Expr) -> Expr {
        let span = span_of(e);
        let place = self.expr(e, None);
        match &place.kind {
            ExprKind::Local(id) => {
                let local = &self.locals[id.0 as usize];
                if self.par_locals_start.is_some_and(|start| id.0 < start) {
                    self.diags.error(span, format!("a `par_iter` closure cannot assign to the captured `{}`: each thread runs its own iterations with its own copy; write results through the `&mut` elements instead", local.name));
                } else if !local.mutable {
                    self.diags.error(
                        span,
                        format!(
                            "cannot assign twice to `{}`: declare it `let mut {}`",
                            local.name, local.name
                        ),
                    );
                } else if !matches!(
                    local.ty,
                    Ty::Scalar(_)
                        | Ty::Array(..)
                        | Ty::Struct(..)
                        | Ty::Tuple(_)
                        | Ty::Enum(..)
                        | Ty::RecvSlot(_)
                        | Ty::OptRecvSlot(_)
                        | Ty::Accumulator { .. }
                        | Ty::Fragment { .. }
                        | Ty::Rows { .. }
                        | Ty::Error
                ) {
                    self.diags.error(
                        span,
                        format!(
                            "only scalars, arrays, structs, tuples, accumulators, fragments, rows and received slots (or their `Option`) can be assigned; `{}` is a `{}`",
                            local.name, local.ty
                        ),
                    );
                }
                place
            }
            ExprKind::Deref(inner) if matches!(inner.ty, Ty::StructRef { .. }) => {
                if !matches!(inner.ty, Ty::StructRef { mutable: true, .. }) {
                    self.diags.error(
                        span,
                        "cannot assign through a shared reference: iterate with `par_iter_mut()`",
                    );
                }
                place
            }
            ExprKind::Deref(inner) => {
                if !matches!(inner.ty, Ty::ElemRef { mutable: true, .. }) {
                    self.diags.error(
                        span,
                        "cannot assign through a shared reference: iterate with `par_iter_mut()`",
                    );
                }
                let elem = place.ty.scalar().unwrap_or(Scalar::F32);
                Expr {
                    ty: Ty::ElemRef {
                        elem,
                        mutable: true,
                    },
                    ..place
                }
            }
            ExprKind::TupleField(base, _) if matches!(base.ty, Ty::Struct(..) | Ty::Tuple(_)) => {
                match base.kind {
                    ExprKind::Local(id) => {
                        let local = &self.locals[id.0 as usize];
                        if self.par_locals_start.is_some_and(|start| id.0 < start) {
                            self.diags.error(span, format!("a `par_iter` closure cannot assign to a field of the captured `{}`: each thread has its own copy", local.name));
                        } else if !local.mutable {
                            self.diags.error(
                                span,
                                format!(
                                    "cannot assign to a field of `{}`: declare it `let mut {}`",
                                    local.name, local.name
                                ),
                            );
                        }
                    }
                    _ => self.diags.error(span, "assign to a field of a local"),
                }
                place
            }
            ExprKind::StructArray(..) => {
                self.struct_field_place(&place);
                place
            }
            ExprKind::Index(base, _) if matches!(base.kind, ExprKind::StructArray(..)) => {
                self.struct_field_place(base);
                place
            }
            ExprKind::Index(base, _) if matches!(base.ty, Ty::Array(..)) => {
                match base.kind {
                    ExprKind::Local(id) => {
                        let local = &self.locals[id.0 as usize];
                        if self.par_locals_start.is_some_and(|start| id.0 < start) {
                            self.diags.error(span, format!("a `par_iter` closure cannot write the captured array `{}`: each thread has its own copy; declare the array inside the closure", local.name));
                        } else if !local.mutable {
                            self.diags.error(
                                span,
                                format!(
                                    "cannot assign to an element of `{}`: declare it `let mut {}`",
                                    local.name, local.name
                                ),
                            );
                        }
                    }
                    _ => self
                        .diags
                        .error(span, "assign to an element of an array local"),
                }
                place
            }
            ExprKind::Index(base, _) if super::shared_arrays::is_shared_array(&base.ty) => {
                self.shared_array_place(&place, span);
                place
            }
            ExprKind::Index(base, _)
                if self.par_locals_start.is_some() && matches!(base.ty, Ty::Slice { .. }) =>
            {
                self.slice_element_place(&place, span);
                place
            }
            ExprKind::Index(base, _)
                if matches!(
                    base.ty,
                    Ty::Slice { .. } | Ty::SendSlot(_) | Ty::RecvSlot(_)
                ) =>
            {
                match &base.ty {
                    Ty::SendSlot(_) if self.par_locals_start.is_some() => {
                        self.diags.error(span, "a parallel loop's body writes a slot's elements through the `&mut` items of `par_iter_mut()`: write `*item = v`");
                        return err(span);
                    }
                    Ty::Slice { mutable: false, .. } => {
                        self.diags.error(
                            span,
                            "cannot write through a read-only slice: it needs to be `&mut [T]`",
                        );
                        return err(span);
                    }
                    Ty::RecvSlot(_) => {
                        self.diags.error(
                            span,
                            "a received slot is read-only: write a reserved slot before `send()`",
                        );
                        return err(span);
                    }
                    _ => {}
                }
                // One element from role code: the role's first thread writes it.
                place
            }
            _ if place.ty == Ty::Error => place,
            ExprKind::Index(base, _) if matches!(base.ty, Ty::TileRow(..)) => {
                self.diags.error(span, "a tile is filled by a tile load, `slot.load(matrix, [row, col]).await`; writing its elements is not in the language yet: send the values in a slot of an array `[T; N]`");
                err(span)
            }
            _ => {
                self.diags.error(span, "this cannot be assigned to");
                err(span)
            }
        }
    }

    /// An array field of a struct as the target of a write: a field of a mutable local, or of
    /// a `&mut` slot element.
    fn struct_field_place(&mut self, field: &Expr) {
        let ExprKind::StructArray(base, ..) = &field.kind else {
            return;
        };
        let span = field.span;
        match (&base.kind, &base.ty) {
            (_, Ty::StructRef { mutable: true, .. }) => {}
            (_, Ty::StructRef { .. }) => self.diags.error(
                span,
                "cannot assign through a shared reference: iterate with `par_iter_mut()`",
            ),
            (ExprKind::Local(id), _) => {
                let local = &self.locals[id.0 as usize];
                if self.par_locals_start.is_some_and(|start| id.0 < start) {
                    self.diags.error(span, format!("a `par_iter` closure cannot assign to a field of the captured `{}`: each thread has its own copy", local.name));
                } else if !local.mutable {
                    self.diags.error(
                        span,
                        format!(
                            "cannot assign to a field of `{}`: declare it `let mut {}`",
                            local.name, local.name
                        ),
                    );
                }
            }
            _ => self.diags.error(span, "assign to a field of a local"),
        }
    }

    /// `base[i]` of a slice, a local array, an atomic slice or a slot, and `slice[a..b]`.
    pub(super) fn index(&mut self, ix: &mut syn::ExprIndex, span: Span) -> Expr {
        let base = self.expr(&mut ix.expr, None);
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut index = match &mut *ix.index {
            syn::Expr::Range(r)
                if matches!(r.limits, syn::RangeLimits::HalfOpen(_))
                    && (r.start.is_none() || r.end.is_none()) =>
            {
                self.open_range(&base, r)
            }
            other => self.expr(other, Some(&usize_ty)),
        };
        match (&base.ty, &index.ty) {
            (Ty::Error, _) | (_, Ty::Error) => err(span),
            (Ty::Rows { .. }, _) => self.row_of(base, &index, span),
            (t, _) if super::shared_arrays::is_shared_array(t) => {
                self.shared_array_index(base, index, span)
            }
            (Ty::RecvSlot(c) | Ty::SendSlot(c), _) if matches!(c.elem, ChanElem::Tiles(_)) => {
                self.diags.error(
                    span,
                    format!(
                        "a slot of `{}` holds two tiles: index one of them, `stage.0[r][c]`",
                        c.elem
                    ),
                );
                err(span)
            }
            (Ty::RecvSlot(c) | Ty::SendSlot(c), _) if c.elem.tile().is_some() => {
                self.tile_index(base, index, span)
            }
            (Ty::TileRow(..) | Ty::TilePart { .. }, _) => self.tile_index(base, index, span),
            (Ty::Slice { elem, mutable }, Ty::Range) => {
                let ty = Ty::Slice {
                    elem: *elem,
                    mutable: *mutable,
                };
                mk(
                    ExprKind::SubSlice(Box::new(base), Box::new(index)),
                    ty,
                    span,
                )
            }
            (Ty::Slice { elem, .. }, _) => {
                let elem = *elem;
                self.expect(&mut index, &usize_ty);
                mk(
                    ExprKind::Index(Box::new(base), Box::new(index)),
                    Ty::Scalar(elem),
                    span,
                )
            }
            (Ty::Array(..), Ty::Range) => {
                self.diags.error(
                    index.span,
                    "sub-slices of a local array are not supported: index its elements",
                );
                err(span)
            }
            (Ty::Array(s, _), _) => {
                let s = *s;
                self.expect(&mut index, &usize_ty);
                // An index that is not a literal or a `const` puts the array in local memory.
                if let ExprKind::Local(id) = base.kind {
                    if !matches!(index.kind, ExprKind::Lit(_)) {
                        self.locals[id.0 as usize].dynamic_index = true;
                    }
                }
                mk(
                    ExprKind::Index(Box::new(base), Box::new(index)),
                    Ty::Scalar(s),
                    span,
                )
            }
            (Ty::AtomicSlice(s), _) => {
                let s = *s;
                self.expect(&mut index, &usize_ty);
                mk(
                    ExprKind::AtomicIndex(Box::new(base), Box::new(index)),
                    Ty::AtomicRef(s),
                    span,
                )
            }
            (Ty::RecvSlot(c) | Ty::SendSlot(c), Ty::Range) => {
                // `&slot[a..b]`: a slice of the slot, in shared memory.
                let Some(elem) = c.elem.scalar() else {
                    self.diags.error(span, format!("a slot of `{}` is stored field by field: it has no sub-slices; read it through `slot.par_iter()`", c.elem));
                    return err(span);
                };
                let mutable = matches!(base.ty, Ty::SendSlot(_));
                mk(
                    ExprKind::SubSlice(Box::new(base), Box::new(index)),
                    Ty::Slice { elem, mutable },
                    span,
                )
            }
            (Ty::RecvSlot(c) | Ty::SendSlot(c), _) => {
                let Some(elem) = c.elem.scalar() else {
                    self.diags.error(span, format!("an element of a slot of `{}` is read through `slot.par_iter()` (indexing a struct slot is not supported yet)", c.elem));
                    return err(span);
                };
                self.expect(&mut index, &usize_ty);
                mk(
                    ExprKind::Index(Box::new(base), Box::new(index)),
                    Ty::Scalar(elem),
                    span,
                )
            }
            (t, _) => {
                self.diags.error(span, format!("cannot index a `{t}`"));
                err(span)
            }
        }
    }

    /// `..b`, `a..` or `..` indexing `base` (a slice or a slot): the range with its missing ends,
    /// 0 and `base`'s length (the base is read again for its length, as a slice's is).
    fn open_range(&mut self, base: &Expr, r: &mut syn::ExprRange) -> Expr {
        let span = r.span();
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let start = match r.start.as_mut() {
            Some(s) => {
                let mut s = self.expr(s, Some(&usize_ty));
                self.expect(&mut s, &usize_ty);
                s
            }
            None => mk(ExprKind::Lit(Lit::Int(0)), usize_ty.clone(), span),
        };
        let end = match r.end.as_mut() {
            Some(e) => {
                let mut e = self.expr(e, Some(&usize_ty));
                self.expect(&mut e, &usize_ty);
                e
            }
            None => match &base.ty {
                Ty::RecvSlot(c) | Ty::SendSlot(c) => mk(
                    ExprKind::Lit(Lit::Int(u128::from(c.len))),
                    usize_ty.clone(),
                    span,
                ),
                Ty::Slice { .. } => mk(
                    ExprKind::Len(Box::new(base.clone())),
                    usize_ty.clone(),
                    span,
                ),
                Ty::Error => return err(span),
                t => {
                    self.diags.error(
                        span,
                        format!("a range without an end indexes a slice or a slot, not a `{t}`"),
                    );
                    return err(span);
                }
            },
        };
        mk(
            ExprKind::Range(Box::new(start), Box::new(end)),
            Ty::Range,
            span,
        )
    }

    /// `a..b`: a range of `usize` with both ends, as a slice is indexed with.
    pub(super) fn range_expr(&mut self, r: &mut syn::ExprRange, span: Span) -> Expr {
        let (Some(start), Some(end)) = (r.start.as_mut(), r.end.as_mut()) else {
            self.diags
                .error(span, "write a range with both ends, `a..b`");
            return err(span);
        };
        if matches!(r.limits, syn::RangeLimits::Closed(_)) {
            self.diags.error(
                span,
                "inclusive ranges are not supported yet: write `a..b + 1`",
            );
            return err(span);
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mut s = self.expr(start, Some(&usize_ty));
        let mut t = self.expr(end, Some(&usize_ty));
        self.expect(&mut s, &usize_ty);
        self.expect(&mut t, &usize_ty);
        mk(ExprKind::Range(Box::new(s), Box::new(t)), Ty::Range, span)
    }

    /// `base.field`: a range's `start` or `end`, a struct's field (of a value or of a slot
    /// element), a tuple's element.
    pub(super) fn field(&mut self, f: &mut syn::ExprField, span: Span) -> Expr {
        let base = self.expr(&mut f.base, None);
        let name = match &f.member {
            syn::Member::Named(n) => n.to_string(),
            syn::Member::Unnamed(_) => String::new(),
        };
        match (&base.ty, name.as_str()) {
            (Ty::Range, "start" | "end") => {
                let end = name == "end";
                mk(
                    ExprKind::RangeBound(Box::new(base), end),
                    Ty::Scalar(Scalar::Usize),
                    span,
                )
            }
            (
                Ty::StructRef {
                    id,
                    name: sname,
                    mutable,
                },
                field,
            ) if matches!(f.member, syn::Member::Named(_)) => {
                // `p.x` of a slot element: the element's field, read in place (or
                // written, through `place`).
                let def = &self.scope.struct_defs[*id as usize];
                match def.field(field) {
                    Some((first, Some(len))) => mk(
                        ExprKind::StructArray(Box::new(base.clone()), first as u32, len),
                        Ty::Array(def.fields[first].1, len),
                        span,
                    ),
                    Some((i, None)) => {
                        let elem = def.fields[i].1;
                        let field_ref = mk(
                            ExprKind::TupleField(Box::new(base.clone()), i as u32),
                            Ty::ElemRef {
                                elem,
                                mutable: *mutable,
                            },
                            span,
                        );
                        mk(ExprKind::Deref(Box::new(field_ref)), Ty::Scalar(elem), span)
                    }
                    None => {
                        self.diags
                            .error_at(&f.member, format!("`{sname}` has no field `{field}`"));
                        err(span)
                    }
                }
            }
            (Ty::Struct(id, sname), field) if matches!(f.member, syn::Member::Named(_)) => {
                let def = &self.scope.struct_defs[*id as usize];
                let field = field.to_string();
                match def.field(&field) {
                    Some((first, Some(len))) => mk(
                        ExprKind::StructArray(Box::new(base), first as u32, len),
                        Ty::Array(def.fields[first].1, len),
                        span,
                    ),
                    Some((i, None)) => {
                        let t = Ty::Scalar(def.fields[i].1);
                        mk(ExprKind::TupleField(Box::new(base), i as u32), t, span)
                    }
                    None => {
                        self.diags
                            .error_at(&f.member, format!("`{sname}` has no field `{field}`"));
                        err(span)
                    }
                }
            }
            (Ty::SendSlot(c) | Ty::RecvSlot(c), _)
                if matches!(c.elem, ChanElem::Tiles(_))
                    && matches!(f.member, syn::Member::Unnamed(_)) =>
            {
                let syn::Member::Unnamed(index) = &f.member else {
                    return err(span);
                };
                self.tile_part(base, index.index, span)
            }
            (Ty::Tuple(ts), _) if matches!(f.member, syn::Member::Unnamed(_)) => {
                let syn::Member::Unnamed(index) = &f.member else {
                    return err(span);
                };
                match ts.get(index.index as usize) {
                    Some(t) => {
                        let t = t.clone();
                        mk(ExprKind::TupleField(Box::new(base), index.index), t, span)
                    }
                    None => {
                        self.diags
                            .error_at(&f.member, format!("this tuple has {} elements", ts.len()));
                        err(span)
                    }
                }
            }
            (Ty::Error, _) => err(span),
            _ => {
                self.diags.error_at(
                    &f.member,
                    "field access is supported on ranges (`r.start`, `r.end`) and tuples (`t.0`) for now",
                );
                err(span)
            }
        }
    }

    /// `&x` and `&mut x`: of a slice, of a shared value or of a barrier.
    pub(super) fn reference(&mut self, r: &mut syn::ExprReference, span: Span) -> Expr {
        let inner = self.expr(&mut r.expr, None);
        match inner.ty {
            Ty::Slice { elem, mutable } => {
                if r.mutability.is_some() && !mutable {
                    self.diags
                        .error(span, "cannot borrow a read-only slice as `&mut`");
                }
                let ty = Ty::Slice {
                    elem,
                    mutable: r.mutability.is_some(),
                };
                Expr { ty, ..inner }
            }
            Ty::Shared(s) if r.mutability.is_none() => mk(
                ExprKind::Block(Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(inner)),
                }),
                Ty::SharedRef(s),
                span,
            ),
            Ty::Shared(_) => {
                self.diags.error(span, "a shared value is updated through `&Shared<T>`: write `&cell`, not `&mut cell`");
                err(span)
            }
            Ty::SharedArray(_) => self.shared_array_reference(inner, r.mutability.is_some()),
            Ty::Barrier if r.mutability.is_none() => mk(
                ExprKind::Block(Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(inner)),
                }),
                Ty::BarrierRef,
                span,
            ),
            Ty::Error => err(span),
            Ty::Accumulator { .. } => {
                self.diags.error(span, "an accumulator is not passed on: call `mma` and `store` on it in the role code that makes it");
                err(span)
            }
            _ => {
                self.diags.error(span, "references are supported to slices and shared values only, as in `&x[range]`: pass scalars by value");
                err(span)
            }
        }
    }

    /// A method of a slice or a local array: `len`, `get_unchecked` (in `unsafe`), `par_iter`.
    pub(super) fn slice_method(
        &mut self,
        name: &str,
        receiver: Expr,
        m: &mut syn::ExprMethodCall,
        span: Span,
    ) -> Expr {
        let rty = receiver.ty.clone();
        match (name, &rty) {
            ("get_unchecked" | "get_unchecked_mut", Ty::Slice { elem, mutable })
                if self.want_args(m, 1) =>
            {
                let (elem, mutable) = (*elem, *mutable);
                if !self.in_unsafe {
                    self.diags.error(m.method.span(), format!("`{name}` is an `unsafe` method: call it in an `unsafe {{ .. }}` block, or index with `[..]`, which is checked"));
                    return err(span);
                }
                let usize_ty = Ty::Scalar(Scalar::Usize);
                let mut index = self.expr(&mut m.args[0], Some(&usize_ty));
                let inner = if index.ty == Ty::Range {
                    let want_mut = name == "get_unchecked_mut";
                    if want_mut && !mutable {
                        self.diags.error(
                            receiver.span,
                            "`get_unchecked_mut` needs a `&mut [T]` slice",
                        );
                    }
                    mk(
                        ExprKind::SubSlice(Box::new(receiver), Box::new(index)),
                        Ty::Slice {
                            elem,
                            mutable: want_mut,
                        },
                        span,
                    )
                } else {
                    if name == "get_unchecked_mut" {
                        self.diags.error(m.method.span(), "`get_unchecked_mut(i)` of one element is not supported: write elements through `par_iter_mut`, or take `get_unchecked_mut(a..b)`");
                        return err(span);
                    }
                    self.expect(&mut index, &usize_ty);
                    mk(
                        ExprKind::Index(Box::new(receiver), Box::new(index)),
                        Ty::Scalar(elem),
                        span,
                    )
                };
                // `get_unchecked(i)` is a `&T`, as in Rust (`*x.get_unchecked(i)`, or used where
                // Rust dereferences it).
                let ty = match inner.ty {
                    Ty::Scalar(elem) => Ty::ElemRef {
                        elem,
                        mutable: false,
                    },
                    ref t => t.clone(),
                };
                mk(ExprKind::Unchecked(Box::new(inner)), ty, span)
            }
            ("len", Ty::Array(_, n)) if self.want_args(m, 0) => mk(
                ExprKind::Lit(Lit::Int(u128::from(*n))),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            ("len", Ty::Slice { .. }) if self.want_args(m, 0) => mk(
                ExprKind::Len(Box::new(receiver)),
                Ty::Scalar(Scalar::Usize),
                span,
            ),
            ("par_iter" | "par_iter_mut", Ty::Slice { elem, mutable }) if self.want_args(m, 0) => {
                let (elem, mutable) = (*elem, *mutable);
                let want_mut = name == "par_iter_mut";
                if want_mut && !mutable {
                    self.diags
                        .error(receiver.span, "`par_iter_mut` needs a `&mut [T]` slice");
                }
                self.par_source(receiver, elem, want_mut, span)
            }
            _ => self.unknown_method(name, &rty, m, span),
        }
    }
}
