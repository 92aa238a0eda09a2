//! Tensor-core matrix multiply-accumulate: an f32 [`Accumulator`] that [`Accumulator::mma`]
//! adds products of two [`Tile`]s into, and [`Accumulator::store`] writes out.
//!
//! ```ignore
//! let mut acc = Accumulator::<128, 256>::zero();
//! for _ in 0..k_tiles {
//!     let Some(stage) = rx.recv().await else { return };
//!     acc.mma(&stage.0, &stage.1).await;   // acc += A · Bᵀ
//! }                                        // the stage's slot is released here
//! acc.store(c, n, [row, col]);
//! ```

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use half::{bf16, f16};

use super::channel::{Payload, Receiver, RecvSlot, SendSlot};
use super::matrix::Tile;
use crate::matrix::TileScalar;

/// The columns of one step of the accumulation order (the `k` of one `wgmma` instruction for
/// 16-bit inputs).
const K_STEP: usize = 16;

mod sealed {
    pub trait Input {
        fn widen(self) -> f32;
    }
    pub trait Output: Copy {
        fn narrow(x: f32) -> Self;
        fn wide(self) -> f32;
    }
    impl Input for half::bf16 {
        fn widen(self) -> f32 {
            self.to_f32()
        }
    }
    impl Input for half::f16 {
        fn widen(self) -> f32 {
            self.to_f32()
        }
    }
    impl Output for f32 {
        fn narrow(x: f32) -> f32 {
            x
        }
        fn wide(self) -> f32 {
            self
        }
    }
    impl Output for half::bf16 {
        fn narrow(x: f32) -> Self {
            half::bf16::from_f32(x)
        }
        fn wide(self) -> f32 {
            self.to_f32()
        }
    }
    impl Output for half::f16 {
        fn narrow(x: f32) -> Self {
            half::f16::from_f32(x)
        }
        fn wide(self) -> f32 {
            self.to_f32()
        }
    }
}

/// The element type of the tiles an [`Accumulator::mma`] multiplies: `bf16` or `f16`, the
/// 16-bit inputs of the tensor cores' `wgmma` with an f32 accumulator. Sealed: implemented for
/// those two only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input type of a tensor-core mma",
    label = "not `bf16` or `f16`",
    note = "`Accumulator::mma` multiplies tiles of `bf16` or `f16`"
)]
pub trait MmaScalar: sealed::Input + TileScalar {}

impl MmaScalar for bf16 {}
impl MmaScalar for f16 {}

/// The element type an [`Accumulator::store`] writes: `f32` as it is, `bf16` or `f16` rounded
/// from the f32 to the nearest, ties to even (`bf16::from_f32`, `f16::from_f32`), as the GPU's
/// `cvt.rn` does. Sealed: implemented for those three only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type an accumulator stores",
    label = "not `f32`, `bf16` or `f16`",
    note = "`Accumulator::store` writes `f32`, `bf16` or `f16`"
)]
pub trait MmaOutput: sealed::Output {}

impl MmaOutput for f32 {}
impl MmaOutput for bf16 {}
impl MmaOutput for f16 {}

/// An `M` × `K` matrix of `T` (`bf16` or `f16`) in registers: the A operand of an mma taken
/// from an accumulator ([`Accumulator::to_bf16`], [`Accumulator::to_f16`]) rather than from a
/// tile, as attention's second product takes P from the first's result.
///
/// On the GPU each thread holds its rows' values packed in pairs (`K / 4` 32-bit registers), the
/// accumulator's fragment layout, so the conversion needs no data movement between threads. In
/// the simulator it holds the `M * K` elements row after row.
pub struct Fragment<T: MmaScalar, const M: usize, const K: usize> {
    /// Element (i, k) at `i * K + k`.
    elems: Box<[T]>,
}

impl<T: MmaScalar, const M: usize, const K: usize> fmt::Debug for Fragment<T, M, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fragment")
            .field("m", &M)
            .field("k", &K)
            .finish_non_exhaustive()
    }
}

mod operand {
    pub trait Sealed {}
}

/// The A operand of an mma: a [`Tile`] in shared memory (or the received slot that holds one)
/// or a [`Fragment`] in registers, `M` × `K` of `T`. Sealed: implemented for those only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the A operand of an mma",
    label = "not a `Tile<T, M, K>` or a `Fragment<T, M, K>`",
    note = "the A operand of an mma is an M x K tile of a received slot, or a fragment from `Accumulator::to_bf16()`"
)]
pub trait MmaOperandA<T: MmaScalar, const M: usize, const K: usize>: operand::Sealed {
    /// Element (i, k).
    #[doc(hidden)]
    fn at(&self, i: usize, k: usize) -> T;
}

impl<T: MmaScalar, const M: usize, const K: usize> operand::Sealed for Tile<T, M, K> {}
impl<T: MmaScalar, const M: usize, const K: usize> MmaOperandA<T, M, K> for Tile<T, M, K> {
    fn at(&self, i: usize, k: usize) -> T {
        self[i][k]
    }
}

