//! `block_tiles`: a block's share of a tiled range.

use std::ops::Range;

/// The tiles of `0..len` (of `tile` elements each; the last one may be shorter) that belong to the
/// running block: tiles `block, block + grid, block + 2 * grid, ...`, as element ranges.
///
/// Every block of a launch gets a disjoint set of tiles and together they cover `0..len`, so a
/// kernel streams any length with any grid. Two roles of one block that call `block_tiles` with
/// the same arguments see the same sequence.
///
/// # Panics
/// If `tile` is zero (a device panic on the GPU).
pub fn block_tiles(len: usize, tile: usize) -> BlockTiles {
    assert!(tile > 0, "block_tiles: the tile size must not be zero");
    let (block, grid) = crate::sim::block_position();
    BlockTiles {
        next: block as usize,
        step: grid as usize,
        len,
        tile,
    }
}

/// The iterator [`block_tiles`] returns.
#[derive(Debug, Clone)]
pub struct BlockTiles {
    next: usize,
    step: usize,
    len: usize,
    tile: usize,
}

impl Iterator for BlockTiles {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let start = self.next.checked_mul(self.tile)?;
        if start >= self.len {
            return None;
        }
        self.next += self.step;
        Some(start..self.len.min(start + self.tile))
    }
}
