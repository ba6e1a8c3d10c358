#include "core/value_defrag.h"

#include <algorithm>

#include "core/hash_object.h"
#include "core/list.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/string_table.h"
#include "core/value_object.h"
#include "core/zset.h"

namespace shardis::core {

namespace {

// The cell's own block (heap string or object), moved when on a sparse page.
void MoveCellBlock(CompactValue& cell, BlockMover& mover) {
  if (void* moved = mover.MoveBlock(const_cast<void*>(cell.HeapData()))) cell.RepointHeapData(moved);
}

// Elements of a collection, for the max-scan-fields limit.
size_t ElementCount(const CompactValue& cell) {
  switch (cell.type()) {
    case ValueType::kList:
      return static_cast<const List*>(cell.object())->size();
    case ValueType::kZSet:
      return static_cast<const ZSet*>(cell.object())->size();
    case ValueType::kStream:
      return static_cast<const Stream*>(cell.object())->length();
    case ValueType::kHash:
      return cell.object_encoding() == kHashTable
                 ? static_cast<const StringTable*>(cell.object())->size()
                 : 1;
    case ValueType::kSet:
      return cell.object_encoding() == kSetTable
                 ? static_cast<const StringTable*>(cell.object())->size()
                 : 1;
    case ValueType::kString:
      break;
  }
  return 1;
}

// A hash or set stored as a table (not packed).
bool IsTable(const CompactValue& cell) {
  return cell.type() == ValueType::kHash ? cell.object_encoding() == kHashTable
                                         : cell.object_encoding() == kSetTable;
}

// Replaces the value by a deep copy on fresh blocks (the old ones are freed), flags kept.
void CopyWhole(CompactValue& cell, BlockMover& mover) {
  CompactValue copy = CloneObject(cell);
  copy.set_flags(cell.flags());
  cell = std::move(copy);
  mover.NoteCopied();
}

}  // namespace

bool DefragCell(CompactValue& cell, BlockMover& mover, const SparsePages& pages,
                size_t max_scan_fields) {
  const uint64_t hits_before = mover.hits();
  if (cell.IsHeap()) {
    MoveCellBlock(cell, mover);
    return mover.hits() != hits_before;
  }
  if (cell.IsString()) return false;  // inline or int: nothing on the heap
  if (ElementCount(cell) > max_scan_fields) return false;
  switch (cell.type()) {
    case ValueType::kHash:
    case ValueType::kSet:
      MoveCellBlock(cell, mover);
      if (IsTable(cell)) static_cast<StringTable*>(cell.object())->Defrag(mover);
      break;
    case ValueType::kList:
      MoveCellBlock(cell, mover);
      static_cast<List*>(cell.object())->Defrag(mover);
      break;
    case ValueType::kZSet: {
      auto* zset = static_cast<ZSet*>(cell.object());
      if (zset->encoding() == ZSet::kPacked) {
        MoveCellBlock(cell, mover);
        static_cast<ZSet*>(cell.object())->DefragPacked(mover);
      } else if (pages.Contains(zset) || zset->SparseBlocks(pages) > 0) {
        CopyWhole(cell, mover);
      }
      break;
    }
    case ValueType::kStream: {
      auto* stream = static_cast<Stream*>(cell.object());
      if (pages.Contains(stream) || stream->SparseBlocks(pages) > 0) CopyWhole(cell, mover);
      break;
    }
    case ValueType::kString:
      break;
  }
  return mover.hits() != hits_before;
}

bool DefragsInSteps(const CompactValue& cell, size_t max_scan_fields) {
  if (cell.IsHeap() || cell.IsString() || ElementCount(cell) <= max_scan_fields) return false;
  return cell.type() == ValueType::kList ||
         ((cell.type() == ValueType::kHash || cell.type() == ValueType::kSet) && IsTable(cell));
}

size_t DefragCellStep(CompactValue& cell, BlockMover& mover, size_t pos, size_t max_scan_fields) {
  if (pos == 0) MoveCellBlock(cell, mover);
  const size_t fields = std::max<size_t>(1, max_scan_fields);
  if (cell.type() == ValueType::kList) {
    return static_cast<List*>(cell.object())->DefragNodes(mover, pos, fields);
  }
  return static_cast<StringTable*>(cell.object())->DefragSlots(mover, pos, fields);
}

}  // namespace shardis::core
