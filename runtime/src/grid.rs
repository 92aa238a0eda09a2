//! The launch grid: how many blocks a kernel runs.

use crate::error::{Error, Result};

/// The largest number of blocks in a one-dimensional CUDA grid, `2^31 - 1`.
pub(crate) const MAX_BLOCKS: u32 = i32::MAX as u32;

/// How many blocks a launch runs. Each block runs every role of the kernel on its own warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    blocks: u32,
}

impl Grid {
    /// A one-dimensional grid of `n` blocks, numbered `0..n`. `n` must be between 1 and
    /// `2^31 - 1`; that is checked when the kernel is launched.
    pub fn blocks(n: u32) -> Grid {
        Grid { blocks: n }
    }

    /// One block per tile: `len` elements in tiles of `tile`, so `len.div_ceil(tile)` blocks, at
    /// least 1 (a kernel over no elements still launches, and its blocks find no tile). For
    /// kernels whose blocks each take the tiles `block_tiles(len, tile)` gives them: every block
    /// then takes one. On an H200 this grid ran saxpy at 1.03-1.05x a hand-written CUDA C++
    /// grid-stride saxpy, and a copy at 0.96x `cudaMemcpy`, where persistent grids of a few
    /// blocks per multiprocessor ran the same kernels at 0.98x and 0.91x (`docs/benchmarks.md`);
    /// kernels with costly per-block setup (several channels) or compute that needs many warps
    /// can be slower on it. A count past the grid's limit (`2^31 - 1` blocks) is rejected when
    /// the kernel is launched, as is `tile == 0`.
    pub fn per_tile(len: usize, tile: usize) -> Grid {
        let blocks = match tile {
            0 => 0,
            _ => u32::try_from(len.div_ceil(tile).max(1)).unwrap_or(u32::MAX),
        };
        Grid { blocks }
    }

    /// The number of blocks.
    pub fn block_count(&self) -> u32 {
        self.blocks
    }

    /// Checks that the grid can be launched; `kernel` names the kernel in the error.
    pub(crate) fn validate(&self, kernel: &'static str) -> Result<()> {
        let reason = match self.blocks {
            0 => "the grid has 0 blocks; pass `Grid::blocks(n)` with n >= 1 (for example \
                  `n = len.div_ceil(items_per_block)` rounded up to at least 1)"
                .to_string(),
            n if n > MAX_BLOCKS => format!(
                "the grid has {n} blocks, more than the limit of {MAX_BLOCKS}; pass fewer blocks \
                 and have each block loop over several tiles"
            ),
            _ => return Ok(()),
        };
        Err(Error::InvalidLaunch { kernel, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_per_tile() {
        assert_eq!(Grid::per_tile(4096, 4096).block_count(), 1);
        assert_eq!(Grid::per_tile(4097, 4096).block_count(), 2);
        assert_eq!(Grid::per_tile(0, 4096).block_count(), 1);
        assert_eq!(Grid::per_tile(1 << 28, 2048).block_count(), 131_072);
        assert!(Grid::per_tile(usize::MAX, 1).validate("m::k").is_err());
        assert!(Grid::per_tile(10, 0).validate("m::k").is_err());
    }

    #[test]
    fn validation() {
        assert_eq!(Grid::blocks(7).block_count(), 7);
        assert!(Grid::blocks(1).validate("m::k").is_ok());
        assert!(Grid::blocks(MAX_BLOCKS).validate("m::k").is_ok());
        for n in [0, MAX_BLOCKS + 1, u32::MAX] {
            match Grid::blocks(n).validate("m::k") {
                Err(Error::InvalidLaunch { kernel, reason }) => {
                    assert_eq!(kernel, "m::k");
                    assert!(
                        reason.contains("Grid::blocks") || reason.contains("fewer"),
                        "{reason}"
                    );
                }
                other => panic!("expected InvalidLaunch, got {other:?}"),
            }
        }
    }
}