/// A received tile slot, `acc.mma(&slot, &b)`: the tile it holds.
impl<T: MmaScalar, const M: usize, const K: usize, const D: usize> operand::Sealed
    for RecvSlot<'_, Tile<T, M, K>, D>
{
}
impl<T: MmaScalar, const M: usize, const K: usize, const D: usize> MmaOperandA<T, M, K>
    for RecvSlot<'_, Tile<T, M, K>, D>
{
    fn at(&self, i: usize, k: usize) -> T {
        self[i][k]
    }
}

impl<T: MmaScalar, const M: usize, const K: usize> operand::Sealed for Fragment<T, M, K> {}
impl<T: MmaScalar, const M: usize, const K: usize> MmaOperandA<T, M, K> for Fragment<T, M, K> {
    fn at(&self, i: usize, k: usize) -> T {
        self.elems[i * K + k]
    }
}

/// An `M` × `N` matrix of f32, the accumulator of tensor-core matrix multiply-accumulates.
///
/// On the GPU it lives in registers, spread over the threads of the role's warpgroups as the
/// `wgmma` instructions lay out their accumulator fragments; kernel code does not read its
/// elements one by one, it adds products in ([`mma`](Self::mma)), changes every element at once
/// ([`apply`](Self::apply)) and writes the whole of it out ([`store`](Self::store)). In the
/// simulator it holds the `M * N` elements row after row.
pub struct Accumulator<const M: usize, const N: usize> {
    /// Element (i, j) at `i * N + j`.
    elems: Box<[f32]>,
}

impl<const M: usize, const N: usize> fmt::Debug for Accumulator<M, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accumulator")
            .field("m", &M)
            .field("n", &N)
            .finish_non_exhaustive()
    }
}

impl<const M: usize, const N: usize> Accumulator<M, N> {
    /// An accumulator with every element 0.0 (on the GPU, its registers zeroed).
    pub fn zero() -> Self {
        Accumulator {
            elems: vec![0.0; M * N].into_boxed_slice(),
        }
    }

    /// The accumulator rounded to `bf16` (to nearest, ties to even, as `cvt.rn` does): the A
    /// operand of a later mma, in registers (`acc2.mma(&p, &b)`), with `K` = `N`.
    ///
    /// On the GPU each thread packs its own values in pairs; no value moves between threads.
    /// An mma that reads the fragment borrows it until it is awaited, so the registers an mma
    /// may still read are not overwritten:
    ///
    /// ```compile_fail,E0506
    /// use gpu_async::device::{bf16, Accumulator, Payload, Tile};
    /// let v = <Tile<bf16, 64, 64> as Payload>::zeroed();
    /// let (s, mut o) = (Accumulator::<64, 64>::zero(), Accumulator::<64, 64>::zero());
    /// let mut p = s.to_bf16();
    /// let pending = o.mma_kn(&p, &v);
    /// p = s.to_bf16(); // the mma still reads `p`
    /// drop(pending);
    /// ```
    pub fn to_bf16(&self) -> Fragment<bf16, M, N> {
        Fragment {
            elems: self.elems.iter().map(|&x| bf16::from_f32(x)).collect(),
        }
    }

    /// The accumulator rounded to `f16`, as [`to_bf16`](Self::to_bf16) rounds to `bf16`.
    pub fn to_f16(&self) -> Fragment<f16, M, N> {
        Fragment {
            elems: self.elems.iter().map(|&x| f16::from_f32(x)).collect(),
        }
    }

    /// Replaces each element `x` with `f(x)`: an elementwise operation on the accumulator
    /// before it is stored (a ReLU, `acc.apply(|v| v.max(0.0))`) or fed to another mma.
    ///
    /// On the GPU each thread runs `f` on the elements it holds (`N / 2` of them), in
    /// registers; the body is written once per element into the kernel, so it should be short.
    /// `f` computes: it may read memory but not write it or update atomics (a compile error
    /// says so). Its arithmetic is the language's, so `+ - * /`, `mul_add`, `min`, `max` and the
    /// like give the simulator's bits; the `f32` math functions are within the language's
    /// stated bounds of it. The accumulator is borrowed mutably, so an mma that may still write
    /// it must be awaited first:
    ///
    /// ```compile_fail,E0499
    /// use gpu_async::device::{bf16, Accumulator, Payload, Tile};
    /// let (a, b) = <(Tile<bf16, 64, 16>, Tile<bf16, 32, 16>) as Payload>::zeroed();
    /// let mut acc = Accumulator::<64, 32>::zero();
    /// let pending = acc.mma(&a, &b);
    /// acc.apply(|v| v.max(0.0)); // the mma may still write `acc`
    /// drop(pending);
    /// ```
    pub fn apply(&mut self, f: impl Fn(f32) -> f32) {
        for x in self.elems.iter_mut() {
            *x = f(*x);
        }
    }

    /// Each row's largest element: a value per row, read as `rows[i]` in
    /// [`apply_at`](Self::apply_at) (`acc.apply_at(|i, _, v| v - m[i])`). Elements compare as
    /// `f32::max` does (a NaN gives way to the other operand), in the order of
    /// [`row_sum`](Self::row_sum).
    ///
    /// On the GPU each row's elements lie in four lanes of a warp (two columns of every eight
    /// each): each lane folds its own, then the four combine theirs by two shuffles, so all four
    /// hold the row's value.
    pub fn row_max(&self) -> Rows<M> {
        self.rows_folded(f32::max)
    }

