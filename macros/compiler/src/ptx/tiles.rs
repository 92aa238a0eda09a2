//! Tile loads and stores: a reserved `Tile<T, R, C>` slot filled from a matrix parameter by one
//! `cp.async.bulk.tensor.2d` (the TMA) per column block of the tile, issued by the role's
//! elected thread through the tensor map of the block's shape, completing on the slot's `full`
//! barrier; a received one written back into a `&mut Matrix<T>` the same way, as a bulk group
//! that the slot's release waits to have read it.
//!
//! The tensor map is a 128-byte kernel parameter (`.param .align 128 .b8 ..[128]`, as nvcc
//! passes a `__grid_constant__ CUtensorMap`); the copy takes its generic address (`cvta.param`).
//! The tile's elements are read by ordinary loads whose addresses the lowering swizzles.

use std::fmt::Write;

use super::channels::SEND;
use super::error::{WriteError, WriteResult};
use super::types::Class;
use super::Writer;
use crate::ir::{ChannelId, ParamKind, Value};
use crate::types::{tile_bytes, tile_column_blocks, Scalar};
use gpu_async_wire::trace::TraceEvent;

impl Writer<'_> {
    /// `slot.load(matrix, [row, col])`: the box at (`row`, `col`) of the matrix parameter's
    /// tensor map `map` into tile `part` of the reserved slot of `chan`.
    pub(super) fn tile_load(
        &mut self,
        (chan, part): (ChannelId, u32),
        (param, map): (u32, u32),
        row: Value,
        col: Value,
    ) -> WriteResult {
        let ring = self.ring(chan, SEND)?;
        let c = self.k.channel(chan).clone();
        let (elem, rows, cols) = c.ty.elem.tile_part(part).ok_or_else(|| {
            WriteError::inconsistent(format!("tile {part} in the payload of {chan}"), "none")
        })?;
        let bytes = tile_bytes(elem, rows, cols);
        let part_offset = c.ty.part_offsets().get(part as usize).copied().unwrap_or(0);
        let index = self.map_param_index(param, map)?;
        let issuer = self.bulk_issuer()?;
        let (row, col) = (self.reg(row), self.reg(col));
        writeln!(
            self.body,
            "    // tile_load {chan}: one TMA copy of the box into the slot"
        )?;
        self.trace_copy(TraceEvent::CopyIn, chan)?;
        let at = u64::from(c.data_offset) + part_offset;
        let at = u32::try_from(at).map_err(|_| {
            WriteError::inconsistent("a tile within the shared memory", format!("offset {at}"))
        })?;
        let dst = self.shared_addr(at, &ring.slot, c.slot_stride)?;
        let full = self.shared_addr(c.full_offset, &ring.slot, 8)?;
        let skip = self.label("tile_done");
        self.line(format!("@!{issuer} bra {skip};"))?;
        let tmap = self.tensor_map_addr(index)?;
        self.line(format!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{full}], {bytes};"
        ))?;
        // The box's coordinates run innermost first: the column, then the row.
        self.each_column_block((elem, rows, cols), &dst, &col, |w, into, from| {
            w.line(format!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{into}], [{tmap}, {{{from}, {row}}}], [{full}];"
            ))
        })?;
        self.place_label(&skip)?;
        self.trace_copy(TraceEvent::CopyInEnd, chan)
    }

    /// `tile.store(matrix, [row, col])`: the received slot of `chan` (the held one, or the one
    /// at ring position `slot`) into the box at (`row`, `col`) of the matrix parameter's tensor
    /// map `map`, one copy per column block, committed as one bulk group.
    pub(super) fn tile_store(
        &mut self,
        (chan, slot, rx): (ChannelId, Option<Value>, u32),
        (param, map): (u32, u32),
        row: Value,
        col: Value,
    ) -> WriteResult {
        let held = self.received_slot(chan, rx, slot)?;
        let c = self.k.channel(chan).clone();
        let (elem, rows, cols) = c.ty.elem.tile_part(0).ok_or_else(|| {
            WriteError::inconsistent(format!("a tile in the payload of {chan}"), "none")
        })?;
        let index = self.map_param_index(param, map)?;
        let issuer = self.bulk_issuer()?;
        let (row, col) = (self.reg(row), self.reg(col));
        writeln!(
            self.body,
            "    // tile_store {chan}: one TMA store of the slot per column block"
        )?;
        self.trace_copy(TraceEvent::CopyOut, chan)?;
        let src = self.shared_addr(c.data_offset, &held, c.slot_stride)?;
        let skip = self.label("tile_store_done");
        self.line(format!("@!{issuer} bra {skip};"))?;
        let tmap = self.tensor_map_addr(index)?;
        self.each_column_block((elem, rows, cols), &src, &col, |w, from, to| {
            w.line(format!(
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{tmap}, {{{to}, {row}}}], [{from}];"
            ))
        })?;
        self.line("cp.async.bulk.commit_group;")?;
        self.place_label(&skip)
    }

    /// The generic address of the tensor map passed as PTX parameter `index`, which a TMA copy
    /// takes (`cvta.param` of the parameter).
    fn tensor_map_addr(&mut self, index: usize) -> WriteResult<String> {
        let tmap = self.tmp(Class::B64);
        self.line(format!("mov.b64 {tmap}, {}_param_{index};", self.k.name))?;
        self.line(format!("cvta.param.u64 {tmap}, {tmap};"))?;
        Ok(tmap)
    }

    /// Writes `copy` of each column block of a tile of `cols` columns of `elem` at `smem`, whose
    /// first column is `col`, given the block's shared address and matrix column: a tile of
    /// several column blocks is copied a block at a time, the next block's columns into the
    /// next `rows` lines.
    fn each_column_block(
        &mut self,
        (elem, rows, cols): (Scalar, u32, u32),
        smem: &str,
        col: &str,
        mut copy: impl FnMut(&mut Self, &str, &str) -> WriteResult,
    ) -> WriteResult {
        let (blocks, block_cols) = tile_column_blocks(elem, cols);
        let block_bytes = tile_bytes(elem, rows, block_cols);
        copy(self, smem, col)?;
        for b in 1..blocks {
            let (at, from) = (self.tmp(Class::B32), self.tmp(Class::B32));
            self.line(format!(
                "add.u32 {at}, {smem}, {};",
                u64::from(b) * block_bytes
            ))?;
            self.line(format!("add.u32 {from}, {col}, {};", b * block_cols))?;
            copy(self, &at, &from)?;
        }
        Ok(())
    }

    /// The number of the PTX parameter that passes tensor map `map` of kernel parameter
    /// `param`: those of the parameters before it ([`ParamKind::ptx_params`]), then the
    /// matrix's address, rows and columns, then its maps.
    fn map_param_index(&self, param: u32, map: u32) -> WriteResult<usize> {
        let (before, rest) = self
            .k
            .params
            .split_at(self.k.params.len().min(param as usize));
        match rest.first().map(|p| &p.kind) {
            Some(ParamKind::Matrix { boxes, .. }) if (map as usize) < boxes.len() => {
                let index: usize = before.iter().map(|p| p.kind.ptx_params()).sum();
                Ok(index + 3 + map as usize)
            }
            _ => Err(WriteError::inconsistent(
                format!("tensor map {map} of parameter {param}"),
                "no such matrix parameter",
            )),
        }
    }
}
