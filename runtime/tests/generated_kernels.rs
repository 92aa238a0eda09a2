//! Every kernel the project generates: assembled by `ptxas -arch=sm_90` (`sm_90a` for kernels
//! with register budgets), and its IR and PTX (with ptxas's resource report) kept as insta
//! snapshots for review.
//!
//! ptxas comes from the PyPI wheel `nvidia-cuda-nvcc==13.0.88` (what `.ci/run` installs) or a
//! CUDA toolkit, found as `gpu_async_compiler::ptxas::locate` says. The tests that need it are
//! `#[needs_ptxas]`: ignored, with the reason, where the build did not find it.

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[allow(dead_code)]
#[path = "../../examples/pipeline.rs"]
mod pipeline;

#[allow(dead_code)]
#[path = "../../examples/stencil.rs"]
mod stencil;

#[allow(dead_code, clippy::all)]
#[path = "common/closing.rs"]
mod closing;

#[allow(dead_code, clippy::all)]
#[path = "common/slot_values.rs"]
mod slot_values;

#[allow(dead_code, clippy::all)]
#[path = "common/parts.rs"]
mod parts;

#[allow(dead_code)]
#[path = "common/deadlock.rs"]
mod deadlock;

#[allow(dead_code)]
#[path = "common/language.rs"]
mod language;

#[allow(dead_code)]
#[path = "common/faults.rs"]
mod faults;

#[allow(dead_code)]
#[path = "../../examples/saxpy_variants.rs"]
mod saxpy_variants;

#[allow(dead_code, clippy::all)]
#[path = "common/reductions.rs"]
mod reductions;

#[allow(dead_code, clippy::all)]
#[path = "common/arrays.rs"]
mod arrays;

#[allow(dead_code)]
#[path = "../../examples/reduce.rs"]
mod reduce;

#[allow(dead_code)]
#[path = "../../examples/copy.rs"]
mod copy;

#[allow(dead_code)]
#[path = "../../examples/softmax.rs"]
mod softmax;

#[allow(dead_code)]
#[path = "../../examples/histogram.rs"]
mod histogram;

#[allow(dead_code)]
#[path = "../../examples/async_demos.rs"]
mod async_demos;

#[allow(dead_code, clippy::all)]
#[path = "../../examples/join_cost.rs"]
mod join_cost;

#[allow(dead_code, clippy::all)]
#[path = "common/scalars.rs"]
mod scalars;

#[allow(dead_code, clippy::all)]
#[path = "common/warps.rs"]
mod warps;

#[allow(dead_code, clippy::all)]
#[path = "common/barriers.rs"]
mod barriers;

#[allow(dead_code, clippy::all)]
#[path = "common/concurrency.rs"]
mod concurrency;

#[allow(dead_code, clippy::all)]
#[path = "common/bulk.rs"]
mod bulk;

#[allow(dead_code, clippy::all)]
#[path = "common/budgets.rs"]
mod budgets;

#[allow(dead_code, clippy::all)]
#[path = "common/shared_arrays.rs"]
mod shared_arrays;

#[allow(dead_code)]
#[path = "../../examples/transpose.rs"]
mod transpose;

#[allow(dead_code)]
#[path = "../../examples/scan.rs"]
mod scan;

#[allow(dead_code)]
#[path = "../../examples/gemm.rs"]
mod gemm;

#[allow(dead_code)]
#[path = "../../examples/attention.rs"]
mod attention;

#[allow(dead_code, clippy::all)]
#[path = "common/edges.rs"]
mod edges;

#[allow(dead_code, clippy::all)]
#[path = "common/tile_stores.rs"]
mod tile_stores;

use std::path::PathBuf;

use gpu_async_testing::needs_ptxas;

struct Generated {
    name: &'static str,
    ptx: &'static str,
    ir: &'static str,
    spec: &'static gpu_async::KernelSpec,
}

