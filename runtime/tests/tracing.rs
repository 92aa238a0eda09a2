//! Traced launches on both backends: every role of every traced block is in the trace, its spans
//! ordered and inside its run, its waits labelled with their channels, the blocks the options
//! choose, dropped events counted, a deadlock's trace up to the deadlock; the Chrome JSON parses
//! with one thread per role and the SVG is well-formed. The traced PTX of the kernels assembles.

#[allow(dead_code)]
#[path = "../../examples/pipeline.rs"]
mod pipeline;

#[allow(dead_code)]
#[path = "../../examples/saxpy.rs"]
mod saxpy;

#[allow(dead_code)]
#[path = "common/deadlock.rs"]
mod deadlock;

#[allow(dead_code, clippy::all)]
#[path = "common/barriers.rs"]
mod barriers;

#[allow(dead_code, clippy::all)]
#[path = "common/concurrency.rs"]
mod concurrency;

#[allow(dead_code, clippy::all)]
#[path = "common/budgets.rs"]
mod budgets;

#[allow(dead_code, clippy::all)]
#[path = "common/bulk.rs"]
mod bulk;

#[allow(dead_code, clippy::all)]
#[path = "common/reductions.rs"]
mod reductions;

#[path = "common/devices.rs"]
mod devices;

use std::time::Duration;

use gpu_async::bench::random_f32;
use gpu_async::trace::{Activity, Clock, RoleTimeline, Trace, TraceBlocks, TraceOptions};
use gpu_async::{block_on, BackendKind, Device, Error, Grid, Schedule, SimOptions};
use gpu_async_testing::{needs_gpu, needs_ptxas, on_each_device};

/// Checks what every trace holds: blocks in order, each role's run first and every other span
/// ordered by start, inside the run, ending after it starts.
fn assert_well_ordered(trace: &Trace) {
    for pair in trace.blocks.windows(2) {
        assert!(pair[0].block < pair[1].block, "blocks out of order");
    }
    for block in &trace.blocks {
        for role in &block.roles {
            assert_role_well_ordered(block.block, role);
        }
    }
}

fn assert_role_well_ordered(block: u32, role: &RoleTimeline) {
    let what = format!("block {block}, role `{}`", role.role);
    let run = role.spans.first().expect("a run");
    assert_eq!(run.activity, Activity::Run, "{what}: the run comes first");
    assert!(
        run.start <= run.end,
        "{what}: the run ends before it starts"
    );
    for s in &role.spans[1..] {
        assert_ne!(s.activity, Activity::Run, "{what}: two runs");
        assert!(s.start <= s.end, "{what}: {s:?} ends before it starts");
        assert!(
            run.start <= s.start && s.end <= run.end,
            "{what}: {s:?} is outside the run {run:?}"
        );
    }
    for pair in role.spans[1..].windows(2) {
        assert!(pair[0].start <= pair[1].start, "{what}: spans out of order");
    }
}

/// The labels of `role`'s spans of `activity`.
fn labels(role: &RoleTimeline, activity: Activity) -> Vec<&str> {
    role.spans
        .iter()
        .filter(|s| s.activity == activity)
        .map(|s| s.label.as_str())
        .collect()
}

/// Checks that the SVG is well-formed XML as far as its tags go.
fn assert_well_formed_svg(svg: &str) {
    let svg = svg.trim_end();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        assert!(!text.contains('>'), "stray `>` in {text:?}");
        for (i, _) in text.match_indices('&') {
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| text[i..].starts_with(e)),
                "bare `&` in {text:?}"
            );
        }
        let end = start + rest[start..].find('>').expect("an unclosed tag");
        let tag = &rest[start + 1..end];
        assert_eq!(tag.matches('"').count() % 2, 0, "quotes in <{tag}>");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "</{name}> closes another element");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().expect("a tag name"));
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed {open:?}");
}

