//! Concurrency inside one role: `join!` of futures and `select!` between channel receives.
//!
//! In a role's code, `join!(a, b).await` and `select! { .. }` are rewritten by `#[gpu_async]`
//! into calls of the functions here (`join2(a, b)`, `select2(rx1.recv(), rx2.recv())`), which is
//! what rustc checks and what the simulator runs. On the GPU the same code becomes a state
//! machine with one state per warp: an await that is not ready lets the warp run another
//! branch instead of spinning on one barrier.
//!
//! The functions are public for the generated code; kernels use the macros' syntax.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A branch of a join: running, or finished with its output (taken when the join completes).
enum Branch<F: Future> {
    Running(Pin<Box<F>>),
    Done(Option<F::Output>),
}

impl<F: Future> Branch<F> {
    /// Polls a running branch; whether it has finished.
    fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        match self {
            Branch::Running(f) => match f.as_mut().poll(cx) {
                Poll::Ready(v) => {
                    *self = Branch::Done(Some(v));
                    true
                }
                Poll::Pending => false,
            },
            Branch::Done(_) => true,
        }
    }

    fn take(&mut self) -> F::Output {
        match self {
            Branch::Done(v) => match v.take() {
                Some(v) => v,
                None => panic!("join!(..) polled after it completed"),
            },
            Branch::Running(_) => unreachable!("taken only once every branch has finished"),
        }
    }
}

macro_rules! joins {
    ($($(#[$doc:meta])* $func:ident $join:ident ($($f:ident: $F:ident),+);)+) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $func<$($F: Future),+>($($f: $F),+) -> $join<$($F),+> {
            $join { $($f: Branch::Running(Box::pin($f))),+ }
        }

        #[doc = concat!("The future of [`", stringify!($func), "`]: every branch's output, in order.")]
        #[must_use = "join!(..) does nothing unless awaited"]
        pub struct $join<$($F: Future),+> {
            $($f: Branch<$F>),+
        }

        // The branches are boxed and never pinned in place, so the join itself may move.
        impl<$($F: Future),+> Unpin for $join<$($F),+> {}

        impl<$($F: Future),+> Future for $join<$($F),+> {
            type Output = ($($F::Output,)+);

            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                let this = self.get_mut();
                let mut finished = true;
                $(finished &= this.$f.poll(cx);)+
                if !finished {
                    return Poll::Pending;
                }
                Poll::Ready(($(this.$f.take(),)+))
            }
        }
    )+};
}

joins! {
    /// `join!(a).await`: runs one future.
    join1 Join1(a: A);
    /// `join!(a, b).await`: runs both futures concurrently on the role's warps.
    join2 Join2(a: A, b: B);
    /// `join!` of three futures.
    join3 Join3(a: A, b: B, c: C);
    /// `join!` of four futures.
    join4 Join4(a: A, b: B, c: C, d: D);
    /// `join!` of five futures.
    join5 Join5(a: A, b: B, c: C, d: D, e: E);
    /// `join!` of six futures.
    join6 Join6(a: A, b: B, c: C, d: D, e: E, f: F);
    /// `join!` of seven futures.
    join7 Join7(a: A, b: B, c: C, d: D, e: E, f: F, g: G);
    /// `join!` of eight futures.
    join8 Join8(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H);
}

macro_rules! selects {
    ($($(#[$doc:meta])* $func:ident $select:ident $selected:ident ($($f:ident: $F:ident => $arm:ident),+);)+) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $func<$($F: Future<Output = Option<$arm>>, $arm),+>($($f: $F),+) -> $select<$($F, $arm),+> {
            $select { $($f: Some(Box::pin($f))),+ }
        }

        #[doc = concat!("What [`", stringify!($func), "`] chose: the first arm whose receive produced an item, or `Disabled` once every arm's channel has closed.")]
        #[derive(Debug)]
        pub enum $selected<$($arm),+> {
            $(
                #[allow(missing_docs)]
                $arm($arm),
            )+
            /// Every arm's channel has closed.
            Disabled,
        }

        #[doc = concat!("The future of [`", stringify!($func), "`].")]
        #[must_use = "select! does nothing unless awaited"]
        pub struct $select<$($F: Future<Output = Option<$arm>>, $arm),+> {
            $($f: Option<Pin<Box<$F>>>),+
        }

        // The arms are boxed and never pinned in place, so the select itself may move.
        impl<$($F: Future<Output = Option<$arm>>, $arm),+> Unpin for $select<$($F, $arm),+> {}

        impl<$($F: Future<Output = Option<$arm>>, $arm),+> Future for $select<$($F, $arm),+> {
            type Output = $selected<$($arm),+>;

            /// Polls the enabled arms in order; the first that produces an item wins (the others
            /// consumed nothing). An arm whose channel closed is disabled.
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                let this = self.get_mut();
                $(
                    if let Some(f) = this.$f.as_mut() {
                        match f.as_mut().poll(cx) {
                            Poll::Ready(Some(v)) => {
                                this.$f = None;
                                return Poll::Ready($selected::$arm(v));
                            }
                            Poll::Ready(None) => this.$f = None,
                            Poll::Pending => {}
                        }
                    }
                )+
                if true $(&& this.$f.is_none())+ {
                    return Poll::Ready($selected::Disabled);
                }
                Poll::Pending
            }
        }
    )+};
}

selects! {
    /// `select!` with one arm.
    select1 Select1 Selected1(a: FA => Arm0);
    /// `select! { Some(x) = rx1.recv() => .., Some(y) = rx2.recv() => .., else => .. }`: waits
    /// for the first of the receives to produce an item.
    select2 Select2 Selected2(a: FA => Arm0, b: FB => Arm1);
    /// `select!` with three arms.
    select3 Select3 Selected3(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2);
    /// `select!` with four arms.
    select4 Select4 Selected4(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2, d: FD => Arm3);
    /// `select!` with five arms.
    select5 Select5 Selected5(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2, d: FD => Arm3, e: FE => Arm4);
    /// `select!` with six arms.
    select6 Select6 Selected6(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2, d: FD => Arm3, e: FE => Arm4, f: FF => Arm5);
    /// `select!` with seven arms.
    select7 Select7 Selected7(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2, d: FD => Arm3, e: FE => Arm4, f: FF => Arm5, g: FG => Arm6);
    /// `select!` with eight arms.
    select8 Select8 Selected8(a: FA => Arm0, b: FB => Arm1, c: FC => Arm2, d: FD => Arm3, e: FE => Arm4, f: FF => Arm5, g: FG => Arm6, h: FH => Arm7);
}