fn kernels() -> Vec<Generated> {
    vec![
        Generated {
            name: "budgets_pipeline",
            ptx: budgets::budgets::pipeline::PTX,
            ir: budgets::budgets::pipeline::IR,
            spec: &budgets::budgets::pipeline::SPEC,
        },
        Generated {
            name: "bulk_shifted_copy",
            ptx: bulk::bulk::shifted_copy::PTX,
            ir: bulk::bulk::shifted_copy::IR,
            spec: &bulk::bulk::shifted_copy::SPEC,
        },
        Generated {
            name: "copy",
            ptx: copy::copy::copy::PTX,
            ir: copy::copy::copy::IR,
            spec: &copy::copy::copy::SPEC,
        },
        Generated {
            name: "arrays_stencil",
            ptx: arrays::arrays::stencil::PTX,
            ir: arrays::arrays::stencil::IR,
            spec: &arrays::arrays::stencil::SPEC,
        },
        Generated {
            name: "reduce_sum",
            ptx: reduce::reduce::sum::PTX,
            ir: reduce::reduce::sum::IR,
            spec: &reduce::reduce::sum::SPEC,
        },
        Generated {
            name: "softmax_rows",
            ptx: softmax::softmax::rows::PTX,
            ir: softmax::softmax::rows::IR,
            spec: &softmax::softmax::rows::SPEC,
        },
        Generated {
            name: "histogram_count",
            ptx: histogram::histogram::count::PTX,
            ir: histogram::histogram::count::IR,
            spec: &histogram::histogram::count::SPEC,
        },
        Generated {
            name: "warps_warp_ops",
            ptx: warps::warps::warp_ops::PTX,
            ir: warps::warps::warp_ops::IR,
            spec: &warps::warps::warp_ops::SPEC,
        },
        Generated {
            name: "struct_payloads_step",
            ptx: arrays::struct_payloads::step::PTX,
            ir: arrays::struct_payloads::step::IR,
            spec: &arrays::struct_payloads::step::SPEC,
        },
        Generated {
            name: "scalars_transcendental64",
            ptx: scalars::transcendental64::funcs::PTX,
            ir: scalars::transcendental64::funcs::IR,
            spec: &scalars::transcendental64::funcs::SPEC,
        },
        Generated {
            name: "scalars_rem_f32",
            ptx: scalars::rem_f32::rem::PTX,
            ir: scalars::rem_f32::rem::IR,
            spec: &scalars::rem_f32::rem::SPEC,
        },
        Generated {
            name: "barriers_rounds",
            ptx: barriers::barriers::rounds::PTX,
            ir: barriers::barriers::rounds::IR,
            spec: &barriers::barriers::rounds::SPEC,
        },
        Generated {
            name: "join_two_totals",
            ptx: concurrency::joins::two_totals::PTX,
            ir: concurrency::joins::two_totals::IR,
            spec: &concurrency::joins::two_totals::SPEC,
        },
        Generated {
            name: "select_merge",
            ptx: concurrency::selects::merge::PTX,
            ir: concurrency::selects::merge::IR,
            spec: &concurrency::selects::merge::SPEC,
        },
        Generated {
            name: "reductions_reduce",
            ptx: reductions::reductions::reduce::PTX,
            ir: reductions::reductions::reduce::IR,
            spec: &reductions::reductions::reduce::SPEC,
        },
        Generated {
            name: "scalars_transcendental",
            ptx: scalars::transcendental::funcs::PTX,
            ir: scalars::transcendental::funcs::IR,
            spec: &scalars::transcendental::funcs::SPEC,
        },
        Generated {
            name: "scalars_casts_i8",
            ptx: scalars::casts_i8::casts::PTX,
            ir: scalars::casts_i8::casts::IR,
            spec: &scalars::casts_i8::casts::SPEC,
        },
        Generated {
            name: "saxpy",
            ptx: saxpy::stream::saxpy::PTX,
            ir: saxpy::stream::saxpy::IR,
            spec: &saxpy::stream::saxpy::SPEC,
        },
        Generated {
            name: "pipeline_scale_shift",
            ptx: pipeline::pipeline::scale_shift::PTX,
            ir: pipeline::pipeline::scale_shift::IR,
            spec: &pipeline::pipeline::scale_shift::SPEC,
        },
        Generated {
            name: "stencil_three_point",
            ptx: stencil::stencil::three_point::PTX,
            ir: stencil::stencil::three_point::IR,
            spec: &stencil::stencil::three_point::SPEC,
        },
        Generated {
            name: "closing_dropped",
            ptx: closing::depth2::dropped::PTX,
            ir: closing::depth2::dropped::IR,
            spec: &closing::depth2::dropped::SPEC,
        },
        Generated {
            name: "slot_values_two_receivers",
            ptx: slot_values::two_receivers::neighbours::PTX,
            ir: slot_values::two_receivers::neighbours::IR,
            spec: &slot_values::two_receivers::neighbours::SPEC,
        },
        Generated {
            name: "parts_halves",
            ptx: parts::parts::halves::PTX,
            ir: parts::parts::halves::IR,
            spec: &parts::parts::halves::SPEC,
        },
        Generated {
            name: "deadlock_cross",
            ptx: deadlock::deadlock::cross::PTX,
            ir: deadlock::deadlock::cross::IR,
            spec: &deadlock::deadlock::cross::SPEC,
        },
        Generated {
            name: "language_mix",
            ptx: language::language::mix::PTX,
            ir: language::language::mix::IR,
            spec: &language::language::mix::SPEC,
        },
        Generated {
            name: "faults_shifted_read",
            ptx: faults::faults::shifted_read::PTX,
            ir: faults::faults::shifted_read::IR,
            spec: &faults::faults::shifted_read::SPEC,
        },
        Generated {
            name: "faults_divide",
            ptx: faults::faults::divide::PTX,
            ir: faults::faults::divide::IR,
            spec: &faults::faults::divide::SPEC,
        },
        Generated {
            name: "faults_short_output",
            ptx: faults::faults::short_output::PTX,
            ir: faults::faults::short_output::IR,
            spec: &faults::faults::short_output::SPEC,
        },
        // A tile of `x` slices `y`: its end check must stay (`bounds` proves only tiles of `y`).
        Generated {
            name: "faults_tiles_of_another_slice",
            ptx: faults::faults::tiles_of_another_slice::PTX,
            ir: faults::faults::tiles_of_another_slice::IR,
            spec: &faults::faults::tiles_of_another_slice::SPEC,
        },
        Generated {
            name: "language_hash",
            ptx: language::language::hash::PTX,
            ir: language::language::hash::IR,
            spec: &language::language::hash::SPEC,
        },
        Generated {
            name: "transpose",
            ptx: transpose::transpose::transpose::PTX,
            ir: transpose::transpose::transpose::IR,
            spec: &transpose::transpose::transpose::SPEC,
        },
        Generated {
            name: "scan_exclusive",
            ptx: scan::scan::exclusive::PTX,
            ir: scan::scan::exclusive::IR,
            spec: &scan::scan::exclusive::SPEC,
        },
        Generated {
            name: "shared_arrays_bins",
            ptx: shared_arrays::blocks::bins::PTX,
            ir: shared_arrays::blocks::bins::IR,
            spec: &shared_arrays::blocks::bins::SPEC,
        },
        Generated {
            name: "shared_arrays_transpose",
            ptx: shared_arrays::blocks::transpose::PTX,
            ir: shared_arrays::blocks::transpose::IR,
            spec: &shared_arrays::blocks::transpose::SPEC,
        },
        Generated {
            name: "shared_arrays_scans",
            ptx: shared_arrays::blocks::scans::PTX,
            ir: shared_arrays::blocks::scans::IR,
            spec: &shared_arrays::blocks::scans::SPEC,
        },
        Generated {
            name: "gemm",
            ptx: gemm::gemm::gemm::PTX,
            ir: gemm::gemm::gemm::IR,
            spec: &gemm::gemm::gemm::SPEC,
        },
        // The A · B GEMM: B's stage tile is four column blocks, read transposed.
        Generated {
            name: "gemm_kn",
            ptx: gemm::gemm::gemm_kn::PTX,
            ir: gemm::gemm::gemm_kn::IR,
            spec: &gemm::gemm::gemm_kn::SPEC,
        },
        // Attention: two mmas per stage (one with a register A operand), the softmax between.
        Generated {
            name: "attention",
            ptx: attention::head128::attention::PTX,
            ir: attention::head128::attention::IR,
            spec: &attention::head128::attention::SPEC,
        },
        Generated {
            name: "language_control",
            ptx: language::language::control::PTX,
            ir: language::language::control::IR,
            spec: &language::language::control::SPEC,
        },
    ]
}

