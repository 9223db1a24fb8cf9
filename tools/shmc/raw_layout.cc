#include "tools/shmc/raw_layout.h"

#include <algorithm>
#include <atomic>
#include <cstring>

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
  lay->hash_id = peek.param("hash_id");
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
namespace {

// Where a key may sit in a node the tool knows only by its size, and how
// it is hashed (shmc/hash.h): an integer (hash id 1: Mix64 of its value,
// zero- or sign-extended) or plain bytes (hash id 2).
struct KeyPlace {
  uint64_t offset = 0, width = 0;
  bool sign = false;
  bool bytes = false;
};

uint64_t KeyHash(const RawLayout& lay, uint64_t slot, const KeyPlace& k) {
  unsigned char b[4096];
  const volatile unsigned char* p = lay.node(slot) + k.offset;
  for (uint64_t i = 0; i < k.width; ++i) b[i] = p[i];
  if (k.bytes) return shmc::HashBytes(b, k.width);
  uint64_t v = 0;
  std::memcpy(&v, b, k.width);  // little-endian
  if (k.sign && k.width < 8 && (v >> (8 * k.width - 1)) != 0) {
    v |= ~uint64_t{0} << (8 * k.width);
  }
  return shmc::Mix64(v);
}

// The byte of the tag array that holds slot's tag (little-endian words).
volatile unsigned char* TagByte(const RawLayout& lay, uint64_t slot) {
  uint64_t s = lay.geo.slots;
  uint64_t word = (slot / s) * sd::TagWordsPerBucket(lay.geo.slots) +
                  (slot % s) / 4;
  return const_cast<volatile unsigned char*>(
      lay.base + sd::TableTagsOffset(lay.geo.main_buckets) + word * 4 +
      (slot % s) % 4);
}

std::vector<KeyPlace> KeyPlaces(const RawLayout& lay) {
  std::vector<KeyPlace> out;
  // A map's key is at the start, before its 8-byte handle word.
  uint64_t room = lay.map_index ? lay.node_size - 8 : lay.node_size;
  uint64_t last = lay.map_index ? 0 : room;
  if (lay.hash_id == 1) {
    for (uint64_t w : {8, 4, 2, 1}) {
      for (uint64_t o = 0; o + w <= room && o <= last; o += w) {
        out.push_back({o, w, false, false});
        if (w < 8) out.push_back({o, w, true, false});
      }
    }
  } else if (lay.hash_id == 2) {
    for (uint64_t w = 1; w <= room && w <= 256; ++w) {
      out.push_back({0, w, false, true});
    }
  }
  return out;
}

// Tags: a lookup compares a slot's tag before its key, so a node in use
// whose tag is not its key's cannot be found. The tool does not know the
// program's Node: it tries each place a key may sit and takes one only if
// nearly every tag agrees with it (a wrong guess agrees about once in
// 255), then counts the nodes that disagree. A tag of 0 on a node in use
// is wrong whatever the key.
void CheckTags(const RawLayout& lay, UsedFn used, bool fix, Json* problems,
               Json* fixed) {
  std::vector<uint64_t> in_use;
  uint64_t zero = 0;
  for (uint64_t i = 0; i < lay.geo.total_slots(); ++i) {
    if (!used(lay, i)) continue;
    in_use.push_back(i);
    zero += *TagByte(lay, i) == 0;
  }
  if (zero > 0) {
    problems->Push(std::to_string(zero) + " nodes in use have no tag: "
                   "lookups cannot reach them");
  }
  std::vector<uint64_t> sample;
  for (size_t i = 0; i < in_use.size() && sample.size() < 512; ++i) {
    sample.push_back(in_use[i * std::max<size_t>(1, in_use.size() / 512) %
                            in_use.size()]);
  }
  if (sample.size() < 8) return;  // too few keys to tell where they are
  auto agreeing = [&](const KeyPlace& k, size_t n) {
    size_t agree = 0;
    for (size_t j = 0; j < n && j < sample.size(); ++j) {
      uint64_t i = sample[j];
      agree += *TagByte(lay, i) == sd::TagOf(KeyHash(lay, i, k));
    }
    return agree;
  };
  // Chosen on a few nodes, then confirmed on the whole sample.
  const KeyPlace* best = nullptr;
  size_t best_agree = 0;
  std::vector<KeyPlace> places = KeyPlaces(lay);
  for (const KeyPlace& k : places) {
    size_t agree = agreeing(k, 64);
    if (agree > best_agree) {
      best_agree = agree;
      best = &k;
    }
  }
  if (best == nullptr) return;
  best_agree = agreeing(*best, sample.size());
  if (best_agree * 10 < sample.size() * 9) return;
  uint64_t bad = 0, retagged = 0;
  for (uint64_t i : in_use) {
    uint32_t want = sd::TagOf(KeyHash(lay, i, *best));
    volatile unsigned char* t = TagByte(lay, i);
    if (*t == want || *t == 0) continue;  // zero tags are counted above
    ++bad;
    if (fix) {
      *t = static_cast<unsigned char>(want);
      ++retagged;
    }
  }
  if (bad > 0) {
    problems->Push(std::to_string(bad) + " nodes in use carry a tag that "
                   "is not their key's: lookups cannot reach them (key "
                   "taken as bytes " + std::to_string(best->offset) + ".." +
                   std::to_string(best->offset + best->width) + " of each "
                   "node, which " + std::to_string(best_agree) + " of " +
                   std::to_string(sample.size()) + " sampled tags agree with)");
  }
  if (retagged > 0) {
    fixed->Push(std::to_string(retagged) + " tags rewritten from their keys");
  }
}

}  // namespace

void CheckTable(const RawLayout& lay, UsedFn used, bool fix, Json* problems,
                Json* fixed) {
  if (lay.kind != ContainerKind::kHashTable) return;
  CheckTags(lay, used, fix, problems, fixed);
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
