//! Function calls: the constructors and queries of `gpu_async::device` (`channel`, `shared`,
//! `block_index`, `block_tiles`, ...), the `half` constructors, and the module's helpers,
//! generic ones instantiated per scalar type.

use proc_macro2::Span;

use super::{err, mk, span_of, Checker};
use crate::check::sig::{self, chan_args, heap_message};
use crate::check::Instance;
use crate::tir::{Expr, ExprKind, FnId};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// `f(args)`: a function of `gpu_async::device`, a `half` constructor, or a helper fn of the
    /// module.
    pub(super) fn call(&mut self, c: &mut syn::ExprCall, span: Span) -> Expr {
        let syn::Expr::Path(p) = &*c.func else {
            self.diags.error_at(
                &c.func,
                "only functions of the module and of `gpu_async::device` can be called in kernels",
            );
            return err(span);
        };
        let segments: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let first = segments.first().cloned().unwrap_or_default();
        let Some(last_seg) = p.path.segments.last() else {
            return err(span);
        };
        let name = last_seg.ident.to_string();
        if ["Vec", "Box", "String", "Rc", "Arc", "HashMap"].contains(&first.as_str()) {
            self.diags.error_at(&c.func, heap_message(&first));
            return err(span);
        }
        if segments.len() == 2 && (first == "f16" || first == "bf16") {
            return self.half_constructor(&first, &name, c, span);
        }
        if segments.len() == 2 && (first == "f32" || first == "f64") && name == "from_bits" {
            return self.float_from_bits(&first, c, span);
        }
        if let Some(acc) = p.path.segments.iter().rev().nth(1) {
            if acc.ident == "Accumulator" {
                let acc = acc.clone();
                return self.accumulator_new(c, &acc, &name, span);
            }
            if acc.ident == "Rows" {
                let rows = acc.clone();
                return self.rows_new(c, &rows, &name, span);
            }
        }
        let ours =
            segments.len() == 1 || segments.iter().rev().nth(1).is_some_and(|s| s == "device");
        if !ours {
            self.diags.error_at(&c.func, format!("`{}` cannot be called in a kernel: call the module's own functions or those of `gpu_async::device`", quote::quote!(#p)));
            return err(span);
        }
        let usize_ty = Ty::Scalar(Scalar::Usize);
        match name.as_str() {
            "channel" => {
                for a in c.args.iter_mut() {
                    self.expr(a, None);
                }
                let syn::PathArguments::AngleBracketed(args) = &last_seg.arguments else {
                    self.diags.error_at(
                        &c.func,
                        "name the payload and depth: `channel::<[f32; 1024], 3>()`",
                    );
                    return err(span);
                };
                if !c.args.is_empty() {
                    self.diags.error_at(&c.args, "`channel` takes no arguments");
                }
                let generic: Vec<&syn::GenericArgument> = args.args.iter().collect();
                let Some(chan) = chan_args(&generic, self.scope, self.diags, &args.args) else {
                    return err(span);
                };
                if !self.is_kernel() {
                    self.diags.error_at(&c.func, "channels are created in the kernel body, before `join!`, and passed to the roles");
                }
                mk(ExprKind::Channel(chan.clone()), Ty::ChanPair(chan), span)
            }
            "shared" => {
                let Some(s) =
                    self.turbofish_scalar(c, last_seg, "shared::<f32>()", "a shared value")
                else {
                    return err(span);
                };
                if !self.is_kernel() {
                    self.diags.error_at(&c.func, "shared values are made in the kernel body, before `join!`, and passed to the roles as `&cell`");
                }
                mk(ExprKind::SharedNew(s), Ty::Shared(s), span)
            }
            "shared_array" | "shared_array_2d" => {
                let seg = last_seg.clone();
                self.shared_array_new(c, &seg, &name, span)
            }
            "oneshot" => {
                let Some(s) =
                    self.turbofish_scalar(c, last_seg, "oneshot::<u32>()", "a one-shot value")
                else {
                    return err(span);
                };
                if !self.is_kernel() {
                    self.diags.error_at(&c.func, "one-shot values are made in the kernel body, before `join!`, and their ends passed to the roles");
                }
                mk(ExprKind::OneshotNew(s), Ty::OneshotPair(s), span)
            }
            "barrier" => {
                if !c.args.is_empty() {
                    self.diags
                        .error_at(&c.args, "`barrier()` takes no arguments");
                }
                if !self.is_kernel() {
                    self.diags.error_at(&c.func, "barriers are made in the kernel body, before `join!`, and passed to the roles that meet at them as `&sync`");
                }
                mk(ExprKind::BarrierNew, Ty::Barrier, span)
            }
            "block_index" | "block_count" => {
                if !c.args.is_empty() {
                    self.diags
                        .error_at(&c.args, format!("`{name}()` takes no arguments"));
                }
                mk(
                    ExprKind::BlockPosition(name == "block_count"),
                    usize_ty,
                    span,
                )
            }
            "block_tiles" => {
                if c.args.len() != 2 {
                    self.diags
                        .error_at(&c.func, "`block_tiles(len, tile)` takes two arguments");
                    return err(span);
                }
                let mut len = self.expr(&mut c.args[0], Some(&usize_ty));
                let mut tile = self.expr(&mut c.args[1], Some(&usize_ty));
                self.expect(&mut len, &usize_ty);
                self.expect(&mut tile, &usize_ty);
                mk(
                    ExprKind::BlockTiles(Box::new(len), Box::new(tile)),
                    Ty::Tiles,
                    span,
                )
            }
            "drop" => {
                if c.args.len() != 1 {
                    self.diags.error_at(&c.func, "`drop` takes one argument");
                    return err(span);
                }
                let v = self.expr(&mut c.args[0], None);
                if v.ty == Ty::Error {
                    return err(span);
                }
                if self.local_of(&v, "drop").is_none() || !v.ty.has_drop_effect() {
                    if v.ty.has_drop_effect() || matches!(v.kind, ExprKind::Local(_)) {
                        self.diags.error(
                            v.span,
                            format!("dropping a `{}` does nothing: remove the call", v.ty),
                        );
                    }
                    return err(span);
                }
                mk(ExprKind::Drop(Box::new(v)), Ty::Unit, span)
            }
            "on_warps" => {
                self.diags.error_at(
                    &c.func,
                    "`on_warps` is only valid as an argument of `join!` in a kernel body",
                );
                err(span)
            }
            _ => match self.scope.fns.get(&name) {
                Some(&id) if segments.len() == 1 => self.helper_call(id, c, span),
                _ => {
                    self.diags.error_at(&c.func, format!("cannot find function `{name}`: a kernel calls the functions of its `#[gpu_async]` module and of `gpu_async::device`"));
                    err(span)
                }
            },
        }
    }

    /// A call of a helper fn of the module (a kernel cannot be called): each argument has its
    /// parameter's type.
    fn helper_call(&mut self, id: FnId, c: &mut syn::ExprCall, span: Span) -> Expr {
        if !self.scope.sigs[id.0 as usize].generics.is_empty() {
            return self.generic_call(id, c, span);
        }
        let sig = &self.scope.sigs[id.0 as usize];
        if sig.kernel.is_some() {
            self.diags.error_at(
                &c.func,
                "a kernel cannot be called from kernel code: launch it from the host",
            );
            return err(span);
        }
        if sig.params.len() != c.args.len() {
            self.diags.error_at(
                &c.func,
                format!(
                    "`{}` takes {} arguments, {} given",
                    sig.name,
                    sig.params.len(),
                    c.args.len()
                ),
            );
            return err(span);
        }
        let mut args = Vec::new();
        for (arg, (_, pty, _, _)) in c.args.iter_mut().zip(&sig.params) {
            let a = self.expr(arg, Some(pty));
            let mut a = if matches!(pty, Ty::Scalar(_)) {
                self.auto_deref(a)
            } else {
                a
            };
            self.expect(&mut a, pty);
            if matches!(pty, Ty::Sender(_) | Ty::Receiver(_)) {
                self.local_of(&a, "a channel end");
            }
            args.push(a);
        }
        self.calls.push((id, span_of(&c.func), self.in_join));
        let ty = if sig.is_async {
            Ty::Future(Box::new(sig.ret.clone()))
        } else {
            sig.ret.clone()
        };
        mk(ExprKind::Call(id, args), ty, span)
    }

    /// A call of a generic helper: the type parameters are inferred from the arguments, the
    /// instance is asked for (checked after this function), and the shadow code's call is
    /// rewritten to the instance.
    fn generic_call(&mut self, id: FnId, c: &mut syn::ExprCall, span: Span) -> Expr {
        let sig = &self.scope.sigs[id.0 as usize];
        if sig.params.len() != c.args.len() {
            self.diags.error_at(
                &c.func,
                format!(
                    "`{}` takes {} arguments, {} given",
                    sig.name,
                    sig.params.len(),
                    c.args.len()
                ),
            );
            return err(span);
        }
        let mut types: Vec<Option<Scalar>> = vec![None; sig.generics.len()];
        let mut conflict = false;
        let mut args = Vec::new();
        for (arg, (_, pty, _, _)) in c.args.iter_mut().zip(&sig.params) {
            let expected = match pty {
                Ty::Generic(i) => types[*i as usize].map(Ty::Scalar),
                t => Some(t.clone()),
            };
            let a = self.expr(arg, expected.as_ref());
            let a = self.auto_deref(a);
            if let (Ty::Generic(i), Ty::Scalar(s)) = (pty, &a.ty) {
                match types[*i as usize] {
                    None => types[*i as usize] = Some(*s),
                    Some(t) if t != *s => {
                        self.diags.error(a.span, format!("`{}` is `{s}` here but `{t}` in an earlier argument: convert one with `as`", sig.generics[*i as usize]));
                        conflict = true;
                    }
                    _ => {}
                }
            }
            args.push(a);
        }
        if conflict {
            return err(span);
        }
        // Literal-only arguments take the default types.
        for (a, (_, pty, _, _)) in args.iter().zip(&sig.params) {
            if let Ty::Generic(i) = pty {
                if types[*i as usize].is_none() {
                    types[*i as usize] = match a.ty {
                        Ty::FloatLit => Some(Scalar::F32),
                        Ty::IntLit => Some(Scalar::I32),
                        _ => None,
                    };
                }
            }
        }
        let Some(types) = types.into_iter().collect::<Option<Vec<Scalar>>>() else {
            self.diags.error_at(&c.func, format!("the type parameters of `{}` are not known from its arguments: pass an argument of each, or write the types out in a non-generic helper", sig.name));
            return err(span);
        };
        let subst = |t: &Ty| match t {
            Ty::Generic(i) => Ty::Scalar(types[*i as usize]),
            t => t.clone(),
        };
        for (a, (_, pty, _, _)) in args.iter_mut().zip(&sig.params) {
            let want = subst(pty);
            self.expect(a, &want);
        }
        let ret = subst(&sig.ret);
        let is_async = sig.is_async;
        let name = format!(
            "{}__{}",
            sig.name,
            types
                .iter()
                .map(|t| t.rust_name())
                .collect::<Vec<_>>()
                .join("_")
        );
        let instance = {
            let mut instances = self.scope.instances.borrow_mut();
            match instances
                .iter()
                .find(|i| i.generic == id && i.types == types)
            {
                Some(i) => i.id,
                None => {
                    let new = FnId(self.scope.first_instance + instances.len() as u32);
                    instances.push(Instance {
                        generic: id,
                        types: types.clone(),
                        id: new,
                        name: name.clone(),
                    });
                    new
                }
            }
        };
        // The shadow code calls the instance (which carries the checker's edits, such as
        // wrapping arithmetic) rather than the generic fn.
        let call_span = span_of(&c.func);
        let ident = syn::Ident::new(&name, call_span);
        *c.func = syn::Expr::Path(syn::parse_quote_spanned!(call_span=> #ident));
        self.calls.push((instance, call_span, self.in_join));
        let ty = if is_async {
            Ty::Future(Box::new(ret))
        } else {
            ret
        };
        mk(ExprKind::Call(instance, args), ty, span)
    }

    /// The scalar type `T` of `shared::<T>()` or `oneshot::<T>()`; `None` after reporting a
    /// missing or non-scalar type (`example` is the call to write, `what` the value made).
    fn turbofish_scalar(
        &mut self,
        c: &syn::ExprCall,
        last_seg: &syn::PathSegment,
        example: &str,
        what: &str,
    ) -> Option<Scalar> {
        let syn::PathArguments::AngleBracketed(args) = &last_seg.arguments else {
            self.diags
                .error_at(&c.func, format!("name the value's type: `{example}`"));
            return None;
        };
        let ty = match args.args.first() {
            Some(syn::GenericArgument::Type(t)) => sig::parse_type(t, self.scope, self.diags),
            _ => Ty::Error,
        };
        match ty {
            Ty::Scalar(s) => Some(s),
            Ty::Error => None,
            ty => {
                self.diags
                    .error_at(&c.func, format!("{what} is a scalar; `{ty}` is not"));
                None
            }
        }
    }

    /// `f16::from_f32(x)`, `f16::from_f64(x)`, `f16::from_bits(b)` and `bf16::from_f32(x)`,
    /// `bf16::from_bits(b)`: the `half` crate's conversions (round to nearest even).
    fn half_constructor(
        &mut self,
        ty_name: &str,
        name: &str,
        c: &mut syn::ExprCall,
        span: Span,
    ) -> Expr {
        let half = if ty_name == "bf16" {
            Scalar::Bf16
        } else {
            Scalar::F16
        };
        let from = match name {
            "from_f32" => Scalar::F32,
            "from_f64" if half == Scalar::F16 => Scalar::F64,
            "from_bits" => Scalar::U16,
            _ => {
                self.diags.error_at(&c.func, format!("`{ty_name}::{name}` is not in the kernel language: use `{ty_name}::from_f32` or `from_bits`"));
                return err(span);
            }
        };
        if c.args.len() != 1 {
            self.diags
                .error_at(&c.func, format!("`{ty_name}::{name}` takes one argument"));
            return err(span);
        }
        let want = Ty::Scalar(from);
        let a = self.expr(&mut c.args[0], Some(&want));
        let mut a = self.auto_deref(a);
        self.expect(&mut a, &want);
        if from == Scalar::U16 {
            mk(
                ExprKind::HalfBits(Box::new(a), half),
                Ty::Scalar(half),
                span,
            )
        } else {
            mk(ExprKind::Cast(Box::new(a), half), Ty::Scalar(half), span)
        }
    }
}
