//! Tracing: what a traced kernel takes and writes, and what the runtime decodes.
//!
//! A kernel compiled with tracing (the second PTX module the compiler writes for each kernel)
//! takes the [`TraceParam`]s after the [`HiddenParam`](crate::HiddenParam)s. A block is traced
//! when its index `b` is a multiple of [`TraceParam::Stride`] and `b / stride` is below
//! [`TraceParam::Slots`]; `b / stride` is its *slot*, which the kernel computes without a
//! division, as `(b * magic) >> shift` ([`Divisor`]). Each traced block writes, per role, one
//! *region* of the trace buffer ([`TraceParam::Buffer`]): region `slot * roles + role`, each
//! [`region_bytes`] long: a header of [`HEADER_BYTES`] then [`TraceParam::Capacity`] records of
//! [`RECORD_BYTES`].
//!
//! Only the role's first thread writes. At the role's start it writes the header: a count of 0,
//! its block, its SM, the launch's [`TraceParam::Tag`], its start time and an end time of 0; then
//! one record per [`TraceEvent`] while there is room; at its end (or when the kernel aborts) the
//! header's count of the events it had, so that `count - capacity` events, if positive, were
//! dropped, and its end time. The tag tells the runtime which regions this launch wrote: the
//! buffer is not cleared before the launch, and a region whose tag is not the launch's is one no
//! role wrote (a block that never started). An end time of 0 is a role whose first thread
//! stopped without reaching its end (a thread that panicked and exited), whose count is then 0.
//! Times are `%globaltimer` nanoseconds.

/// A parameter a traced kernel takes after the [`HiddenParam`](crate::HiddenParam)s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceParam {
    /// The device address of the trace buffer (`u64`).
    Buffer,
    /// The [`Divisor::magic`] of the stride (`u64`).
    Magic,
    /// The [`Divisor::shift`] of the stride (`u32`).
    Shift,
    /// Every `stride`-th block is traced (`u32`, at least 1).
    Stride,
    /// How many blocks are traced at most: the buffer's slots (`u32`).
    Slots,
    /// Records per region: the events one role of one block can keep (`u32`).
    Capacity,
    /// This launch's tag, written in every header it writes (`u32`, never 0).
    Tag,
}

impl TraceParam {
    /// The trace parameters, in the order they follow the hidden ones.
    pub const ALL: [TraceParam; 7] = [
        TraceParam::Buffer,
        TraceParam::Magic,
        TraceParam::Shift,
        TraceParam::Stride,
        TraceParam::Slots,
        TraceParam::Capacity,
        TraceParam::Tag,
    ];

    /// The PTX type of the parameter.
    pub const fn ptx_type(self) -> &'static str {
        match self {
            TraceParam::Buffer | TraceParam::Magic => "u64",
            TraceParam::Shift
            | TraceParam::Stride
            | TraceParam::Slots
            | TraceParam::Capacity
            | TraceParam::Tag => "u32",
        }
    }

    /// Its position among the trace parameters.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The number of trace parameters.
pub const TRACE_PARAMS: usize = TraceParam::ALL.len();

/// Division of a block index by the stride as a multiplication: `b / stride == (b * magic) >>
/// shift` for every `b < 2^31` (a grid has fewer blocks), with `magic < 2^33` so that the product
/// fits in 64 bits. An integer division by a register is some twenty instructions on the GPU,
/// which every warp of every block would run at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Divisor {
    /// The multiplier.
    pub magic: u64,
    /// The right shift of the product.
    pub shift: u32,
}

impl Divisor {
    /// The divisor `d` (at least 1): with `l = ceil(log2 d)`, `shift = 31 + l` and `magic =
    /// 2^shift / d + 1`, whose error over `b < 2^31` stays below one (Granlund and Montgomery,
    /// "Division by invariant integers using multiplication", 1994, theorem 4.2).
    pub const fn new(d: u32) -> Divisor {
        let d = if d == 0 { 1 } else { d };
        let l = 32 - (d - 1).leading_zeros();
        let shift = 31 + l;
        Divisor {
            magic: (1u64 << shift) / d as u64 + 1,
            shift,
        }
    }

    /// `b / d` as the kernel computes it.
    pub const fn divide(self, b: u32) -> u32 {
        ((b as u64 * self.magic) >> self.shift) as u32
    }
}

/// Bytes of a region's header: four `u32` words, then two `u64`s.
pub const HEADER_BYTES: u32 = 32;
/// Header word: the events the role had (written at its end, 0 until then).
pub const HEADER_COUNT: usize = 0;
/// Header word: the block's index (`%ctaid.x`).
pub const HEADER_BLOCK: usize = 1;
/// Header word: the SM the block ran on (`%smid`).
pub const HEADER_SM: usize = 2;
/// Header word: the launch's [`TraceParam::Tag`].
pub const HEADER_TAG: usize = 3;
/// Header word: the role's start time, a `u64` (words 4 and 5, little endian).
pub const HEADER_START: usize = 4;
/// Header word: the role's end time, a `u64` (words 6 and 7), 0 until it ends.
pub const HEADER_END: usize = 6;