    /// Each row's sum, in a defined order, the GPU's, so both backends give the same bits: for
    /// each `q` of 0..4, `t_q` is the row's elements at columns `8 j + 2 q` and `8 j + 2 q + 1`,
    /// for `j` from 0 up, added left to right starting from the first; the sum is
    /// `(t_0 + t_1) + (t_2 + t_3)`.
    pub fn row_sum(&self) -> Rows<M> {
        self.rows_folded(|a, b| a + b)
    }

    /// Each row folded with `op` in the order [`row_sum`](Self::row_sum) describes.
    fn rows_folded(&self, op: impl Fn(f32, f32) -> f32) -> Rows<M> {
        let values = self
            .elems
            .chunks_exact(N.max(1))
            .map(|row| {
                let lane = |q: usize| {
                    let mut cols = (0..N / 8).flat_map(|j| [8 * j + 2 * q, 8 * j + 2 * q + 1]);
                    let first = cols.next().map_or(0.0, |c| row[c]);
                    cols.fold(first, |t, c| op(t, row[c]))
                };
                op(op(lane(0), lane(1)), op(lane(2), lane(3)))
            })
            .collect();
        Rows { values }
    }

    /// Replaces each element `x` at row `i` and column `j` of the accumulator with `f(i, j, x)`:
    /// an elementwise operation that depends on the element's place, such as a bias per column
    /// (`acc.apply_at(|_, j, v| v + bias[col + j])`). As [`apply`](Self::apply) otherwise.
    pub fn apply_at(&mut self, f: impl Fn(usize, usize, f32) -> f32) {
        for (k, x) in self.elems.iter_mut().enumerate() {
            *x = f(k / N.max(1), k % N.max(1), *x);
        }
    }