/// Checks the Chrome JSON of `trace`: it parses, one process per block, one thread per role of
/// each, one complete event per span.
fn assert_chrome_json(trace: &Trace) {
    let json: serde_json::Value = serde_json::from_str(&trace.chrome_json()).expect("JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let count = |name: &str| events.iter().filter(|e| e["name"] == name).count();
    assert_eq!(count("process_name"), trace.blocks.len());
    let roles: usize = trace.blocks.iter().map(|b| b.roles.len()).sum();
    assert_eq!(count("thread_name"), roles);
    let spans: usize = trace
        .blocks
        .iter()
        .flat_map(|b| &b.roles)
        .map(|r| r.spans.len())
        .sum();
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), spans);
}

/// The pipeline's grid on `dev`: a few blocks of several tiles each.
fn pipeline_grid(dev: &Device) -> Grid {
    match dev.kind() {
        BackendKind::Cuda => Grid::blocks(24),
        BackendKind::Simulator => Grid::blocks(3),
    }
}

#[on_each_device]
fn a_traced_pipeline_has_every_role_and_its_labelled_waits(dev: Device) {
    let n = 40 * pipeline::pipeline::TILE + 17;
    let xs = random_f32(n, 5);
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(n).unwrap();
    let grid = pipeline_grid(&dev);
    let traced = block_on(pipeline::pipeline::scale_shift::launch_traced(
        &dev,
        grid,
        (2.0, 1.0, &x, &mut y),
        TraceOptions::default().blocks(TraceBlocks::First(4)),
    ));
    traced.result.unwrap();
    let got = y.download().unwrap();
    let bad = got
        .iter()
        .zip(&xs)
        .filter(|(g, x)| g.to_bits() != (2.0 * **x + 1.0).to_bits())
        .count();
    assert_eq!(
        bad, 0,
        "{dev}: the traced kernel computes what the kernel does"
    );
    let trace = traced.trace;
    eprintln!("{dev}:\n{trace}");
    assert!(trace.kernel.ends_with("::scale_shift"), "{}", trace.kernel);
    let (clock, sm) = match dev.kind() {
        BackendKind::Cuda => (Clock::Nanoseconds, true),
        BackendKind::Simulator => (Clock::Steps, false),
    };
    assert_eq!(trace.clock, clock);
    let blocks: Vec<u32> = trace.blocks.iter().map(|b| b.block).collect();
    let want: Vec<u32> = (0..grid.block_count().min(4)).collect();
    assert_eq!(blocks, want, "{dev}: the first blocks");
    assert_well_ordered(&trace);
    for block in &trace.blocks {
        assert_eq!(block.sm.is_some(), sm, "{dev}: SMs are the GPU's");
        let names: Vec<&str> = block.roles.iter().map(|r| r.role.as_str()).collect();
        assert_eq!(names, ["load", "transform", "store"], "{dev}");
        let [load, transform, store] = &block.roles[..] else {
            unreachable!()
        };
        for label in labels(load, Activity::WaitFree) {
            assert!(label.contains("channel `load_tx/load_rx`"), "{label}");
        }
        for label in labels(transform, Activity::WaitFull) {
            assert!(
                label.contains("`recv()` on channel `load_tx/load_rx`"),
                "{label}"
            );
            assert!(label.contains("pipeline.rs:"), "{label}");
        }
        for label in labels(store, Activity::WaitFull) {
            assert!(
                label.contains("`recv()` on channel `out_tx/out_rx`"),
                "{label}"
            );
        }
        // Every tile is copied in by `load` and out by `store`.
        let copies_in = labels(load, Activity::Copy);
        assert!(
            !copies_in.is_empty(),
            "{dev}: no copy_from in block {}",
            block.block
        );
        for label in copies_in {
            assert!(
                label.starts_with(
                    "`copy_from` into the slot of `reserve()` on channel `load_tx/load_rx`"
                ),
                "{label}"
            );
        }
        for label in labels(store, Activity::Copy) {
            assert!(
                label.starts_with(
                    "`copy_to` out of the slot of `recv()` on channel `out_tx/out_rx`"
                ),
                "{label}"
            );
        }
        assert_eq!(
            labels(store, Activity::Copy).len(),
            labels(load, Activity::Copy).len(),
            "{dev}: as many copies out as in"
        );
        assert!(block.roles.iter().all(|r| r.dropped == 0));
    }
    // Some role waited somewhere in the first blocks (on the simulator, the schedule makes
    // them; on the GPU every wait is recorded).
    let waits = trace
        .blocks
        .iter()
        .flat_map(|b| &b.roles)
        .flat_map(|r| &r.spans)
        .filter(|s| s.activity.is_wait())
        .count();
    assert!(waits > 0, "{dev}: no wait at all");
    assert_chrome_json(&trace);
    assert_well_formed_svg(&trace.svg());
    let summary = trace.summary();
    assert_eq!(summary.len(), 3);
    assert!(summary.iter().all(|s| s.total > 0 && s.busy <= s.total));
}

