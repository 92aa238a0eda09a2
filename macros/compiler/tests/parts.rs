//! The parts of a `&mut` slice handed to roles in the kernel body reach their roles: each role's
//! parallel loop writes through its own part (the lowering of the kernel body's `let (a, b) =`
//! of a split, next to that of a channel).

use gpu_async_compiler::compile;
use quote::quote;

/// The text of each role's IR: from its `roleN` line to the next role's.
fn role_texts(ir: &str) -> Vec<String> {
    let mut roles: Vec<String> = Vec::new();
    for line in ir.lines() {
        if line.trim_start().starts_with("role") && line.contains("(warps ") {
            roles.push(String::new());
        }
        if let Some(r) = roles.last_mut() {
            r.push_str(line);
            r.push('\n');
        }
    }
    roles
}

fn writes_in_each_role(module: proc_macro2::TokenStream) {
    let kernels = compile(module).expect("compiles");
    for k in &kernels {
        let roles = role_texts(&k.ir_text);
        assert_eq!(roles.len(), 2, "{}", k.ir_text);
        for r in roles {
            assert!(
                r.contains("] write"),
                "a role writes nothing:\n{}",
                k.ir_text
            );
        }
    }
}

#[test]
fn the_halves_of_split_at_mut_are_written_by_their_roles() {
    writes_in_each_role(quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn halves(mid: usize, y: &mut [f32]) {
                let (lo, hi) = y.split_at_mut(mid);
                join!(on_warps(0..1, fill(1.0, lo)), on_warps(1..2, fill(2.0, hi))).await;
            }

            async fn fill(v: f32, y: &mut [f32]) {
                y.par_iter_mut().for_each(|o| *o = v);
            }
        }
    });
}

#[test]
fn ranges_and_chunks_are_written_by_their_roles() {
    writes_in_each_role(quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = 2)]
            pub async fn ranges(mid: usize, y: &mut [f32]) {
                join!(
                    on_warps(0..1, fill(1.0, &mut y[..mid])),
                    on_warps(1..2, fill(2.0, &mut y[mid..])),
                )
                .await;
            }

            #[kernel(warps = 2)]
            pub async fn chunked(size: usize, y: &mut [f32]) {
                let mut parts = y.chunks_mut(size);
                join!(
                    on_warps(0..1, fill(1.0, parts.next().unwrap())),
                    on_warps(1..2, fill(2.0, parts.next().unwrap())),
                )
                .await;
            }

            async fn fill(v: f32, y: &mut [f32]) {
                y.par_iter_mut().for_each(|o| *o = v);
            }
        }
    });
}
