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
    Json d = Json::Object();
    d.Set("version", db.version());
    d.Set("max_bytes", db.max_bytes());
    d.Set("reader_slots", db.reader_slots());
    d.Set("readers", db.readers());
    d.Set("pins", db.pins());
    j->Set("double_buf", std::move(d));
    return kExitOk;
  }

  static int DoubleCheck(const Container& c, bool, Findings* f,
                         std::string* err) {
    shmc::ShmDoubleBuf<Alloc> db;
    if (!db.InitForInspect(c.segments[0].key)) {
      return Fail(db.last_error(), err);
    }
    f->stats.Set("version", db.version());
    f->stats.Set("readers", static_cast<uint64_t>(db.readers()));
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
