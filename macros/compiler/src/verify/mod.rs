//! Phase 7, verify: the invariants of the role/channel IR, checked before any PTX is written.
//!
//! A failure here is a compiler bug, not a user error: it is reported as an internal error on the
//! kernel's name rather than emitting a kernel that could hang or race. A kernel that passes is
//! handed on as a [`Verified`], the only thing the PTX writer takes.
//!
//! The kernel-wide checks and the bookkeeping of definitions are here, each instruction's checks
//! in `insts`, and the errors, with their words, in `error`.

mod error;
mod insts;

use crate::ir::{Block, ChannelId, Kernel, LoopId, ParamKind, RoleId, SiteId, SiteKind, Value};
use crate::types::Scalar;

pub use error::VerifyError;
use VerifyError as E;

/// A kernel whose IR [`verify`] found to hold every invariant: what
/// [`crate::ptx::write_kernel`] takes, so that no kernel reaches the writer unverified. Only
/// [`verify`] makes one; it borrows the kernel, which therefore cannot change while it is held.
#[derive(Debug, Clone, Copy)]
pub struct Verified<'k> {
    kernel: &'k Kernel,
}

impl<'k> Verified<'k> {
    /// The verified kernel.
    pub fn kernel(&self) -> &'k Kernel {
        self.kernel
    }
}

/// Checks `k`: the kernel, verified, or every violated invariant, in the order found.
pub fn verify(k: &Kernel) -> Result<Verified<'_>, Vec<VerifyError>> {
    let mut v = Verifier {
        k,
        errors: Vec::new(),
        defined: vec![false; k.values.len()],
        in_lanes: false,
    };
    v.kernel();
    v.errors.extend(
        crate::registers::invariants(k)
            .into_iter()
            .map(VerifyError::Registers),
    );
    if v.errors.is_empty() {
        Ok(Verified { kernel: k })
    } else {
        Err(v.errors)
    }
}

struct Verifier<'k> {
    k: &'k Kernel,
    errors: Vec<VerifyError>,
    /// Whether each value (by its number) is defined on the path being checked.
    defined: Vec<bool>,
    /// Inside a lane loop, where shuffles and votes belong.
    in_lanes: bool,
}