#[on_each_device]
fn the_options_choose_the_traced_blocks(dev: Device) {
    let n = 5 * 8 * pipeline::pipeline::TILE;
    let x = dev.upload(&random_f32(n, 1)).unwrap();
    let mut y = dev.alloc::<f32>(n).unwrap();
    let grid = Grid::blocks(5);
    for (blocks, want) in [
        (TraceBlocks::All, vec![0, 1, 2, 3, 4]),
        (TraceBlocks::Every(2), vec![0, 2, 4]),
        (TraceBlocks::Every(64), vec![0]),
        (TraceBlocks::First(2), vec![0, 1]),
        (TraceBlocks::First(0), vec![]),
    ] {
        let trace = block_on(pipeline::pipeline::scale_shift::launch_traced(
            &dev,
            grid,
            (1.0, 0.0, &x, &mut y),
            TraceOptions::default().blocks(blocks),
        ))
        .into_result()
        .unwrap();
        let got: Vec<u32> = trace.blocks.iter().map(|b| b.block).collect();
        assert_eq!(got, want, "{dev}: {blocks:?}");
        assert_well_ordered(&trace);
    }
    let err = block_on(pipeline::pipeline::scale_shift::launch_traced(
        &dev,
        grid,
        (1.0, 0.0, &x, &mut y),
        TraceOptions::default().blocks(TraceBlocks::Every(0)),
    ));
    assert!(
        matches!(err.result, Err(Error::InvalidLaunch { .. })),
        "{dev}: {:?}",
        err.result
    );
    assert!(err.trace.blocks.is_empty());
}

#[on_each_device]
fn events_past_the_capacity_are_counted_as_dropped(dev: Device) {
    let n = 64 * pipeline::pipeline::TILE;
    let x = dev.upload(&random_f32(n, 2)).unwrap();
    let mut y = dev.alloc::<f32>(n).unwrap();
    let trace = block_on(pipeline::pipeline::scale_shift::launch_traced(
        &dev,
        Grid::blocks(1),
        (1.0, 0.0, &x, &mut y),
        TraceOptions::default()
            .blocks(TraceBlocks::All)
            .events_per_role(4),
    ))
    .into_result()
    .unwrap();
    assert_well_ordered(&trace);
    let load = &trace.blocks[0].roles[0];
    // 64 tiles: a copy each (its start and end), and the waits, are more than four events.
    assert!(
        load.dropped >= 2 * 64 - 4,
        "{dev}: {} dropped",
        load.dropped
    );
    // At most four events kept: two spans, and the run.
    assert!(load.spans.len() <= 3, "{dev}: {:?}", load.spans);
    assert!(trace.to_string().contains("events dropped"));
    // The run is whole: it ends after the last tile, whatever was dropped.
    let run = &load.spans[0];
    assert!(run.end > run.start, "{dev}: {run:?}");
}

