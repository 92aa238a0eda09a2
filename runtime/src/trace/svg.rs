//! The SVG timeline: a row per role of each traced block (of the first [`MAX_BLOCKS`]: a GPU
//! trace may sample hundreds), its run as a light bar and every other span as a coloured bar over
//! it, a time axis with round ticks, a legend, and the per-role summary of every traced block as
//! text under the rows. Self-contained: no script, no fonts or styles to fetch.

use std::fmt::Write;

use super::{escape_xml, percent, Activity, Clock, Trace};

const WIDTH: f64 = 1100.0;
/// Left margin for the rows' names.
const NAMES: f64 = 190.0;
const ROW: f64 = 22.0;
const TOP: f64 = 46.0;
/// The blocks drawn: the first ones of the trace.
pub(super) const MAX_BLOCKS: usize = 16;

fn colour(a: Activity) -> &'static str {
    match a {
        Activity::Run => "#dfe8f4",
        Activity::WaitFull => "#e8a33c",
        Activity::WaitFree => "#c8553d",
        Activity::WaitBarrier => "#8a6bb1",
        Activity::Copy => "#3f8f5f",
        Activity::Mma => "#2f6db3",
    }
}

/// A round step for about 8 ticks over `span`.
fn tick_step(span: u64) -> u64 {
    let raw = (span / 8).max(1);
    let pow = 10u64.pow(raw.ilog10());
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| m * pow)
        .find(|&s| s >= raw)
        .unwrap_or(10 * pow)
}

/// The label of tick `t` (from the trace's start) when ticks are `step` apart: microseconds for
/// nanosecond times whose ticks are whole microseconds.
pub(super) fn tick_label(clock: Clock, t: u64, step: u64) -> String {
    match clock {
        Clock::Nanoseconds if step % 1000 == 0 => format!("{} µs", t / 1000),
        Clock::Nanoseconds => format!("{t} ns"),
        Clock::Steps => t.to_string(),
    }
}

pub(super) fn write(full: &Trace) -> String {
    let shown = full.blocks.len().min(MAX_BLOCKS);
    let trace = &Trace {
        kernel: full.kernel,
        clock: full.clock,
        blocks: full.blocks[..shown].to_vec(),
    };
    let (start, end) = trace.extent();
    let span = (end - start).max(1);
    let scale = (WIDTH - NAMES - 20.0) / span as f64;
    let x = |t: u64| NAMES + (t.saturating_sub(start)) as f64 * scale;
    let rows: usize = trace.blocks.iter().map(|b| b.roles.len()).sum();
    let summary = full.summary();
    let legend_y = TOP + rows as f64 * ROW + 34.0;
    let height = legend_y + 30.0 + (summary.len() as f64 + 1.0) * 16.0 + 10.0;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"11\">\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{} ({} traced block(s), {}{})</text>",
        escape_xml(trace.kernel),
        full.blocks.len(),
        trace.clock.unit(),
        if shown < full.blocks.len() {
            format!("; the first {shown} drawn, all summed")
        } else {
            String::new()
        }
    );
    // The axis.
    let step = tick_step(span);
    let mut t = 0;
    while t <= span {
        let px = NAMES + t as f64 * scale;
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"#ddd\"/>\
             <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
            TOP - 6.0,
            TOP + rows as f64 * ROW,
            TOP - 10.0,
            tick_label(trace.clock, t, step)
        );
        t += step;
    }
    let mut y = TOP;
    for (i, block) in trace.blocks.iter().enumerate() {
        if i > 0 {
            // A line between blocks.
            let _ = write!(
                out,
                "<line x1=\"10\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#bbb\"/>",
                WIDTH - 10.0
            );
        }
        for row in &block.roles {
            let name = match block.sm {
                Some(sm) => format!("b{} sm{} {}", block.block, sm, row.role),
                None => format!("b{} {}", block.block, row.role),
            };
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                NAMES - 6.0,
                y + ROW * 0.65,
                escape_xml(&name)
            );
            let mut spans: Vec<_> = row.spans.iter().collect();
            // Runs first, so the spans inside them are drawn over them.
            spans.sort_by_key(|s| (s.activity != Activity::Run, s.start));
            for s in spans {
                let (x0, x1) = (x(s.start), x(s.end.max(s.start)));
                let (h, dy) = if s.activity == Activity::Run {
                    (ROW - 4.0, 2.0)
                } else {
                    (ROW - 8.0, 4.0)
                };
                let _ = write!(
                    out,
                    "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{h}\" fill=\"{}\">\
                     <title>{}: {} to {} {} {}</title></rect>",
                    y + dy,
                    (x1 - x0).max(0.5),
                    colour(s.activity),
                    escape_xml(s.activity.name()),
                    s.start - start,
                    s.end - start,
                    trace.clock.unit(),
                    escape_xml(&s.label)
                );
            }
            y += ROW;
        }
    }
    // The legend.
    let mut lx = NAMES;
    for a in [
        Activity::Run,
        Activity::WaitFull,
        Activity::WaitFree,
        Activity::WaitBarrier,
        Activity::Copy,
        Activity::Mma,
    ] {
        let _ = write!(
            out,
            "<rect x=\"{lx:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
            legend_y - 10.0,
            colour(a),
            lx + 16.0,
            legend_y,
            a.name()
        );
        lx += 22.0 + a.name().len() as f64 * 6.0;
    }
    // The summary.
    let mut sy = legend_y + 28.0;
    let _ = write!(
        out,
        "<text x=\"10\" y=\"{sy:.0}\" font-family=\"monospace\" xml:space=\"preserve\">{}</text>",
        escape_xml(&format!(
            "{:<20} {:>12} {:>8} {:>10} {:>10} {:>8} {:>10}",
            "role", "total", "busy", "wait full", "wait free", "barrier", "in copies"
        ))
    );
    for s in &summary {
        sy += 16.0;
        let _ = write!(
            out,
            "<text x=\"10\" y=\"{sy:.0}\" font-family=\"monospace\" xml:space=\"preserve\">{}</text>",
            escape_xml(&format!(
                "{:<20} {:>12} {:>8} {:>10} {:>10} {:>8} {:>10}",
                s.role,
                s.total,
                percent(s.busy, s.total),
                percent(s.waiting_full, s.total),
                percent(s.waiting_free, s.total),
                percent(s.waiting_barrier, s.total),
                percent(s.in_copies, s.total)
            ))
        );
    }
    out.push_str("</svg>\n");
    out
}
