//! Warp operations: `for_each_lane`, whose body runs once per item on one lane of a warp, with
//! the lanes of each warp meeting at `lane.shuffle(..).await`, `lane.ballot(..).await`,
//! `lane.sum(..).await` and the other warp operations of [`Lane`].
//!
//! On the GPU an item is one thread's iteration and a warp operation is one `shfl.sync`,
//! `vote.sync` or a butterfly of them. In the simulator the 32 lanes of a warp run as 32 futures
//! polled in turn: each warp operation suspends its lane until every lane of the warp has reached
//! it, then hands each lane its result. A lane that reaches a different warp operation, or ends
//! its iteration while others wait, is a divergence: the simulator panics with both places (the
//! compiler already rejects warp operations under conditions that can differ between lanes).

use std::cell::RefCell;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::par::{butterfly, ParIter, ParScalar};

/// The lanes of a warp.
pub const WARP_LANES: usize = 32;

impl<I: Iterator> ParIter<I> {
    /// Runs `op` once per item, item `i` on the role's thread `i % T` (`T` threads), so that
    /// the items of a warp's 32 lanes run together and can meet at warp operations
    /// ([`Lane`]): `x.par_iter().for_each_lane(async |lane, v| { let s = lane.sum(*v).await; })`.
    ///
    /// The item count must be a multiple of 32, so that every lane of a warp takes part in each
    /// step; any other count is a device panic, on the GPU as here.
    #[track_caller]
    pub fn for_each_lane<F>(self, op: F)
    where
        F: AsyncFn(Lane<'_>, I::Item),
    {
        let items: Vec<I::Item> = self.0.collect();
        if items.len() % WARP_LANES != 0 {
            panic!(
                "`for_each_lane` needs a multiple of 32 items, so that every lane of a warp takes part"
            );
        }
        let threads = crate::sim::current_role_threads().max(WARP_LANES);
        let mut items = items.into_iter();
        let mut first = 0usize;
        loop {
            let warp_items: Vec<I::Item> = items.by_ref().take(WARP_LANES).collect();
            if warp_items.is_empty() {
                break;
            }
            let warp = ((first % threads) / WARP_LANES) as u32;
            run_warp(&op, warp, warp_items);
            first += WARP_LANES;
        }
    }
}

/// The 32 lanes of one warp, one item each, polled in turn until all have finished; each round
/// where all unfinished lanes wait at the same warp operation resolves it.
fn run_warp<T, F: AsyncFn(Lane<'_>, T)>(op: &F, warp: u32, items: Vec<T>) {
    let exchange = Exchange::default();
    let mut lanes: Vec<Option<Pin<Box<dyn Future<Output = ()> + '_>>>> = items
        .into_iter()
        .enumerate()
        .map(|(id, item)| {
            let lane = Lane {
                id: id as u32,
                warp,
                exchange: &exchange,
            };
            Some(Box::pin(op(lane, item)) as Pin<Box<dyn Future<Output = ()> + '_>>)
        })
        .collect();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        for lane in lanes.iter_mut() {
            if let Some(f) = lane {
                if f.as_mut().poll(&mut cx).is_ready() {
                    *lane = None;
                }
            }
        }
        let waiting: Vec<usize> = (0..lanes.len()).filter(|&l| lanes[l].is_some()).collect();
        if waiting.is_empty() {
            return;
        }
        exchange.resolve(&waiting, lanes.len());
    }
}

/// What the lanes of a warp deposit at a warp operation, and what they take back.
#[derive(Default)]
struct Exchange {
    state: RefCell<ExchangeState>,
}

#[derive(Default)]
struct ExchangeState {
    /// Per lane: the operation it waits at and its operands.
    arrived: [Option<Arrival>; WARP_LANES],
    /// Per lane: the result of the last resolved operation, not yet taken.
    results: [Option<u64>; WARP_LANES],
}

#[derive(Clone, Copy)]
struct Arrival {
    /// The operation's name, for messages.
    name: &'static str,
    /// Where the lane's code calls it.
    site: &'static Location<'static>,
    /// The lane's value, as bits.
    value: u64,
    /// The lane's second operand (a lane index or offset), if any.
    operand: u32,
    /// Computes every lane's result from all lanes' values and operands.
    resolve: fn(&[u64; WARP_LANES], &[u32; WARP_LANES]) -> [u64; WARP_LANES],
}

impl Exchange {
    /// Every lane in `waiting` is suspended: if all `lanes` wait at the same operation, resolve
    /// it; otherwise the lanes diverged, which is a panic naming both places.
    fn resolve(&self, waiting: &[usize], lanes: usize) {
        let mut st = self.state.borrow_mut();
        let Some(first) = waiting.iter().find_map(|&l| st.arrived[l]) else {
            panic!("a `for_each_lane` body awaited something other than a warp operation");
        };
        let at = |a: &Arrival| format!("`lane.{}` at {}", a.name, a.site);
        if waiting.len() < lanes {
            let done: Vec<usize> = (0..lanes).filter(|l| !waiting.contains(l)).collect();
            panic!(
                "divergent warp operation: lanes {} wait at {} but lanes {} have ended their iteration; every lane of a warp must reach each warp operation",
                lane_list(waiting),
                at(&first),
                lane_list(&done)
            );
        }
        let mut values = [0u64; WARP_LANES];
        let mut operands = [0u32; WARP_LANES];
        for &l in waiting {
            let Some(a) = st.arrived[l] else {
                panic!("a `for_each_lane` body awaited something other than a warp operation");
            };
            if a.site != first.site || a.name != first.name {
                panic!(
                    "divergent warp operation: lane {} waits at {} while lane {} waits at {}; every lane of a warp must reach the same warp operations in the same order",
                    waiting[0],
                    at(&first),
                    l,
                    at(&a)
                );
            }
            values[l] = a.value;
            operands[l] = a.operand;
        }
        let results = (first.resolve)(&values, &operands);
        for &l in waiting {
            st.arrived[l] = None;
            st.results[l] = Some(results[l]);
        }
    }
}

/// `0-15, 20` for lane numbers.
fn lane_list(lanes: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lanes.len() {
        let mut j = i;
        while j + 1 < lanes.len() && lanes[j + 1] == lanes[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", lanes[i], lanes[j])
        } else {
            lanes[i].to_string()
        });
        i = j + 1;
    }
    out.join(", ")
}