/// ptxas; panics (fails the test), saying why, when it is not found.
fn ptxas() -> PathBuf {
    gpu_async_compiler::ptxas::locate().unwrap_or_else(|e| panic!("{e}"))
}

/// Assembles `ptx`; returns ptxas's resource report (registers, barriers, stack, spills).
fn assemble(ptxas: &PathBuf, name: &str, ptx: &str) -> String {
    match gpu_async_compiler::ptxas::assemble(ptxas, name, ptx) {
        Ok(report) => report.resources,
        Err(log) => panic!("ptxas rejected or warned on `{name}`:\n{log}"),
    }
}

/// Kernels that are variants of snapshotted ones: assembled, not snapshotted.
fn variants() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "saxpy_tile2k_depth6",
            saxpy_variants::tile2k_depth6::saxpy::PTX,
        ),
        (
            "saxpy_tile4k_depth4",
            saxpy_variants::tile4k_depth4::saxpy::PTX,
        ),
        (
            "saxpy_tile8k_depth3",
            saxpy_variants::tile8k_depth3::saxpy::PTX,
        ),
        ("saxpy_fma64", saxpy_variants::fma64::fma64::PTX),
        (
            "saxpy_fma64_flat_min_blocks",
            saxpy_variants::fma64_flat_w8_t4k_b8::fma64::PTX,
        ),
        (
            "saxpy_fma64_two_rings",
            saxpy_variants::fma64_xy_w10_t4k_d2::fma64::PTX,
        ),
        ("saxpy_unchecked", saxpy_variants::unchecked::saxpy::PTX),
        ("tuples_pairs", arrays::tuples::pairs::PTX),
        ("structs_apply", arrays::structs::apply::PTX),
        ("generics_mixed", arrays::generics::mixed::PTX),
        ("halves_mix", arrays::halves::mix::PTX),
        ("shared_values_count", arrays::shared_values::count::PTX),
        ("async_blocks_relay", arrays::async_blocks::relay::PTX),
        ("enums_apply", arrays::enums::apply::PTX),
        ("warps_one_warp", warps::warps::warp_ops_one_warp::PTX),
        ("warps_nested_loops", warps::nested_loops::digits::PTX),
        ("struct_arrays_eval", arrays::struct_arrays::eval::PTX),
        ("idle_warps", arrays::idle_warps::fill::PTX),
        ("async_demos_chained", async_demos::demos::chained::PTX),
        (
            "async_demos_conditional",
            async_demos::demos::conditional::PTX,
        ),
        ("async_demos_block", async_demos::demos::block::PTX),
        (
            "async_demos_three_tasks",
            async_demos::demos::three_tasks::PTX,
        ),
        ("async_demos_joined", async_demos::demos::joined::PTX),
        ("copy_tiles", copy::tiles::copy::PTX),
        ("join_cost_joined", join_cost::w512::joined::PTX),
        ("join_cost_selected", join_cost::w512::selected::PTX),
        ("async_demos_selected", async_demos::demos::selected::PTX),
        ("typed_ranges", arrays::typed_ranges::sums::PTX),
        ("option_if_let", arrays::option_if_let::checked::PTX),
        ("barriers_uneven", barriers::barriers::uneven::PTX),
        ("oneshots_total", barriers::oneshots::total::PTX),
        ("broadcasts_fan_out", barriers::broadcasts::fan_out::PTX),
        ("oneshots_never", barriers::oneshots::never::PTX),
        ("join_three_tasks", concurrency::joins::three_tasks::PTX),
        ("join_stuck", concurrency::joins::stuck::PTX),
        ("select_in_join", concurrency::selects::select_in_join::PTX),
        ("select_no_else", concurrency::selects::no_else::PTX),
        ("async_move_sender", concurrency::moves::moved_sender::PTX),
        ("body_control_flow", arrays::body_control_flow::shapes::PTX),
        (
            "conditional_writes",
            arrays::conditional_writes::keep_large::PTX,
        ),
        ("warps_partial_warp", warps::warps::partial_warp::PTX),
        (
            "warps_lane_out_of_bounds",
            warps::warps::lane_out_of_bounds::PTX,
        ),
        (
            "saxpy_tile2k_depth3",
            saxpy_variants::tile2k_depth3::saxpy::PTX,
        ),
        (
            "saxpy_tile_per_block",
            saxpy_variants::tile_per_block::saxpy::PTX,
        ),
        ("budgets_poly", budgets::budgets::poly::PTX),
        ("shared_arrays_table", shared_arrays::blocks::table::PTX),
        (
            "histogram_global_bins",
            histogram::histogram::global_bins::PTX,
        ),
        (
            "shared_arrays_float_scans",
            shared_arrays::blocks::float_scans::PTX,
        ),
        (
            "shared_arrays_float_atomics",
            shared_arrays::blocks::float_atomics::PTX,
        ),
        ("closing_dropped_1", closing::depth1::dropped::PTX),
        ("closing_closed_1", closing::depth1::closed::PTX),
        ("closing_broken_1", closing::depth1::broken::PTX),
        ("closing_closed_2", closing::depth2::closed::PTX),
        ("closing_broken_2", closing::depth2::broken::PTX),
        ("closing_dropped_4", closing::depth4::dropped::PTX),
        ("closing_closed_4", closing::depth4::closed::PTX),
        ("closing_broken_4", closing::depth4::broken::PTX),
        ("closing_dropped_8", closing::depth8::dropped::PTX),
        ("closing_closed_8", closing::depth8::closed::PTX),
        ("closing_broken_8", closing::depth8::broken::PTX),
        ("closing_broadcast", closing::broadcast::two_stops::PTX),
        ("slot_values_window", slot_values::slots::window::PTX),
        ("slot_values_ahead", slot_values::slots::ahead::PTX),
        ("slot_values_sliced", slot_values::slots::sliced::PTX),
        ("slot_values_tiles", slot_values::slots::tiles::PTX),
        ("slot_values_lanes", slot_values::slots::lanes::PTX),
        ("slot_values_writes", slot_values::slots::writes::PTX),
        ("parts_ranges", parts::parts::ranges::PTX),
        ("parts_thirds", parts::parts::thirds::PTX),
        ("parts_chunked", parts::parts::chunked::PTX),
        ("parts_chunked_exact", parts::parts::chunked_exact::PTX),
        ("parts_sums", parts::parts::sums::PTX),
        ("edges_eight_warps", edges::edges::eight_warps::PTX),
        ("edges_one_warp", edges::edges::one_warp::PTX),
        ("tile_stores_tiled", tile_stores::tiled::tiled::PTX),
    ]
}

