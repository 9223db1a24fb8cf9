// Each half is read as a table segment laid out from its first byte
// (detail/double_table_layout.h): a FixedView there sees it all. The
// published half is read-only data: a damaged one is rebuilt (a build
// from kEmpty), not repaired, so check --fix changes nothing.
#include "tools/shmc/kinds/kind.h"

#include <atomic>
#include <string>

#include "shmc/detail/double_table_layout.h"
#include "shmc/shm_double_buf.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct DoubleTableKind {
  struct DoubleTableView {
    sd::Segment<Alloc> seg;
    sd::DoubleTableLayout lay;
    uint64_t state = 0;

    int Open(const Container& c, std::string* err) {
      std::string why;
      if (!sd::DoubleTableLayout::FromHeader(*c.peeks[0].header(), &lay,
                                             &why)) {
        *err = c.segments[0].Display() + ": corrupted: " + why;
        return kExitProblems;
      }
      shmc::Error e;
      sd::SegmentSpec spec = lay.spec();
      if (!seg.OpenForRead(c.segments[0].key, spec, false, "shmc", &e) ||
          !seg.CheckTotalSize(spec.total_size, "shmc", &e)) {
        seg.Reset();
        return Fail(e, err);
      }
      state = reinterpret_cast<const sd::DoubleBufHeader*>(
                  seg.base() + sd::DoubleTableLayout::header_offset())
                  ->state.load(std::memory_order_acquire);
      return kExitOk;
    }
    uint64_t version() const { return sd::StateVersion(state); }
    uint32_t current() const { return sd::StateHalf(state); }
    FixedView Half(uint32_t h) const {
      FixedView v;
      v.lay = lay.table();
      v.base = seg.base() + lay.half_offset(h);
      return v;
    }
    const sd::DoubleTableHalf* HalfHeader(uint32_t h) const {
      return reinterpret_cast<const sd::DoubleTableHalf*>(
          seg.base() + lay.half_offset(h));
    }
    bool SumOk(uint32_t h) const {
      return sd::HalfChecksum(seg.base() + lay.half_offset(h) +
                                  sizeof(sd::DoubleTableHalf),
                              lay.summed_bytes()) == HalfHeader(h)->checksum;
    }
    // What is wrong with the published half, if anything.
    std::string CurrentProblem() const {
      uint32_t h = current();
      uint64_t sealed = HalfHeader(h)->sealed.load(std::memory_order_relaxed);
      std::string which = "version " + std::to_string(version()) +
                          " (half " + std::to_string(h) + ")";
      if (sealed != version()) {
        return which + " says it is version " + std::to_string(sealed) +
               ": readers refuse it; rebuild it";
      }
      if (!SumOk(h)) {
        return which + " fails its checksum: readers refuse it; rebuild it";
      }
      return "";
    }
    uint64_t Count(bool pins) const {
      return sd::DoublePins(
                 reinterpret_cast<sd::DoubleBufHeader*>(
                     seg.base() + sd::DoubleTableLayout::header_offset()),
                 reinterpret_cast<sd::DoubleBufSlot*>(
                     seg.base() + sd::DoubleTableLayout::slots_offset()),
                 lay.reader_slots())
          .Count(pins);
    }
  };

  static int DoubleTableInfo(const Container& c, Json* j, std::string* err) {
    DoubleTableView dv;
    int rc = dv.Open(c, err);
    if (rc != kExitOk) return rc;
    Json d = Json::object();
    d["version"] = dv.version();
    d["current_half"] = static_cast<uint64_t>(dv.current());
    d["reader_slots"] = dv.lay.reader_slots();
    d["readers"] = dv.Count(false);
    d["pins"] = dv.Count(true);
    d["half_bytes"] = dv.lay.half_bytes();
    Json halves = Json::array();
    for (uint32_t h = 0; h < 2; ++h) {
      const sd::DoubleTableHalf* hh = dv.HalfHeader(h);
      uint64_t sealed = hh->sealed.load(std::memory_order_relaxed);
      Json one = Json::object();
      one["half"] = static_cast<uint64_t>(h);
      one["sealed_version"] = sealed;
      one["checksum_ok"] = sealed != 0 ? Json(dv.SumOk(h)) : Json();
      halves.push_back(std::move(one));
    }
    d["halves"] = std::move(halves);
    if (dv.version() != 0) {
      d["table"] = TableInfo(dv.Half(dv.current()), "nonzero_nodes");
    }
    (*j)["double_table"] = std::move(d);
    return kExitOk;
  }

  static int DoubleTableCheck(const Container& c, bool, Findings* f,
                              std::string* err) {
    DoubleTableView dv;
    int rc = dv.Open(c, err);
    if (rc != kExitOk) return rc;
    f->stats["version"] = dv.version();
    f->stats["readers"] = dv.Count(false);
    if (dv.version() == 0) return kExitOk;  // nothing published
    std::string bad = dv.CurrentProblem();
    if (!bad.empty()) {
      f->problems.push_back(bad);
      return kExitOk;
    }
    // The spare half serves nobody: a damaged one is a fact, not a problem.
    uint32_t spare = dv.current() ^ 1;
    if (dv.HalfHeader(spare)->sealed.load(std::memory_order_relaxed) != 0) {
      f->stats["spare_checksum_ok"] = dv.SumOk(spare);
    }
    Json fixed = Json::array();
    CheckTable(dv.Half(dv.current()), false, &f->problems, &fixed);
    return kExitOk;
  }

  static int DoubleTableDump(const Container& c, Sink* sink,
                             std::string* err) {
    DoubleTableView dv;
    int rc = dv.Open(c, err);
    if (rc != kExitOk) return rc;
    if (dv.version() == 0) return kExitOk;
    std::string bad = dv.CurrentProblem();
    if (!bad.empty()) {
      *err = c.segments[0].Display() + ": " + bad;
      return kExitProblems;
    }
    DumpNodes(dv.Half(dv.current()), sink);
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> DoubleTableOps() {
  using K = DoubleTableKind<Alloc>;
  return {K::DoubleTableInfo, K::DoubleTableCheck, K::DoubleTableDump};
}
SHMC_TOOL_INSTANTIATE_KIND(DoubleTableOps)

}  // namespace kinds
}  // namespace shmc_tool
