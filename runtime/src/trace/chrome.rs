//! The Chrome trace-event format: a JSON object whose `traceEvents` are, per traced block, a
//! process-name metadata event, per role a thread-name event, and one complete (`"ph": "X"`)
//! event per span. Times are microseconds in that format: nanoseconds are divided by 1000,
//! simulator steps are written as if each were a microsecond.

use std::fmt::Write;

use super::{Activity, Clock, Trace};

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A time in the format's microseconds.
fn micros(clock: Clock, t: u64) -> String {
    match clock {
        Clock::Nanoseconds => format!("{}.{:03}", t / 1000, t % 1000),
        Clock::Steps => t.to_string(),
    }
}

pub(super) fn write(trace: &Trace) -> String {
    let (origin, _) = trace.extent();
    let mut events: Vec<String> = Vec::new();
    for (pid, block) in trace.blocks.iter().enumerate() {
        let name = match block.sm {
            Some(sm) => format!("block {} (SM {sm})", block.block),
            None => format!("block {}", block.block),
        };
        events.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
            json_string(&name)
        ));
        for (tid, row) in block.roles.iter().enumerate() {
            events.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_string(&row.role)
            ));
            for span in &row.spans {
                let name = match span.activity {
                    Activity::Run => row.role.clone(),
                    other => other.name().to_string(),
                };
                events.push(format!(
                    "{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"at\":{}}}}}",
                    json_string(&name),
                    json_string(span.activity.name()),
                    micros(trace.clock, span.start - origin),
                    micros(trace.clock, span.end.saturating_sub(span.start)),
                    json_string(&span.label)
                ));
            }
        }
    }
    format!(
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"kernel\":{},\"clock\":{}}},\"traceEvents\":[\n{}\n]}}\n",
        json_string(trace.kernel),
        json_string(trace.clock.unit()),
        events.join(",\n")
    )
}
