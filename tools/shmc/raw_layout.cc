#include "tools/shmc/raw_layout.h"

#include <atomic>

#include "shmc/shm_array.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/posix_shm_alloc.h"

namespace shmc_tool {

namespace sd = shmc::detail;
using sd::ContainerKind;

bool AllZero(const volatile unsigned char* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

std::string CopyBytes(const volatile unsigned char* p, uint64_t n) {
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; ++i) s[i] = static_cast<char>(p[i]);
  return s;
}

bool MulAdd(uint64_t a, uint64_t b, uint64_t c, uint64_t* out) {
  uint64_t m;
  if (__builtin_mul_overflow(a, b, &m) || __builtin_add_overflow(m, c, out)) {
    return false;
  }
  return true;
}

struct ParamDef {
  const char* name;
  sd::ParamRole role;
};

std::vector<ParamDef> ParamDefs(ContainerKind kind) {
  using R = sd::ParamRole;
  switch (kind) {
    case ContainerKind::kArray:
      return {{"node_size", R::kLayout}, {"node_align", R::kLayout},
              {"node_num", R::kGeometry}};
    case ContainerKind::kHashTable:
      return {{"node_size", R::kLayout},   {"node_align", R::kLayout},
              {"hash_id", R::kLayout},     {"bucket_slots", R::kLayout},
              {"main_buckets", R::kGeometry}, {"over_buckets", R::kGeometry},
              {"over_rows", R::kGeometry}};
    case ContainerKind::kHashTableM:
      return {{"node_size", R::kLayout}, {"node_align", R::kLayout},
              {"hash_id", R::kLayout},   {"row_num", R::kGeometry},
              {"col_num", R::kGeometry}};
    default:
      return {};
  }
}

struct AnyNode {
  std::pair<bool, uint64_t> Key() const volatile { return {false, 0}; }
};

uint32_t LayoutVersion(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kArray:
      return shmc::ShmArray<char, shmc::POSIX>::kLayoutVersion;
    case ContainerKind::kHashTable:
      return shmc::ShmHashTable<uint64_t, AnyNode,
                                shmc::POSIX>::kLayoutVersion;
    case ContainerKind::kHashTableM:
      return shmc::ShmHashTableM<uint64_t, AnyNode,
                                 shmc::POSIX>::kLayoutVersion;
    default:
      return 0;
  }
}

// Computes the layout from the peeked params; false (corrupted) when they
// cannot describe a segment. `spec` gets what Segment validation needs.
bool DeriveLayout(ContainerKind kind, const HeaderPeek& peek, RawLayout* lay,
                  sd::SegmentSpec* spec, std::string* why) {
  lay->kind = kind;
  spec->kind = kind;
  spec->layout_version = LayoutVersion(kind);
  for (const ParamDef& d : ParamDefs(kind)) {
    spec->params.push_back({d.name, peek.param(d.name), d.role});
  }
  lay->node_size = peek.param("node_size");
  lay->node_align = peek.param("node_align");
  if (lay->node_size == 0 || lay->node_size > (1u << 24) ||
      lay->node_align == 0 || lay->node_align > 4096 ||
      (lay->node_align & (lay->node_align - 1)) != 0 ||
      lay->node_size % lay->node_align != 0) {
    *why = "impossible node_size/node_align";
    return false;
  }
  uint64_t slots = 0;
  switch (kind) {
    case ContainerKind::kArray:
      lay->nodes_offset = sd::NodesStart(512, lay->node_align);
      spec->header_size = static_cast<uint32_t>(lay->nodes_offset);
      lay->node_num = peek.param("node_num");
      slots = lay->node_num;
      lay->row_spans = {{0, slots}};
      break;
    case ContainerKind::kHashTable: {
      sd::TableGeometry& g = lay->geo;
      uint64_t bucket_slots = peek.param("bucket_slots");
      g.slots = bucket_slots > 4096 ? 0 : static_cast<uint32_t>(bucket_slots);
      g.main_buckets = peek.param("main_buckets");
      g.over_buckets = peek.param("over_buckets");
      uint64_t over_rows = peek.param("over_rows");
      g.over_rows = over_rows > sd::kMaxOverRows
                        ? 0 : static_cast<uint32_t>(over_rows);
      if (!g.Derive()) {
        *why = "impossible hash table geometry";
        return false;
      }
      lay->nodes_offset = sd::TableNodesOffset(g, lay->node_align);
      spec->header_size = static_cast<uint32_t>(sd::kTableBitmapOffset);
      slots = g.total_slots();
      for (uint32_t r = 0; r < g.rows(); ++r) {
        lay->row_spans.push_back({g.row_first[r] * g.slots,
                                  g.row_buckets[r] * g.slots});
      }
      break;
    }
    case ContainerKind::kHashTableM:
      lay->rows = peek.param("row_num");
      lay->cols = peek.param("col_num");
      if (lay->rows < 1 || lay->rows > 200 || lay->cols <= lay->rows ||
          lay->cols > (1ULL << 32) ||
          !sd::LargestPrimes(lay->cols, lay->rows, &lay->mods)) {
        *why = "impossible rows x cols";
        return false;
      }
      lay->nodes_offset = sd::NodesStart(512, lay->node_align);
      spec->header_size = static_cast<uint32_t>(lay->nodes_offset);
      slots = lay->rows * lay->cols;
      for (uint64_t r = 0; r < lay->rows; ++r) {
        lay->row_spans.push_back({r * lay->cols, lay->mods[r]});
      }
      break;
    default:
      *why = "not a fixed-node container";
      return false;
  }
  if (!MulAdd(slots, lay->node_size, lay->nodes_offset, &spec->total_size)) {
    *why = "size overflows";
    return false;
  }
  return true;
}

