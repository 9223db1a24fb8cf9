// The resumable walk behind the hash tables' Travel(pos, max, f): rows of
// slots visited in order, stopping after `max` slots (0: no limit) with the
// position saved, and back at the origin when the walk completes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace shmc {
namespace detail {

// Where a walk of a table stands: the TravelPos of ShmHashTable and
// ShmHashTableM (the reference's fields).
struct TableTravelPos {
  uint32_t row;
  uint32_t col;
  TableTravelPos() : row(0), col(0) {}
  bool at_origin() { return row == 0 && col == 0; }
};

// row_len(r): slots in row r; node_at(r, c): the slot; in_use(node).
// False if *pos is not a position of the table.
template <class Pos, class Node, class RowLen, class NodeAt>
bool TravelRows(Pos* pos, size_t rows, size_t max, const RowLen& row_len,
                const NodeAt& node_at,
                const std::function<void(volatile Node*)>& f) {
  if (pos == nullptr || pos->row >= rows || pos->col >= row_len(pos->row)) {
    return false;
  }
  size_t visited = 0;
  uint64_t col = pos->col;
  for (size_t r = pos->row; r < rows; ++r, col = 0) {
    const uint64_t len = row_len(r);
    for (; col < len; ++col) {
      if (max > 0 && visited >= max) {
        pos->row = static_cast<uint32_t>(r);
        pos->col = static_cast<uint32_t>(col);
        return true;
      }
      volatile Node* n = node_at(r, col);
      if (n->Key().first) f(n);
      ++visited;
    }
  }
  pos->row = 0;
  pos->col = 0;
  return true;
}

}  // namespace detail
}  // namespace shmc
