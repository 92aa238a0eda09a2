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
use crate::types::{tile_bytes, tile_column_blocks, tile_swizzle_bytes, Scalar};
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
    /// map `map`, one copy per column block, committed as one bulk group. With `rows`
    /// (`store_rows`), fewer rows than the tile's are copied by the role's threads instead
    /// ([`Writer::tile_rows_by_threads`]), and all of them by the TMA as above.
    pub(super) fn tile_store(
        &mut self,
        (chan, slot, rx): (ChannelId, Option<Value>, u32),
        (param, map): (u32, u32),
        [row, col]: [Value; 2],
        rows: Option<Value>,
    ) -> WriteResult {
        let held = self.received_slot(chan, rx, slot)?;
        let c = self.k.channel(chan).clone();
        let (elem, tile_rows, cols) = c.ty.elem.tile_part(0).ok_or_else(|| {
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
        if let Some(rows) = rows {
            let rows = self.reg(rows);
            let (all, by_tma) = (self.tmp(Class::Pred), self.label("tile_store_tma"));
            self.line(format!("setp.ge.u32 {all}, {rows}, {tile_rows};"))?;
            self.line(format!("@{all} bra {by_tma};"))?;
            self.tile_rows_by_threads(param, (elem, tile_rows, cols), &src, [&row, &col], &rows)?;
            self.line(format!("bra.uni {skip};"))?;
            self.place_label(&by_tma)?;
        }
        self.line(format!("@!{issuer} bra {skip};"))?;
        let tmap = self.tensor_map_addr(index)?;
        self.each_column_block((elem, tile_rows, cols), &src, &col, |w, from, to| {
            w.line(format!(
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{tmap}, {{{to}, {row}}}], [{from}];"
            ))
        })?;
        self.line("cp.async.bulk.commit_group;")?;
        self.place_label(&skip)
    }

    /// The first `limit` rows of the tile at shared address `smem` written into the matrix
    /// parameter `param` at (`row`, `col`) by the role's threads, without the TMA: thread `t`
    /// of the role copies the 16-byte chunks `t`, `t + threads`, ... of the tile (row-major,
    /// `chunks` per row) whose row is below `limit` and whose place is inside the matrix,
    /// reading each where the tile's swizzle put it (as `tile[r][c]` reads an element).
    fn tile_rows_by_threads(
        &mut self,
        param: u32,
        (elem, rows, cols): (Scalar, u32, u32),
        smem: &str,
        [row, col]: [&str; 2],
        limit: &str,
    ) -> WriteResult {
        let Some(ParamKind::Matrix {
            ptr,
            rows: m_rows,
            cols: m_cols,
            ..
        }) = self.k.params.get(param as usize).map(|p| p.kind.clone())
        else {
            return Err(WriteError::inconsistent(
                "a matrix parameter",
                format!("parameter {param}"),
            ));
        };
        let (ptr, m_rows, m_cols) = (self.reg(ptr), self.reg(m_rows), self.reg(m_cols));
        let (rtid, threads) = {
            let role = self.role()?;
            (role.rtid.clone(), role.threads)
        };
        let size = elem.size();
        let (_, block_cols) = tile_column_blocks(elem, cols);
        let line_bytes = block_cols * size;
        let (chunks, line_chunks) = (cols * size / 16, line_bytes / 16);
        let block_bytes = u64::from(rows) * u64::from(line_bytes);
        // The swizzle's XOR of a chunk: the line's bits over the span's chunks.
        let mask = tile_swizzle_bytes(elem, cols).map_or(0, |span| (span / 16 - 1) << 4);
        writeln!(
            self.body,
            "    // fewer rows than the tile's: the role's threads copy them, 16 bytes each"
        )?;
        let (i, r, j, p) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::Pred),
        );
        let (head, next, done) = (
            self.label("rows_copy"),
            self.label("rows_copy_next"),
            self.label("rows_copy_done"),
        );
        self.line(format!("mov.u32 {i}, {rtid};"))?;
        self.place_label(&head)?;
        self.line(format!("setp.ge.u32 {p}, {i}, {};", rows * chunks))?;
        self.line(format!("@{p} bra {done};"))?;
        self.line(format!("div.u32 {r}, {i}, {chunks};"))?;
        self.line(format!("rem.u32 {j}, {i}, {chunks};"))?;
        self.line(format!("setp.ge.u32 {p}, {r}, {limit};"))?;
        self.line(format!("@{p} bra {next};"))?;
        // The matrix's row and column of the chunk, and whether they are inside its edges.
        let (grow, gcol) = (self.tmp(Class::B64), self.tmp(Class::B64));
        let (wide, inside) = (self.tmp(Class::B64), self.tmp(Class::Pred));
        self.line(format!("cvt.u64.u32 {grow}, {row};"))?;
        self.line(format!("cvt.u64.u32 {wide}, {r};"))?;
        self.line(format!("add.u64 {grow}, {grow}, {wide};"))?;
        self.line(format!("cvt.u64.u32 {gcol}, {col};"))?;
        self.line(format!("mul.wide.u32 {wide}, {j}, {};", 16 / size))?;
        self.line(format!("add.u64 {gcol}, {gcol}, {wide};"))?;
        self.line(format!("setp.lt.u64 {inside}, {grow}, {m_rows};"))?;
        self.line(format!(
            "setp.lt.and.u64 {inside}, {gcol}, {m_cols}, {inside};"
        ))?;
        self.line(format!("@!{inside} bra {next};"))?;
        // Its place in the slot: column block `j / line_chunks`, line `r` of it, its chunk
        // within the line swizzled by the line's bits.
        let (off, t) = (self.tmp(Class::B32), self.tmp(Class::B32));
        self.line(format!("div.u32 {t}, {j}, {line_chunks};"))?;
        self.line(format!("mul.lo.u32 {off}, {t}, {block_bytes};"))?;
        let (line, within) = (self.tmp(Class::B32), self.tmp(Class::B32));
        self.line(format!("mul.lo.u32 {line}, {r}, {line_bytes};"))?;
        self.line(format!("rem.u32 {within}, {j}, {line_chunks};"))?;
        self.line(format!("shl.b32 {within}, {within}, 4;"))?;
        if mask != 0 {
            self.line(format!("shr.u32 {t}, {line}, 3;"))?;
            self.line(format!("and.b32 {t}, {t}, {mask};"))?;
            self.line(format!("xor.b32 {within}, {within}, {t};"))?;
        }
        self.line(format!("add.u32 {off}, {off}, {line};"))?;
        self.line(format!("add.u32 {off}, {off}, {within};"))?;
        self.line(format!("add.u32 {off}, {off}, {smem};"))?;
        let v: Vec<String> = (0..4).map(|_| self.tmp(Class::B32)).collect();
        let v = v.join(", ");
        self.line(format!("ld.shared.v4.b32 {{{v}}}, [{off}];"))?;
        let addr = self.tmp(Class::B64);
        self.line(format!("mad.lo.u64 {addr}, {grow}, {m_cols}, {gcol};"))?;
        self.line(format!("mad.lo.u64 {addr}, {addr}, {size}, {ptr};"))?;
        self.line(format!("st.global.v4.b32 [{addr}], {{{v}}};"))?;
        self.place_label(&next)?;
        self.line(format!("add.u32 {i}, {i}, {threads};"))?;
        self.line(format!("bra.uni {head};"))?;
        self.place_label(&done)
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