/// One lane of a warp inside a [`ParIter::for_each_lane`] body: its position, and the warp
/// operations, each of which every lane of the warp must reach (await it where the conditions
/// leading to it are the same on all lanes).
pub struct Lane<'w> {
    id: u32,
    warp: u32,
    exchange: &'w Exchange,
}

impl std::fmt::Debug for Lane<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("id", &self.id)
            .field("warp", &self.warp)
            .finish()
    }
}

/// A value the lanes of a warp exchange: an integer or a float (`bool` through `as u32`).
pub trait LaneValue: Copy + sealed::Sealed {
    /// The value's bits.
    fn to_lane_bits(self) -> u64;
    /// The value of `bits` (as made by `to_lane_bits`).
    fn from_lane_bits(bits: u64) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! lane_value {
    (int: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl LaneValue for $t {
            fn to_lane_bits(self) -> u64 {
                self as u64
            }
            fn from_lane_bits(bits: u64) -> $t {
                bits as $t
            }
        }
    )*};
    (float: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl LaneValue for $t {
            fn to_lane_bits(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn from_lane_bits(bits: u64) -> $t {
                <$t>::from_bits(bits as _)
            }
        }
    )*};
}

lane_value!(int: i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
lane_value!(float: f32, f64);

impl sealed::Sealed for bool {}
impl LaneValue for bool {
    fn to_lane_bits(self) -> u64 {
        u64::from(self)
    }
    fn from_lane_bits(bits: u64) -> bool {
        bits != 0
    }
}

/// The source lane of each lane for one shuffle mode (`None`: the lane keeps its own value).
fn sources(operands: &[u32; WARP_LANES], source: fn(usize, u32) -> Option<usize>) -> [usize; 32] {
    std::array::from_fn(|l| source(l, operands[l]).unwrap_or(l))
}

fn shuffled(values: &[u64; WARP_LANES], from: [usize; WARP_LANES]) -> [u64; WARP_LANES] {
    std::array::from_fn(|l| values[from[l]])
}

fn shuffle_idx(values: &[u64; 32], ops: &[u32; 32]) -> [u64; 32] {
    shuffled(values, sources(ops, |_, src| Some((src % 32) as usize)))
}

fn shuffle_xor(values: &[u64; 32], ops: &[u32; 32]) -> [u64; 32] {
    shuffled(values, sources(ops, |l, m| Some(l ^ (m % 32) as usize)))
}

fn shuffle_up(values: &[u64; 32], ops: &[u32; 32]) -> [u64; 32] {
    shuffled(
        values,
        sources(ops, |l, d| l.checked_sub((d % 32) as usize)),
    )
}

fn shuffle_down(values: &[u64; 32], ops: &[u32; 32]) -> [u64; 32] {
    shuffled(
        values,
        sources(ops, |l, d| Some(l + (d % 32) as usize).filter(|&s| s < 32)),
    )
}

fn ballot(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    let mask = (0..32).fold(0u64, |m, l| m | (u64::from(values[l] != 0) << l));
    [mask; 32]
}

fn all(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    [u64::from(values.iter().all(|&v| v != 0)); 32]
}

fn any(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    [u64::from(values.iter().any(|&v| v != 0)); 32]
}

fn warp_fold<T: LaneValue>(values: &[u64; 32], op: impl Fn(T, T) -> T) -> [u64; 32] {
    let lanes: [T; 32] = std::array::from_fn(|l| T::from_lane_bits(values[l]));
    [butterfly(lanes, op).to_lane_bits(); 32]
}

fn warp_sum<T: LaneValue + ParScalar>(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    warp_fold::<T>(values, T::par_add)
}

fn warp_min<T: LaneValue + ParScalar>(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    warp_fold::<T>(values, T::par_min)
}

fn warp_max<T: LaneValue + ParScalar>(values: &[u64; 32], _: &[u32; 32]) -> [u64; 32] {
    warp_fold::<T>(values, T::par_max)
}

impl<'w> Lane<'w> {
    /// The lane's number in its warp, `0..32`.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The warp's number in the role, from 0.
    pub fn warp(&self) -> u32 {
        self.warp
    }

    #[track_caller]
    fn meet<T: LaneValue, R: LaneValue>(
        &self,
        name: &'static str,
        value: T,
        operand: u32,
        resolve: fn(&[u64; WARP_LANES], &[u32; WARP_LANES]) -> [u64; WARP_LANES],
    ) -> WarpOp<'w, R> {
        WarpOp {
            exchange: self.exchange,
            lane: self.id as usize,
            arrival: Some(Arrival {
                name,
                site: Location::caller(),
                value: value.to_lane_bits(),
                operand,
                resolve,
            }),
            out: std::marker::PhantomData,
        }
    }

    /// The value of lane `src % 32`: one `shfl.sync.idx`.
    #[track_caller]
    pub fn shuffle<T: LaneValue>(&self, value: T, src: u32) -> WarpOp<'w, T> {
        self.meet("shuffle", value, src, shuffle_idx)
    }

    /// The value of lane `id ^ (mask % 32)`: one `shfl.sync.bfly`.
    #[track_caller]
    pub fn shuffle_xor<T: LaneValue>(&self, value: T, mask: u32) -> WarpOp<'w, T> {
        self.meet("shuffle_xor", value, mask, shuffle_xor)
    }

    /// The value of lane `id - delta % 32`, or the lane's own value when there is no such lane:
    /// one `shfl.sync.up`.
    #[track_caller]
    pub fn shuffle_up<T: LaneValue>(&self, value: T, delta: u32) -> WarpOp<'w, T> {
        self.meet("shuffle_up", value, delta, shuffle_up)
    }

    /// The value of lane `id + delta % 32`, or the lane's own value when there is no such lane:
    /// one `shfl.sync.down`.
    #[track_caller]
    pub fn shuffle_down<T: LaneValue>(&self, value: T, delta: u32) -> WarpOp<'w, T> {
        self.meet("shuffle_down", value, delta, shuffle_down)
    }

    /// Bit `l` set when `pred` holds on lane `l`: `vote.sync.ballot`.
    #[track_caller]
    pub fn ballot(&self, pred: bool) -> WarpOp<'w, u32> {
        self.meet("ballot", pred, 0, ballot)
    }

    /// Whether `pred` holds on every lane: `vote.sync.all`.
    #[track_caller]
    pub fn all(&self, pred: bool) -> WarpOp<'w, bool> {
        self.meet("all", pred, 0, all)
    }

    /// Whether `pred` holds on some lane: `vote.sync.any`.
    #[track_caller]
    pub fn any(&self, pred: bool) -> WarpOp<'w, bool> {
        self.meet("any", pred, 0, any)
    }

    /// The sum of the 32 lanes' values (integers wrap), in the butterfly order of the
    /// reductions: the same bits on every lane and on both backends.
    #[track_caller]
    pub fn sum<T: LaneValue + ParScalar>(&self, value: T) -> WarpOp<'w, T> {
        self.meet("sum", value, 0, warp_sum::<T>)
    }

    /// The smallest of the 32 lanes' values (floats skip NaNs, as `f32::min` does).
    #[track_caller]
    pub fn min<T: LaneValue + ParScalar>(&self, value: T) -> WarpOp<'w, T> {
        self.meet("min", value, 0, warp_min::<T>)
    }

    /// The largest of the 32 lanes' values (floats skip NaNs, as `f32::max` does).
    #[track_caller]
    pub fn max<T: LaneValue + ParScalar>(&self, value: T) -> WarpOp<'w, T> {
        self.meet("max", value, 0, warp_max::<T>)
    }
}

/// A warp operation in progress: awaiting it suspends the lane until every lane of the warp has
/// reached it.
#[must_use = "a warp operation does nothing unless awaited"]
pub struct WarpOp<'w, R> {
    exchange: &'w Exchange,
    lane: usize,
    arrival: Option<Arrival>,
    out: std::marker::PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for WarpOp<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarpOp").field("lane", &self.lane).finish()
    }
}

impl<R: LaneValue> Future for WarpOp<'_, R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        let mut st = this.exchange.state.borrow_mut();
        if let Some(arrival) = this.arrival.take() {
            st.arrived[this.lane] = Some(arrival);
            return Poll::Pending;
        }
        match st.results[this.lane].take() {
            Some(bits) => Poll::Ready(R::from_lane_bits(bits)),
            None => Poll::Pending,
        }
    }
}
