// Fixed-node segments (arrays, hash tables, a map's index) as the `shmc`
// tool sees them: it cannot name the program's Node type, so it reads the
// layout back from the header params with the library's own description
// (shmc/detail/fixed_layout.h) and reads nodes as bytes. Every offset comes
// from there; this file only walks and reports.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "tools/shmc/container.h"
#include "tools/shmc/json.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

// Where a segment's file holds data (lseek SEEK_DATA / SEEK_HOLE), for
// POSIX and file segments: the holes of a sparse segment (an array made
// with reserved < size) read as zero without being touched, since a read
// fault on tmpfs allocates the page (and raises SIGBUS on a full one).
struct DataMap {
  bool known = false;  // false: every byte is taken as data
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end), sorted
  // Reads the file's data ranges; unknown when it cannot.
  void Load(const SegName& name);
  // The first offset in [off, end) that holds data, or `end`.
  uint64_t NextData(uint64_t off, uint64_t end) const;
  // The end of the data at `off` (which holds data), at most `end`.
  uint64_t DataEnd(uint64_t off, uint64_t end) const;
};

struct FixedView {
  shmc::detail::FixedLayout lay;
  char* base = nullptr;    // segment start (read-only mapping unless fixing)
  bool map_index = false;  // a map's index: key words, then the handle word
  DataMap data;            // holes read as zero, untouched

  const volatile unsigned char* node(uint64_t slot) const {
    return reinterpret_cast<const volatile unsigned char*>(
        base + lay.node_offset(slot));
  }
  // A map index node's handle word (acquire), and whether it holds a value.
  uint64_t MapLink(uint64_t slot) const;
  bool MapNodeUsed(uint64_t slot) const {
    return static_cast<uint32_t>(MapLink(slot)) != 0;
  }
  // Any node with a non-zero byte (erased nodes are cleared by convention).
  bool RawNodeUsed(uint64_t slot) const;
  // In use as the view's kind says: a map's handle, else a non-zero byte.
  bool Used(uint64_t slot) const {
    return map_index ? MapNodeUsed(slot) : RawNodeUsed(slot);
  }
  // Bytes of a map index node's key (all but the handle word).
  uint64_t map_key_bytes() const;
  // A node's bytes, holes as zeros.
  std::string NodeBytes(uint64_t slot) const;

  // f(i, byte) for each byte i of node `slot` outside the holes, until f
  // returns true (then true).
  template <class F>
  bool ForEachDataByte(uint64_t slot, F f) const {
    const uint64_t begin = lay.node_offset(slot);
    const uint64_t end = begin + lay.node_size();
    const volatile unsigned char* p =
        reinterpret_cast<const volatile unsigned char*>(base);
    for (uint64_t off = data.NextData(begin, end); off < end;
         off = data.NextData(off, end)) {
      for (const uint64_t stop = data.DataEnd(off, end); off < stop; ++off) {
        if (f(off - begin, p[off])) return true;
      }
    }
    return false;
  }
};

std::string CopyBytes(const volatile unsigned char* p, uint64_t n);

// Rows, occupancy and (hash tables) probe depths and counters.
Json TableInfo(const FixedView& v, const char* used_word);

// ShmHashTable::HealthCheck's checks over the view (detail/table_check.h),
// the key found by where nearly every tag agrees it is; `fix` needs a
// writable view.
void CheckTable(const FixedView& v, bool fix, Json* problems, Json* fixed);

// Attaches a fixed-node segment (read-only unless `writable`), validating
// the header as every container does and the geometry against its size.
template <class Alloc>
int OpenFixed(const SegName& name, const HeaderPeek& peek, bool writable,
              shmc::detail::Segment<Alloc>* seg, FixedView* view,
              std::string* err) {
  std::string why;
  if (!shmc::detail::FixedLayout::FromHeader(*peek.header(), &view->lay,
                                             &why)) {
    *err = name.Display() + ": corrupted: " + why;
    return kExitProblems;
  }
  shmc::detail::SegmentSpec spec = view->lay.spec();
  shmc::Error e;
  if (!seg->OpenForRead(name.key, spec, writable, "shmc", &e)) {
    *err = e.message;
    return ExitFor(e.code);
  }
  if (!seg->CheckTotalSize(spec.total_size, "shmc", &e)) {
    seg->Reset();
    *err = e.message;
    return ExitFor(e.code);
  }
  view->base = seg->base();
  view->data.Load(name);
  return kExitOk;
}

}  // namespace shmc_tool