#[needs_ptxas]
fn every_generated_kernel_assembles_with_ptxas() {
    let ptxas = ptxas();
    for (name, ptx) in variants() {
        let report = assemble(&ptxas, name, ptx);
        assert!(
            report.contains("0 bytes spill stores"),
            "`{name}` spills:\n{report}"
        );
    }
    for k in kernels() {
        let report = assemble(&ptxas, k.name, k.ptx);
        assert!(
            report.contains("0 bytes spill stores"),
            "`{}` spills:\n{report}",
            k.name
        );
    }
}

#[test]
fn ir_snapshots() {
    for k in kernels() {
        insta::assert_snapshot!(format!("{}.ir", k.name), k.ir);
    }
}

#[needs_ptxas]
fn ptx_snapshots_with_ptxas_report() {
    let ptxas = ptxas();
    for k in kernels() {
        let report = assemble(&ptxas, k.name, k.ptx);
        // ptxas sees no dynamic shared memory: its size comes from the kernel's layout.
        let header = format!(
            "// ptxas -arch={} -v:\n// {}\n// dynamic shared memory: {} B per block, {} threads\n",
            gpu_async_compiler::ptxas::arch(k.ptx),
            report.replace('\n', "\n// "),
            k.spec.shared_bytes,
            32 * k.spec.warps
        );
        insta::assert_snapshot!(format!("{}.ptx", k.name), format!("{header}\n{}", k.ptx));
    }
}

