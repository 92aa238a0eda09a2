//! The compiler's phases on small inputs: what each accepts, what it reports, and that nothing
//! panics on broken input.

use gpu_async_compiler::{compile, expand, ptx, verify};
use gpu_async_testing::needs_ptxas;
use proc_macro2::TokenStream;
use quote::quote;

/// A two-role streaming kernel, the shape every test below varies.
fn streaming(
    warps: u32,
    load_warps: TokenStream,
    store_warps: TokenStream,
    payload: TokenStream,
) -> TokenStream {
    quote! {
        mod kernels {
            use gpu_async::device::*;

            #[kernel(warps = #warps)]
            pub async fn copy(x: &[f32], y: &mut [f32]) {
                let (tx, rx) = channel::<#payload, 2>();
                join!(on_warps(#load_warps, load(x, tx)), on_warps(#store_warps, store(rx, y))).await;
            }

            async fn load(x: &[f32], mut tx: Sender<#payload, 2>) {
                for tile in block_tiles(x.len(), 256) {
                    let mut slot = tx.reserve().await;
                    slot.copy_from(&x[tile]).await;
                    slot.send();
                }
            }

            async fn store(mut rx: Receiver<#payload, 2>, y: &mut [f32]) {
                let mut tiles = block_tiles(y.len(), 256);
                while let Some(slot) = rx.recv().await {
                    let tile = tiles.next().unwrap();
                    y[tile].par_iter_mut().zip(slot.par_iter()).for_each(|(o, i)| *o = *i);
                }
            }
        }
    }
}

fn errors(module: TokenStream) -> Vec<String> {
    match compile(module) {
        Ok(_) => Vec::new(),
        Err(d) => d.messages(),
    }
}

fn assert_error(module: TokenStream, needle: &str) {
    let errs = errors(module);
    assert!(
        errs.iter().any(|e| e.contains(needle)),
        "no error containing {needle:?} in {errs:#?}"
    );
}

/// The verifier's errors for `k`, in the words of the internal-error report (none if it passes).
fn verify_errors(k: &gpu_async_compiler::ir::Kernel) -> Vec<String> {
    match verify::verify(k) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn a_streaming_kernel_compiles_to_roles_and_one_channel() {
    let kernels =
        compile(streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256]))).expect("compiles");
    assert_eq!(kernels.len(), 1);
    let k = &kernels[0];
    assert_eq!(k.ir.warps, 3);
    assert_eq!(k.ir.roles.len(), 2);
    assert_eq!((k.ir.roles[1].first_warp, k.ir.roles[1].end_warp), (1, 3));
    assert_eq!(k.ir.channels.len(), 1);
    // 2 slots of 1 KiB, then 2 full + 2 empty barriers and 2 state words.
    assert_eq!(k.ir.shared_bytes, 2048 + 32 + 16);
    assert!(verify::verify(&k.ir).is_ok());
}

/// Every kernel these tests compile successfully is assembled by ptxas too.
#[needs_ptxas]
fn the_kernels_of_these_tests_assemble_with_ptxas() {
    let ptxas = gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"));
    for (load, store, warps) in [
        (quote!(0..1), quote!(1..3), 3),
        (quote!(0..1), quote!(1..5), 5),
    ] {
        let kernels = compile(streaming(warps, load, store, quote!([f32; 256]))).expect("compiles");
        for k in kernels {
            if let Err(log) = gpu_async_compiler::ptxas::assemble(&ptxas, &k.name, &k.ptx) {
                panic!("ptxas rejected `{}`:\n{log}", k.name);
            }
        }
    }
}

#[test]
fn the_ptx_has_the_protocol_and_no_contraction() {
    let kernels =
        compile(streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256]))).expect("compiles");
    let ptx = &kernels[0].ptx;
    for needle in [
        ".version 8.0",
        ".target sm_90",
        ".reqntid 96, 1, 1",
        "mbarrier.init.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
        "bar.warp.sync -1;",
        "mbarrier.arrive.release.cta.shared::cta.b64",
        "ld.shared.v4.f32",
        "st.global.v4.f32",
    ] {
        assert!(ptx.contains(needle), "PTX lacks {needle:?}");
    }
    assert!(
        !ptx.contains("fma"),
        "floating-point contraction changes results against the host"
    );
}

#[test]
fn full_and_empty_barrier_counts_are_the_role_warp_counts() {
    let kernels =
        compile(streaming(5, quote!(0..1), quote!(1..5), quote!([f32; 256]))).expect("compiles");
    let k = &kernels[0];
    let c = &k.ir.channels[0];
    // full: one arrival per producer warp (1); empty: one per consumer warp (4).
    assert!(k
        .ptx
        .contains(&format!("[gpu_async_smem+{}], 1;", c.full_offset)));
    assert!(k
        .ptx
        .contains(&format!("[gpu_async_smem+{}], 4;", c.empty_offset)));
}

