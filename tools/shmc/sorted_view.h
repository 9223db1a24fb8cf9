// ShmSortedArray segments as the `shmc` tool sees them: the directory at
// KEY and the data segment it names (KEY0 or KEY1), read as bytes. The
// tool cannot name the user's key type, so it cannot check the key order
// (Compare is not recorded); it checks what the bytes alone can prove:
// the checksum, the seal and the directory's agreement with the data.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "shmc/detail/segment.h"
#include "shmc/detail/sorted_layout.h"
#include "tools/shmc/container.h"
#include "tools/shmc/json.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

// One data segment's bytes and facts.
struct SortedBytes {
  const char* base = nullptr;  // nullptr: nothing published yet
  std::string segment;         // its display name
  shmc::detail::SortedGeometry g;
  uint64_t generation = 0;     // from its params
  uint64_t sealed = 0;
  uint64_t checksum = 0;
  uint64_t build_ns = 0;
};

// The key and value sizes and alignments from a header's params.
bool SortedTypes(const HeaderPeek& peek, shmc::detail::SortedGeometry* g,
                 std::string* why);

Json SortedInfo(const SortedBytes& d, uint64_t current, bool have_dir);
void SortedCheck(const SortedBytes& d, uint64_t current, bool have_dir,
                 Json* problems, Json* stats);
void SortedDump(const SortedBytes& d, const DumpOptions& opt,
                const std::function<bool()>& more,
                const std::function<void(Json)>& out);

template <class Alloc>
struct SortedView {
  shmc::detail::Segment<Alloc> dir, data;
  bool have_dir = false;
  uint64_t current = 0;  // the directory's word (generation << 1 | slot)
  SortedBytes bytes;

  // `c` names a directory (with its data segments) or one data segment.
  int Open(const Container& c, std::string* err) {
    namespace sd = shmc::detail;
    const HeaderPeek& peek = c.peeks[0];
    sd::SortedGeometry types;
    std::string why;
    if (!SortedTypes(peek, &types, &why)) {
      *err = c.segments[0].Display() + ": corrupted: " + why;
      return kExitProblems;
    }
    shmc::Error e;
    SegName data_name = c.segments[0];
    if (peek.kind() == static_cast<uint32_t>(sd::ContainerKind::kSortedDir)) {
      have_dir = true;
      if (!dir.OpenForRead(c.segments[0].key, sd::SortedDirSpec(types), false,
                           "shmc", &e)) {
        *err = e.message;
        return ExitFor(e.code);
      }
      current = sd::SortedDir(dir.base())->current.load(
          std::memory_order_acquire);
      if (current == 0) return kExitOk;
      data_name.key = sd::SortedDataKey(c.segments[0].key, current & 1);
    }
    if (!sd::OpenSortedData(data_name.key, types, "shmc", &data, &bytes.g,
                            &bytes.generation, &e)) {
      *err = e.message;
      return ExitFor(e.code);
    }
    const sd::SortedDataHeader* h = sd::SortedData(data.base());
    bytes.base = data.base();
    bytes.segment = data_name.Display();
    bytes.sealed = h->sealed.load(std::memory_order_acquire);
    bytes.checksum = h->checksum;
    bytes.build_ns = h->build_ns;
    return kExitOk;
  }
};

}  // namespace shmc_tool