#[on_each_device]
fn a_deadlocked_launch_returns_its_error_and_the_trace_up_to_it(dev: Device) {
    dev.set_watchdog(Some(Duration::from_millis(200)));
    let mut x = dev.alloc::<f32>(32).unwrap();
    let traced = block_on(deadlock::deadlock::cross::launch_traced(
        &dev,
        Grid::blocks(1),
        (false, &mut x),
        TraceOptions::default(),
    ));
    dev.set_watchdog(Some(Duration::from_secs(5)));
    assert!(
        matches!(traced.result, Err(Error::Deadlock { .. })),
        "{dev}: {:?}",
        traced.result
    );
    let trace = traced.trace;
    eprintln!("{dev}:\n{trace}");
    assert_well_ordered(&trace);
    assert_eq!(trace.blocks.len(), 1, "{dev}");
    let roles = &trace.blocks[0].roles;
    let names: Vec<&str> = roles.iter().map(|r| r.role.as_str()).collect();
    assert_eq!(names, ["echo", "echo_into"], "{dev}");
    // Each role waits for a full slot from the other until its run ends.
    for (role, channel) in roles.iter().zip(["ping_tx/ping_rx", "pong_tx/pong_rx"]) {
        let run = &role.spans[0];
        let last = role.spans.last().expect("a wait");
        assert_eq!(last.activity, Activity::WaitFull, "{dev}: {role:?}");
        assert_eq!(
            last.end, run.end,
            "{dev}: the wait lasts until the role stops"
        );
        assert!(
            last.label
                .contains(&format!("`recv()` on channel `{channel}`")),
            "{dev}: {}",
            last.label
        );
    }
    assert_well_formed_svg(&trace.svg());
}

#[on_each_device]
fn barriers_and_selects_are_waits(dev: Device) {
    dev.set_watchdog(Some(Duration::from_secs(5)));
    let mut out = dev.alloc::<u32>(2).unwrap();
    let trace = block_on(barriers::barriers::rounds::launch_traced(
        &dev,
        Grid::blocks(2),
        (20, &mut out),
        TraceOptions::default().blocks(TraceBlocks::All),
    ))
    .into_result()
    .unwrap();
    assert_well_ordered(&trace);
    let barrier_waits: Vec<&str> = trace
        .blocks
        .iter()
        .flat_map(|b| &b.roles)
        .flat_map(|r| labels(r, Activity::WaitBarrier))
        .collect();
    assert!(!barrier_waits.is_empty(), "{dev}: no barrier wait");
    for label in barrier_waits {
        assert!(label.contains("barriers.rs:"), "{dev}: {label}");
    }
    let mut out = dev.alloc::<u32>(5).unwrap();
    let trace = block_on(concurrency::selects::merge::launch_traced(
        &dev,
        Grid::blocks(1),
        (30, 40, &mut out),
        TraceOptions::default(),
    ))
    .into_result()
    .unwrap();
    assert_well_ordered(&trace);
    let merge = &trace.blocks[0].roles[2];
    assert_eq!(merge.role, "merge_both");
    let full = labels(merge, Activity::WaitFull);
    assert!(!full.is_empty(), "{dev}: the merging role never waited");
    for label in full {
        assert!(
            label.starts_with("`select!` over channels `tx_a/rx_a`, `tx_b/rx_b`"),
            "{dev}: {label}"
        );
    }
    let (a, b) = (&trace.blocks[0].roles[0], &trace.blocks[0].roles[1]);
    for label in labels(a, Activity::WaitFree)
        .iter()
        .chain(&labels(b, Activity::WaitFree))
    {
        assert!(label.contains("channel `tx_"), "{dev}: {label}");
    }
}

#[test]
fn the_simulator_traces_in_scheduler_steps_reproducibly() {
    let dev = Device::simulator_with(SimOptions::new(Schedule::Fixed));
    let n = 6 * pipeline::pipeline::TILE;
    let x = dev.upload(&random_f32(n, 3)).unwrap();
    let mut y = dev.alloc::<f32>(n).unwrap();
    let mut run = || {
        block_on(pipeline::pipeline::scale_shift::launch_traced(
            &dev,
            Grid::blocks(1),
            (1.0, 0.0, &x, &mut y),
            TraceOptions::default(),
        ))
        .into_result()
        .unwrap()
    };
    let (first, second) = (run(), run());
    assert_eq!(first, second, "the same schedule, the same trace");
    assert_eq!(first.clock, Clock::Steps);
    let roles = &first.blocks[0].roles;
    // The fixed schedule starts the roles in `join!` order, one step each.
    let starts: Vec<u64> = roles.iter().map(|r| r.spans[0].start).collect();
    assert_eq!(starts, [0, 1, 2]);
    // A plain launch of the same kernel is untouched by tracing.
    block_on(pipeline::pipeline::scale_shift::launch(
        &dev,
        Grid::blocks(1),
        (1.0, 0.0, &x, &mut y),
    ))
    .unwrap();
}