    /// `self += a · bᵀ`: `a` is `M` × `K` and `b` is `N` × `K`, both row-major (each row `K`
    /// contiguous elements), so that element (i, j) gains the sum over `k` of
    /// `a[i][k] * b[j][k]`. The tiles are typically the two halves of a received stage,
    /// `acc.mma(&stage.0, &stage.1).await`; `a` may also be a [`Fragment`] in registers
    /// ([`to_bf16`](Self::to_bf16) of another accumulator).
    ///
    /// On the GPU the call issues the asynchronous `wgmma.mma_async` instructions that read both
    /// tiles from shared memory, and awaiting the returned [`Mma`] waits for them to complete
    /// (`wgmma.wait_group`). Until then the future borrows the accumulator mutably and both
    /// tiles, so rustc rejects reading the accumulator, or releasing a tile's slot, while the
    /// mma may still be running. The simulator computes the whole product at the call, and the
    /// future is ready at once.
    ///
    /// # Accumulation order
    /// The simulator's result is defined exactly. Each input is converted to f32 (`to_f32`,
    /// exact), so each product `a[i][k] * b[j][k]` is an f32 multiplication, exact for `f16`
    /// inputs and for `bf16` ones unless it leaves f32's range. For each element (i, j), the `K`
    /// columns are taken in steps of 16 (`k0 = 0, 16, 32, ...`; a last step of fewer when `K` is
    /// not a multiple of 16). Within a step, the products are summed in increasing `k` in f32,
    /// starting from 0.0, a multiplication then an addition each rounded to nearest (`sum += a *
    /// b`, not a fused multiply-add); then the step's sum is added to the element (`elem +=
    /// sum`), before the next step begins.
    ///
    /// The tensor cores add in an order and a precision of their own, so the GPU's result agrees
    /// with the simulator's within a tolerance, not bit for bit.
    ///
    /// ```compile_fail,E0502
    /// use gpu_async::device::{bf16, Accumulator, Payload, Tile};
    /// let (a, b) = <(Tile<bf16, 64, 16>, Tile<bf16, 32, 16>) as Payload>::zeroed();
    /// let mut acc = Accumulator::<64, 32>::zero();
    /// let pending = acc.mma(&a, &b);
    /// acc.store(&mut [0.0f32; 64 * 32][..], 32, [0, 0]); // the mma still borrows `acc`
    /// drop(pending);
    /// ```
    pub fn mma<'a, T: MmaScalar, A: MmaOperandA<T, M, K>, const K: usize>(
        &'a mut self,
        a: &'a A,
        b: &'a Tile<T, N, K>,
    ) -> Mma<'a> {
        self.accumulate(a, |k, j| b[j][k]);
        Mma {
            _borrows: PhantomData,
        }
    }

    /// `self += a · b` where `b(k, j)` is element (k, j) of the `K` × `N` product operand, in
    /// the documented order (see [`mma`](Self::mma)).
    fn accumulate<T: MmaScalar, A: MmaOperandA<T, M, K>, const K: usize>(
        &mut self,
        a: &A,
        b: impl Fn(usize, usize) -> T,
    ) {
        for (i, acc_row) in self.elems.chunks_exact_mut(N.max(1)).enumerate() {
            for (j, elem) in acc_row.iter_mut().enumerate() {
                for k0 in (0..K).step_by(K_STEP) {
                    let mut sum = 0.0f32;
                    for k in k0..(k0 + K_STEP).min(K) {
                        sum += a.at(i, k).widen() * b(k, j).widen();
                    }
                    *elem += sum;
                }
            }
        }
    }

    /// `self += a · b`: `a` is `M` × `K` and `b` is `K` × `N`, both row-major (`b`'s rows run
    /// along N), so that element (i, j) gains the sum over `k` of `a[i][k] * b[k][j]`: the
    /// product of row-major A and B as they are, without a transposed copy of B. The sum is
    /// taken in the order of [`mma`](Self::mma) (steps of 16 in increasing `k`), and the future
    /// borrows as `mma`'s does.
    ///
    /// On the GPU `b`'s rows are whole 128-byte lines (N a multiple of 64), stored as column
    /// blocks of 64 columns, and the tensor cores read it transposed (`imm-trans-b`).
    ///
    /// ```compile_fail,E0502
    /// use gpu_async::device::{bf16, Accumulator, Payload, Tile};
    /// let (a, b) = <(Tile<bf16, 64, 64>, Tile<bf16, 64, 64>) as Payload>::zeroed();
    /// let mut acc = Accumulator::<64, 64>::zero();
    /// let pending = acc.mma_kn(&a, &b);
    /// acc.store(&mut [0.0f32; 64 * 64][..], 64, [0, 0]); // the mma still borrows `acc`
    /// drop(pending);
    /// ```
    pub fn mma_kn<'a, T: MmaScalar, A: MmaOperandA<T, M, K>, const K: usize>(
        &'a mut self,
        a: &'a A,
        b: &'a Tile<T, K, N>,
    ) -> Mma<'a> {
        self.accumulate(a, |k, j| b[k][j]);
        Mma {
            _borrows: PhantomData,
        }
    }

    /// Receives the next `count` stages of `rx`, each a pair of tiles `(a, b)`, and adds each
    /// `a · bᵀ` to the accumulator as [`Accumulator::mma`] does, in the order they come; each
    /// stage is released after its product. The output is whether all `count` came: `false`
    /// when the channel ended first (the stages that came are accumulated all the same).
    ///
    /// This is the main loop of a GEMM's compute role, written so that the tensor cores never
    /// wait for it: on the GPU one stage's mma keeps running while the next stage is received
    /// and its mma issued, and a stage is released as soon as its mma has completed
    /// (`wgmma.wait_group 1`); the last one is waited for before the future completes. It holds
    /// two stages at a time, so the channel's ring needs two slots or more (a compile error
    /// otherwise). The future borrows the accumulator mutably and the receiver.
    ///
    /// ```ignore
    /// let mut acc = Accumulator::<128, 256>::zero();
    /// if !acc.mma_stages(&rx, k_tiles).await {
    ///     return; // the loader ended early
    /// }
    /// acc.store(c, n, [row, col]);
    /// ```
    ///
    /// ```compile_fail,E0502
    /// use gpu_async::device::{bf16, channel, Accumulator, Tile};
    /// let (_tx, rx) = channel::<(Tile<bf16, 64, 64>, Tile<bf16, 32, 64>), 2>();
    /// let mut acc = Accumulator::<64, 32>::zero();
    /// let stages = acc.mma_stages(&rx, 1);
    /// acc.store(&mut [0.0f32; 64 * 32][..], 32, [0, 0]); // the future still borrows `acc`
    /// drop(stages);
    /// ```
    #[track_caller]
    pub fn mma_stages<'a, T: MmaScalar, const K: usize, const D: usize>(
        &'a mut self,
        rx: &'a Receiver<(Tile<T, M, K>, Tile<T, N, K>), D>,
        count: usize,
    ) -> impl Future<Output = bool> + 'a
    where
        (Tile<T, M, K>, Tile<T, N, K>): Payload,
    {
        let at = Location::caller();
        self.accumulate_stages(rx, count, at, |acc, (a, b)| {
            acc.accumulate(a, |k, j| b[j][k])
        })
    }

    /// [`mma_stages`](Self::mma_stages) over stages whose B tile is `K` × `N`: each stage
    /// `(a, b)` adds `a · b` ([`mma_kn`](Self::mma_kn)).
    ///
    /// ```ignore
    /// let (tx, rx) = channel::<(Tile<bf16, 128, 64>, Tile<bf16, 64, 256>), 4>();
    /// // loader: stage.0.load(a, [row, k]), stage.1.load(b, [k, col])
    /// let mut acc = Accumulator::<128, 256>::zero();
    /// if !acc.mma_stages_kn(&rx, k_tiles).await {
    ///     return;
    /// }
    /// ```
    #[track_caller]
    pub fn mma_stages_kn<'a, T: MmaScalar, const K: usize, const D: usize>(
        &'a mut self,
        rx: &'a Receiver<(Tile<T, M, K>, Tile<T, K, N>), D>,
        count: usize,
    ) -> impl Future<Output = bool> + 'a
    where
        (Tile<T, M, K>, Tile<T, K, N>): Payload,
    {
        let at = Location::caller();
        self.accumulate_stages(rx, count, at, |acc, (a, b)| {
            acc.accumulate(a, |k, j| b[k][j])
        })
    }

    /// Receives the next `count` stages of `rx` (a receive of the caller at `at`), each added
    /// to the accumulator by `add` and released after it; whether all `count` came.
    async fn accumulate_stages<P: Payload, const D: usize>(
        &mut self,
        rx: &Receiver<P, D>,
        count: usize,
        at: &'static Location<'static>,
        add: impl Fn(&mut Self, &P),
    ) -> bool {
        for _ in 0..count {
            let Some(stage) = rx.recv_at(at).await else {
                return false;
            };
            add(self, &stage);
        }
        true
    }

    /// Writes the accumulator, converted to `T` (see [`MmaOutput`]), into the row-major matrix
    /// `out` whose rows are `cols` elements long (`out.len() / cols` whole rows; none when
    /// `cols` is 0): element (i, j) goes to `out[(at[0] + i) * cols + at[1] + j]` when `at[0] +
    /// i` is a row of `out` and `at[1] + j < cols`. Elements past those edges are not written,
    /// so a ragged last tile needs no special case; nothing else of `out` changes.
    ///
    /// On the GPU each thread writes the elements of its accumulator fragments, converted
    /// (`cvt.rn`), to global memory, skipping those past the edges; the simulator writes them
    /// at the call.
    pub fn store<T: MmaOutput>(&self, out: &mut [T], cols: usize, at: [usize; 2]) {
        self.store_with(out, cols, at, |x, _| x);
    }

    /// Writes the accumulator's columns `col .. col + C`, converted to `T` (see [`MmaOutput`]),
    /// into a reserved slot of one tile: element (i, col + j) to `slot[i][j]`. The tile then
    /// goes, sent, to a role that writes it into a matrix with a TMA store
    /// ([`RecvSlot::store`]), so that the role computing the next tile does not wait for
    /// global memory:
    ///
    /// ```ignore
    /// for j in 0..N / C {
    ///     let Some(mut slot) = tx.reserve().await else { return };
    ///     acc.store_tile(&mut slot, j * C);
    ///     slot.send();
    /// }
    /// ```
    ///
    /// On the GPU each thread writes its values in pairs of neighbouring columns into shared
    /// memory, at the places a TMA copy of the tile gives them (swizzled as the tile's rows
    /// are), and the `send` orders those writes before the TMA store reads them
    /// (`fence.proxy.async`).
    ///
    /// # Panics
    /// If `col` is not a multiple of `C` less than `N` (a device panic on the GPU).
    #[track_caller]
    pub fn store_tile<T: MmaOutput + TileScalar, const C: usize, const D: usize>(
        &self,
        slot: &mut SendSlot<'_, Tile<T, M, C>, D>,
        col: usize,
    ) {
        assert!(
            C > 0 && col % C == 0 && col < N,
            "{}",
            gpu_async_wire::ACC_TILE_COLUMN
        );
        let tile: &mut Tile<T, M, C> = slot;
        for (i, row) in tile.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = T::narrow(self.elems[i * N + col + j]);
            }
        }
    }

    /// The epilogue of a GEMM `C = alpha · A · B + beta · C`: as [`store`](Self::store), each
    /// element written being `alpha` times the accumulator's plus `beta` times the element
    /// already there, converted to `T`. With `beta` 0 the elements there are not read (a
    /// destination of NaNs is overwritten), as BLAS does.
    ///
    /// The arithmetic is defined: `alpha * x` rounded to f32, then, unless `beta` is 0,
    /// `beta.mul_add(old, that)` (one rounding; `old` widened exactly from `T`), then the
    /// conversion to `T`: the GPU's `mul.rn`, `fma.rn` and `cvt.rn`, bit for bit.
    pub fn store_scaled<T: MmaOutput>(
        &self,
        out: &mut [T],
        cols: usize,
        at: [usize; 2],
        alpha: f32,
        beta: f32,
    ) {
        self.store_with(out, cols, at, |x, old: T| {
            let t = alpha * x;
            if beta != 0.0 {
                beta.mul_add(old.wide(), t)
            } else {
                t
            }
        });
    }

    /// Writes `value(x, old)` for each element `x` inside `out`'s edges (see [`store`]).
    ///
    /// [`store`]: Self::store
    fn store_with<T: MmaOutput>(
        &self,
        out: &mut [T],
        cols: usize,
        at: [usize; 2],
        value: impl Fn(f32, T) -> f32,
    ) {
        let rows = out.len().checked_div(cols).unwrap_or(0);
        for (i, acc_row) in self.elems.chunks_exact(N.max(1)).enumerate() {
            let Some(row) = at[0].checked_add(i).filter(|&r| r < rows) else {
                break;
            };
            for (j, &x) in acc_row.iter().enumerate() {
                let Some(col) = at[1].checked_add(j).filter(|&c| c < cols) else {
                    break;
                };
                // row < out.len() / cols and col < cols: in bounds, without overflow.
                let at = row * cols + col;
                out[at] = T::narrow(value(x, out[at]));
            }
        }
    }
}