/// The GEMM example's `wgmma`s (both products) and the attention example's issue back to back: ptxas neither serializes
/// them ("wgmma.mma_async instructions are serialized") nor injects waits where other code would
/// touch the accumulator's registers while an mma may be writing them ("warpgroup.wait is
/// injected").
#[needs_ptxas]
fn the_gemm_and_attention_wgmmas_are_not_serialized() {
    let ptxas = ptxas();
    for (name, ptx) in [
        ("gemm", gemm::gemm::gemm::PTX),
        ("gemm_kn", gemm::gemm::gemm_kn::PTX),
        ("attention", attention::head128::attention::PTX),
        ("attention_d64", attention::head64::attention::PTX),
    ] {
        let report = gpu_async_compiler::ptxas::assemble(&ptxas, name, ptx)
            .unwrap_or_else(|log| panic!("ptxas rejected `{name}`:\n{log}"));
        for sign in ["serialized", "is injected", "C7510", "C7512", "C7513"] {
            assert!(!report.log.contains(sign), "{name}: {}", report.log);
        }
        assert!(
            report.resources.contains("0 bytes spill stores"),
            "{name}: {}",
            report.resources
        );
    }
}

/// The effect of register budgets in ptxas's report: the evaluator of `budgets::poly` keeps 208
/// coefficients in registers, past the 168 per thread of a 384-thread block; with the derived
/// budgets (40 for the loader, 232 for the evaluator) nothing spills, without them
/// (`registers(off)`) ptxas spills.
#[needs_ptxas]
fn register_budgets_remove_the_spills_in_the_ptxas_report() {
    let ptxas = ptxas();
    let with = budgets::budgets::poly::PTX;
    let without = budgets::budgets::poly_uniform::PTX;
    let (report_with, report_without) = (
        assemble(&ptxas, "budgets_poly", with),
        assemble(&ptxas, "budgets_poly_uniform", without),
    );
    // ptxas says "N bytes spill stores" (after "M bytes stack frame, "): N, or None.
    let spill_stores = |report: &str| {
        report
            .split(", ")
            .find_map(|part| part.trim().strip_suffix(" bytes spill stores"))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    assert_eq!(
        spill_stores(&report_with),
        Some(0),
        "with budgets:\n{report_with}"
    );
    assert!(
        spill_stores(&report_without).is_some_and(|n| n > 0),
        "without budgets ptxas no longer spills; pick a kernel that shows the effect:\n{report_without}"
    );
    let lines = |ptx: &str| {
        ptx.lines()
            .filter(|l| {
                l.starts_with(".target")
                    || l.starts_with(".maxnreg")
                    || l.contains("setmaxnreg")
                    || l.contains("// role ")
            })
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let effect = format!(
        "with the derived budgets (ptxas -arch={} -v):\n{}\n{}\n\nwith registers(off) (ptxas -arch={} -v):\n{}\n{}\n",
        gpu_async_compiler::ptxas::arch(with),
        lines(with),
        report_with,
        gpu_async_compiler::ptxas::arch(without),
        lines(without),
        report_without
    );
    insta::assert_snapshot!("budgets_poly_effect", effect);
}
