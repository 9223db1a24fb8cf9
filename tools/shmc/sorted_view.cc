#include "tools/shmc/sorted_view.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "tools/shmc/fixed_view.h"

namespace shmc_tool {

namespace sd = shmc::detail;

bool SortedTypes(const HeaderPeek& peek, sd::SortedGeometry* g,
                 std::string* why) {
  bool f1 = false, f2 = false, f3 = false, f4 = false;
  g->key_size = peek.param("key_size", &f1);
  g->key_align = peek.param("key_align", &f2);
  g->value_size = peek.param("value_size", &f3);
  g->value_align = peek.param("value_align", &f4);
  g->records = 0;
  g->layout = 0;
  if (!(f1 && f2 && f3 && f4) || !g->Plausible()) {
    *why = "impossible key/value size or alignment params";
    return false;
  }
  return true;
}

namespace {

const char* LayoutName(const sd::SortedGeometry& g) {
  return g.eytzinger() ? "eytzinger" : "sorted";
}

}  // namespace

Json SortedInfo(const SortedBytes& d, uint64_t current, bool have_dir) {
  Json j = Json::object();
  if (have_dir) {
    j["version"] = current >> 1;
    if (current == 0) {
      j["note"] = "nothing published yet";
      return j;
    }
  } else {
    j["version"] = d.generation;
  }
  j["data_segment"] = d.segment;
  j["records"] = d.g.records;
  j["layout"] = LayoutName(d.g);
  j["key_size"] = d.g.key_size;
  j["value_size"] = d.g.value_size;
  j["bytes"] = d.g.total();
  j["sealed"] = d.sealed == d.generation;
  j["build_ms"] = static_cast<double>(d.build_ns) / 1e6;
  return j;
}

void SortedCheck(const SortedBytes& d, uint64_t current, bool have_dir,
                 Json* problems, Json* stats) {
  if (have_dir) (*stats)["version"] = current >> 1;
  if (d.base == nullptr) return;  // nothing published: nothing to check
  (*stats)["records"] = d.g.records;
  if (d.sealed != d.generation) {
    problems->push_back("version " + std::to_string(d.generation) +
                   " is not sealed: its build is running or died (the "
                   "next build replaces it)");
    return;
  }
  if (have_dir && d.generation != current >> 1) {
    problems->push_back("the directory names version " +
                   std::to_string(current >> 1) + " but " + d.segment +
                   " holds version " + std::to_string(d.generation));
  }
  uint64_t have = sd::SortedChecksum(d.base, d.g);
  if (have != d.checksum) {
    char buf[128];
    std::snprintf(buf, sizeof(buf),
                  "checksum %016" PRIx64 ", stored %016" PRIx64
                  ": the records were changed after the build",
                  have, d.checksum);
    problems->push_back(buf);
  }
}

void SortedDump(const SortedBytes& d, const DumpOptions& opt,
                const std::function<bool()>& more,
                const std::function<void(Json)>& out) {
  if (d.base == nullptr) return;
  const sd::SortedGeometry& g = d.g;
  const unsigned char* keys = reinterpret_cast<const unsigned char*>(
      d.base + g.keys_offset());
  const unsigned char* values = reinterpret_cast<const unsigned char*>(
      d.base + g.values_offset());
  uint64_t n = g.records;
  uint64_t i = g.eytzinger() ? sd::EytzFirst(n) : 0;
  uint64_t end = g.eytzinger() ? 0 : n;
  for (uint64_t rank = 0; i != end && more(); ++rank) {
    Json j = Json::object();
    j["index"] = rank;
    std::string key = CopyBytes(keys + i * g.key_size, g.key_size);
    if (g.key_size == 8) {
      uint64_t k;
      std::memcpy(&k, key.data(), 8);
      j["key"] = k;
    } else {
      j["key"] = opt.hex ? Hex(key.data(), key.size()) : key;
    }
    std::string v = CopyBytes(values + i * g.value_size, g.value_size);
    j["value"] = opt.hex ? Hex(v.data(), v.size()) : v;
    out(std::move(j));
    i = g.eytzinger() ? sd::EytzNext(i, n) : i + 1;
  }
}

}  // namespace shmc_tool
