//! The epilogue of tensor-core mmas: `acc.store(..)` and `acc.store_scaled(..)`, each thread's
//! accumulator values to a row-major matrix in global memory, in the fragment's layout, and
//! `acc.store_tile(..)`, a block of its columns into a tile slot in shared memory, laid out as
//! the TMA lays out a tile (which a tile store then copies to global memory).

use super::error::WriteResult;
use super::types::{half_name, Class};
use super::Writer;
use crate::ir::{fragment_place, Value};
use crate::types::{tile_column_blocks, Scalar};

impl Writer<'_> {
    /// `acc.store(..)`: the thread's values to the matrix at `addr` (see [`Inst::AccStore`]).
    /// Where every element of the thread lies inside the matrix (its two rows, its columns up to
    /// its last), the stores go unchecked (and as pairs of neighbouring columns,
    /// `st.global.v2.f32` or one `b32` of two 16-bit values, where the pairs are aligned to
    /// their size); otherwise each is predicated on its row and column.
    ///
    /// [`Inst::AccStore`]: crate::ir::Inst::AccStore
    pub(super) fn acc_store(
        &mut self,
        acc: &[Value],
        elem: Scalar,
        (addr, row_bytes): (Value, Value),
        (rows_left, cols_left): (Value, Value),
        scale: Option<(Value, Value)>,
    ) -> WriteResult {
        if let Some(scale) = scale {
            return self.acc_store_scaled(
                acc,
                elem,
                (addr, row_bytes),
                (rows_left, cols_left),
                scale,
            );
        }
        let regs: Vec<String> = acc.iter().map(|v| self.reg(*v)).collect();
        let (a, stride) = (self.reg(addr), self.reg(row_bytes));
        let (rows, cols) = (self.reg(rows_left), self.reg(cols_left));
        let size = u64::from(elem.size());
        let ty = if elem == Scalar::F32 { "f32" } else { "b16" };
        let row_base = self.row_bases(&a, &stride)?;
        let (full, p, q) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        let slow = self.label("acc_store_checked");
        let done = self.label("acc_store_done");
        self.unless_inside(&full, (&rows, &cols), acc.len(), &slow)?;
        // Values `2 i` and `2 i + 1` are neighbours in a row: one store of both where the
        // pair is aligned to its size (the thread's first address and the row stride both are).
        let aligned = self.tmp(Class::B64);
        let scalar = self.label("acc_store_single");
        self.line(format!("or.b64 {aligned}, {a}, {stride};"))?;
        self.line(format!("and.b64 {aligned}, {aligned}, {};", 2 * size - 1))?;
        self.line(format!("setp.ne.u64 {p}, {aligned}, 0;"))?;
        self.line(format!("@{p} bra {scalar};"))?;
        for (k, pair) in regs.chunks(2).enumerate() {
            let k = k as u64;
            let (j, h) = (k / 2, k % 2);
            let base = &row_base[h as usize];
            self.store_pair("global", &format!("{base}+{}", 8 * j * size), pair, elem)?;
        }
        self.line(format!("bra.uni {done};"))?;
        self.place_label(&scalar)?;
        let out = self.stored_values(&regs, elem)?;
        for (k, v) in out.iter().enumerate() {
            let (h, col) = fragment_place(k);
            let base = &row_base[h];
            self.line(format!("st.global.{ty} [{base}+{}], {v};", col * size))?;
        }
        self.line(format!("bra.uni {done};"))?;
        self.place_label(&slow)?;
        let out = self.stored_values(&regs, elem)?;
        let row_ok = self.row_checks(&rows)?;
        for (k, v) in out.iter().enumerate() {
            let (h, col) = fragment_place(k);
            let base = &row_base[h];
            self.column_check(&q, &cols, col, &row_ok[h])?;
            self.line(format!("@{q} st.global.{ty} [{base}+{}], {v};", col * size))?;
        }
        self.place_label(&done)
    }

    /// `acc.store_tile(&mut slot, col)` (see [`Inst::AccTile`]): the thread's values of column
    /// block `block` (the tile's `cols` columns each) into the tile, in pairs of neighbouring
    /// columns (`st.shared.v2.f32`, or one `b32` of two 16-bit values). One branch per column
    /// block of the accumulator picks the registers, which a register index cannot.
    ///
    /// A pair's address is `first` plus its column's bytes within the tile's column block,
    /// XORed with `swizzle` (the same for both of the thread's rows, 8 apart: the swizzle's
    /// XOR comes from address bits the 8 rows do not change), plus the column block's and the
    /// row's offsets.
    ///
    /// [`Inst::AccTile`]: crate::ir::Inst::AccTile
    pub(super) fn acc_tile(
        &mut self,
        acc: &[Value],
        elem: Scalar,
        (rows, cols): (u32, u32),
        (first, swizzle): (Value, Value),
        block: Value,
    ) -> WriteResult {
        let regs: Vec<String> = acc.iter().map(|v| self.reg(*v)).collect();
        let (first, swizzle, block) = (self.reg(first), self.reg(swizzle), self.reg(block));
        let size = elem.size();
        let (_, block_cols) = tile_column_blocks(elem, cols);
        let line = u64::from(block_cols * size);
        let chunks = (2 * acc.len() as u32) / cols.max(1);
        let done = self.label("acc_tile_done");
        let skip = self.tmp(Class::Pred);
        for b in 0..chunks {
            let next = self.label("acc_tile_next");
            self.line(format!("setp.ne.u32 {skip}, {block}, {b};"))?;
            self.line(format!("@{skip} bra {next};"))?;
            // Values `4 j + 2 h + e`: column `8 j + e`, row `8 h` on (`fragment_place`).
            for (j, four) in regs.chunks(4).enumerate() {
                let column = 8 * j as u32;
                if column / cols != b {
                    continue;
                }
                let in_tile = column % cols;
                let (tile_block, within) = (in_tile / block_cols, in_tile % block_cols);
                let at = self.tmp(Class::B32);
                self.line(format!("add.u32 {at}, {first}, {};", within * size))?;
                self.line(format!("xor.b32 {at}, {at}, {swizzle};"))?;
                for (h, pair) in four.chunks(2).enumerate() {
                    let offset =
                        u64::from(tile_block) * u64::from(rows) * line + 8 * h as u64 * line;
                    self.store_pair("shared", &format!("{at}+{offset}"), pair, elem)?;
                }
            }
            self.line(format!("bra.uni {done};"))?;
            self.place_label(&next)?;
        }
        self.place_label(&done)
    }

    /// `rows.store(..)` (see [`Inst::RowsStore`]): the owning lane stores each of its two rows'
    /// values where the row is inside the destination.
    ///
    /// [`Inst::RowsStore`]: crate::ir::Inst::RowsStore
    pub(super) fn rows_store(
        &mut self,
        values: [Value; 2],
        addr: Value,
        rows_left: Value,
        owner: Value,
    ) -> WriteResult {
        let (a, left, own) = (self.reg(addr), self.reg(rows_left), self.reg(owner));
        for (h, v) in values.iter().enumerate() {
            let v = self.reg(*v);
            let q = self.tmp(Class::Pred);
            self.line(format!("setp.gt.and.u64 {q}, {left}, {}, {own};", 8 * h))?;
            self.line(format!("@{q} st.global.f32 [{a}+{}], {v};", 32 * h))?;
        }
        Ok(())
    }

    /// `acc.store_scaled(.., alpha, beta)`: as [`Writer::acc_store`], each value stored being
    /// `alpha * v` (`mul.rn`), plus `beta` times the element there (`fma.rn`, one rounding) when
    /// `beta` is not 0 (a NaN `beta` reads it too, as the simulator's `beta != 0.0` does); a
    /// `beta` of 0 reads nothing, so a destination of NaNs is overwritten. One value at a time,
    /// no pairs: each is a load, an `fma` and a store.
    fn acc_store_scaled(
        &mut self,
        acc: &[Value],
        elem: Scalar,
        (addr, row_bytes): (Value, Value),
        (rows_left, cols_left): (Value, Value),
        (alpha, beta): (Value, Value),
    ) -> WriteResult {
        let regs: Vec<String> = acc.iter().map(|v| self.reg(*v)).collect();
        let (a, stride) = (self.reg(addr), self.reg(row_bytes));
        let (rows, cols) = (self.reg(rows_left), self.reg(cols_left));
        let (alpha, beta) = (self.reg(alpha), self.reg(beta));
        let size = u64::from(elem.size());
        let row_base = self.row_bases(&a, &stride)?;
        let (full, reads) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
        self.line(format!("setp.neu.f32 {reads}, {beta}, 0f00000000;"))?;
        let slow = self.label("acc_store_checked");
        let done = self.label("acc_store_done");
        self.unless_inside(&full, (&rows, &cols), acc.len(), &slow)?;
        for (k, v) in regs.iter().enumerate() {
            let (h, col) = fragment_place(k);
            let at = format!("{}+{}", row_base[h], col * size);
            self.scaled_value(v, elem, &at, (&alpha, &beta), (&reads, None))?;
        }
        self.line(format!("bra.uni {done};"))?;
        self.place_label(&slow)?;
        let row_ok = self.row_checks(&rows)?;
        let (q, qr) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
        for (k, v) in regs.iter().enumerate() {
            let (h, col) = fragment_place(k);
            self.column_check(&q, &cols, col, &row_ok[h])?;
            self.line(format!("and.pred {qr}, {q}, {reads};"))?;
            let at = format!("{}+{}", row_base[h], col * size);
            self.scaled_value(v, elem, &at, (&alpha, &beta), (&qr, Some(&q)))?;
        }
        self.place_label(&done)
    }

    /// One store of the neighbouring values `pair` (the lower column first) at `at` in state
    /// space `space` (`global`, `shared`): `st.v2.f32`, or for a 16-bit `elem` both converted
    /// into one `b32` by one instruction ([`Writer::cvt_pair`]), the lower column in the low
    /// half, at the lower address.
    fn store_pair(&mut self, space: &str, at: &str, pair: &[String], elem: Scalar) -> WriteResult {
        if elem == Scalar::F32 {
            return self.line(format!(
                "st.{space}.v2.f32 [{at}], {{{}, {}}};",
                pair[0], pair[1]
            ));
        }
        let both = self.tmp(Class::B32);
        self.cvt_pair(&both, (&pair[0], &pair[1]), elem)?;
        self.line(format!("st.{space}.b32 [{at}], {both};"))
    }

    /// The registers `regs` as stored into `elem` elements: themselves for `f32`, else each
    /// converted (`cvt.rn`) into a 16-bit register.
    fn stored_values(&mut self, regs: &[String], elem: Scalar) -> WriteResult<Vec<String>> {
        if elem == Scalar::F32 {
            return Ok(regs.to_vec());
        }
        let mut out = Vec::with_capacity(regs.len());
        for r in regs {
            let t = self.tmp(Class::B16);
            self.line(format!("cvt.rn.{}.f32 {t}, {r};", half_name(elem)))?;
            out.push(t);
        }
        Ok(out)
    }

    /// The addresses of the thread's two rows: its first, at `a`, and the one 8 rows on.
    fn row_bases(&mut self, a: &str, stride: &str) -> WriteResult<[String; 2]> {
        let lower = self.tmp(Class::B64);
        self.line(format!("mad.lo.u64 {lower}, {stride}, 8, {a};"))?;
        Ok([a.to_string(), lower])
    }

    /// Branches to `slow` unless every one of the thread's `values` lies inside the matrix
    /// (`full` is set to whether they do): `rows` and `cols` are what is left of the matrix from
    /// the thread's first element, which its last row and column must not pass. A bound on the
    /// thread's own extent, not its warp's: a warp whose threads all lie inside takes no branch
    /// on the checked path, where a bound on the warp's 16 rows and `2 values` columns sent
    /// three lanes in four through it on a matrix exactly as wide as the accumulator.
    fn unless_inside(
        &mut self,
        full: &str,
        (rows, cols): (&str, &str),
        values: usize,
        slow: &str,
    ) -> WriteResult {
        let (last_row, last_col) = (0..values)
            .map(fragment_place)
            .fold((0, 0), |(r, c), (h, col)| (r.max(8 * h as u64), c.max(col)));
        self.line(format!("setp.gt.u64 {full}, {rows}, {last_row};"))?;
        self.line(format!(
            "setp.gt.and.u64 {full}, {cols}, {last_col}, {full};"
        ))?;
        self.line(format!("@!{full} bra {slow};"))
    }

    /// Whether each of the thread's two rows lies inside the matrix (`rows` left from its
    /// first).
    fn row_checks(&mut self, rows: &str) -> WriteResult<[String; 2]> {
        let row_ok = [self.tmp(Class::Pred), self.tmp(Class::Pred)];
        self.line(format!("setp.gt.u64 {}, {rows}, 0;", row_ok[0]))?;
        self.line(format!("setp.gt.u64 {}, {rows}, 8;", row_ok[1]))?;
        Ok(row_ok)
    }

    /// `q` = whether column `col` (from the thread's first) of a row for which `row_ok` holds
    /// lies inside the matrix (`cols` left).
    fn column_check(&mut self, q: &str, cols: &str, col: u64, row_ok: &str) -> WriteResult {
        self.line(format!("setp.gt.and.u64 {q}, {cols}, {col}, {row_ok};"))
    }

    /// One value of a scaled store: `alpha * v`, plus `beta` times the element at `at` where
    /// `reads` holds, converted to `elem` and stored (where `inside` holds, when given).
    fn scaled_value(
        &mut self,
        v: &str,
        elem: Scalar,
        at: &str,
        (alpha, beta): (&str, &str),
        (reads, inside): (&str, Option<&str>),
    ) -> WriteResult {
        let t = self.tmp(Class::F32);
        self.line(format!("mul.rn.f32 {t}, {alpha}, {v};"))?;
        let old = self.tmp(Class::F32);
        if elem == Scalar::F32 {
            self.line(format!("@{reads} ld.global.f32 {old}, [{at}];"))?;
        } else {
            let bits = self.tmp(Class::B16);
            self.line(format!("@{reads} ld.global.b16 {bits}, [{at}];"))?;
            self.line(format!(
                "@{reads} cvt.f32.{} {old}, {bits};",
                half_name(elem)
            ))?;
        }
        self.line(format!("@{reads} fma.rn.f32 {t}, {beta}, {old}, {t};"))?;
        let guard = inside.map_or_else(String::new, |q| format!("@{q} "));
        if elem == Scalar::F32 {
            return self.line(format!("{guard}st.global.f32 [{at}], {t};"));
        }
        let narrow = self.tmp(Class::B16);
        self.line(format!("cvt.rn.{}.f32 {narrow}, {t};", half_name(elem)))?;
        self.line(format!("{guard}st.global.b16 [{at}], {narrow};"))
    }
}