impl Verifier<'_> {
    fn kernel(&mut self) {
        let k = self.k;
        if k.warps == 0 || k.warps > 32 {
            self.errors.push(E::Warps { warps: k.warps });
        }
        let mut owner = vec![None; k.warps as usize];
        for (i, r) in k.roles.iter().enumerate() {
            if r.first_warp >= r.end_warp || r.end_warp > k.warps {
                self.errors.push(E::RoleWarps {
                    role: RoleId(i as u32),
                    name: r.name.clone(),
                    first_warp: r.first_warp,
                    end_warp: r.end_warp,
                });
                continue;
            }
            for w in r.first_warp..r.end_warp {
                if let Some(o) = owner[w as usize].replace(i) {
                    self.errors.push(E::WarpOwners {
                        warp: w,
                        first: RoleId(o as u32),
                        second: RoleId(i as u32),
                    });
                }
            }
        }
        if !k.idle_warps && owner.iter().any(Option::is_none) {
            self.errors.push(E::IdleWarp);
        }
        if k.shared_bytes > crate::target::SHARED_LIMIT {
            self.errors.push(E::SharedBytes {
                bytes: k.shared_bytes,
            });
        }
        for (i, c) in k.channels.iter().enumerate() {
            let channel = ChannelId(i as u32);
            if c.producer.is_none()
                || c.consumers.is_empty()
                || c.producer.is_some_and(|p| c.consumers.contains(&p))
            {
                self.errors.push(E::ChannelEnds { channel });
            }
            if u64::from(c.data_offset) % c.ty.slot_align() != 0
                || u64::from(c.slot_stride) % c.ty.slot_align() != 0
                || c.full_offset % 8 != 0
                || c.empty_offset % 8 != 0
                || c.state_offset % 4 != 0
            {
                self.errors.push(E::ChannelMisaligned { channel });
            }
            let end = u64::from(c.data_offset) + u64::from(c.slot_stride) * u64::from(c.ty.depth);
            if end > u64::from(k.shared_bytes)
                || u64::from(c.state_offset) + 4 * u64::from(c.ty.depth) > u64::from(k.shared_bytes)
            {
                self.errors.push(E::ChannelOutsideShared { channel });
            }
        }
        for (i, a) in k.shared_arrays.iter().enumerate() {
            if a.offset % 16 != 0 || u64::from(a.offset) + a.bytes() > u64::from(k.shared_bytes) {
                self.errors
                    .push(E::SharedArrayOutsideShared { array: i as u32 });
            }
        }
        for p in &k.params {
            match p.kind {
                ParamKind::Scalar(v) => {
                    self.mark_defined(v);
                }
                ParamKind::Slice { ptr, len, .. } => {
                    self.expect_ty(ptr, Scalar::Usize, "slice address");
                    self.expect_ty(len, Scalar::Usize, "slice length");
                    self.mark_defined(ptr);
                    self.mark_defined(len);
                }
                ParamKind::Matrix {
                    ptr, rows, cols, ..
                } => {
                    for (v, what) in [
                        (ptr, "matrix address"),
                        (rows, "matrix rows"),
                        (cols, "matrix columns"),
                    ] {
                        self.expect_ty(v, Scalar::Usize, what);
                        self.mark_defined(v);
                    }
                }
            }
        }
        let mut loops = Vec::new();
        self.block(&k.prologue, None, &mut loops, false);
        let prologue_defs = self.defined.clone();
        for (i, r) in k.roles.iter().enumerate() {
            self.defined = prologue_defs.clone();
            self.block(&r.body, Some(RoleId(i as u32)), &mut loops, false);
        }
    }

    fn site(&mut self, site: SiteId, kind: SiteKind) {
        match self.k.sites.get(site.0 as usize) {
            Some(s) if s.kind == kind => {}
            Some(s) => self.errors.push(E::SiteKind {
                site,
                found: s.kind,
                needed: kind,
            }),
            None => self.errors.push(E::NoSite { site }),
        }
    }

    fn expect_ty(&mut self, v: Value, ty: Scalar, what: &'static str) {
        match self.k.values.get(v.0 as usize) {
            Some(info) if info.ty == ty => {}
            Some(info) => self.errors.push(E::ValueType {
                what,
                value: v,
                found: info.ty,
                needed: ty,
            }),
            None => self.errors.push(E::Undeclared {
                what: Some(what),
                value: v,
            }),
        }
    }

    fn use_(&mut self, v: Value) {
        if (v.0 as usize) >= self.k.values.len() {
            self.errors.push(E::Undeclared {
                what: None,
                value: v,
            });
        } else if !self.defined[v.0 as usize] {
            self.errors.push(E::UsedBeforeDefined { value: v });
        }
    }

    fn def(&mut self, v: Value) {
        if (v.0 as usize) >= self.k.values.len() {
            self.errors.push(E::Undeclared {
                what: None,
                value: v,
            });
        }
        self.mark_defined(v);
    }

    /// Notes `v` defined (a value past the kernel's is reported where it is used or defined).
    fn mark_defined(&mut self, v: Value) {
        if let Some(d) = self.defined.get_mut(v.0 as usize) {
            *d = true;
        }
    }

    fn ty(&self, v: Value) -> Scalar {
        self.k
            .values
            .get(v.0 as usize)
            .map_or(Scalar::Bool, |i| i.ty)
    }

    fn block(&mut self, b: &Block, role: Option<RoleId>, loops: &mut Vec<LoopId>, in_par: bool) {
        for inst in &b.0 {
            self.inst(inst, role, loops, in_par);
        }
    }

    fn chan_end(&mut self, chan: ChannelId, role: Option<RoleId>, sender: bool, in_par: bool) {
        if in_par {
            self.errors.push(E::ChannelInParallelLoop { channel: chan });
        }
        let Some(c) = self.k.channels.get(chan.0 as usize) else {
            self.errors.push(E::NoChannel { channel: chan });
            return;
        };
        let owns = match role {
            Some(r) if sender => c.producer == Some(r),
            Some(r) => c.consumers.contains(&r),
            None => false,
        };
        if !owns {
            self.errors.push(E::NotChannelOwner {
                channel: chan,
                role,
                sending: sender,
            });
        }
    }

    /// Whether a tile copy's channel holds tile `part`, and its matrix parameter has tensor map
    /// `map` of that tile's element and shape.
    fn tile_map_fits(&self, chan: ChannelId, part: u32, (param, map): (u32, u32)) -> bool {
        let tile = self
            .k
            .channels
            .get(chan.0 as usize)
            .and_then(|c| c.ty.elem.tile_part(part));
        let matrix = self.k.params.get(param as usize).map(|p| &p.kind);
        let fits = match (tile, matrix) {
            (Some((elem, rows, cols)), Some(ParamKind::Matrix { elem: e, boxes, .. })) => {
                // One copy per column block of the tile, each of the block's shape.
                let block = gpu_async_wire::TileBox { rows, cols }.load_box(elem.size());
                *e == elem && boxes.get(map as usize) == Some(&block)
            }
            _ => false,
        };
        fits
    }
}