/// On the GPU, the traced saxpy computes what the untraced one does, on a default sample of a
/// grid of many blocks, and each traced block knows its SM and its time.
#[needs_gpu]
fn a_traced_saxpy_on_the_gpu_samples_one_block_in_64() {
    let dev = devices::gpu();
    let n = 1 << 24;
    let grid = saxpy::tile_grid(&dev, n);
    let xs = random_f32(n, 9);
    let ys = random_f32(n, 10);
    let x = dev.upload(&xs).unwrap();
    let (mut plain, mut traced) = (dev.upload(&ys).unwrap(), dev.upload(&ys).unwrap());
    block_on(saxpy::stream::saxpy::launch(
        &dev,
        grid,
        (1.5, &x, &mut plain),
    ))
    .unwrap();
    let trace = block_on(saxpy::stream::saxpy::launch_traced(
        &dev,
        grid,
        (1.5, &x, &mut traced),
        TraceOptions::default(),
    ))
    .into_result()
    .unwrap();
    assert_eq!(plain.download().unwrap(), traced.download().unwrap());
    let want = grid.block_count().div_ceil(64) as usize;
    assert_eq!(trace.blocks.len(), want);
    assert!(trace.blocks.iter().all(|b| b.block % 64 == 0));
    assert_well_ordered(&trace);
    let sms = dev.sm_count().unwrap();
    for b in &trace.blocks {
        assert!(b.sm.is_some_and(|sm| sm < sms), "{:?}", b.sm);
        let names: Vec<&str> = b.roles.iter().map(|r| r.role.as_str()).collect();
        assert_eq!(names, ["load", "update"]);
        // One tile per block: a reserve, a copy, the close; a receive and the end.
        assert!(labels(&b.roles[0], Activity::Copy).len() == 1);
    }
    let (start, end) = trace.extent();
    assert!(
        end > start && end - start < 10_000_000_000,
        "{start}..{end}"
    );
    assert_chrome_json(&trace);
    assert_well_formed_svg(&trace.svg());
}

#[needs_ptxas]
fn traced_kernels_assemble_with_ptxas() {
    let ptxas = gpu_async_compiler::ptxas::locate().expect("ptxas");
    let modules = [
        ("scale_shift", pipeline::pipeline::scale_shift::PTX_TRACED),
        ("saxpy", saxpy::stream::saxpy::PTX_TRACED),
        ("cross", deadlock::deadlock::cross::PTX_TRACED),
        ("rounds", barriers::barriers::rounds::PTX_TRACED),
        ("total", barriers::oneshots::total::PTX_TRACED),
        ("fan_out", barriers::broadcasts::fan_out::PTX_TRACED),
        ("merge", concurrency::selects::merge::PTX_TRACED),
        (
            "select_in_join",
            concurrency::selects::select_in_join::PTX_TRACED,
        ),
        ("three_tasks", concurrency::joins::three_tasks::PTX_TRACED),
        ("pipeline", budgets::budgets::pipeline::PTX_TRACED),
        ("shifted_copy", bulk::bulk::shifted_copy::PTX_TRACED),
        ("reduce", reductions::reductions::reduce::PTX_TRACED),
    ];
    for (name, ptx) in modules {
        assert!(
            ptx.contains("%globaltimer") && ptx.contains("%smid"),
            "{name}"
        );
        if let Err(log) = gpu_async_compiler::ptxas::assemble(&ptxas, name, ptx) {
            panic!("ptxas rejected the traced `{name}`:\n{log}");
        }
    }
    // The plain module does not trace.
    assert!(!pipeline::pipeline::scale_shift::PTX.contains("%smid"));
}
