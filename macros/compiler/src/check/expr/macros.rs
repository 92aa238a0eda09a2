//! Macro calls: `join!` and `select!` are dispatched to where they are checked, `panic!` and the
//! assertions become device panics, and every other macro is reported.

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;

use super::{err, mk, Checker};
use crate::check::sig::heap_message;
use crate::tir::{Expr, ExprKind};
use crate::types::{Scalar, Ty};

impl Checker<'_> {
    /// A macro call: `join!` in a kernel body (rewritten for the shadow code), or a clear error.
    pub(super) fn macro_call(&mut self, mac: &syn::Macro, node: Option<&mut syn::Expr>) -> Expr {
        let span = mac.path.span();
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        match name.as_str() {
            "join" => {
                let Some(node) = node else {
                    self.diags
                        .error(span, "`join!(..)` is a future: write `join!(..).await;`");
                    return err(span);
                };
                if !self.is_kernel() {
                    return self.role_join(mac, node, span);
                }
                self.kernel_join(mac, node, span)
            }
            "select" => self.select(mac, node, span),
            "vec" | "format" => {
                self.diags.error(
                    span,
                    heap_message(if name == "vec" { "Vec" } else { "String" }),
                );
                err(span)
            }
            "panic" | "assert" | "assert_eq" | "assert_ne" | "unreachable" | "todo"
            | "unimplemented" => self.panic_macro(&name, mac, node, span),
            "println" | "print" | "eprintln" | "eprint" | "dbg" => {
                self.diags.error(span, format!("`{name}!` is not available on the device: write values into an output buffer"));
                err(span)
            }
            "asm" | "global_asm" => {
                self.diags
                    .error(span, "inline assembly is not supported in kernels");
                err(span)
            }
            _ => {
                self.diags.error(
                    span,
                    format!("the macro `{name}!` is not supported in kernels"),
                );
                err(span)
            }
        }
    }

    /// `panic!`, `assert!` and friends: a device panic whose message is Rust's (the format string
    /// without its arguments, which the GPU cannot format). In the shadow code an assertion is
    /// rewritten to `if !(cond) { panic!(..) }` with the checked condition, so that its arithmetic
    /// wraps as on the GPU.
    fn panic_macro(
        &mut self,
        name: &str,
        mac: &syn::Macro,
        node: Option<&mut syn::Expr>,
        span: Span,
    ) -> Expr {
        use syn::parse::Parser;
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        let Ok(args) = parser.parse2(mac.tokens.clone()) else {
            self.diags
                .error(span, format!("the arguments of `{name}!` cannot be read: write a string literal and values separated by commas, as in `{name}!(\"bad index {{}}\", i)`"));
            return err(span);
        };
        let mut args: Vec<syn::Expr> = args.into_iter().collect();
        let literal = |e: Option<&syn::Expr>| match e {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            })) => Some(s.value()),
            _ => None,
        };
        let bool_ty = Ty::Scalar(Scalar::Bool);
        let (cond, message, rest) = match name {
            "panic" => (
                None,
                literal(args.first()).unwrap_or_else(|| "explicit panic".to_string()),
                0,
            ),
            "unreachable" => (
                None,
                match literal(args.first()) {
                    Some(m) => format!("internal error: entered unreachable code: {m}"),
                    None => "internal error: entered unreachable code".to_string(),
                },
                0,
            ),
            "todo" => (None, "not yet implemented".to_string(), 0),
            "unimplemented" => (None, "not implemented".to_string(), 0),
            "assert" => {
                let Some(c) = args.first_mut() else {
                    self.diags.error(span, "`assert!` takes a condition");
                    return err(span);
                };
                let text = quote::quote!(#c).to_string();
                let mut cond = self.expr(c, Some(&bool_ty));
                self.expect(&mut cond, &bool_ty);
                let message =
                    literal(args.get(1)).unwrap_or_else(|| format!("assertion failed: {text}"));
                (Some(cond), message, 1)
            }
            _ => {
                // assert_eq!(a, b) / assert_ne!(a, b): `a == b` / `a != b`, Rust's message.
                if args.len() < 2 {
                    self.diags
                        .error(span, format!("`{name}!` takes two values"));
                    return err(span);
                }
                let op = if name == "assert_eq" {
                    syn::BinOp::Eq(Default::default())
                } else {
                    syn::BinOp::Ne(Default::default())
                };
                let mut cmp = syn::Expr::Binary(syn::ExprBinary {
                    attrs: Vec::new(),
                    left: Box::new(args[0].clone()),
                    op,
                    right: Box::new(args[1].clone()),
                });
                let mut cond = self.expr(&mut cmp, Some(&bool_ty));
                self.expect(&mut cond, &bool_ty);
                args[0] = cmp;
                args.remove(1);
                let sym = if name == "assert_eq" { "==" } else { "!=" };
                let message = match literal(args.get(1)) {
                    Some(m) => format!("assertion `left {sym} right` failed: {m}"),
                    None => format!("assertion `left {sym} right` failed"),
                };
                (Some(cond), message, 1)
            }
        };
        if let (Some(node), Some(_)) = (node, cond.as_ref()) {
            let c = &args[0];
            let msg: Vec<&syn::Expr> = args.iter().skip(rest).collect();
            let panic = if msg.is_empty() {
                let m = syn::LitStr::new(&message, span);
                quote_spanned!(span=> ::core::panic!(#m))
            } else {
                quote_spanned!(span=> ::core::panic!(#(#msg),*))
            };
            *node =
                syn::Expr::Verbatim(quote_spanned!(span=> if ::core::ops::Not::not(#c) { #panic }));
        }
        mk(
            ExprKind::Panic(cond.map(Box::new), message),
            if matches!(name, "assert" | "assert_eq" | "assert_ne") {
                Ty::Unit
            } else {
                Ty::Never
            },
            span,
        )
    }
}