/// One `f32` per row of an `M`-row accumulator: its rows' maxima or sums
/// ([`Accumulator::row_max`], [`Accumulator::row_sum`]) or any value ([`Rows::splat`]),
/// changed by [`Rows::apply`], stored by [`Rows::store`], and read as `rows[i]` inside
/// [`Accumulator::apply_at`] (and [`Rows::apply_at`]) with the closure's row parameter:
///
/// ```
/// use gpu_async::device::Accumulator;
/// let mut acc = Accumulator::<64, 16>::zero();
/// acc.apply_at(|i, j, _| (i * 16 + j) as f32);
/// let m = acc.row_max();
/// acc.apply_at(|i, _, v| v - m[i]);
/// assert_eq!(m[1], 31.0);
/// ```
///
/// On the GPU each thread holds the values of its own two rows, so kernel code reads them only
/// where each element knows its row.
pub struct Rows<const M: usize> {
    values: Box<[f32]>,
}

impl<const M: usize> Rows<M> {
    /// Every row's value `v` (a running maximum starts at `f32::NEG_INFINITY`).
    pub fn splat(v: f32) -> Self {
        Rows {
            values: vec![v; M].into_boxed_slice(),
        }
    }

    /// Replaces each row's value `x` with `f(x)`. On the GPU each lane that holds a row runs
    /// `f` on it; `f` computes, as [`Accumulator::apply`]'s closure does.
    pub fn apply(&mut self, f: impl Fn(f32) -> f32) {
        for x in self.values.iter_mut() {
            *x = f(*x);
        }
    }

