use super::*;

fn span(activity: Activity, start: u64, end: u64, label: &str) -> Span {
    Span {
        activity,
        start,
        end,
        label: label.to_string(),
    }
}

/// A producer and a consumer of one block, with a label that needs escaping.
fn sample() -> Trace {
    Trace {
        kernel: "m::k<\"x\">",
        clock: Clock::Nanoseconds,
        blocks: vec![BlockTimeline {
            block: 3,
            sm: Some(17),
            roles: vec![
                RoleTimeline {
                    role: "load".to_string(),
                    spans: vec![
                        span(Activity::Run, 1000, 2000, ""),
                        span(
                            Activity::WaitFree,
                            1200,
                            1500,
                            "`reserve()` on `tx/rx` & co",
                        ),
                        span(Activity::Copy, 1500, 1700, "copy_from"),
                    ],
                    dropped: 0,
                },
                RoleTimeline {
                    role: "store".to_string(),
                    spans: vec![
                        span(Activity::Run, 1000, 2100, ""),
                        span(Activity::WaitFull, 1000, 1600, "`recv()` on `tx/rx`"),
                    ],
                    dropped: 2,
                },
            ],
        }],
    }
}

#[test]
fn the_summary_splits_each_run_into_busy_and_waiting() {
    let s = sample().summary();
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0].role.as_str(), s[0].total, s[0].busy),
        ("load", 1000, 700)
    );
    assert_eq!((s[0].waiting_free, s[0].in_copies), (300, 200));
    assert_eq!((s[1].total, s[1].busy, s[1].waiting_full), (1100, 500, 600));
    assert_eq!(s[1].dropped, 2);
    assert_eq!(sample().extent(), (1000, 2100));
    let text = sample().to_string();
    assert!(
        text.contains("load") && text.contains("70.0%") && text.contains("(2 events dropped)"),
        "{text}"
    );
}

#[test]
fn the_chrome_trace_is_json_with_one_process_per_block_and_one_thread_per_role() {
    let json = sample().chrome_json();
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), 5);
    assert!(events
        .iter()
        .any(|e| e["name"] == "process_name" && e["args"]["name"] == "block 3 (SM 17)"));
    let store = events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == "store")
        .expect("a thread per role");
    assert_eq!(store["tid"], 1);
    // Microseconds from the trace's start: the consumer's wait starts at 0 and lasts 0.6 us.
    let wait = complete
        .iter()
        .find(|e| e["cat"] == "waiting for a full slot")
        .unwrap();
    assert_eq!(
        (wait["ts"].as_f64(), wait["dur"].as_f64()),
        (Some(0.0), Some(0.6))
    );
    assert_eq!(v["otherData"]["kernel"], "m::k<\"x\">");
}

/// Checks that `svg` is well-formed XML as far as its tags go: every element closed in order,
/// quoted attributes, no stray `<`, `>` or `&` in text.
fn assert_well_formed(svg: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        assert!(!text.contains('>'), "stray `>` in text {text:?}");
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
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "</{name}> closes another element");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().expect("a tag name"));
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed elements {open:?}");
}

#[test]
fn the_svg_is_well_formed_with_a_bar_per_span_and_the_summary() {
    let svg = sample().svg();
    assert_well_formed(svg.trim_end());
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    // A background, five spans, six legend swatches.
    assert_eq!(svg.matches("<rect ").count(), 1 + 5 + 6);
    for needle in [
        "b3 sm17 load",
        "waiting for a free slot",
        "&amp; co",
        "70.0%",
    ] {
        assert!(svg.contains(needle), "missing {needle:?}");
    }
    assert!(!svg.contains("<script"));
}

#[test]
fn an_empty_trace_still_draws() {
    let empty = Trace {
        kernel: "m::k",
        clock: Clock::Steps,
        blocks: Vec::new(),
    };
    assert_well_formed(empty.svg().trim_end());
    let v: serde_json::Value = serde_json::from_str(&empty.chrome_json()).unwrap();
    assert_eq!(v["traceEvents"].as_array().map(Vec::len), Some(0));
    assert!(empty.summary().is_empty());
}

#[test]
fn the_svg_draws_the_first_blocks_and_sums_them_all() {
    let mut trace = sample();
    let one = trace.blocks[0].clone();
    trace.blocks = (0..40)
        .map(|b| BlockTimeline {
            block: b,
            ..one.clone()
        })
        .collect();
    let svg = trace.svg();
    assert_well_formed(svg.trim_end());
    assert!(svg.contains("40 traced block(s), ns; the first 16 drawn, all summed"));
    assert!(svg.contains("b15 sm17 store") && !svg.contains("b16 sm17"));
    assert!(svg.contains(">200 ns<"));
    // Ticks of whole microseconds are labelled in microseconds.
    assert_eq!(svg::tick_label(Clock::Nanoseconds, 3000, 1000), "3 µs");
    assert_eq!(svg::tick_label(Clock::Steps, 3000, 1000), "3000");
    let total = trace.summary()[0].total;
    assert_eq!(total, 40 * 1000);
    assert!(svg.contains("40000"));
}
