//! The textual IR.

use std::fmt::{self, Display, Formatter};

use super::*;

impl Display for Value {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl Display for ChannelId {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "ch{}", self.0)
    }
}

impl Display for RoleId {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "role{}", self.0)
    }
}

impl Display for SiteId {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "@site{}", self.0)
    }
}

impl Display for LoopId {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

impl Display for Imm {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Imm::Int(v) => write!(f, "{v}"),
            Imm::F32(v) => write!(f, "{v:?}"),
            Imm::F64(v) => write!(f, "{v:?}f64"),
            Imm::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "kernel {} (warps = {}, shared = {} B)",
            self.name, self.warps, self.shared_bytes
        )?;
        for p in &self.params {
            match &p.kind {
                ParamKind::Scalar(v) => writeln!(f, "  param {}: {} = {v}", p.name, self.ty(*v))?,
                ParamKind::Slice {
                    elem,
                    mutable,
                    ptr,
                    len,
                } => writeln!(
                    f,
                    "  param {}: &{}[{elem}] = (ptr {ptr}, len {len})",
                    p.name,
                    if *mutable { "mut " } else { "" }
                )?,
                ParamKind::Matrix {
                    elem,
                    mutable,
                    ptr,
                    rows,
                    cols,
                    boxes,
                } => {
                    write!(
                        f,
                        "  param {}: &{}Matrix<{elem}> = (ptr {ptr}, rows {rows}, cols {cols})",
                        p.name,
                        if *mutable { "mut " } else { "" }
                    )?;
                    for (k, b) in boxes.iter().enumerate() {
                        write!(f, ", map{k} {} x {}", b.rows, b.cols)?;
                    }
                    writeln!(f)?;
                }
            }
        }
        for (i, c) in self.channels.iter().enumerate() {
            let role = |r: Option<RoleId>| {
                r.map_or("none".to_string(), |r| {
                    self.roles[r.0 as usize].name.clone()
                })
            };
            let roles = |rs: &[RoleId]| {
                if rs.is_empty() {
                    "none".to_string()
                } else {
                    rs.iter()
                        .map(|r| self.roles[r.0 as usize].name.clone())
                        .collect::<Vec<_>>()
                        .join(" + ")
                }
            };
            writeln!(
                f,
                "  channel ch{i} `{}`: {} x {}, {} -> {}, data @{} (stride {}), full @{}, empty @{}, state @{}",
                c.name,
                c.ty.payload(),
                c.ty.depth,
                role(c.producer),
                roles(&c.consumers),
                c.data_offset,
                c.slot_stride,
                c.full_offset,
                c.empty_offset,
                c.state_offset
            )?;
            if c.closable {
                write!(
                    f,
                    "  channel ch{i} closable by its receivers: open word @{}",
                    c.open_offset
                )?;
                if let Some(d) = c.debt_offset {
                    write!(f, ", debt words @{d}")?;
                }
                writeln!(f)?;
            }
        }
        for (i, barrier) in self.role_barriers.iter().enumerate() {
            match barrier {
                Some(RoleBarrier::Mbarrier(o)) => writeln!(f, "  role{i} barrier @{o}")?,
                Some(RoleBarrier::Block) => writeln!(f, "  role{i} barrier: the block's")?,
                None => {}
            }
        }
        for (i, t) in self.shared_cells.iter().enumerate() {
            writeln!(
                f,
                "  shared value {i}: {t} @{}",
                self.cells_offset + 8 * i as u32
            )?;
        }
        for (i, a) in self.shared_arrays.iter().enumerate() {
            let shape = if a.rows > 1 {
                format!("{} x {}", a.rows, a.cols)
            } else {
                a.cols.to_string()
            };
            writeln!(
                f,
                "  shared array a{i} `{}`: {}{}[{shape}]{} @{} ({} B)",
                a.name,
                if a.atomic { "atomic " } else { "" },
                a.elem,
                if a.row_stride != a.cols {
                    format!(", rows of {}", a.row_stride)
                } else {
                    String::new()
                },
                a.offset,
                a.bytes()
            )?;
        }
        for t in &self.const_tables {
            writeln!(
                f,
                "  static `{}`: {} B of constant memory",
                t.name,
                t.bytes.len()
            )?;
        }
        if self.local_bytes > 0 {
            writeln!(f, "  local arrays: {} B per thread", self.local_bytes)?;
        }
        if let (None, Some(n)) = (&self.registers, self.min_blocks_per_sm) {
            writeln!(
                f,
                "  registers: sized for {n} blocks per SM (`.minnctapersm {n}`)"
            )?;
        }
        if let Some(b) = &self.registers {
            writeln!(
                f,
                "  registers: {} per thread at the entry, budgets {}",
                b.entry,
                if b.explicit {
                    "from `registers(..)`"
                } else {
                    "derived from the roles"
                }
            )?;
        }
        for (i, offset) in self.reduce_scratch.iter().enumerate() {
            if let Some(o) = offset {
                writeln!(f, "  role{i} reduction scratch @{o}")?;
            }
        }
        for (i, site) in self.sites.iter().enumerate() {
            writeln!(f, "  site{i}: {:?} \"{}\"", site.kind, site.message)?;
        }
        if !self.prologue.0.is_empty() {
            writeln!(f, "  prologue:")?;
            self.write_block(f, &self.prologue, 2)?;
        }
        for (i, r) in self.roles.iter().enumerate() {
            let budget = match self.registers.as_ref().and_then(|b| b.roles.get(i)) {
                Some(n) => format!(", {n} registers"),
                None => String::new(),
            };
            writeln!(
                f,
                "  role{i} {} (warps {}..{}{budget}):",
                r.name, r.first_warp, r.end_warp
            )?;
            self.write_block(f, &r.body, 2)?;
        }
        Ok(())
    }
}