    /// Replaces row `i`'s value `x` with `f(i, x)`; `f` may read other rows at `i`
    /// (`m.apply_at(|i, x| x.max(tile_max[i]))`).
    pub fn apply_at(&mut self, f: impl Fn(usize, f32) -> f32) {
        for (i, x) in self.values.iter_mut().enumerate() {
            *x = f(i, *x);
        }
    }

    /// Writes row `i`'s value to `out[row + i]`, for the rows inside `out` (the others are not
    /// written; nothing else of `out` changes). On the GPU one lane of the four that hold a
    /// row writes it.
    pub fn store(&self, out: &mut [f32], row: usize) {
        for (i, &x) in self.values.iter().enumerate() {
            match row.checked_add(i).and_then(|r| out.get_mut(r)) {
                Some(o) => *o = x,
                None => break,
            }
        }
    }
}

impl<const M: usize> std::ops::Index<usize> for Rows<M> {
    type Output = f32;

    fn index(&self, i: usize) -> &f32 {
        &self.values[i]
    }
}

impl<const M: usize> fmt::Debug for Rows<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.values.iter()).finish()
    }
}

/// The future of [`Accumulator::mma`]: the mma is issued, and awaiting it waits for it to
/// complete (on the GPU, `wgmma.wait_group`; in the simulator it is ready at once). It borrows
/// the accumulator mutably and both tiles until it is awaited or dropped.
#[must_use = "mma() must be awaited before the accumulator or its tiles are used again"]
#[derive(Debug)]
pub struct Mma<'a> {
    _borrows: PhantomData<&'a mut ()>,
}

