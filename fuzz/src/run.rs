//! Running the compiler on one input: `expand` under `catch_unwind`, on a thread of a known stack
//! size, with a time budget, and the checks of its output.

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Once;
use std::thread;
use std::time::{Duration, Instant};

use proc_macro2::TokenStream;

/// The stack of the thread that expands: rustc's main thread has 8 MiB, and a proc macro runs on
/// it.
pub const STACK: usize = 8 * 1024 * 1024;

/// What is wrong with an expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// `expand` panicked, with this message.
    Panic(String),
    /// The output contains "internal compiler error".
    InternalError(String),
    /// The input is an item (as rustc gives the attribute) but the output is not a Rust file,
    /// with syn's message.
    Unparsable(String),
    /// The expansion took longer than the budget (the expanding thread's CPU time).
    Slow(Duration),
}

impl Finding {
    /// A short name of the kind of finding.
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::Panic(_) => "panic",
            Finding::InternalError(_) => "internal-error",
            Finding::Unparsable(_) => "unparsable",
            Finding::Slow(_) => "slow",
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Panic(m) => write!(f, "panic: {m}"),
            Finding::InternalError(m) => write!(f, "internal compiler error: {m}"),
            Finding::Unparsable(m) => write!(f, "the expansion is not a Rust file: {m}"),
            Finding::Slow(d) => write!(f, "the expansion took {:.3} s", d.as_secs_f64()),
        }
    }
}

/// The result of expanding one input.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How long `expand` took.
    pub elapsed: Duration,
    /// The compile errors in the expansion.
    pub errors: usize,
    /// What is wrong, if anything.
    pub finding: Option<Finding>,
    /// The messages of the compile errors.
    pub messages: Vec<String>,
}

thread_local! {
    static PANIC_MESSAGE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs a panic hook that keeps the message of a panic on an expanding thread instead of
/// printing it (other threads' panics print as usual).
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let expanding = thread::current()
                .name()
                .is_some_and(|n| n.starts_with("gpu-async-fuzz"));
            if expanding {
                let location = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let payload = info.payload();
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_string());
                PANIC_MESSAGE.with(|m| *m.borrow_mut() = Some(format!("{message}{location}")));
            } else {
                default(info);
            }
        }));
    });
}

/// Expands `module` (the tokens the attribute is given) on the current thread and checks the
/// output; a panic is caught. `budget` is the time over which the expansion is a finding.
pub fn expand_checked(module: TokenStream, budget: Duration) -> Outcome {
    quiet_panics();
    // rustc gives the attribute an item; for tokens that are not one, the expansion re-emits
    // them after the error, and need not parse.
    let is_item = is_item(&module);
    let start = Instant::now();
    let cpu_start = thread_cpu_time();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        gpu_async_compiler::expand(TokenStream::new(), module)
    }));
    let elapsed = start.elapsed();
    // The budget is on the thread's CPU time where it can be read: the wall clock of a campaign
    // run at a low priority also counts the machine's other work.
    let spent = match (cpu_start, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => elapsed,
    };
    let output = match result {
        Ok(out) => out,
        Err(_) => {
            let message = PANIC_MESSAGE
                .with(|m| m.borrow_mut().take())
                .unwrap_or_else(|| "(no message)".to_string());
            return Outcome {
                elapsed,
                errors: 0,
                finding: Some(Finding::Panic(message)),
                messages: Vec::new(),
            };
        }
    };
    let text = output.to_string();
    let messages = error_messages(&output);
    let errors = messages.len();
    let finding = if let Some(at) = text.find("internal compiler error") {
        let end = text[at..].find('"').map_or(text.len(), |e| at + e);
        Some(Finding::InternalError(text[at..end].to_string()))
    } else if let Some(e) = is_item
        .then(|| syn::parse2::<syn::File>(output).err())
        .flatten()
    {
        Some(Finding::Unparsable(e.to_string()))
    } else if spent > budget {
        Some(Finding::Slow(spent))
    } else {
        None
    };
    Outcome {
        elapsed,
        errors,
        finding,
        messages,
    }
}

/// Whether `tokens` are an item, as rustc gives the attribute. Tokens nested too deep for syn's
/// parser on this thread (the expansion answers them without parsing) are parsed on a thread of
/// a larger stack.
fn is_item(tokens: &TokenStream) -> bool {
    if gpu_async_compiler::parse::too_deep(tokens).is_none() {
        return syn::parse2::<syn::Item>(tokens.clone()).is_ok();
    }
    // `TokenStream`s cannot cross threads: their text does.
    let text = tokens.to_string();
    thread::Builder::new()
        .stack_size(crate::GENERATOR_STACK)
        .spawn(move || {
            text.parse::<TokenStream>()
                .is_ok_and(|t| syn::parse2::<syn::Item>(t).is_ok())
        })
        .expect("spawn the parsing thread")
        .join()
        .unwrap_or(false)
}

