//! Memory: loads and stores in each space, the addresses of local memory, constant tables and
//! shared values, and element addresses for parallel loops.

use super::error::WriteResult;
use super::types::{mem_ty, space_name, Class};
use super::Writer;
use crate::ir::{Space, Value};
use crate::types::Scalar;

impl Writer<'_> {
    /// A load: `dst` from `addr` in `space`.
    pub(super) fn load_value(&mut self, dst: Value, space: Space, addr: Value) -> WriteResult {
        let a = self.reg(addr);
        self.load(dst, space, &a)
    }

    /// A store: `value` to `addr` in `space`.
    pub(super) fn store_value(&mut self, space: Space, addr: Value, value: Value) -> WriteResult {
        let (a, v) = (self.reg(addr), self.reg(value));
        let ty = self.k.ty(value);
        self.store(&v, ty, space, &a)
    }

    pub(super) fn load(&mut self, dst: Value, space: Space, addr: &str) -> WriteResult {
        let d = self.reg(dst);
        let ty = self.k.ty(dst);
        let sp = space_name(space);
        if ty == Scalar::Bool {
            let t = self.tmp(Class::B32);
            self.line(format!("ld.{sp}.u8 {t}, [{addr}];"))?;
            self.line(format!("setp.ne.u32 {d}, {t}, 0;"))
        } else {
            self.line(format!("ld.{sp}.{} {d}, [{addr}];", mem_ty(ty)))
        }
    }

    pub(super) fn store(&mut self, src: &str, ty: Scalar, space: Space, addr: &str) -> WriteResult {
        let sp = space_name(space);
        if ty == Scalar::Bool {
            let t = self.tmp(Class::B32);
            self.line(format!("selp.u32 {t}, 1, 0, {src};"))?;
            self.line(format!("st.{sp}.u8 [{addr}], {t};"))
        } else {
            self.line(format!("st.{sp}.{} [{addr}], {src};", mem_ty(ty)))
        }
    }

    /// The address of byte `offset` of the thread's local memory.
    pub(super) fn local_addr(&mut self, dst: Value, offset: u32) -> WriteResult {
        let d = self.reg(dst);
        self.line(format!("mov.u64 {d}, gpu_async_local;"))?;
        self.line(format!("add.u64 {d}, {d}, {offset};"))
    }

    /// The address of the module's constant table `table`.
    pub(super) fn const_addr(&mut self, dst: Value, table: u32) -> WriteResult {
        let d = self.reg(dst);
        self.line(format!("mov.u64 {d}, gpu_async_const_{table};"))
    }

    /// The shared address of shared array `array`.
    pub(super) fn array_addr(&mut self, dst: Value, array: u32) -> WriteResult {
        let Some(a) = self.k.shared_arrays.get(array as usize) else {
            return Err(super::error::WriteError::inconsistent(
                format!("shared array a{array}"),
                "none",
            ));
        };
        let offset = a.offset;
        let (d, smem) = (self.reg(dst), self.smem.clone());
        self.line(format!("add.u32 {d}, {smem}, {offset};"))
    }

    /// Reads the shared value `cell`.
    pub(super) fn load_cell(&mut self, dst: Value, cell: u32) -> WriteResult {
        let smem = self.smem.clone();
        let a = self.tmp(Class::B32);
        let offset = self.k.cells_offset + 8 * cell;
        self.line(format!("add.u32 {a}, {smem}, {offset};"))?;
        self.load(dst, Space::Shared, &a)
    }

    /// Writes the shared value `cell`.
    pub(super) fn store_cell(&mut self, cell: u32, value: Value) -> WriteResult {
        // The role's first thread writes; the role barrier that follows publishes it.
        let leader = self.role()?.leader.clone();
        let smem = self.smem.clone();
        let a = self.tmp(Class::B32);
        let offset = self.k.cells_offset + 8 * cell;
        self.line(format!("add.u32 {a}, {smem}, {offset};"))?;
        let skip = self.label("cell_stored");
        self.line(format!("@!{leader} bra {skip};"))?;
        let v = self.reg(value);
        let ty = self.k.ty(value);
        self.store(&v, ty, Space::Shared, &a)?;
        self.place_label(&skip)
    }

    /// Address of element `i` (a `.u64` register) of `base`.
    pub(super) fn elem_addr(
        &mut self,
        space: Space,
        base: &str,
        i: &str,
        size: u32,
    ) -> WriteResult<String> {
        match space {
            Space::Global | Space::Local | Space::Const => {
                let a = self.tmp(Class::B64);
                self.line(format!("mad.lo.u64 {a}, {i}, {size}, {base};"))?;
                Ok(a)
            }
            Space::Shared => {
                let i32 = self.tmp(Class::B32);
                self.line(format!("cvt.u32.u64 {i32}, {i};"))?;
                let a = self.tmp(Class::B32);
                self.line(format!("mad.lo.u32 {a}, {i32}, {size}, {base};"))?;
                Ok(a)
            }
        }
    }
}