#[test]
fn warp_ranges_are_checked() {
    assert_error(
        streaming(3, quote!(0..2), quote!(1..3), quote!([f32; 256])),
        "overlaps role `load` on warps 0..2",
    );
    assert_error(
        streaming(3, quote!(0..1), quote!(1..4), quote!([f32; 256])),
        "past the kernel's 3 warps",
    );
    assert_error(
        streaming(3, quote!(0..1), quote!(2..2), quote!([f32; 256])),
        "is empty",
    );
    assert_error(
        streaming(4, quote!(0..1), quote!(1..3), quote!([f32; 256])),
        "warps 3..4 run no role",
    );
}

#[test]
fn shared_memory_past_the_limit_is_reported_with_its_breakdown() {
    let errs = errors(streaming(
        3,
        quote!(0..1),
        quote!(1..3),
        quote!([f32; 32768]),
    ));
    assert!(
        errs.iter()
            .any(|e| e.contains("needs 262192 B of shared memory")
                && e.contains("channel `tx/rx`: 2 slots of 131072 B")),
        "{errs:#?}"
    );
}

#[test]
fn payloads_must_be_scalar_arrays() {
    assert_error(
        streaming(2, quote!(0..1), quote!(1..2), quote!(Vec<f32>)),
        "`Vec` cannot travel through a channel",
    );
    assert_error(
        streaming(2, quote!(0..1), quote!(1..2), quote!(&[f32])),
        "a reference cannot travel through a channel",
    );
    assert_error(
        streaming(2, quote!(0..1), quote!(1..2), quote!([char; 4])),
        "elements are scalars",
    );
}

#[test]
fn the_kernel_attribute_is_checked() {
    assert_error(
        quote! { mod k { #[kernel] pub async fn f(y: &mut [f32]) { join!(on_warps(0..1, g(y))).await; } async fn g(y: &mut [f32]) {} } },
        "write `#[kernel(warps = N)]`",
    );
    assert_error(
        quote! { mod k { #[kernel(warps = 40)] pub async fn f(y: &mut [f32]) { join!(on_warps(0..1, g(y))).await; } async fn g(y: &mut [f32]) {} } },
        "1 to 32 warps",
    );
    assert_error(
        quote! { mod k { #[kernel(warps = 1)] pub fn f(y: &mut [f32]) {} } },
        "a kernel is an `async fn`",
    );
    assert_error(quote! { mod k; }, "needs the module's items inline");
}

#[test]
fn every_unsupported_construct_is_reported_in_one_build() {
    let errs = errors(quote! {
        mod k {
            use gpu_async::device::*;
            #[kernel(warps = 1)]
            pub async fn f(y: &mut [f32]) { join!(on_warps(0..1, g(y))).await; }
            async fn g(y: &mut [f32]) {
                let a = vec![1.0f32];
                let b = async { 1 };
                let c = y.get(0)?;
                let d = |v: f32| v;
                println!("no");
            }
        }
    });
    for needle in [
        "heap allocation (`Vec`)",
        "an async block runs where it is awaited",
        "the `?` operator",
        "closures are supported only",
        "`println!` is not available on the device",
    ] {
        assert!(
            errs.iter().any(|e| e.contains(needle)),
            "no {needle:?} in {errs:#?}"
        );
    }
}

#[test]
fn type_errors_say_what_to_write() {
    let base = |body: TokenStream| {
        quote! {
            mod k {
                use gpu_async::device::*;
                #[kernel(warps = 1)]
                pub async fn f(y: &mut [f32]) { join!(on_warps(0..1, g(y))).await; }
                async fn g(y: &mut [f32]) { #body }
            }
        }
    };
    assert_error(
        base(quote!(let a: f32 = 2; )),
        "expected `f32`, found `{integer}`",
    );
    assert_error(base(quote!(let a = 1u32 + 2i32; )), "convert one with `as`");
    assert_error(base(quote!(let a = nothing; )), "cannot find `nothing`");
    assert_error(base(quote!(let a = 1; a = 2; )), "declare it `let mut a`");
    assert_error(
        base(quote!(y[0] = 1.0; )),
        "write through `slice[range].par_iter_mut()`",
    );
    assert_error(
        base(quote!(let s = 0.0f32; y.par_iter_mut().for_each(|v| { s = *v; }); )),
        "cannot assign to the captured `s`",
    );
}

#[test]
fn a_reserved_slot_must_be_sent() {
    assert_error(
        quote! {
            mod k {
                use gpu_async::device::*;
                #[kernel(warps = 2)]
                pub async fn f(y: &mut [f32]) {
                    let (tx, rx) = channel::<[f32; 32], 1>();
                    join!(on_warps(0..1, p(tx)), on_warps(1..2, c(rx, y))).await;
                }
                async fn p(mut tx: Sender<[f32; 32], 1>) {
                    let slot = tx.reserve().await;
                }
                async fn c(mut rx: Receiver<[f32; 32], 1>, y: &mut [f32]) {
                    while let Some(s) = rx.recv().await {}
                }
            }
        },
        "dropped without being sent",
    );
}

#[test]
fn expansion_always_contains_the_launcher_even_with_errors() {
    let out = expand(
        TokenStream::new(),
        streaming(3, quote!(0..2), quote!(1..3), quote!([f32; 256])),
    )
    .to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("pub fn launch"), "{out}");
    let out = expand(
        TokenStream::new(),
        quote!(
            fn not_a_module() {}
        ),
    )
    .to_string();
    assert!(
        out.contains("compile_error") && out.contains("fn not_a_module"),
        "{out}"
    );
    let out = expand(
        quote!(extra),
        streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256])),
    )
    .to_string();
    assert!(out.contains("takes no arguments"), "{out}");
}

#[test]
fn the_shadow_code_carries_inferred_types() {
    let out = expand(
        TokenStream::new(),
        quote! {
            mod k {
                use gpu_async::device::*;
                #[kernel(warps = 1)]
                pub async fn f(y: &mut [f32]) { join!(on_warps(0..1, g(y))).await; }
                async fn g(y: &mut [f32]) {
                    let n = y.len();
                    let half = 0.5;
                    y.par_iter_mut().for_each(|v| *v = half);
                }
            }
        },
    )
    .to_string();
    assert!(out.contains("let n : usize"), "{out}");
    assert!(out.contains("let half : f32"), "{out}");
    assert!(out.contains("join_roles"), "{out}");
}

/// Removing any one line of a valid module gives errors or a kernel, never a panic.
#[test]
fn no_line_deletion_makes_the_macro_panic() {
    let source = streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256])).to_string();
    // Token streams print on one line; split at statement and block boundaries instead.
    let pieces: Vec<&str> = source.split_inclusive([';', '{', '}']).collect();
    for skip in 0..pieces.len() {
        let mutated: String = pieces
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, p)| *p)
            .collect();
        let Ok(tokens) = mutated.parse::<TokenStream>() else {
            continue;
        };
        let result = std::panic::catch_unwind(|| expand(TokenStream::new(), tokens));
        assert!(
            result.is_ok(),
            "the macro panicked without piece {skip}: {:?}",
            pieces[skip]
        );
    }
}

