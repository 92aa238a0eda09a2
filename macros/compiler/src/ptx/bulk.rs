//! Bulk copies between global memory and a channel's slot (`copy_from`, `copy_to`): one
//! `cp.async.bulk` by the role's issuing thread for the 16-byte-aligned part, and a tail of
//! ordinary loads and stores by the role's threads for the rest.

use std::fmt::Write;

use super::channels::SEND;
use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{ChannelId, Value};
use crate::types::ChanElem;
use crate::types::Scalar;
use gpu_async_wire::trace::TraceEvent;

/// The registers of [`Writer::bulk_split`]: the copy's length in elements, the bytes of its
/// bulk part, and whether this thread issues the bulk copy.
struct BulkSplit {
    len32: String,
    bulk: String,
    go: String,
}

impl Writer<'_> {
    pub(super) fn copy_in(
        &mut self,
        chan: ChannelId,
        src: Value,
        len: Value,
        bulk: Value,
    ) -> WriteResult {
        let ring = self.ring(chan, SEND)?;
        let c = self.k.channel(chan).clone();
        let whole = self.whole.contains(&(len, bulk));
        let (src, len, bulk) = (self.reg(src), self.reg(len), self.reg(bulk));
        // The checker allows bulk copies of scalar payloads only.
        let Some(esize) = c.ty.elem.scalar().map(Scalar::size) else {
            return Err(not_scalar_payload(chan, &c.ty.elem));
        };
        writeln!(self.body, "    // copy_in {chan}: bulk copy of the 16-byte-aligned part, the rest by the role's threads")?;
        self.trace_copy(TraceEvent::CopyIn, chan)?;
        let split = self.bulk_split(&len, &bulk)?;
        let dst = self.shared_addr(c.data_offset, &ring.slot, c.slot_stride)?;
        let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
        if c.generic_writes {
            self.line("fence.proxy.async.shared::cta;")?;
        }
        let skip = self.label("bulk_done");
        self.line(format!("@!{} bra {skip};", split.go))?;
        self.line(format!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{full}], {};",
            split.bulk
        ))?;
        self.line(format!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{src}], {}, [{full}];",
            split.bulk
        ))?;
        self.place_label(&skip)?;
        // A whole copy: this version of the loop runs only when the bulk part covers the copy.
        if !whole {
            // The tail (and everything, for an unaligned source): ordinary loads and stores,
            // which the warps' arrivals at `send` publish.
            self.copy_tail(&split, esize, &src, &dst, true, "tail")?;
        }
        self.trace_copy(TraceEvent::CopyInEnd, chan)
    }

    /// `copy_to`: the received slot's (the held one's, or the one at ring position `slot`) first `len` elements to `dst` in global memory. One thread of
    /// the role copies the 16-byte-aligned part (`bulk` bytes) with one `cp.async.bulk` (a bulk
    /// group, which the slot's release waits to have been read); the role's threads copy the
    /// rest.
    pub(super) fn copy_out(
        &mut self,
        chan: ChannelId,
        dst: Value,
        len: Value,
        bulk: Value,
        (slot, rx): (Option<Value>, u32),
    ) -> WriteResult {
        let held = self.received_slot(chan, rx, slot)?;
        let c = self.k.channel(chan).clone();
        let whole = self.whole.contains(&(len, bulk));
        let (dst, len, bulk) = (self.reg(dst), self.reg(len), self.reg(bulk));
        // The checker allows bulk copies of scalar payloads only.
        let Some(esize) = c.ty.elem.scalar().map(Scalar::size) else {
            return Err(not_scalar_payload(chan, &c.ty.elem));
        };
        writeln!(
            self.body,
            "    // copy_out {chan}: bulk copy of the 16-byte-aligned part, the rest by the role's threads"
        )?;
        self.trace_copy(TraceEvent::CopyOut, chan)?;
        let split = self.bulk_split(&len, &bulk)?;
        let src = self.shared_addr(c.data_offset, &held, c.slot_stride)?;
        let skip = self.label("bulk_out_done");
        self.line(format!("@!{} bra {skip};", split.go))?;
        self.line(format!(
            "cp.async.bulk.global.shared::cta.bulk_group [{dst}], [{src}], {};",
            split.bulk
        ))?;
        self.line("cp.async.bulk.commit_group;")?;
        self.place_label(&skip)?;
        if whole {
            return Ok(());
        }
        self.copy_tail(&split, esize, &dst, &src, false, "tail_out")
    }

    /// The predicate of the role's thread that issues its bulk copies and tile copies
    /// ([`RoleCtx::bulk_issuer`]), which a role with such copies has.
    ///
    /// [`RoleCtx::bulk_issuer`]: super::kernel::RoleCtx::bulk_issuer
    pub(super) fn bulk_issuer(&self) -> WriteResult<String> {
        self.role()?.bulk_issuer.clone().ok_or_else(|| {
            WriteError::inconsistent("the role's bulk-copy issuer", "a role without bulk copies")
        })
    }

    /// The registers of a copy of `len` elements whose 16-byte-aligned part, `bulk` bytes (the
    /// IR computes them, see [`Inst::CopyIn`]), one bulk copy moves, and whether this thread
    /// issues it. The issuing thread is the one `elect.sync` picked in the role's first warp at
    /// the role's start ([`RoleCtx::bulk_issuer`]): told so, ptxas issues the copy once, where a
    /// lane test (`lane == 0`) made it wrap the copy in a loop over the lanes that pass the test
    /// (`ELECT` ... `BRA.U.ANY`; 20 ns per item of a 16 KiB copy on the H200,
    /// docs/benchmarks.md). It is the same thread for every copy of the role, so its
    /// `cp.async.bulk.wait_group` covers all of them.
    ///
    /// [`Inst::CopyIn`]: crate::ir::Inst::CopyIn
    /// [`RoleCtx::bulk_issuer`]: super::kernel::RoleCtx::bulk_issuer
    fn bulk_split(&mut self, len: &str, bulk: &str) -> WriteResult<BulkSplit> {
        let issuer = self.bulk_issuer()?;
        let len32 = self.tmp(Class::B32);
        self.line(format!("cvt.u32.u64 {len32}, {len};"))?;
        let bulk32 = self.tmp(Class::B32);
        self.line(format!("cvt.u32.u64 {bulk32}, {bulk};"))?;
        let go = self.tmp(Class::Pred);
        self.line(format!("setp.ne.u32 {go}, {bulk32}, 0;"))?;
        self.line(format!("and.pred {go}, {go}, {issuer};"))?;
        Ok(BulkSplit {
            len32,
            bulk: bulk32,
            go,
        })
    }

    /// The elements after the bulk part, copied by the role's threads with ordinary loads and
    /// stores: from global memory into the slot (`into_slot`), or out of it. A copy that the
    /// bulk part covers whole skips the loop on a test that is the same in every thread, so
    /// that ptxas's convergence region for the loop stays off that path.
    fn copy_tail(
        &mut self,
        split: &BulkSplit,
        esize: u32,
        global: &str,
        slot: &str,
        into_slot: bool,
        label: &str,
    ) -> WriteResult {
        let (threads, rtid) = {
            let r = self.role()?;
            (r.threads, r.rtid.clone())
        };
        let (bulk, len32) = (&split.bulk, &split.len32);
        let i = self.tmp(Class::B32);
        let shift = esize.trailing_zeros();
        self.line(format!("shr.u32 {i}, {bulk}, {shift};"))?;
        let (head, end) = (self.label(label), self.label(&format!("{label}_end")));
        let whole = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u32 {whole}, {i}, {len32};"))?;
        self.line(format!("@{whole} bra.uni {end};"))?;
        self.line(format!("add.u32 {i}, {i}, {rtid};"))?;
        self.place_label(&head)?;
        let p = self.tmp(Class::Pred);
        self.line(format!("setp.ge.u32 {p}, {i}, {len32};"))?;
        self.line(format!("@{p} bra {end};"))?;
        let gaddr = self.tmp(Class::B64);
        self.line(format!("mad.wide.u32 {gaddr}, {i}, {esize}, {global};"))?;
        let saddr = self.tmp(Class::B32);
        self.line(format!("mad.lo.u32 {saddr}, {i}, {esize}, {slot};"))?;
        let v = self.tmp(if esize == 8 { Class::B64 } else { Class::B32 });
        let mt = match esize {
            1 => "u8",
            2 => "u16",
            8 => "b64",
            _ => "b32",
        };
        if into_slot {
            self.line(format!("ld.global.{mt} {v}, [{gaddr}];"))?;
            self.line(format!("st.shared.{mt} [{saddr}], {v};"))?;
        } else {
            self.line(format!("ld.shared.{mt} {v}, [{saddr}];"))?;
            self.line(format!("st.global.{mt} [{gaddr}], {v};"))?;
        }
        self.line(format!("add.u32 {i}, {i}, {threads};"))?;
        self.line(format!("bra {head};"))?;
        self.place_label(&end)
    }
}

/// A bulk copy on `chan`, whose payload `elem` is not a scalar: the checker allows bulk copies
/// of scalar payloads only.
pub(super) fn not_scalar_payload(chan: ChannelId, elem: &ChanElem) -> WriteError {
    WriteError::inconsistent(
        format!("a scalar payload for the bulk copies on {chan}"),
        format!("{elem}"),
    )
}
