// Which handlers answer for each kind name.
#include <cstring>

#include "tools/shmc/kinds/kind.h"

namespace shmc_tool {
namespace kinds {

template <class Alloc>
const KindOps<Alloc>* FindKind(const std::string& kind) {
  struct Row {
    const char* kind;
    KindOps<Alloc> ops;
  };
  static const Row kTable[] = {
      {"hash_map", MapOps<Alloc>()},
      {"array", FixedOps<Alloc>()},
      {"hash_table", FixedOps<Alloc>()},
      {"hash_table_m", FixedOps<Alloc>()},
      {"link_table", LinkOps<Alloc>()},
      {"extent_map", ExtentMapOps<Alloc>()},
      {"extent_table", ExtentOps<Alloc>()},
      {"queue", QueueOps<Alloc>()},
      {"sync_buf", SyncOps<Alloc>()},
      {"double_buf", DoubleBufOps<Alloc>()},
      {"double_table", DoubleTableOps<Alloc>()},
      {"sorted_array", SortedOps<Alloc>()},
      {"percentile", PercentileOps<Alloc>()},
  };
  for (const Row& r : kTable) {
    if (kind == r.kind) return &r.ops;
  }
  return nullptr;
}

template const KindOps<shmc::POSIX>* FindKind<shmc::POSIX>(const std::string&);
template const KindOps<shmc::SVIPC>* FindKind<shmc::SVIPC>(const std::string&);
template const KindOps<shmc::MAPFILE>* FindKind<shmc::MAPFILE>(
    const std::string&);

}  // namespace kinds
}  // namespace shmc_tool
