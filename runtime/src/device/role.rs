//! Roles and `join!`: a kernel body pins async fns to warp ranges and runs them concurrently.

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

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if !this.registered {
            this.registered = true;
            crate::sim::register_roles(this.roles.iter().map(|r| (r.name, r.warps.clone())));
        }
        let mut pending = false;
        for order in crate::sim::poll_order(N) {
            let role = &mut this.roles[order];
            let Some(body) = role.body.as_mut() else {
                continue;
            };
            crate::sim::enter_role(order);
            let done = body.as_mut().poll(cx).is_ready();
            crate::sim::leave_role();
            if done {
                role.body = None;
                crate::sim::role_finished(order);
            } else {
                pending = true;
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}