#[test]
fn the_verifier_rejects_broken_ir() {
    use gpu_async_compiler::ir::{Inst, Value};
    let kernels =
        compile(streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256]))).expect("compiles");
    let good = kernels[0].ir.clone();

    let mut overlapping = good.clone();
    overlapping.roles[1].first_warp = 0;
    assert!(verify_errors(&overlapping)
        .iter()
        .any(|e| e.contains("belongs to roles")));

    let mut undefined = good.clone();
    let unused = Value(undefined.values.len() as u32 - 1);
    undefined.roles[0].body.0.insert(
        0,
        Inst::Copy {
            dst: unused,
            src: Value(undefined.values.len() as u32 + 5),
        },
    );
    assert!(verify_errors(&undefined)
        .iter()
        .any(|e| e.contains("not declared")));

    let mut wrong_role = good.clone();
    let release = Inst::Release {
        chan: gpu_async_compiler::ir::ChannelId(0),
    };
    wrong_role.roles[0].body.0.push(release);
    assert!(verify_errors(&wrong_role)
        .iter()
        .any(|e| e.contains("does not own that end")));

    // A join inside a join branch, and a branch that leaves for a loop around the join (the
    // state machine has neither).
    use gpu_async_compiler::ir::{Block, LoopId, SiteId};
    let mut nested = good.clone();
    nested.roles[0].body.0.push(Inst::Join {
        branches: vec![Block(vec![Inst::Join {
            branches: vec![Block::default()],
        }])],
    });
    assert!(verify_errors(&nested)
        .iter()
        .any(|e| e.contains("a join inside a join")));
    let mut leaving = good.clone();
    let outer = LoopId(999);
    leaving.roles[0].body.0.push(Inst::Loop {
        id: outer,
        body: Block(vec![Inst::Join {
            branches: vec![Block(vec![Inst::Break(outer)])],
        }]),
    });
    assert!(verify_errors(&leaving)
        .iter()
        .any(|e| e.contains("is not an enclosing loop")));
    // Role 1 has two warps: a branch cannot make them meet.
    let mut meeting = good.clone();
    meeting.roles[1].body.0.push(Inst::Join {
        branches: vec![Block(vec![Inst::RoleBarrier { site: SiteId(0) }])],
    });
    assert!(verify_errors(&meeting)
        .iter()
        .any(|e| e.contains("meets the role's other warps")));
    // A select needs a channel to wait on.
    let mut empty_select = good.clone();
    let v = Value(0);
    empty_select.roles[1].body.0.push(Inst::SelectRecv {
        chans: Vec::new(),
        enabled: v,
        chosen: v,
        some: v,
        site: SiteId(0),
    });
    let errors = verify_errors(&empty_select);
    assert!(errors.iter().any(|e| e.contains("select over 0 channels")));
    // Role 1's two warps would each choose an arm.
    assert!(errors
        .iter()
        .any(|e| e.contains("a select in a role of several warps")));

    let mut too_many_blocks = good.clone();
    too_many_blocks.min_blocks_per_sm = Some(64 / too_many_blocks.warps + 1);
    assert!(verify_errors(&too_many_blocks)
        .iter()
        .any(|e| e.contains(".minnctapersm")));

    let mut too_big = good;
    too_big.shared_bytes = 300 * 1024;
    assert!(!verify_errors(&too_big).is_empty());
}

