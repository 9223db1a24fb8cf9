#include "tools/shmc/fixed_view.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "shmc/detail/table_check.h"
#include "shmc/hash.h"
#include "shmc/shm_hash_map.h"

namespace shmc_tool {

namespace sd = shmc::detail;
using sd::ContainerKind;

std::string CopyBytes(const volatile unsigned char* p, uint64_t n) {
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; ++i) s[i] = static_cast<char>(p[i]);
  return s;
}

uint64_t FixedView::MapLink(uint64_t slot) const {
  return sd::MapHandleWord(base, lay, slot)->load(std::memory_order_acquire);
}

uint64_t FixedView::map_key_bytes() const {
  return sd::MapHandleOffset(lay.node_size());
}

void DataMap::Load(const SegName& name) {
  known = false;
  ranges.clear();
  std::string path;
  if (name.backend == Backend::kPosix) {
    path = "/dev/shm/" + name.key.substr(name.key[0] == '/' ? 1 : 0);
  } else if (name.backend == Backend::kFile) {
    path = name.key;
  } else {
    return;  // SysV: no file to ask
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  const off_t size = st.st_size;
  off_t at = 0;
  while (at < size) {
    off_t begin = lseek(fd, at, SEEK_DATA);
    if (begin < 0) {
      if (errno == ENXIO) break;  // only a hole is left
      close(fd);
      ranges.clear();
      return;  // the file system cannot say: everything is data
    }
    off_t end = lseek(fd, begin, SEEK_HOLE);
    if (end < 0 || end <= begin) end = size;
    ranges.emplace_back(static_cast<uint64_t>(begin),
                        static_cast<uint64_t>(end));
    at = end;
  }
  close(fd);
  known = true;
}

namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

// The first range that ends past `off` (the one holding it, or the next).
Ranges::const_iterator RangeAfter(const Ranges& ranges, uint64_t off) {
  return std::upper_bound(
      ranges.begin(), ranges.end(), off,
      [](uint64_t o, const std::pair<uint64_t, uint64_t>& r) {
        return o < r.second;
      });
}

}  // namespace

uint64_t DataMap::NextData(uint64_t off, uint64_t end) const {
  if (!known) return off;
  auto it = RangeAfter(ranges, off);
  if (it == ranges.end()) return end;
  return std::min(end, std::max(off, it->first));
}

uint64_t DataMap::DataEnd(uint64_t off, uint64_t end) const {
  if (!known) return end;
  auto it = RangeAfter(ranges, off);
  return it == ranges.end() ? end : std::min(end, it->second);
}

bool FixedView::RawNodeUsed(uint64_t slot) const {
  // (f returns true to stop: a non-zero byte answers.)
  return ForEachDataByte(slot,
                         [](uint64_t, unsigned char b) { return b != 0; });
}

std::string FixedView::NodeBytes(uint64_t slot) const {
  std::string s(lay.node_size(), '\0');
  ForEachDataByte(slot, [&s](uint64_t i, unsigned char b) {
    s[i] = static_cast<char>(b);
    return false;
  });
  return s;
}

Json TableInfo(const FixedView& v, const char* used_word) {
  const sd::FixedLayout& lay = v.lay;
  bool table = lay.kind() == ContainerKind::kHashTable;
  Json rows = Json::array();
  Json depth = Json::object();
  uint64_t all = 0, main_used = 0, slots = 0;
  for (size_t r = 0; r < lay.row_count(); ++r) {
    sd::RowSpan span = lay.row(r);
    uint64_t n = 0;
    for (uint64_t s = 0; s < span.slots; ++s) n += v.Used(span.first + s);
    all += n;
    slots += span.slots;
    Json row = Json::object();
    row["row"] = static_cast<uint64_t>(r);
    row["slots"] = span.slots;
    row[used_word] = n;
    rows.push_back(std::move(row));
    // Probe depth of a hit: 1 for the main rows (both lines fetched
    // together), 2 + r for overflow row r.
    if (!table) continue;
    if (r < 2) {
      main_used += n;
      if (r == 1) depth["1"] = main_used;
    } else {
      depth[std::to_string(r)] = n;
    }
  }
  Json out = Json::object();
  out["node_size"] = lay.node_size();
  out["slots"] = slots;
  out[used_word] = all;
  out["fill_pct"] = slots == 0 ? 0.0 : 100.0 * all / slots;
  if (table) {
    const sd::HashTableHeader* th = sd::TableHeaderAt(v.base);
    out["bucket_slots"] = lay.geometry().slots;
    out["expected_capacity"] = sd::ExpectedCapacity(slots);
    out["overflow_depth"] = th->overflow_depth.load(std::memory_order_relaxed);
    out["overflow_allocs"] = th->overflow_allocs.load(std::memory_order_relaxed);
  }
  out["rows"] = std::move(rows);
  if (table) out["probe_depth"] = std::move(depth);
  return out;
}