/// The indentation of a line at a depth of nesting: two spaces a level.
#[derive(Clone, Copy)]
struct Pad(usize);

impl Display for Pad {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        const SPACES: &str = "                                                                ";
        let mut left = 2 * self.0;
        while left > 0 {
            let n = left.min(SPACES.len());
            f.write_str(&SPACES[..n])?;
            left -= n;
        }
        Ok(())
    }
}

/// A value as the IR text names it, `v3` or `v3:name`, written without making a string.
struct ValName<'a>(Value, Option<&'a str>);

impl Display for ValName<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(n) => write!(f, "{}:{n}", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// A value defined by an instruction, with its type: `v3:name: u32`.
struct Def<'a>(ValName<'a>, Scalar);

impl Display for Def<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl Kernel {
    fn val(&self, v: Value) -> ValName<'_> {
        ValName(v, self.values[v.0 as usize].name.as_deref())
    }

    fn write_block(&self, f: &mut Formatter<'_>, block: &Block, depth: usize) -> fmt::Result {
        for inst in &block.0 {
            self.write_inst(f, inst, depth)?;
        }
        Ok(())
    }

    /// Writes a channel instruction's line; `false` for another instruction.
    #[inline(never)]
    fn write_channel_inst(&self, f: &mut Formatter<'_>, inst: &Inst) -> Result<bool, fmt::Error> {
        let def = |v: Value| format!("{}: {}", self.val(v), self.ty(v));
        match inst {
            Inst::Reserve {
                chan,
                site,
                some: None,
            } => write!(f, "reserve {chan} {site}")?,
            Inst::Reserve {
                chan,
                site,
                some: Some(some),
            } => write!(f, "{} = reserve {chan} {site}", def(*some))?,
            Inst::SlotAddr {
                dst,
                chan,
                send,
                slot,
                rx,
            } => {
                write!(
                    f,
                    "{} = slot_addr {chan}{}.{}",
                    def(*dst),
                    receiver(*rx),
                    if *send { "reserved" } else { "received" }
                )?;
                if let Some(slot) = slot {
                    write!(f, " at {}", self.val(*slot))?;
                }
            }
            Inst::TileLoad {
                chan,
                part,
                param,
                map,
                row,
                col,
            } => write!(
                f,
                "tile_load {chan}.{part} <- {}.map{map} at [{}, {}]",
                self.params
                    .get(*param as usize)
                    .map_or("?", |p| p.name.as_str()),
                self.val(*row),
                self.val(*col)
            )?,
            Inst::TileStore {
                chan,
                slot,
                rx,
                param,
                map,
                row,
                col,
                rows,
            } => {
                write!(
                    f,
                    "tile_store {chan}{} -> {}.map{map} at [{}, {}]",
                    receiver(*rx),
                    self.params
                        .get(*param as usize)
                        .map_or("?", |p| p.name.as_str()),
                    self.val(*row),
                    self.val(*col)
                )?;
                if let Some(rows) = rows {
                    write!(f, ", rows {}", self.val(*rows))?;
                }
                if let Some(slot) = slot {
                    write!(f, ", slot at {}", self.val(*slot))?;
                }
            }
            Inst::CopyIn {
                chan,
                src,
                len,
                bulk,
            } => write!(
                f,
                "copy_in {chan} <- global [{}], len {}, bulk bytes {}",
                self.val(*src),
                self.val(*len),
                self.val(*bulk)
            )?,
            Inst::CopyOut {
                chan,
                dst,
                len,
                bulk,
                slot,
                rx,
            } => {
                write!(
                    f,
                    "copy_out {chan}{} -> global [{}], len {}, bulk bytes {}",
                    receiver(*rx),
                    self.val(*dst),
                    self.val(*len),
                    self.val(*bulk)
                )?;
                if let Some(slot) = slot {
                    write!(f, ", slot at {}", self.val(*slot))?;
                }
            }
            Inst::Send { chan } => write!(f, "send {chan}")?,
            Inst::Close { chan, site } => write!(f, "close {chan} {site}")?,
            Inst::Recv {
                chan,
                end,
                site,
                slot,
                rx,
            } => {
                match end {
                    RecvEnd::Answer(some) => {
                        write!(f, "{} = recv {chan}{} {site}", def(*some), receiver(*rx))?
                    }
                    RecvEnd::Fail(fail) => {
                        write!(f, "recv {chan}{} {site}, end fails {fail}", receiver(*rx))?
                    }
                }
                if let Some(slot) = slot {
                    write!(f, ", slot at {}", def(*slot))?;
                }
            }
            Inst::HeldSlot { dst, chan, rx } => {
                write!(f, "{} = held_slot {chan}{}", def(*dst), receiver(*rx))?
            }
            Inst::CloseRecv { chan, rx } => write!(f, "close_receiver {chan}{}", receiver(*rx))?,
            Inst::SelectRecv {
                chans,
                enabled,
                chosen,
                some,
                site,
            } => {
                let chans: Vec<String> = chans.iter().map(|c| c.to_string()).collect();
                write!(
                    f,
                    "{}, {} = select_recv [{}] enabled {} {site}",
                    def(*chosen),
                    def(*some),
                    chans.join(", "),
                    self.val(*enabled)
                )?
            }
            Inst::Release { chan, slot, rx } => {
                write!(f, "release {chan}{}", receiver(*rx))?;
                if let Some(slot) = slot {
                    write!(f, " at {}", self.val(*slot))?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Writes one instruction at `depth`, and the blocks nested in it.
    fn write_inst(&self, f: &mut Formatter<'_>, inst: &Inst, depth: usize) -> fmt::Result {
        let pad = Pad(depth);
        match inst {
            Inst::If { cond, then, else_ } => {
                writeln!(f, "{pad}if {} {{", self.val(*cond))?;
                self.write_block(f, then, depth + 1)?;
                if !else_.0.is_empty() {
                    writeln!(f, "{pad}}} else {{")?;
                    self.write_block(f, else_, depth + 1)?;
                }
                writeln!(f, "{pad}}}")
            }
            Inst::Loop { id, body } => {
                writeln!(f, "{pad}loop {id} {{")?;
                self.write_block(f, body, depth + 1)?;
                writeln!(f, "{pad}}}")
            }
            Inst::Join { branches } => {
                writeln!(f, "{pad}join {{")?;
                for (k, b) in branches.iter().enumerate() {
                    writeln!(f, "{pad}  branch {k}:")?;
                    self.write_block(f, b, depth + 2)?;
                }
                writeln!(f, "{pad}}}")
            }
            Inst::ParFor(p) => {
                self.write_par_for_head(f, p, pad)?;
                self.write_block(f, &p.body, depth + 1)?;
                if let Some(r) = &p.reduce {
                    self.write_reduce_head(f, r, pad)?;
                    self.write_block(f, &r.combine, depth + 1)?;
                    if let Some(sc) = &r.scan {
                        self.write_scan_head(f, sc, pad)?;
                    }
                }
                writeln!(f, "{pad}}}")
            }
            other => {
                write!(f, "{pad}")?;
                self.write_inst_line(f, other)?;
                writeln!(f)
            }
        }
    }

    /// The head of a parallel loop: its length, index and sources.
    #[inline(never)]
    fn write_par_for_head(&self, f: &mut Formatter<'_>, p: &ParFor, pad: Pad) -> fmt::Result {
        let def = |v: Value| Def(self.val(v), self.ty(v));
        let kind = if p.lanes { "lane_for" } else { "par_for" };
        write!(f, "{pad}{kind} len {}", self.val(p.len))?;
        if let Some(i) = p.index {
            write!(f, ", index {}", def(i))?;
        }
        writeln!(f, " {{")?;
        for s in &p.sources {
            writeln!(
                f,
                "{pad}  elem {} <- {:?} [{}]{}{}",
                def(s.elem_value),
                s.space,
                self.val(s.base),
                if s.read { " read" } else { "" },
                if s.write { " write" } else { "" }
            )?;
        }
        Ok(())
    }

    /// The head of a parallel loop's reduction.
    #[inline(never)]
    fn write_reduce_head(&self, f: &mut Formatter<'_>, r: &ParReduce, pad: Pad) -> fmt::Result {
        let def = |v: Value| Def(self.val(v), self.ty(v));
        writeln!(
            f,
            "{pad}}} reduce item {} from {} into {} with ({}, {}) -> {} {{",
            self.val(r.item),
            self.val(r.identity),
            def(r.acc),
            def(r.lhs),
            def(r.rhs),
            self.val(r.out)
        )
    }

    /// The head of a scan, after its reduction's combining block.
    #[inline(never)]
    fn write_scan_head(&self, f: &mut Formatter<'_>, sc: &ParScanOut, pad: Pad) -> fmt::Result {
        writeln!(
            f,
            "{pad}}} scan from {} into source {}{} {{",
            self.val(sc.init),
            sc.dst,
            if sc.inclusive {
                " inclusive"
            } else {
                " exclusive"
            }
        )
    }

    /// Writes an instruction without a nested block (its line, without the indentation and the
    /// end of line), straight to the formatter. Apart from [`Kernel::write_inst`], which recurses
    /// into nested blocks, so that the recursion's frames stay small.
    #[inline(never)]
    fn write_inst_line(&self, f: &mut Formatter<'_>, inst: &Inst) -> fmt::Result {
        if self.write_channel_inst(f, inst)? {
            return Ok(());
        }
        let def = |v: Value| Def(self.val(v), self.ty(v));
        match inst {
            Inst::Const { dst, imm } => write!(f, "{} = const {imm}", def(*dst))?,
            Inst::Copy { dst, src } => write!(f, "{} = {}", def(*dst), self.val(*src))?,
            Inst::Unary { dst, op, src } => write!(f, "{} = {op:?} {}", def(*dst), self.val(*src))?,
            Inst::Binary { dst, op, lhs, rhs } => write!(
                f,
                "{} = {op:?} {}, {}",
                def(*dst),
                self.val(*lhs),
                self.val(*rhs)
            )?,
            Inst::Cast { dst, src } => write!(f, "{} = cast {}", def(*dst), self.val(*src))?,
            Inst::Atomic {
                dst,
                op,
                space,
                addr,
                operands,
                order,
                once,
            } => {
                if let Some(d) = dst {
                    write!(f, "{} = ", def(*d))?;
                }
                if let Some(site) = once {
                    write!(f, "once {site} ")?;
                }
                let ops: Vec<String> = operands.iter().map(|v| self.val(*v).to_string()).collect();
                let space = if *space == Space::Shared {
                    "shared"
                } else {
                    "global"
                };
                write!(
                    f,
                    "atomic {op:?} {order:?} {space} [{}] {}",
                    self.val(*addr),
                    ops.join(", ")
                )?
            }
            Inst::ArrayAddr { dst, array } => write!(f, "{} = array_addr a{array}", def(*dst))?,
            Inst::ArrayAccess {
                array,
                access,
                site,
            } => write!(f, "array_access a{array} {access:?} {site}")?,
            Inst::Select {
                dst,
                cond,
                if_true,
                if_false,
            } => write!(
                f,
                "{} = select {}, {}, {}",
                def(*dst),
                self.val(*cond),
                self.val(*if_true),
                self.val(*if_false)
            )?,
            Inst::Bitcast { dst, src } => write!(f, "{} = bitcast {}", def(*dst), self.val(*src))?,
            Inst::Fma { dst, a, b, c } => write!(
                f,
                "{} = fma {}, {}, {}",
                def(*dst),
                self.val(*a),
                self.val(*b),
                self.val(*c)
            )?,
            Inst::Special { dst, reg } => write!(f, "{} = {reg:?}", def(*dst))?,
            Inst::Shuffle {
                dst,
                mode,
                value,
                operand,
            } => write!(
                f,
                "{} = shuffle.{mode:?} {}, {}",
                def(*dst),
                self.val(*value),
                self.val(*operand)
            )?,
            Inst::Vote { dst, mode, pred } => {
                write!(f, "{} = vote.{mode:?} {}", def(*dst), self.val(*pred))?
            }
            Inst::Load { dst, space, addr } => {
                write!(f, "{} = load.{space:?} [{}]", def(*dst), self.val(*addr))?
            }
            Inst::Store { space, addr, value } => write!(
                f,
                "store.{space:?} [{}], {}",
                self.val(*addr),
                self.val(*value)
            )?,
            Inst::LocalAddr { dst, offset } => write!(f, "{} = local_addr {offset}", def(*dst))?,
            Inst::LoadCell { dst, cell } => write!(f, "{} = load_shared_value {cell}", def(*dst))?,
            Inst::StoreCell { cell, value } => {
                write!(f, "store_shared_value {cell}, {}", self.val(*value))?
            }
            Inst::ConstAddr { dst, table } => {
                let name = self
                    .const_tables
                    .get(*table as usize)
                    .map_or("?", |t| &t.name);
                write!(f, "{} = const_addr `{name}`", def(*dst))?
            }
            Inst::PanicIf { cond, site } => write!(
                f,
                "panic_if {} {site} \"{}\"",
                self.val(*cond),
                self.sites[site.0 as usize].message
            )?,
            Inst::Break(id) => write!(f, "break {id}")?,
            Inst::Continue(id) => write!(f, "continue {id}")?,
            Inst::RoleStore { space, addr, value } => write!(
                f,
                "store_once.{space:?} [{}], {}",
                self.val(*addr),
                self.val(*value)
            )?,
            // Written by `channel_inst`.
            Inst::Reserve { .. }
            | Inst::SlotAddr { .. }
            | Inst::CopyIn { .. }
            | Inst::TileLoad { .. }
            | Inst::TileStore { .. }
            | Inst::CopyOut { .. }
            | Inst::Send { .. }
            | Inst::Close { .. }
            | Inst::Recv { .. }
            | Inst::HeldSlot { .. }
            | Inst::CloseRecv { .. }
            | Inst::SelectRecv { .. }
            | Inst::Release { .. } => {}
            Inst::Mma {
                acc,
                a,
                b,
                n,
                elem,
                k_steps,
                b_layout,
            } => {
                let (first, last) = (acc.first().copied(), acc.last().copied());
                let a = match a {
                    MmaA::Tile { addr, layout } => {
                        format!(
                            "a_desc {}{}",
                            self.val(*addr),
                            layout_note(*layout, *k_steps)
                        )
                    }
                    MmaA::Registers(regs) => format!(
                        "a_regs [{}..{}]",
                        regs.first()
                            .map_or_else(String::new, |v| self.val(*v).to_string()),
                        regs.last()
                            .map_or_else(String::new, |v| self.val(*v).to_string())
                    ),
                };
                write!(
                    f,
                    "mma.m64n{n}k16.{elem} x{k_steps} acc [{}..{}], {a}, b_desc {}{}",
                    first.map_or_else(String::new, |v| self.val(v).to_string()),
                    last.map_or_else(String::new, |v| self.val(v).to_string()),
                    self.val(*b),
                    layout_note(*b_layout, *k_steps)
                )?
            }
            Inst::PackPair { dst, lo, hi, elem } => write!(
                f,
                "{} = pack.{elem}x2 {}, {}",
                def(*dst),
                self.val(*lo),
                self.val(*hi)
            )?,
            Inst::RowReduce { dst, acc, max } => {
                let values: Vec<String> = acc.iter().map(|v| self.val(*v).to_string()).collect();
                write!(
                    f,
                    "{}, {} = row_{} [{}]",
                    def(dst[0]),
                    def(dst[1]),
                    if *max { "max" } else { "sum" },
                    values.join(", ")
                )?
            }
            Inst::RowsStore {
                values,
                addr,
                rows_left,
                owner,
            } => write!(
                f,
                "rows_store [{}] {}, {} rows_left {} owner {}",
                self.val(*addr),
                self.val(values[0]),
                self.val(values[1]),
                self.val(*rows_left),
                self.val(*owner)
            )?,
            Inst::AccTile {
                acc,
                elem,
                tile: (rows, cols),
                first,
                swizzle,
                block,
            } => write!(
                f,
                "acc_tile.{elem} {} values -> tile {rows} x {cols} at shared [{}] ^ {}, block {}",
                acc.len(),
                self.val(*first),
                self.val(*swizzle),
                self.val(*block)
            )?,
            Inst::MmaWait { pending: 0 } => write!(f, "mma_wait")?,
            Inst::MmaWait { pending } => write!(f, "mma_wait pending {pending}")?,
            Inst::AccStore {
                acc,
                elem,
                addr,
                row_bytes,
                rows_left,
                cols_left,
                scale,
            } => {
                write!(
                    f,
                    "acc_store.{elem} {} values -> global [{}], row bytes {}, inside {} x {}",
                    acc.len(),
                    self.val(*addr),
                    self.val(*row_bytes),
                    self.val(*rows_left),
                    self.val(*cols_left)
                )?;
                if let Some((alpha, beta)) = scale {
                    write!(f, ", alpha {}, beta {}", self.val(*alpha), self.val(*beta))?;
                }
            }
            Inst::RoleBarrier { site } => write!(f, "role_barrier {site}")?,
            Inst::BarrierWait { barrier, site } => write!(f, "barrier_wait b{barrier} {site}")?,
            Inst::OneshotSignal { oneshot } => write!(f, "oneshot_signal o{oneshot}")?,
            Inst::OneshotWait { oneshot, site } => write!(f, "oneshot_wait o{oneshot} {site}")?,
            // Written by `write_inst`, with their blocks.
            Inst::If { .. } | Inst::Loop { .. } | Inst::Join { .. } | Inst::ParFor(_) => {}
        }
        Ok(())
    }
}

impl Kernel {
    /// The role and channel graph as a Mermaid flowchart: one node per role (with its warps),
    /// one edge per channel (with its payload and depth).
    pub fn mermaid(&self) -> String {
        let mut out = String::from("graph LR\n");
        for (i, r) in self.roles.iter().enumerate() {
            out.push_str(&format!(
                "  role{i}[\"{} (warps {}..{})\"]\n",
                r.name, r.first_warp, r.end_warp
            ));
        }
        for c in &self.channels {
            for q in &c.consumers {
                if let Some(p) = c.producer {
                    out.push_str(&format!(
                        "  role{} -->|\"{}: {} x {}\"| role{}\n",
                        p.0,
                        c.name,
                        c.ty.payload(),
                        c.ty.depth,
                        q.0
                    ));
                }
            }
        }
        // One-shot values as dotted arrows; a barrier as a node its roles link to.
        for (k, b) in self.barriers.iter().enumerate() {
            match b.receiver {
                Some(r) => {
                    for s in &b.roles {
                        out.push_str(&format!(
                            "  role{} -.->|\"{}: one-shot\"| role{}\n",
                            s.0, b.name, r.0
                        ));
                    }
                }
                None => {
                    out.push_str(&format!("  barrier{k}{{{{\"barrier {}\"}}}}\n", b.name));
                    for r in &b.roles {
                        out.push_str(&format!("  role{} --- barrier{k}\n", r.0));
                    }
                }
            }
        }
        out
    }
}

/// ` rx1` for a role's second receiver of a channel (and up); nothing for the first.
fn receiver(rx: u32) -> String {
    if rx == 0 {
        String::new()
    } else {
        format!(" rx{rx}")
    }
}

/// How an mma operand's K steps leave a column block, when they do: nothing for a K-major tile
/// of one block (K up to 64), the blocks' distance otherwise.
fn layout_note(layout: MmaLayout, k_steps: u32) -> String {
    match layout {
        MmaLayout::KMajor { .. } if k_steps <= 4 => String::new(),
        MmaLayout::KMajor { block } => format!(" (K blocks {block} B apart)"),
        MmaLayout::NMajor { block } => format!(" (N-major, N blocks {block} B apart)"),
    }
}
