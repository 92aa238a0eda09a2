//! Roles and `join!`: a kernel body pins async fns to warp ranges and runs them concurrently
//! (in the simulator, one step at a time, in the order of the device's schedule).

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An async fn call pinned to a range of warps for the kernel's lifetime.
pub struct Role<'a> {
    warps: Range<u32>,
    name: &'static str,
    body: Option<Pin<Box<dyn Future<Output = ()> + 'a>>>,
}

/// Runs `role` on the warps `warps` (warp indices within the block, `start..end`). Only valid
/// inside `join!` in a kernel body.
pub fn on_warps<'a>(warps: Range<u32>, role: impl Future<Output = ()> + 'a) -> Role<'a> {
    Role {
        warps,
        name: "role",
        body: Some(Box::pin(role)),
    }
}

/// Runs `role` on the warpgroups `groups` (4 warps each, warpgroup `g` being warps `4g..4g + 4`):
/// `on_warpgroups(1..3, role)` is `on_warps(4..12, role)`. Only valid inside `join!` in a kernel
/// body; register budgets (`setmaxnreg`) and tensor-core operations work on whole warpgroups.
pub fn on_warpgroups<'a>(groups: Range<u32>, role: impl Future<Output = ()> + 'a) -> Role<'a> {
    let warps = groups.start.saturating_mul(4)..groups.end.saturating_mul(4);
    on_warps(warps, role)
}

impl Role<'_> {
    /// Names the role (the macro passes the async fn's name) for messages.
    #[doc(hidden)]
    pub fn __named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}

/// Runs every role to completion, concurrently. `join!(a, b, ...)` in a kernel body becomes
/// `join_roles([a, b, ...])`.
pub fn join_roles<const N: usize>(roles: [Role<'_>; N]) -> JoinRoles<'_, N> {
    JoinRoles {
        roles,
        registered: false,
    }
}

/// The future of [`join_roles`].
#[must_use = "join!(..) does nothing unless awaited"]
pub struct JoinRoles<'a, const N: usize> {
    roles: [Role<'a>; N],
    registered: bool,
}

impl<const N: usize> Future for JoinRoles<'_, N> {
    type Output = ();

    /// Runs steps of the roles, each picked by the simulator's schedule, until every role has
    /// finished (`Ready`) or none can move (`Pending`: the simulator reports the deadlock).
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if !this.registered {
            this.registered = true;
            crate::sim::register_roles(this.roles.iter().map(|r| (r.name, r.warps.clone())));
        }
        loop {
            let index = match crate::sim::next_step() {
                crate::sim::Step::Run(index) => index,
                crate::sim::Step::Finished => return Poll::Ready(()),
                crate::sim::Step::Stuck => return Poll::Pending,
            };
            let Some(role) = this.roles.get_mut(index) else {
                return Poll::Pending;
            };
            crate::sim::enter_role(index);
            // A role whose future has completed is stepped only to apply a close that waits.
            let returned = match role.body.as_mut() {
                Some(body) => body.as_mut().poll(cx).is_ready(),
                None => true,
            };
            if returned {
                role.body = None;
            }
            crate::sim::leave_role(index, returned);
        }
    }
}