/// Bytes of one record: the time, a `u64` of `%globaltimer` nanoseconds (words 0 and 1, little
/// endian), then the [`TraceEvent`] code (word [`RECORD_EVENT`]) and its argument (word
/// [`RECORD_ARG`]).
pub const RECORD_BYTES: u32 = 16;
/// Record word: the [`TraceEvent`] code.
pub const RECORD_EVENT: usize = 2;
/// Record word: the event's argument (see [`TraceEvent`]).
pub const RECORD_ARG: usize = 3;

/// The argument of an event that concerns no site.
pub const NO_SITE: u32 = u32::MAX;

/// Bytes of one region: a header and `capacity` records.
pub const fn region_bytes(capacity: u32) -> u64 {
    HEADER_BYTES as u64 + capacity as u64 * RECORD_BYTES as u64
}

/// The byte offset of the region of role `role` (of `roles`) in slot `slot`.
pub const fn region_offset(slot: u32, roles: u32, role: u32, capacity: u32) -> u64 {
    (slot as u64 * roles as u64 + role as u64) * region_bytes(capacity)
}

/// What a record says happened. The argument of a wait's events is the index of its site in the
/// kernel's sites; that of a copy's events the site of the wait that took the copy's slot
/// (its `reserve` or `recv`), or [`NO_SITE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    /// A wait for a full slot starts: a `recv` or a `select!`.
    WaitFull = 1,
    /// A wait for a free slot starts: a `reserve` or a close.
    WaitFree = 2,
    /// A wait at a barrier starts: a barrier between roles, a one-shot value, the role's own.
    WaitBarrier = 3,
    /// The wait at the site in the argument ends.
    WaitEnd = 4,
    /// A bulk copy into a slot (`copy_from`) is issued.
    CopyIn = 5,
    /// The role's part of its copies into slots is done (the receiver's wait covers the rest).
    CopyInEnd = 6,
    /// A bulk copy out of a slot (`copy_to`) is issued.
    CopyOut = 7,
    /// The role's copies out of slots have read them (at the slot's release).
    CopyOutEnd = 8,
}

impl TraceEvent {
    /// Every event, in code order.
    pub const ALL: [TraceEvent; 8] = [
        TraceEvent::WaitFull,
        TraceEvent::WaitFree,
        TraceEvent::WaitBarrier,
        TraceEvent::WaitEnd,
        TraceEvent::CopyIn,
        TraceEvent::CopyInEnd,
        TraceEvent::CopyOut,
        TraceEvent::CopyOutEnd,
    ];

    /// The record's event word.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The event whose code is `code`.
    pub const fn from_code(code: u32) -> Option<TraceEvent> {
        match code {
            1 => Some(TraceEvent::WaitFull),
            2 => Some(TraceEvent::WaitFree),
            3 => Some(TraceEvent::WaitBarrier),
            4 => Some(TraceEvent::WaitEnd),
            5 => Some(TraceEvent::CopyIn),
            6 => Some(TraceEvent::CopyInEnd),
            7 => Some(TraceEvent::CopyOut),
            8 => Some(TraceEvent::CopyOutEnd),
            _ => None,
        }
    }

    /// The second `u64` of the record, as the kernel stores it: the code in its low half, the
    /// argument in its high half (words [`RECORD_EVENT`] and [`RECORD_ARG`] in little endian).
    pub const fn record_word(self, arg: u32) -> u64 {
        self.code() as u64 | (arg as u64) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_regions_follow_each_other() {
        for (i, e) in TraceEvent::ALL.into_iter().enumerate() {
            assert_eq!(e.code() as usize, i + 1);
            assert_eq!(TraceEvent::from_code(e.code()), Some(e));
        }
        assert_eq!(TraceEvent::from_code(0), None);
        for (i, p) in TraceParam::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i);
        }
        assert_eq!(region_bytes(2), 64);
        for d in [
            1u32,
            2,
            3,
            5,
            7,
            10,
            63,
            64,
            65,
            100,
            1000,
            65_537,
            (1 << 31) - 1,
            1 << 31,
        ] {
            let div = Divisor::new(d);
            assert!(div.magic < 1 << 33);
            let mut b = 1u32;
            for edge in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                (1 << 31) - 1,
                (1 << 31) - 2,
            ] {
                let edge = edge.min((1 << 31) - 1);
                assert_eq!(div.divide(edge), edge / d, "{edge} / {d}");
            }
            // A pseudo-random walk over the range.
            for _ in 0..20_000 {
                b = b.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let b = b >> 1;
                assert_eq!(div.divide(b), b / d, "{b} / {d}");
            }
        }
        assert_eq!(region_offset(1, 3, 2, 2), 5 * 64);
        let word = TraceEvent::WaitEnd.record_word(7).to_le_bytes();
        assert_eq!(&word[..4], &4u32.to_le_bytes());
        assert_eq!(&word[4..], &7u32.to_le_bytes());
        assert_eq!(RECORD_EVENT * 4, 8);
        assert_eq!(HEADER_START * 4, 16);
        assert_eq!(HEADER_END * 4 + 8, HEADER_BYTES as usize);
    }
}
