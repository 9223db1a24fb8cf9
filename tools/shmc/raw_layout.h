// Fixed-node containers (arrays and hash tables) read by the `shmc` tool
// knowing only their header params: the tool cannot name the user's Node
// type, so it derives the layout the containers use (NodesStart,
// TableNodesOffset) and reads nodes as bytes. A map's index is such a
// table whose nodes end with the value handle word.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shmc/detail/segment.h"
#include "shmc/detail/table_geometry.h"
#include "shmc/errors.h"
#include "tools/shmc/inspect.h"
#include "tools/shmc/json.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

struct RawLayout {
  shmc::detail::ContainerKind kind = shmc::detail::ContainerKind::kArray;
  const volatile unsigned char* base = nullptr;  // segment start
  uint64_t node_size = 0, node_align = 0;
  uint64_t nodes_offset = 0;
  uint64_t node_num = 0;            // array
  shmc::detail::TableGeometry geo;  // hash table
  uint64_t hash_id = 0;             // hash tables: how keys are hashed
  bool map_index = false;           // a map's index: key, then handle word
  uint64_t rows = 0, cols = 0;      // hash table M
  std::vector<uint64_t> mods;       // hash table M
  // Rows of slots the tool walks: (first slot index, slots).
  std::vector<std::pair<uint64_t, uint64_t>> row_spans;

  const volatile unsigned char* node(uint64_t i) const {
    return base + nodes_offset + i * node_size;
  }
};

using UsedFn = bool (*)(const RawLayout&, uint64_t);

// Computes the layout from the peeked params; false (with *why) when they
// cannot describe a segment. `spec` gets what Segment validation needs.
bool DeriveLayout(shmc::detail::ContainerKind kind, const HeaderPeek& peek,
                  RawLayout* lay, shmc::detail::SegmentSpec* spec,
                  std::string* why);

bool FixedNodes(shmc::detail::ContainerKind kind);
std::string CopyBytes(const volatile unsigned char* p, uint64_t n);
uint64_t MapLinkWord(const RawLayout& lay, uint64_t i);
bool MapNodeUsed(const RawLayout& lay, uint64_t i);
bool RawNodeUsed(const RawLayout& lay, uint64_t i);
Json TableInfo(const RawLayout& lay, UsedFn used, const char* used_word);
void CheckTable(const RawLayout& lay, UsedFn used, bool fix, Json* problems,
                Json* fixed);

// Attaches a fixed-node segment (read-only unless `writable`), validating
// the header as every container does and the geometry against its size.
template <class Alloc>
int OpenRaw(const SegName& name, const HeaderPeek& peek, bool writable,
            shmc::detail::Segment<Alloc>* seg, RawLayout* lay,
            std::string* err) {
  shmc::detail::SegmentSpec spec;
  std::string why;
  auto kind =
      static_cast<shmc::detail::ContainerKind>(peek.header()->kind);
  if (!DeriveLayout(kind, peek, lay, &spec, &why)) {
    *err = name.Display() + ": corrupted: " + why;
    return kExitProblems;
  }
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
  lay->base = reinterpret_cast<const volatile unsigned char*>(seg->base());
  return kExitOk;
}

}  // namespace shmc_tool
