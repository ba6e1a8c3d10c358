// Active defragmentation of one table entry: moves the blocks of a key or a value that sit on
// sparse pages of the shard heap (sparse_pages.h) to fresh allocations, fixing every pointer to
// them. What each type moves:
//   - a heap string (key or value): its block;
//   - packed hashes and sets (listpack, intset): their one block; hashes and sets as tables: the
//     table object, its slot array and each entry's block;
//   - lists: the list object and each node, relinked;
//   - sorted sets: packed, the object and its block; as a skiplist, and streams, whose blocks the
//     C++ containers point into (map nodes, short strings, the skiplist's index): the whole value
//     is copied (CloneObject) when any of its blocks is on a sparse page, and counts one hit.
// A collection with more than `max_scan_fields` elements is left for steps (Redis' "defrag
// later"): a list, or a hash or set as a table, is moved `max_scan_fields` elements at a time by
// DefragCellStep, with the walk's caller keeping the position between steps; a skiplist sorted
// set or a stream that big stays where it is (moving it means copying it whole, in one step).
#pragma once

#include <cstddef>

#include "core/compact_value.h"
#include "core/sparse_pages.h"

namespace shardis::core {

// Returns whether anything of the cell moved (Redis' key hit). Counts in mover.
bool DefragCell(CompactValue& cell, BlockMover& mover, const SparsePages& pages,
                size_t max_scan_fields);

// Whether DefragCell left the cell for DefragCellStep.
bool DefragsInSteps(const CompactValue& cell, size_t max_scan_fields);
// One step of such a cell from `pos` (0: the first, which also moves the object's own block):
// about `max_scan_fields` elements. Returns the next position, 0 when the cell is done.
size_t DefragCellStep(CompactValue& cell, BlockMover& mover, size_t pos, size_t max_scan_fields);

}  // namespace shardis::core
