//! Long role bodies stay cheap to compile: a `match` lowers without nesting (each arm one `if`
//! at the match's own level), an `if` without `else` is one branch in the PTX, and a body past
//! the instruction limit stops lowering at the limit with the one error that says so.

use gpu_async_compiler::compile;
use gpu_async_compiler::ir::{Block, Inst};
use proc_macro2::TokenStream;
use quote::quote;

/// A kernel module whose only role's body is `body` (`x: &[f32]`, `y: &mut [f32]` and `n: u32`
/// in scope).
fn role_module(body: TokenStream) -> TokenStream {
    quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 1)]
            pub async fn k(x: &[f32], y: &mut [f32], n: u32) {
                join!(on_warps(0..1, role(x, y, n))).await;
            }
            async fn role(x: &[f32], y: &mut [f32], n: u32) {
                #body
            }
        }
    }
}

/// How deep `if`s nest in `block`.
fn if_depth(block: &Block) -> usize {
    block
        .0
        .iter()
        .map(|inst| match inst {
            Inst::If { then, else_, .. } => 1 + if_depth(then).max(if_depth(else_)),
            Inst::Loop { body, .. } => if_depth(body),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_match_lowers_to_one_level_of_ifs() {
    let kernels = compile(role_module(quote! {
        let t = match n {
            0 => 1u32,
            1 | 2 => 2,
            3..=5 => 3,
            _ => 4,
        };
        y.par_iter_mut().for_each(|o| *o = t as f32);
    }))
    .unwrap_or_else(|d| panic!("{:?}", d.messages()));
    let k = &kernels[0];
    let role = &k.ir.roles[0].body;
    assert_eq!(if_depth(role), 1, "{}", k.ir_text);
    // Every arm's `if` has no `else`: no label for one in the PTX.
    assert!(!k.ptx.contains("$else"), "{}", k.ptx);
}

#[test]
fn a_guarded_arm_nests_only_its_guard() {
    let kernels = compile(role_module(quote! {
        let t = match n {
            0 => 1u32,
            v if v > 8 => 9,
            _ => 4,
        };
        y.par_iter_mut().for_each(|o| *o = t as f32);
    }))
    .unwrap_or_else(|d| panic!("{:?}", d.messages()));
    let k = &kernels[0];
    assert_eq!(if_depth(&k.ir.roles[0].body), 2, "{}", k.ir_text);
}

#[test]
fn a_body_past_the_instruction_limit_gets_one_error_and_stops_there() {
    let handoffs = (0..2000).map(|_| {
        quote! {
            let Some(mut s) = tx.reserve().await else { return };
            s.send();
        }
    });
    let receives = (0..2000).map(|_| {
        quote! {
            let s = rx.recv().await.unwrap();
            drop(s);
        }
    });
    let module = quote! {
        mod m {
            use gpu_async::device::*;
            #[kernel(warps = 2)]
            pub async fn k(x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<[f32; 256], 2>();
                join!(on_warps(0..1, producer(x, tx)), on_warps(1..2, consumer(y, rx))).await;
            }
            async fn producer(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
                #(#handoffs)*
                // Past the limit: a slot dropped without `send`. The lowering stops before it,
                // so only the size error is reported; fixing that one shows this one.
                let Some(s) = tx.reserve().await else { return };
            }
            async fn consumer(y: &mut [f32], mut rx: Receiver<[f32; 256], 2>) {
                #(#receives)*
            }
        }
    };
    let Err(diags) = compile(module) else {
        panic!("2000 handoffs compiled");
    };
    let messages = diags.messages();
    // The lowering stopped at the limit: neither the slot past it nor the handoff it cut in two
    // (reserved below the limit, sent above it) is reported.
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(
        messages[0].contains("instructions by here"),
        "{messages:#?}"
    );
}