/// A verifier error names what it concerns, and reads as the internal-error report words it.
#[test]
fn a_verifier_error_names_what_it_concerns_and_reads_as_reported() {
    use gpu_async_compiler::ir::{ChannelId, Inst, RoleId};
    use gpu_async_compiler::verify::VerifyError;
    let kernels =
        compile(streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256]))).expect("compiles");
    let good = kernels[0].ir.clone();

    let mut overlapping = good.clone();
    overlapping.roles[1].first_warp = 0;
    let errors = verify::verify(&overlapping).expect_err("two roles take warp 0");
    assert_eq!(
        errors,
        [VerifyError::WarpOwners {
            warp: 0,
            first: RoleId(0),
            second: RoleId(1),
        }]
    );
    assert_eq!(errors[0].to_string(), "warp 0 belongs to roles 0 and 1");

    // The loading role releases a slot of the channel it sends on.
    let mut wrong_end = good;
    wrong_end.roles[0]
        .body
        .0
        .push(Inst::Release { chan: ChannelId(0) });
    let errors = verify::verify(&wrong_end).expect_err("role 0 does not receive on ch0");
    assert_eq!(
        errors,
        [VerifyError::NotChannelOwner {
            channel: ChannelId(0),
            role: Some(RoleId(0)),
            sending: false,
        }]
    );
    assert_eq!(
        errors[0].to_string(),
        "ch0 is used by a role that does not own that end"
    );
}

/// The writer takes only a verified kernel: verifying the compiled IR and writing it gives the
/// PTX that `compile` wrote.
#[test]
fn a_verified_kernel_is_written_as_compile_writes_it() {
    let kernels =
        compile(streaming(3, quote!(0..1), quote!(1..3), quote!([f32; 256]))).expect("compiles");
    let k = &kernels[0];
    let verified = verify::verify(&k.ir).expect("the compiled IR verifies");
    assert!(std::ptr::eq(verified.kernel(), &k.ir));
    let ptx = ptx::write_kernel(&verified).expect("the verified kernel is written");
    assert_eq!(ptx, k.ptx);
}

#[test]
fn a_role_that_first_waits_on_its_own_channel_is_reported() {
    assert_error(
        quote! {
            mod k {
                use gpu_async::device::*;
                #[kernel(warps = 2)]
                pub async fn f(y: &mut [f32]) {
                    let (tx, rx) = channel::<[f32; 32], 1>();
                    let (tx2, rx2) = channel::<[f32; 32], 1>();
                    join!(on_warps(0..1, selfish(rx, tx, tx2)), on_warps(1..2, sink(rx2, y))).await;
                }
                async fn selfish(mut rx: Receiver<[f32; 32], 1>, mut tx: Sender<[f32; 32], 1>, mut out: Sender<[f32; 32], 1>) {
                    while let Some(s) = rx.recv().await {
                        let mut o = tx.reserve().await;
                        o.par_iter_mut().zip(s.par_iter()).for_each(|(a, b)| *a = *b);
                        o.send();
                    }
                }
                async fn sink(mut rx: Receiver<[f32; 32], 1>, y: &mut [f32]) {
                    while let Some(s) = rx.recv().await {
                        y.par_iter_mut().zip(s.par_iter()).for_each(|(a, b)| *a = *b);
                    }
                }
            }
        },
        "role `selfish` holds both ends of the channel",
    );
}