impl Future for Mma<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Payload;
    use crate::executor::block_on;

    /// A tile whose element (r, c) is `f(r, c)`.
    fn tile<T: TileScalar, const R: usize, const C: usize>(
        f: impl Fn(usize, usize) -> T,
    ) -> Tile<T, R, C> {
        let mut t = <Tile<T, R, C> as Payload>::zeroed();
        for (r, row) in t.iter_mut().enumerate() {
            for (c, x) in row.iter_mut().enumerate() {
                *x = f(r, c);
            }
        }
        t
    }

    /// The accumulator's elements, row after row, as f32.
    fn elems<const M: usize, const N: usize>(acc: &Accumulator<M, N>) -> Vec<f32> {
        let mut out = vec![f32::NAN; M * N];
        acc.store(&mut out, N, [0, 0]);
        out
    }

    fn bits(xs: &[f32]) -> Vec<u32> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    const TINY: f32 = 1.0 / 4096.0; // 2^-12: a product of two is 2^-24, half an ulp of 1.0

    #[test]
    fn a_fragment_is_the_accumulator_rounded_and_multiplies_as_a_tile_of_it() {
        let value = |x: usize| bf16::from_f32((x % 29) as f32 / 7.0 - 2.0);
        let a = tile::<bf16, 64, 32>(|i, k| value(i * 3 + k * 5));
        let b = tile::<bf16, 48, 32>(|j, k| value(j * 11 + k + 2));
        let mut s = Accumulator::<64, 48>::zero();
        block_on(s.mma(&a, &b));
        let p = s.to_bf16();
        let as_tile = tile::<bf16, 64, 48>(|i, j| bf16::from_f32(elems(&s)[i * 48 + j]));
        let v = tile::<bf16, 16, 48>(|j, k| value(j + k * 13));
        let (mut x, mut y) = (Accumulator::<64, 16>::zero(), Accumulator::<64, 16>::zero());
        block_on(x.mma(&p, &v));
        block_on(y.mma(&as_tile, &v));
        assert_eq!(bits(&elems(&x)), bits(&elems(&y)));
        let h = s.to_f16();
        assert_eq!(h.at(5, 7), f16::from_f32(elems(&s)[5 * 48 + 7]));
    }

    #[test]
    fn mma_kn_is_mma_of_the_transposed_b_bit_for_bit() {
        let value = |x: usize| bf16::from_f32((x % 23) as f32 / 8.0 - 1.375);
        let a = tile::<bf16, 64, 40>(|i, k| value(i * 7 + k * 3));
        let b = tile::<bf16, 40, 24>(|k, j| value(k * 5 + j * 11 + 1));
        let b_t = tile::<bf16, 24, 40>(|j, k| b[k][j]);
        let (mut kn, mut nt) = (Accumulator::<64, 24>::zero(), Accumulator::<64, 24>::zero());
        block_on(kn.mma_kn(&a, &b));
        block_on(nt.mma(&a, &b_t));
        assert_eq!(bits(&elems(&kn)), bits(&elems(&nt)));
        // Element (3, 5) is the sum over k of a[3][k] * b[k][5].
        let exact: f64 = (0..40)
            .map(|k| f64::from(a[3][k].to_f32()) * f64::from(b[k][5].to_f32()))
            .sum();
        assert!((f64::from(elems(&kn)[3 * 24 + 5]) - exact).abs() < 1e-4);
    }

    #[test]
    fn mma_adds_steps_of_16_each_summed_in_increasing_k() {
        let bf = bf16::from_f32;
        let a = tile::<_, 2, 32>(|i, k| match (i, k) {
            (0, 0) => bf(1.0),
            (0, _) => bf(TINY),
            (_, k) => bf(if k < 16 { 0.0 } else { 3.0 }),
        });
        let b = tile::<_, 3, 32>(|j, k| match (j, k) {
            (0, 0) => bf(1.0),
            (0, _) | (1, _) => bf(TINY),
            (_, k) => bf(if k < 16 { -1.0 } else { 0.5 }),
        });
        let mut acc = Accumulator::<2, 3>::zero();
        block_on(acc.mma(&a, &b));
        let ulp = f32::EPSILON; // 2^-23
        let expected = [
            // Step 0: 1.0, then 15 products of 2^-24, each a tie that rounds back to 1.0;
            // step 1: 16 * 2^-24 = 8 ulps. (Summed in one run: 1.0; in decreasing k within
            // a step, or exactly: 1 + 16 ulps.)
            1.0 + 8.0 * ulp,
            4127.0 / 16_777_216.0, // 2^-12 + 31 * 2^-24, exact
            -1.0 - 7.0 * TINY,     // -1 - 15 * 2^-12, then + 16 * 2^-13
            16.0 * 3.0 * TINY,
            16.0 * 3.0 * TINY,
            24.0,
        ];
        assert_eq!(bits(&elems(&acc)), bits(&expected));
        assert_ne!(expected[0], 1.0);
        assert_ne!(expected[0], 1.0 + 16.0 * ulp);
    }

    #[test]
    fn each_product_is_rounded_before_it_is_added() {
        // bf16 products can leave f32's range: 2^-75 * 2^-75 = 2^-150, half the least
        // subnormal, rounds to 0 (a tie, to even). A fused multiply-add would keep it, and
        // 2^-149 + 2^-150 would round to 2^-148.
        let a = tile::<_, 1, 16>(|_, k| {
            bf16::from_f32([2f32.powi(-74), 2f32.powi(-75), 0.0][k.min(2)])
        });
        let b = tile::<_, 1, 16>(|_, k| bf16::from_f32(if k < 2 { 2f32.powi(-75) } else { 0.0 }));
        let mut acc = Accumulator::<1, 1>::zero();
        block_on(acc.mma(&a, &b));
        assert_eq!(bits(&elems(&acc)), [1]); // 2^-149
    }

    #[test]
    fn zero_is_zero_and_a_second_mma_adds_each_step_in_turn() {
        let acc = Accumulator::<3, 2>::zero();
        assert_eq!(bits(&elems(&acc)), [0; 6]);
        assert_eq!(format!("{acc:?}"), "Accumulator { m: 3, n: 2, .. }");

        let mut acc = Accumulator::<1, 1>::zero();
        let one = tile::<_, 1, 32>(|_, k| f16::from_f32(if k == 0 { 1.0 } else { 0.0 }));
        block_on(acc.mma(&one, &one));
        assert_eq!(elems(&acc), [1.0]);
        // 2^-24 in each step: each is a tie added to 1.0 on its own, so 1.0 stays (their sum
        // added at once would make 1 + 2^-23).
        let tiny = tile::<_, 1, 32>(|_, k| f16::from_f32(if k % 16 == 0 { TINY } else { 0.0 }));
        block_on(acc.mma(&tiny, &tiny));
        assert_eq!(elems(&acc), [1.0]);
        block_on(acc.mma(&one, &one));
        assert_eq!(elems(&acc), [2.0]);
    }

    /// A 2 x 3 accumulator with element (i, j) = 10 i + j + 1.
    fn numbered() -> Accumulator<2, 3> {
        let a = tile::<_, 2, 16>(|i, k| bf16::from_f32([10.0 * i as f32, 1.0, 0.0][k.min(2)]));
        let b = tile::<_, 3, 16>(|j, k| bf16::from_f32([1.0, j as f32 + 1.0, 0.0][k.min(2)]));
        let mut acc = Accumulator::zero();
        block_on(acc.mma(&a, &b));
        acc
    }

    #[test]
    fn store_writes_only_the_elements_inside_both_edges() {
        let acc = numbered();
        assert_eq!(elems(&acc), [1.0, 2.0, 3.0, 11.0, 12.0, 13.0]);
        // 5 rows of 7 (and 2 extra elements, not a whole row): only (4, 5) and (4, 6).
        let mut out = vec![-1.0f32; 37];
        acc.store(&mut out, 7, [4, 5]);
        for (n, &x) in out.iter().enumerate() {
            let want = match n {
                33 => 1.0,
                34 => 2.0,
                _ => -1.0,
            };
            assert_eq!(x, want, "element {n}");
        }
        let before = out.clone();
        acc.store(&mut out, 7, [5, 0]);
        acc.store(&mut out, 7, [0, 7]);
        acc.store(&mut out, 7, [usize::MAX, usize::MAX]);
        assert_eq!(out, before);
    }

    #[test]
    fn store_with_no_columns_stores_nothing() {
        let acc = numbered();
        let mut out = [5.0f32; 4];
        acc.store(&mut out, 0, [0, 0]);
        assert_eq!(out, [5.0; 4]);
        acc.store(&mut [] as &mut [f32], 3, [0, 0]);
    }

    /// `acc` (2 x 16, element (i, j) = 16 i + j + 0.1) written by `store_tile` into a
    /// reserved slot of a `Tile<T, 2, 8>` at `col`; the slot's elements.
    fn stored_tile<T: MmaOutput + TileScalar>(col: usize) -> Vec<T> {
        let mut acc = Accumulator::<2, 16>::zero();
        acc.apply_at(|i, j, _| (16 * i + j) as f32 + 0.1);
        block_on(async {
            let (mut tx, rx) = crate::device::channel::<Tile<T, 2, 8>, 1>();
            let mut slot = tx.reserve().await.expect("the receiver is open");
            acc.store_tile(&mut slot, col);
            slot.send();
            let got = rx.recv().await.expect("a tile was sent");
            got.elems().to_vec()
        })
    }

    #[test]
    fn store_tile_writes_a_block_of_columns_converted() {
        let want: Vec<f32> = (0..16)
            .map(|k| (16 * (k / 8) + 8 + k % 8) as f32 + 0.1)
            .collect();
        assert_eq!(stored_tile::<f32>(8), want);
        // bf16 keeps 8 bits of the significand: each value is rounded.
        let rounded: Vec<f32> = stored_tile::<bf16>(8).iter().map(|x| x.to_f32()).collect();
        let want16: Vec<f32> = want.iter().map(|&x| bf16::from_f32(x).to_f32()).collect();
        assert_eq!(rounded, want16);
        assert_ne!(rounded, want, "the values are rounded");
    }

    #[test]
    #[should_panic(
        expected = "store_tile: the column is not a multiple of the tile's columns less than the accumulator's columns"
    )]
    fn store_tile_at_a_column_off_the_blocks_panics() {
        stored_tile::<f32>(4);
    }

    #[test]
    #[should_panic(
        expected = "store_tile: the column is not a multiple of the tile's columns less than the accumulator's columns"
    )]
    fn store_tile_past_the_columns_panics() {
        stored_tile::<f32>(16);
    }

    #[test]
    fn store_rounds_to_16_bits_to_nearest_even() {
        let h = 1.0 / 256.0; // 2^-8: half an ulp of 1.0 in bf16
        let a = tile::<_, 1, 16>(|_, k| bf16::from_f32([1.0, h, 2.0 * h, 0.0][k.min(3)]));
        let b = tile::<_, 2, 16>(|j, k| bf16::from_f32([1.0, 1.0, j as f32, 0.0][k.min(3)]));
        let mut acc = Accumulator::<1, 2>::zero();
        block_on(acc.mma(&a, &b));
        assert_eq!(elems(&acc), [1.0 + h, 1.0 + 3.0 * h]);
        let mut out = [bf16::ZERO; 2];
        acc.store(&mut out, 2, [0, 0]);
        // 1 + 2^-8 ties down to 1.0; 1 + 3 * 2^-8 ties up to 1 + 2^-6 (even mantissa).
        assert_eq!(out.map(bf16::to_bits), [0x3F80, 0x3F82]);
        let mut out = [f16::ZERO; 2];
        acc.store(&mut out, 2, [0, 0]);
        assert_eq!(out.map(f16::to_f32), [1.0 + h, 1.0 + 3.0 * h]);
    }
}