namespace {

// Where a key may sit in a node the tool knows only by its size, and how
// it is hashed (shmc/hash.h): an integer (hash id 1: Mix64 of its value,
// zero- or sign-extended) or plain bytes (hash id 2).
struct KeyPlace {
  uint64_t offset = 0, width = 0;
  bool sign = false;
  bool bytes = false;
};

uint64_t KeyHash(const FixedView& v, uint64_t slot, const KeyPlace& k) {
  unsigned char b[4096];
  const volatile unsigned char* p = v.node(slot) + k.offset;
  for (uint64_t i = 0; i < k.width; ++i) b[i] = p[i];
  if (k.bytes) return shmc::HashBytes(b, k.width);
  uint64_t x = 0;
  std::memcpy(&x, b, k.width);  // little-endian
  if (k.sign && k.width < 8 && (x >> (8 * k.width - 1)) != 0) {
    x |= ~uint64_t{0} << (8 * k.width);
  }
  return shmc::Mix64(x);
}

std::vector<KeyPlace> KeyPlaces(const FixedView& v) {
  std::vector<KeyPlace> out;
  // A map's key is at the start, before its handle word.
  uint64_t room = v.map_index ? v.map_key_bytes() : v.lay.node_size();
  uint64_t last = v.map_index ? 0 : room;
  if (v.lay.hash_id() == shmc::kHashIdInteger) {
    for (uint64_t w : {8, 4, 2, 1}) {
      for (uint64_t o = 0; o + w <= room && o <= last; o += w) {
        out.push_back({o, w, false, false});
        if (w < 8) out.push_back({o, w, true, false});
      }
    }
  } else if (v.lay.hash_id() == shmc::kHashIdBytes) {
    for (uint64_t w = 1; w <= room && w <= 256; ++w) {
      out.push_back({0, w, false, true});
    }
  }
  return out;
}

// The tool does not know the program's Node: it tries each place a key
// may sit and takes one only if nearly every sampled tag agrees with it (a
// wrong guess agrees about once in 255). Null when none does, or when
// there are too few keys to tell.
const KeyPlace* GuessKeyPlace(const FixedView& v,
                              const std::vector<KeyPlace>& places,
                              size_t* agree_out, size_t* sampled) {
  std::vector<uint64_t> in_use;
  for (uint64_t i = 0; i < v.lay.slots(); ++i) {
    if (v.Used(i)) in_use.push_back(i);
  }
  std::vector<uint64_t> sample;
  size_t step = std::max<size_t>(1, in_use.size() / 512);
  for (size_t i = 0; i < in_use.size() && sample.size() < 512; i += step) {
    sample.push_back(in_use[i]);
  }
  *sampled = sample.size();
  if (sample.size() < 8) return nullptr;
  auto agreeing = [&](const KeyPlace& k, size_t n) {
    size_t agree = 0;
    for (size_t j = 0; j < n && j < sample.size(); ++j) {
      uint64_t i = sample[j];
      agree += sd::TableTagAt(v.base, v.lay, i) ==
               sd::TagOf(KeyHash(v, i, k));
    }
    return agree;
  };
  // Chosen on a few nodes, then confirmed on the whole sample.
  const KeyPlace* best = nullptr;
  size_t best_agree = 0;
  for (const KeyPlace& k : places) {
    size_t agree = agreeing(k, 64);
    if (agree > best_agree) {
      best_agree = agree;
      best = &k;
    }
  }
  if (best == nullptr) return nullptr;
  best_agree = agreeing(*best, sample.size());
  if (best_agree * 10 < sample.size() * 9) return nullptr;
  *agree_out = best_agree;
  return best;
}

}  // namespace

void CheckTable(const FixedView& v, bool fix, Json* problems, Json* fixed) {
  if (v.lay.kind() != ContainerKind::kHashTable) return;
  std::vector<KeyPlace> places = KeyPlaces(v);
  size_t agree = 0, sampled = 0;
  const KeyPlace* key = GuessKeyPlace(v, places, &agree, &sampled);
  sd::TableHealth hs;
  sd::CheckTable(
      v.base, v.lay, [&v](uint64_t i) { return v.Used(i); },
      [&](uint64_t i, uint64_t* h) {
        if (key == nullptr) return false;
        *h = KeyHash(v, i, *key);
        return true;
      },
      fix, &hs);
  auto say = [](Json* list, uint64_t n, const std::string& what) {
    if (n > 0) list->push_back(std::to_string(n) + " " + what);
  };
  say(problems, hs.untagged,
      "nodes in use have no tag: lookups cannot reach them");
  if (key != nullptr) {
    say(problems, hs.mistagged,
        "nodes in use carry a tag that is not their key's: lookups cannot "
        "reach them (key taken as bytes " + std::to_string(key->offset) +
            ".." + std::to_string(key->offset + key->width) +
            " of each node, which " + std::to_string(agree) + " of " +
            std::to_string(sampled) + " sampled tags agree with)");
  }
  say(fixed, hs.retagged, "tags rewritten from their keys");
  if (hs.depth_out_of_range()) {
    problems->push_back("overflow_depth " + std::to_string(hs.overflow_depth) +
                   " exceeds the " + std::to_string(hs.over_rows) +
                   " overflow rows");
  }
  if (hs.depth_hides_nodes()) {
    problems->push_back("overflow row " + std::to_string(hs.deepest_used - 1) +
                   " holds nodes beyond overflow_depth " +
                   std::to_string(hs.overflow_depth) +
                   ": lookups cannot reach them");
  }
  if (hs.depth_fixed) {
    fixed->push_back("overflow_depth set to " + std::to_string(hs.deepest_used));
  }
}

}  // namespace shmc_tool
