// `shmc` on a value pool (a link table: its chains of nodes; an extent
// table: its extents), read through its own read path.
#include "tools/shmc/kinds/kind.h"

#include <string>
#include <type_traits>

#include "tools/shmc/kinds/links.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Links>
struct LinkKind {
  static constexpr const char* kName =
      std::is_same<typename Links::HealthStat, sd::ExtentHealthStat>::value
          ? "extent_table"
          : "link_table";

  static int LinkInfo(const Container& c, Json* j, std::string* err) {
    Links lt;
    int rc = OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    (*j)[kName] = LinkFacts(lt);
    return kExitOk;
  }

  static int LinkCheck(const Container& c, bool fix, Findings* f,
                       std::string* err) {
    Links lt;
    int rc = fix ? OpenLinksToRepair(c.segments[0], c.peeks[0], nullptr,
                                     &lt, err)
                 : OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    typename Links::HealthStat hs;
    if (!lt.HealthCheck(&hs, fix)) {
      *err = c.segments[0].Display() + ": health check could not run";
      return kExitError;
    }
    LinkProblems(hs, f);
    return kExitOk;
  }

  static int LinkDump(const Container& c, Sink* sink, std::string* err) {
    Links lt;
    int rc = OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    std::string val;
    lt.Travel([&](shmc::link_buf_t lb) {
      if (!sink->more()) return;
      Json j = Json::object();
      j["head"] = lb.head();
      j["tag"] = lb.tag();
      if (lt.Read(lb, &val)) {
        j["value"] = Data(val, sink->opt.hex);
      } else {
        j["value"] = Json();
        j["error"] = "value unreadable (changed or damaged)";
      }
      sink->out(std::move(j));
    });
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> LinkOps() {
  using K = LinkKind<shmc::ShmLinkTable<Alloc>>;
  return {K::LinkInfo, K::LinkCheck, K::LinkDump};
}
SHMC_TOOL_INSTANTIATE_KIND(LinkOps)

template <class Alloc>
KindOps<Alloc> ExtentOps() {
  using K = LinkKind<shmc::ShmExtentTable<Alloc>>;
  return {K::LinkInfo, K::LinkCheck, K::LinkDump};
}
SHMC_TOOL_INSTANTIATE_KIND(ExtentOps)

}  // namespace kinds
}  // namespace shmc_tool