/// The CPU time the calling thread has used, from `/proc/thread-self/stat` (Linux; `None`
/// elsewhere), to the 10 ms of a clock tick.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The fields after the command's name, which is in parentheses and may hold spaces: the
    // state, then the others; user and system time are fields 14 and 15 of the line.
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux counts them in USER_HZ, 100 a second.
    Some(Duration::from_millis(ticks * 10))
}

/// The messages of the `compile_error!`s at the top level of an expansion.
fn error_messages(output: &TokenStream) -> Vec<String> {
    let mut messages = Vec::new();
    let mut saw_compile_error = false;
    for tt in output.clone() {
        match tt {
            proc_macro2::TokenTree::Ident(i) if i == "compile_error" => saw_compile_error = true,
            proc_macro2::TokenTree::Group(g) if saw_compile_error => {
                saw_compile_error = false;
                let message = g
                    .stream()
                    .into_iter()
                    .next()
                    .and_then(|t| syn::parse2::<syn::LitStr>(t.into()).ok())
                    .map_or_else(|| g.stream().to_string(), |l| l.value());
                messages.push(message);
            }
            _ => {}
        }
    }
    messages
}

/// Expands the module in `source` (Rust text: `mod name { .. }`, without `#[gpu_async]`) on a
/// thread of `stack` bytes. A source that does not lex (unbalanced delimiters) is not an input
/// the compiler can be given, and is `None`.
pub fn expand_source(source: &str, budget: Duration, stack: usize) -> Option<Outcome> {
    let source = source.to_string();
    let handle = thread::Builder::new()
        .name("gpu-async-fuzz-expand".to_string())
        .stack_size(stack)
        // `TokenStream`s cannot cross threads: the expanding thread lexes.
        .spawn(move || {
            let tokens: TokenStream = source.parse().ok()?;
            Some(expand_checked(tokens, budget))
        })
        .expect("spawn the expanding thread");
    handle.join().expect("the expansion's panics are caught")
}

/// A thread that expands inputs one after another, of `STACK` bytes, that is given up on (and
/// replaced) when an input runs past its time limit.
pub struct Expander {
    jobs: mpsc::Sender<(String, Duration)>,
    results: mpsc::Receiver<Option<Outcome>>,
    stack: usize,
    /// Threads given up on, still running an input.
    pub abandoned: usize,
}

impl Expander {
    /// A new expanding thread of `stack` bytes.
    pub fn new(stack: usize) -> Self {
        let (jobs, job_rx) = mpsc::channel::<(String, Duration)>();
        let (result_tx, results) = mpsc::channel();
        thread::Builder::new()
            .name("gpu-async-fuzz-worker".to_string())
            .stack_size(stack)
            .spawn(move || {
                while let Ok((source, budget)) = job_rx.recv() {
                    // `TokenStream`s cannot cross threads: the worker lexes.
                    let outcome = source
                        .parse::<TokenStream>()
                        .ok()
                        .map(|tokens| expand_checked(tokens, budget));
                    // Every lexed text stays in the thread's source map (for spans' locations):
                    // with no token of this input left, forget them, or a campaign of millions of
                    // inputs fills the memory and overflows the map's 32-bit positions.
                    proc_macro2::extra::invalidate_current_thread_spans();
                    if result_tx.send(outcome).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the expanding thread");
        Expander {
            jobs,
            results,
            stack,
            abandoned: 0,
        }
    }

    /// Expands `source`; `None` if it does not lex. Waits at most `limit` (at least `budget`):
    /// past it, the input is `Slow` and the thread is replaced.
    pub fn run(&mut self, source: &str, budget: Duration, limit: Duration) -> Option<Outcome> {
        self.jobs
            .send((source.to_string(), budget))
            .expect("the expanding thread is alive");
        match self.results.recv_timeout(limit.max(budget)) {
            Ok(outcome) => outcome,
            Err(_) => {
                self.abandoned += 1;
                *self = Expander {
                    abandoned: self.abandoned,
                    ..Expander::new(self.stack)
                };
                Some(Outcome {
                    elapsed: limit.max(budget),
                    errors: 0,
                    finding: Some(Finding::Slow(limit.max(budget))),
                    messages: Vec::new(),
                })
            }
        }
    }
}
