// `shmc` on the fixed-node kinds (array, hash_table, hash_table_m): nodes
// read as bytes through the layout the header describes (fixed_view.h).
#include "tools/shmc/kinds/kind.h"

#include <string>

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct FixedKind {
  static int FixedInfo(const Container& c, Json* j, std::string* err) {
    sd::Segment<Alloc> seg;
    FixedView v;
    int rc = OpenFixed(c.segments[0], c.peeks[0], false, &seg, &v, err);
    if (rc != kExitOk) return rc;
    if (v.lay.kind() == ContainerKind::kArray) {
      Json a = Json::object();
      a["node_size"] = v.lay.node_size();
      a["node_num"] = v.lay.slots();
      uint64_t nz = 0;
      for (uint64_t i = 0; i < v.lay.slots(); ++i) nz += v.RawNodeUsed(i);
      a["nonzero_nodes"] = nz;
      (*j)["array"] = std::move(a);
    } else {
      // The tool cannot call a user's Node::Key(): "used" means a node
      // with any non-zero byte (erased nodes are cleared by convention).
      (*j)["table"] = TableInfo(v, "nonzero_nodes");
    }
    return kExitOk;
  }

  static int FixedCheck(const Container& c, bool fix, Findings* f,
                        std::string* err) {
    sd::Segment<Alloc> seg;
    FixedView v;
    int rc = OpenFixed(c.segments[0], c.peeks[0], fix, &seg, &v, err);
    if (rc != kExitOk) return rc;
    CheckTable(v, fix, &f->problems, &f->fixed);
    return kExitOk;
  }

  static int FixedDump(const Container& c, Sink* sink, std::string* err) {
    sd::Segment<Alloc> seg;
    FixedView v;
    int rc = OpenFixed(c.segments[0], c.peeks[0], false, &seg, &v, err);
    if (rc != kExitOk) return rc;
    DumpNodes(v, sink);
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> FixedOps() {
  using K = FixedKind<Alloc>;
  return {K::FixedInfo, K::FixedCheck, K::FixedDump};
}
SHMC_TOOL_INSTANTIATE_KIND(FixedOps)

// An array's nodes by index, a table's nodes in use by row and slot.
void DumpNodes(const FixedView& v, Sink* sink) {
  bool table = v.lay.kind() != ContainerKind::kArray;
  for (size_t r = 0; r < v.lay.row_count() && sink->more(); ++r) {
    sd::RowSpan span = v.lay.row(r);
    for (uint64_t s = 0; s < span.slots && sink->more(); ++s) {
      uint64_t i = span.first + s;
      if (table && !v.RawNodeUsed(i)) continue;
      Json j = Json::object();
      if (table) {
        j["row"] = static_cast<uint64_t>(r);
        j["slot"] = s;
      } else {
        j["index"] = i;
      }
      j["data"] = Data(v.NodeBytes(i), sink->opt.hex);
      sink->out(std::move(j));
    }
  }
}

}  // namespace kinds
}  // namespace shmc_tool
