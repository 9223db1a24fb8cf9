// `shmc` on a sorted array: its directory NAME and data NAME0/NAME1
// (sorted_view.h). Read-only data: a damaged version is rebuilt, not
// repaired.
#include "tools/shmc/kinds/kind.h"

#include <string>

#include "tools/shmc/sorted_view.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct SortedKind {
  static int SortedArrayInfo(const Container& c, Json* j, std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    (*j)["sorted_array"] = SortedInfo(sv.bytes, sv.current, sv.have_dir);
    return kExitOk;
  }

  static int SortedArrayCheck(const Container& c, bool, Findings* f,
                              std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    SortedCheck(sv.bytes, sv.current, sv.have_dir, &f->problems, &f->stats);
    return kExitOk;
  }

  static int SortedArrayDump(const Container& c, Sink* sink,
                             std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    SortedDump(sv.bytes, sink->opt, [sink] { return sink->more(); },
               [sink](Json j) { sink->out(std::move(j)); });
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> SortedOps() {
  using K = SortedKind<Alloc>;
  return {K::SortedArrayInfo, K::SortedArrayCheck, K::SortedArrayDump};
}
SHMC_TOOL_INSTANTIATE_KIND(SortedOps)

}  // namespace kinds
}  // namespace shmc_tool
