//! Where the running block is in the grid.

/// The index of the running block in the grid, from 0 (`blockIdx.x`).
pub fn block_index() -> usize {
    crate::sim::block_position().0 as usize
}

/// The number of blocks in the grid (`gridDim.x`).
pub fn block_count() -> usize {
    crate::sim::block_position().1 as usize
}
