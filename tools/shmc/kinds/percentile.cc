// `shmc` on a shared percentile: every slot merged.
#include "tools/shmc/kinds/kind.h"

#include <string>

#include "shmc/percentile.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct PercentileKind {
  static int PercentileInfo(const Container& c, Json* j, std::string* err) {
    shmc::ShmPercentile<Alloc> sp;
    if (!sp.InitForRead(c.segments[0].key)) {
      return Fail(sp.last_error(), err);
    }
    shmc::PercentileEstimator all = sp.Merged();
    Json d = Json::object();
    d["p"] = all.p();
    d["group_size"] = all.group_size();
    d["slots"] = sp.slots();
    d["samples"] = all.count();
    d["groups"] = all.groups();
    d["estimate"] = all.count() > 0 ? Json(all.Estimate()) : Json();
    (*j)["percentile"] = std::move(d);
    return kExitOk;
  }

  static int PercentileCheck(const Container& c, bool, Findings* f,
                             std::string* err) {
    shmc::ShmPercentile<Alloc> sp;
    if (!sp.InitForRead(c.segments[0].key)) {
      return Fail(sp.last_error(), err);
    }
    f->stats["samples"] = sp.Merged().count();
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> PercentileOps() {
  using K = PercentileKind<Alloc>;
  return {K::PercentileInfo, K::PercentileCheck, nullptr};
}
SHMC_TOOL_INSTANTIATE_KIND(PercentileOps)

}  // namespace kinds
}  // namespace shmc_tool