// A map's index node: key words, then the value handle (low 32 bits: the
// head node, 0 when the node is free).
uint64_t MapLinkWord(const RawLayout& lay, uint64_t i) {
  const auto* w = reinterpret_cast<const std::atomic<uint64_t>*>(
      const_cast<const unsigned char*>(lay.node(i)) + lay.node_size - 8);
  return w->load(std::memory_order_acquire);
}

bool MapNodeUsed(const RawLayout& lay, uint64_t i) {
  return static_cast<uint32_t>(MapLinkWord(lay, i)) != 0;
}

bool RawNodeUsed(const RawLayout& lay, uint64_t i) {
  return !AllZero(lay.node(i), lay.node_size);
}

// Kinds the tool reads through RawLayout.
bool FixedNodes(ContainerKind kind) {
  return kind == ContainerKind::kArray || kind == ContainerKind::kHashTable ||
         kind == ContainerKind::kHashTableM;
}

// Rows with their slots and nodes in use, and for ShmHashTable the probe
// depth of a hit: 1 for the main rows (both lines fetched together), 2 + r
// for overflow row r.
Json Occupancy(const RawLayout& lay, UsedFn used, uint64_t* total_used,
               const char* used_word) {
  Json rows = Json::Array();
  Json depth = Json::Object();
  uint64_t all = 0;
  uint64_t main_used = 0;
  for (size_t r = 0; r < lay.row_spans.size(); ++r) {
    uint64_t n = 0;
    for (uint64_t s = 0; s < lay.row_spans[r].second; ++s) {
      n += used(lay, lay.row_spans[r].first + s);
    }
    all += n;
    Json row = Json::Object();
    row.Set("row", static_cast<uint64_t>(r));
    row.Set("slots", lay.row_spans[r].second);
    row.Set(used_word, n);
    rows.Push(std::move(row));
    if (lay.kind == ContainerKind::kHashTable) {
      if (r < 2) {
        main_used += n;
        if (r == 1) depth.Set("1", main_used);
      } else {
        depth.Set(std::to_string(r), n);
      }
    }
  }
  *total_used = all;
  Json j = Json::Object();
  j.Set("rows", std::move(rows));
  if (lay.kind == ContainerKind::kHashTable) j.Set("probe_depth", depth);
  return j;
}

const sd::HashTableHeader* TableHeader(const RawLayout& lay) {
  return reinterpret_cast<const sd::HashTableHeader*>(
      const_cast<const unsigned char*>(lay.base) + 512);
}

// Overflow rows deeper than the recorded depth that hold nodes: lookups
// stop before them, so their keys are unreachable.
uint32_t DeepestUsedOverflowRow(const RawLayout& lay, UsedFn used) {
  uint32_t deepest = 0;
  for (uint32_t r = 0; r < lay.geo.over_rows; ++r) {
    const auto& span = lay.row_spans[2 + r];
    for (uint64_t s = 0; s < span.second; ++s) {
      if (used(lay, span.first + s)) {
        deepest = r + 1;
        break;
      }
    }
  }
  return deepest;
}

Json TableInfo(const RawLayout& lay, UsedFn used, const char* used_word) {
  uint64_t total_used = 0;
  Json j = Occupancy(lay, used, &total_used, used_word);
  uint64_t slots = 0;
  for (const auto& span : lay.row_spans) slots += span.second;
  Json out = Json::Object();
  out.Set("node_size", lay.node_size);
  out.Set("slots", slots);
  out.Set(used_word, total_used);
  out.Set("fill_pct", slots == 0 ? 0.0 : 100.0 * total_used / slots);
  if (lay.kind == ContainerKind::kHashTable) {
    const sd::HashTableHeader* th = TableHeader(lay);
    out.Set("bucket_slots", lay.geo.slots);
    out.Set("expected_capacity", sd::ExpectedCapacity(slots));
    out.Set("overflow_depth",
            th->overflow_depth.load(std::memory_order_relaxed));
    out.Set("overflow_allocs",
            th->overflow_allocs.load(std::memory_order_relaxed));
  }
  out.Set("rows", *j.Get("rows"));
  if (const Json* d = j.Get("probe_depth")) out.Set("probe_depth", *d);
  return out;
}

// Hash-table findings (and the one repair: raising the recorded depth).
void CheckTable(const RawLayout& lay, UsedFn used, bool fix, Json* problems,
                Json* fixed) {
  if (lay.kind != ContainerKind::kHashTable) return;
  auto* th = const_cast<sd::HashTableHeader*>(TableHeader(lay));
  uint32_t depth = th->overflow_depth.load(std::memory_order_relaxed);
  if (depth > lay.geo.over_rows) {
    problems->Push("overflow_depth " + std::to_string(depth) +
                   " exceeds the " + std::to_string(lay.geo.over_rows) +
                   " overflow rows");
  }
  uint32_t deepest = DeepestUsedOverflowRow(lay, used);
  if (deepest > depth) {
    problems->Push("overflow row " + std::to_string(deepest - 1) +
                   " holds nodes beyond overflow_depth " +
                   std::to_string(depth) + ": lookups cannot reach them");
    if (fix) {
      th->overflow_depth.store(deepest, std::memory_order_release);
      fixed->Push("overflow_depth raised to " + std::to_string(deepest));
    }
  } else if (depth > lay.geo.over_rows && fix) {
    th->overflow_depth.store(deepest, std::memory_order_release);
    fixed->Push("overflow_depth set to " + std::to_string(deepest));
  }
}

}  // namespace shmc_tool
