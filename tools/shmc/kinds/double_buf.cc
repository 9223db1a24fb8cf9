// `shmc` on a double buffer. Attaching checks the header and the geometry
// (an inspecting handle pins nothing, so it does not read the data itself).
#include "tools/shmc/kinds/kind.h"

#include <string>

#include "shmc/shm_double_buf.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct DoubleBufKind {
  static int DoubleInfo(const Container& c, Json* j, std::string* err) {
    shmc::ShmDoubleBuf<Alloc> db;
    if (!db.InitForInspect(c.segments[0].key)) {
      return Fail(db.last_error(), err);
    }
    Json d = Json::object();
    d["version"] = db.version();
    d["max_bytes"] = db.max_bytes();
    d["reader_slots"] = db.reader_slots();
    d["readers"] = db.readers();
    d["pins"] = db.pins();
    (*j)["double_buf"] = std::move(d);
    return kExitOk;
  }

  static int DoubleCheck(const Container& c, bool, Findings* f,
                         std::string* err) {
    shmc::ShmDoubleBuf<Alloc> db;
    if (!db.InitForInspect(c.segments[0].key)) {
      return Fail(db.last_error(), err);
    }
    f->stats["version"] = db.version();
    f->stats["readers"] = static_cast<uint64_t>(db.readers());
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> DoubleBufOps() {
  using K = DoubleBufKind<Alloc>;
  return {K::DoubleInfo, K::DoubleCheck, nullptr};
}
SHMC_TOOL_INSTANTIATE_KIND(DoubleBufOps)

}  // namespace kinds
}  // namespace shmc_tool
