// `shmc` on a hash map: its index NAME0 (fixed nodes: key words, then
// the value handle) and its values NAME1 (a link table, or an extent
// table: kind "extent_map").
#include "tools/shmc/kinds/kind.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <string>

#include "shmc/shm_hash_map.h"
#include "tools/shmc/kinds/links.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc, class Links>
struct MapKind {
  // A map's index (as bytes) and values, both read-only.
  struct MapView {
    sd::Segment<Alloc> seg;
    FixedView index;
    Links lt;
    int Open(const Container& c, std::string* err) {
      int rc = OpenFixed(c.segments[0], c.peeks[0], false, &seg, &index, err);
      index.map_index = true;
      return rc != kExitOk ? rc : OpenLinks(c.segments[1], &lt, err);
    }
  };

  static int MapInfo(const Container& c, Json* j, std::string* err) {
    MapView mv;
    int rc = mv.Open(c, err);
    if (rc != kExitOk) return rc;
    Json idx = TableInfo(mv.index, "keys");
    (*j)["keys"] = *Find(idx, "keys");
    (*j)["index"] = std::move(idx);
    (*j)["values"] = LinkFacts(mv.lt);
    return kExitOk;
  }

  static int MapCheck(const Container& c, bool fix, Findings* f,
                      std::string* err) {
    sd::Segment<Alloc> seg;
    FixedView index;
    int rc = OpenFixed(c.segments[0], c.peeks[0], fix, &seg, &index, err);
    if (rc != kExitOk) return rc;
    index.map_index = true;
    auto handle = [&index](uint64_t slot) {
      return sd::MapHandleWord(index.base, index.lay, slot);
    };
    Links lt;
    if (fix) {
      sd::LinkSlotResolver resolve =
          sd::MapResolver(index.lay.slots(), handle);
      rc = OpenLinksToRepair(c.segments[1], c.peeks[1], &resolve, &lt, err);
    } else {
      rc = OpenLinks(c.segments[1], &lt, err);
    }
    if (rc != kExitOk) return rc;
    CheckTable(index, fix, &f->problems, &f->fixed);
    typename shmc::ShmHashMap<uint64_t, Alloc, Links>::HealthStat hs;
    auto each_slot =
        [&](const std::function<void(std::atomic<uint64_t>*)>& visit) {
          for (uint64_t i = 0; i < index.lay.slots(); ++i) {
            if (index.MapNodeUsed(i)) visit(handle(i));
          }
          return true;
        };
    if (!sd::MapHealthCheck(lt, each_slot, &hs, fix)) {
      *err = c.segments[0].Display() + ": health check could not run";
      return kExitError;
    }
    LinkProblems(hs.lt_stat, f);
    auto add = [](Json* list, size_t n, const char* what) {
      if (n > 0) list->push_back(std::to_string(n) + " " + what);
    };
    add(&f->problems, hs.bad_key_values, "keys pointing at no valid value");
    add(&f->problems, hs.leaked_values, "values no key points to (leaked)");
    add(&f->fixed, hs.cleared_key_values, "keys with bad values dropped");
    add(&f->fixed, hs.recycled_leaked_values, "leaked values freed");
    f->stats["keys"] = hs.total_key_values;
    return kExitOk;
  }

  static int MapDump(const Container& c, Sink* sink, std::string* err) {
    MapView mv;
    int rc = mv.Open(c, err);
    if (rc != kExitOk) return rc;
    const FixedView& index = mv.index;
    uint64_t key_bytes = index.map_key_bytes();
    std::string val;
    for (uint64_t i = 0; i < index.lay.slots() && sink->more(); ++i) {
      // Read as the map does: handle, key, value, handle again.
      for (int attempt = 0; attempt < 8; ++attempt) {
        uint64_t l = index.MapLink(i);
        if (static_cast<uint32_t>(l) == 0) break;
        std::string key = CopyBytes(index.node(i), key_bytes);
        bool ok = mv.lt.Read(shmc::link_buf_t::Unpack(l), &val);
        if (index.MapLink(i) != l) continue;  // changed: read again
        Json j = Json::object();
        if (key_bytes == 8) {
          uint64_t k;
          std::memcpy(&k, key.data(), 8);
          j["key"] = k;
        } else {
          j["key"] = Data(key, sink->opt.hex);
        }
        if (ok) {
          j["value"] = Data(val, sink->opt.hex);
        } else {
          j["value"] = Json();
          j["error"] = "value unreadable (damaged: run shmc check)";
        }
        sink->out(std::move(j));
        break;
      }
    }
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> MapOps() {
  using K = MapKind<Alloc, shmc::ShmLinkTable<Alloc>>;
  return {K::MapInfo, K::MapCheck, K::MapDump};
}
SHMC_TOOL_INSTANTIATE_KIND(MapOps)

template <class Alloc>
KindOps<Alloc> ExtentMapOps() {
  using K = MapKind<Alloc, shmc::ShmExtentTable<Alloc>>;
  return {K::MapInfo, K::MapCheck, K::MapDump};
}
SHMC_TOOL_INSTANTIATE_KIND(ExtentMapOps)

}  // namespace kinds
}  // namespace shmc_tool
