//! The panics of receives that unwrap ([`RecvEnd::Fail`]): a role that has such receives keeps the
//! site of the one that met the stream's end in a register ([`RoleCtx::failed`]), set without a
//! branch; the role raises it where it would otherwise spin (every 16th poll of a slow wait,
//! every 16th iteration of a loop), in its other panics' records, and at its end.
//!
//! Nothing is tested before a receive's wait: ptxas moves a receive's first test up through the
//! code before it, which overlaps the test's latency with that code (in the attention example,
//! with the softmax), and a branch there would stop it.
//!
//! [`RecvEnd::Fail`]: crate::ir::RecvEnd::Fail
//! [`RoleCtx::failed`]: super::kernel::RoleCtx::failed

use std::fmt::Write;

use super::error::{WriteError, WriteResult};
use super::kernel::NO_FAILURE;
use super::types::Class;
use super::waits::FAILURE_PANIC;
use super::Writer;

/// The label of the stub of role `index` that records its failed site.
fn stub_label(index: usize) -> String {
    format!("$unwrap_failed_{index}")
}

impl Writer<'_> {
    /// The role's failed-site register, which a role with receives that unwrap has.
    pub(super) fn failed_register(&self) -> WriteResult<String> {
        self.role()?
            .failed
            .clone()
            .ok_or_else(|| WriteError::inconsistent("a role's failed-site register", "none"))
    }

    /// The failed-site register of the role being written and the role's index, where it has
    /// one.
    fn failed_site(&self) -> Option<(String, usize)> {
        let role = self.role.as_ref()?;
        Some((role.failed.clone()?, role.index))
    }

    /// Raises the role's failed site, where it has receives that unwrap: goes to the role's stub
    /// when the register is set.
    pub(super) fn raise_deferred(&mut self) -> WriteResult {
        let Some((failed, index)) = self.failed_site() else {
            return Ok(());
        };
        let p = self.tmp(Class::Pred);
        self.line(format!("setp.ne.u32 {p}, {failed}, {NO_FAILURE};"))?;
        self.line(format!("@{p} bra {};", stub_label(index)))
    }

    /// The role's stub that [`Writer::raise_deferred`] goes to: the failure record of a panic at
    /// the failed site; written once, at the role's end.
    pub(super) fn deferred_stub(&mut self) -> WriteResult {
        let Some((failed, index)) = self.failed_site() else {
            return Ok(());
        };
        let abort = self.abort_label.clone();
        self.stub_at(&stub_label(index), FAILURE_PANIC, &failed, &abort)
    }

    /// In a role with a failed-site register, the site operand of a panic stub at `site`: the
    /// failed site where it is set (the panic of a receive that unwrapped the end came first,
    /// and may be what led here, through a stale index), else `site`. The instructions choosing
    /// it go to the stubs, after `label`.
    pub(super) fn panic_site(&mut self, label: &str, site: u32) -> WriteResult<Option<String>> {
        let Some(failed) = self.role.as_ref().and_then(|r| r.failed.clone()) else {
            return Ok(None);
        };
        let (set, chosen) = (self.tmp(Class::Pred), self.tmp(Class::B32));
        writeln!(self.stubs, "{label}:")?;
        writeln!(self.stubs, "    setp.ne.u32 {set}, {failed}, {NO_FAILURE};")?;
        writeln!(
            self.stubs,
            "    selp.b32 {chosen}, {failed}, {site}, {set};"
        )?;
        Ok(Some(chosen))
    }
}
