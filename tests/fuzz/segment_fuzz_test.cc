// Damaged-segment fuzzer: every container's segment is built, copied, then
// damaged in the ways a stray write, a crash of the file system or a hostile
// local user would (bit flips in the header and anywhere, truncation, zeroed
// ranges, boundary values in words and in the container's own fields, forged
// parameters with a recomputed header checksum). Each damaged copy is then
// attached as a reader (every read call), as a writer (attach, recovery,
// writes) and run through the `shmc` tool's info, check, dump and check
// --fix (the tool's own code, in process).
//
// The bar is that nothing crashes, hangs or trips a sanitizer: any answer
// is fine as long as it is an answer. Each container runs in a forked child
// with a per-input alarm, so a crash or a hang is reported with the input
// that caused it (seed, index and the damage done) and can be replayed:
//
//   SHMC_FUZZ_SEED=S SHMC_FUZZ_ONLY=kind:index segment_fuzz_test
//
// SHMC_FUZZ_INPUTS overrides the number of inputs per container (the
// default-suite binary runs a few hundred; the `stress` one 2,000).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "shmc/detail/segment.h"
#include "shmc/percentile.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sorted_array.h"
#include "shmc/shm_sync_buf.h"
#include "tests/support/test_util.h"
#include "tools/shmc/inspect.h"

#ifndef SHMC_FUZZ_DEFAULT_INPUTS
#define SHMC_FUZZ_DEFAULT_INPUTS 250
#endif
// The long run's tests carry another name, so that both binaries' tests
// can live side by side in one CTest directory.
#ifndef SHMC_FUZZ_SUITE
#define SHMC_FUZZ_SUITE Containers
#endif

namespace {

namespace sd = shmc::detail;
using shmc::POSIX;

struct Rec {
  uint64_t id;
  uint64_t value;
};

struct Node16 {
  uint64_t key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

uint64_t EnvU64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 0) : dflt;
}

// --- what the child shares with the parent: where it is, for a report ----
struct Progress {
  uint64_t index;     // input being run
  uint64_t done;      // inputs finished
  uint64_t read_ok;   // inputs a reader attached
  uint64_t write_ok;  // inputs a writer attached
  uint64_t tool_ok;   // inputs `shmc check` found clean
  char damage[200];   // what was done to it
  char stage[32];     // reader, writer, tool ...
};

Progress* g_progress = nullptr;

void Stage(const char* s) {
  std::snprintf(g_progress->stage, sizeof(g_progress->stage), "%s", s);
}

// --- one container under test ----------------------------------------------
struct Target {
  std::string kind;
  std::string base;                  // the name the container is given
  std::vector<std::string> keys;     // its segments (POSIX names)
  std::function<void()> build;       // makes the pristine segments
  std::function<bool()> read;        // every read call; false: refused
  std::function<bool()> write;       // attach as writer, recover, write
};

// The bytes of a POSIX segment, or of one that is to be written back.
bool LoadBytes(const std::string& key, std::vector<char>* out) {
  int fd = shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  struct stat st;
  fstat(fd, &st);
  out->resize(static_cast<size_t>(st.st_size));
  ssize_t n = pread(fd, out->data(), out->size(), 0);
  close(fd);
  return n == static_cast<ssize_t>(out->size());
}

bool StoreBytes(const std::string& key, const std::vector<char>& bytes) {
  int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  return done == bytes.size();
}

// --- damage -----------------------------------------------------------------
class Damager {
 public:
  explicit Damager(uint64_t seed) : rng_(seed) {}

  // Damages `b` (a whole segment) and says how.
  std::string Apply(std::vector<char>* b) {
    size_t size = b->size();
    char what[160];
    switch (rng_() % 7) {
      case 0: {  // bits of the common header
        int n = 1 + static_cast<int>(rng_() % 8);
        for (int i = 0; i < n; ++i) Flip(b, rng_() % std::min<size_t>(512, size));
        std::snprintf(what, sizeof(what), "%d header bit flips", n);
        break;
      }
      case 1: {  // bits anywhere
        int n = 1 + static_cast<int>(rng_() % 32);
        for (int i = 0; i < n; ++i) Flip(b, rng_() % size);
        std::snprintf(what, sizeof(what), "%d bit flips anywhere", n);
        break;
      }
      case 2: {  // truncation (never to 0: that is an empty file, tested
                 // on its own, and every attach waits for it)
        const size_t cuts[] = {1, 7, 8, 100, 511, 512, 513, 1024, size / 2,
                               size - 1, size - 64};
        size_t to = rng_() % 2 ? 1 + rng_() % (size - 1)
                               : cuts[rng_() % (sizeof(cuts) / sizeof(*cuts))];
        if (to == 0 || to >= size) to = size - 1;
        b->resize(to);
        std::snprintf(what, sizeof(what), "truncated %zu -> %zu", size, to);
        break;
      }
      case 3: {  // a zeroed range
        size_t at = rng_() % size;
        size_t len = std::min<size_t>(size - at, 1 + rng_() % 4096);
        std::memset(b->data() + at, 0, len);
        std::snprintf(what, sizeof(what), "zeroed [%zu, %zu)", at, at + len);
        break;
      }
      case 4:    // boundary values in words anywhere
      case 5: {  // ... or in the container's own header fields
        bool own = rng_() % 4 != 0;
        size_t own_end = 1024;  // where the container's header ends
        if (size >= sizeof(sd::SegmentHeader)) {
          uint32_t hs =
              reinterpret_cast<const sd::SegmentHeader*>(b->data())->header_size;
          if (hs > 512 + 8 && hs <= size) own_end = hs;
        }
        int n = 1 + static_cast<int>(rng_() % 4);
        std::string where;
        for (int i = 0; i < n; ++i) {
          size_t lo = 0, hi = size;
          if (own && size > own_end) {
            lo = 512;
            hi = own_end;
          }
          size_t at = (lo + rng_() % (hi - lo)) & ~size_t{3};
          uint64_t v = Boundary(size);
          PutWord(b, at, v, rng_() % 2 ? 8 : 4);
          where += " @" + std::to_string(at);
        }
        std::snprintf(what, sizeof(what), "%d boundary words%s", n,
                      where.substr(0, 100).c_str());
        break;
      }
      default: {  // forged header fields, checksum recomputed
        if (size < sizeof(sd::SegmentHeader)) {
          Flip(b, rng_() % size);
          std::snprintf(what, sizeof(what), "bit flip (short segment)");
          break;
        }
        auto* h = reinterpret_cast<sd::SegmentHeader*>(b->data());
        uint64_t v = Boundary(size);
        uint32_t pc = std::min<uint32_t>(h->param_count, sd::kMaxParams);
        int field = static_cast<int>(rng_() % 6);
        if (field < 3 && pc > 0) {
          uint32_t i = static_cast<uint32_t>(rng_() % pc);
          uint64_t old = h->params[i].value;
          // Near the real value, or a boundary.
          h->params[i].value = rng_() % 2 ? old + (rng_() % 5) - 2 : v;
          std::snprintf(what, sizeof(what), "forged param %s %" PRIu64
                        " -> %" PRIu64, h->params[i].name, old,
                        h->params[i].value);
        } else if (field == 3) {
          h->total_size = rng_() % 2 ? v : h->total_size + (rng_() % 9) - 4;
          std::snprintf(what, sizeof(what), "forged total_size %" PRIu64,
                        h->total_size);
        } else if (field == 4) {
          h->header_size = static_cast<uint32_t>(v);
          std::snprintf(what, sizeof(what), "forged header_size %u",
                        h->header_size);
        } else {
          h->param_count = static_cast<uint32_t>(v);
          std::snprintf(what, sizeof(what), "forged param_count %u",
                        h->param_count);
        }
        h->header_checksum = sd::HeaderChecksum(h);
        break;
      }
    }
    return what;
  }

 private:
  void Flip(std::vector<char>* b, size_t at) {
    (*b)[at] = static_cast<char>((*b)[at] ^ (1 << (rng_() % 8)));
  }
  void PutWord(std::vector<char>* b, size_t at, uint64_t v, size_t width) {
    if (at + width > b->size()) return;
    std::memcpy(b->data() + at, &v, width);  // little-endian: low bytes
  }
  uint64_t Boundary(size_t size) {
    const uint64_t vals[] = {0,
                             1,
                             2,
                             7,
                             8,
                             63,
                             64,
                             0x7f,
                             0xff,
                             0xffff,
                             0x7fffffff,
                             0x80000000,
                             0xfffffff0,
                             0xfffffffe,
                             0xffffffff,
                             0x100000000ULL,
                             0x7fffffffffffffffULL,
                             0x8000000000000000ULL,
                             ~0ULL,
                             ~0ULL - 1,
                             size,
                             size - 1,
                             size + 1,
                             size / 2,
                             size * 2};
    return vals[rng_() % (sizeof(vals) / sizeof(*vals))];
  }
  std::mt19937_64 rng_;
};

// --- the targets ------------------------------------------------------------
// A target of one segment, named `base`.
Target One(const char* kind, const std::string& base) {
  Target t;
  t.kind = kind;
  t.base = base;
  t.keys = {base};
  return t;
}

// Gives keys lo..hi nodes in a hash table (key and value i), as far as
// it has room; false if some key found none.
template <class HT>
bool FillTable(HT* h, uint64_t lo, uint64_t hi) {
  bool all = true;
  for (uint64_t i = lo; i <= hi; ++i) {
    bool found = false;
    volatile Node16* n = h->FindOrAlloc(i, &found);
    if (n == nullptr) {
      all = false;
      continue;
    }
    n->key = i;
    n->val = i;
  }
  return all;
}

// A ring (ShmQueue or ShmSyncBuf) of 8 KiB at `key`, attached as its
// writer, with `n` records pushed, of length len(i) filled with `c`; false
// if it cannot be attached.
template <class Ring, class Len>
bool PushRecords(Ring* r, const std::string& key, int n, const Len& len,
                 char c) {
  if (!r->InitForWrite(key, 8192)) return false;
  for (int i = 0; i < n; ++i) r->Push(std::string(len(i), c));
  return true;
}

std::vector<Target> Targets(const std::string& prefix) {
  std::vector<Target> ts;
  auto key = [&](const char* k) { return prefix + k; };

  {
    Target t = One("array", key("arr"));
    std::string k = t.base;
    t.build = [k] {
      shmc::ShmArray<Rec, POSIX> a;
      if (!a.InitForWrite(k, 500)) std::abort();
      for (int i = 0; i < 500; ++i) a[i].value = static_cast<uint64_t>(i);
    };
    t.read = [k] () -> bool {
      shmc::ShmArray<Rec, POSIX> a;
      if (!a.InitForRead(k)) return false;
      uint64_t sum = 0;
      for (size_t i = 0; i < a.size(); ++i) sum += a[static_cast<int>(i)].value;
      (void)sum;
      return true;
    };
    t.write = [k] () -> bool {
      shmc::ShmArray<Rec, POSIX> a;
      if (!a.InitForWrite(k, 500)) return false;
      for (size_t i = 0; i < a.size(); i += 7) a[static_cast<int>(i)].id = i;
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t = One("hash_table", key("ht"));
    std::string k = t.base;
    using HT = shmc::ShmHashTable<uint64_t, Node16, POSIX>;
    t.build = [k] {
      HT h;
      if (!h.InitForWrite(k, 500) || !FillTable(&h, 1, 300)) std::abort();
    };
    t.read = [k] () -> bool {
      HT h;
      if (!h.InitForRead(k)) return false;
      uint64_t keys[64];
      const volatile Node16* out[64];
      for (uint64_t i = 0; i < 64; ++i) keys[i] = i * 5 + 1;
      h.FindMany(keys, 64, out);
      for (uint64_t i = 1; i <= 320; ++i) (void)h.Find(i);
      h.Travel([](volatile Node16* n) { (void)n->val; });
      return true;
    };
    t.write = [k] () -> bool {
      HT h;
      if (!h.InitForWrite(k, 500)) return false;
      FillTable(&h, 250, 350);
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t = One("hash_table_m", key("htm"));
    std::string k = t.base;
    using HT = shmc::ShmHashTableM<uint64_t, Node16, POSIX>;
    t.build = [k] {
      HT h;
      if (!h.InitForWrite(k, 64, 10)) std::abort();
      FillTable(&h, 1, 300);
    };
    t.read = [k] () -> bool {
      HT h;
      if (!h.InitForRead(k)) return false;
      for (uint64_t i = 1; i <= 320; ++i) (void)h.Find(i);
      h.Travel([](volatile Node16* n) { (void)n->val; });
      return true;
    };
    t.write = [k] () -> bool {
      HT h;
      if (!h.InitForWrite(k, 64, 10)) return false;
      FillTable(&h, 290, 330);
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t = One("link_table", key("lt"));
    std::string k = t.base;
    using LT = shmc::ShmLinkTable<POSIX>;
    t.build = [k] {
      LT l;
      if (!l.InitForWrite(k, 32, 400)) std::abort();
      for (int i = 0; i < 60; ++i) {
        std::string v(static_cast<size_t>(i * 7 % 150), static_cast<char>('a' + i % 26));
        if (!l.New(v.data(), v.size())) std::abort();
      }
    };
    t.read = [k] () -> bool {
      LT l;
      if (!l.InitForRead(k)) return false;
      l.Travel([&](shmc::link_buf_t lb) {
        std::string v;
        l.Read(lb, &v);
      });
      LT::HealthStat hs;
      l.HealthCheck(&hs, false);
      return true;
    };
    t.write = [k] () -> bool {
      LT l;
      if (!l.InitForWrite(k, 32, 400)) return false;
      // New first: it follows the free list as the segment has it.
      std::string v(200, 'z');
      for (int i = 0; i < 5; ++i) l.New(v.data(), v.size());
      std::vector<shmc::link_buf_t> seen;
      l.Travel([&](shmc::link_buf_t lb) { seen.push_back(lb); });
      for (size_t i = 0; i < seen.size() && i < 5; ++i) l.Free(seen[i]);
      LT::HealthStat hs;
      l.HealthCheck(&hs, true);
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t;
    t.kind = "hash_map";
    t.base = key("hm");
    t.keys = {t.base + "0", t.base + "1"};
    std::string k = t.base;
    using HM = shmc::ShmHashMap<uint64_t, POSIX>;
    t.build = [k] {
      HM m;
      if (!m.InitForWrite(k, 300, 32, 600)) std::abort();
      for (uint64_t i = 1; i <= 150; ++i) {
        if (!m.Insert(i, std::string(i % 100, static_cast<char>('a' + i % 26)))) {
          std::abort();
        }
      }
    };
    t.read = [k] () -> bool {
      HM m;
      if (!m.InitForRead(k)) return false;
      std::string v;
      for (uint64_t i = 1; i <= 160; ++i) m.Find(i, &v);
      uint64_t keys[32];
      for (uint64_t i = 0; i < 32; ++i) keys[i] = i * 3 + 1;
      std::vector<char> bufs(32 * 128);
      std::vector<size_t> lens(32);
      m.FindMany(keys, 32, bufs.data(), 128, lens.data());
      m.Travel([](const uint64_t&, const std::string&) {});
      HM::HealthStat hs;
      m.HealthCheck(&hs, false);
      return true;
    };
    t.write = [k] () -> bool {
      HM m;
      if (!m.InitForWrite(k, 300, 32, 600)) return false;
      for (uint64_t i = 151; i <= 160; ++i) m.Insert(i, std::string(200, 'n'));
      for (uint64_t i = 140; i <= 150; ++i) m.Replace(i, std::string(60, 'r'));
      for (uint64_t i = 1; i <= 10; ++i) m.Erase(i);
      HM::HealthStat hs;
      m.HealthCheck(&hs, true);
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t = One("queue", key("q"));
    std::string k = t.base;
    t.build = [k] {
      shmc::ShmQueue<POSIX> q;
      auto len = [](int i) { return static_cast<size_t>(i % 60); };
      if (!PushRecords(&q, k, 80, len, 'q')) std::abort();
    };
    t.read = [k] () -> bool {
      {
        shmc::ShmQueue<POSIX> q;
        if (q.InitForInspect(k)) q.Peek(0, [](const std::string&) {});
      }
      shmc::ShmQueue<POSIX> q;
      if (!q.InitForRead(k)) return false;
      std::string s;
      for (int i = 0; i < 200 && q.Pop(&s); ++i) {
      }
      return true;
    };
    t.write = [k] () -> bool {
      shmc::ShmQueue<POSIX> q;
      if (!PushRecords(&q, k, 40, [](int) { return 50; }, 'w')) return false;
      std::string s;
      q.Pop(&s);
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t = One("sync_buf", key("sb"));
    std::string k = t.base;
    t.build = [k] {
      shmc::ShmSyncBuf<POSIX> s;
      auto len = [](int i) { return static_cast<size_t>(i % 70); };
      if (!PushRecords(&s, k, 300, len, 's')) std::abort();
    };
    t.read = [k] () -> bool {
      shmc::ShmSyncBuf<POSIX> s;
      if (!s.InitForRead(k)) return false;
      shmc::SyncIter it = s.Head();
      shmc::SyncMeta m{};
      std::string d;
      for (int i = 0; i < 500; ++i) {
        if (s.Read(it, &m, &d) <= 0) break;
        if (!s.Next(&it)) break;
      }
      shmc::SyncIter f;
      for (uint64_t seq = 0; seq < 320; seq += 13) s.FindBySeq(seq, &f);
      timeval tv{0, 0};
      s.FindByTime(tv, &f);
      (void)s.IsOverrun(it);
      (void)s.Tail();
      return true;
    };
    t.write = [k] () -> bool {
      shmc::ShmSyncBuf<POSIX> s;
      return PushRecords(&s, k, 60, [](int) { return 40; }, 'x');
    };
    ts.push_back(t);
  }
  {
    Target t = One("double_buf", key("db"));
    std::string k = t.base;
    t.build = [k] {
      shmc::ShmDoubleBuf<POSIX> d;
      if (!d.InitForWrite(k, 4096, 4)) std::abort();
      d.Publish(std::string(1000, 'a'));
      d.Publish(std::string(3000, 'b'));
    };
    t.read = [k] () -> bool {
      shmc::ShmDoubleBuf<POSIX> d;
      if (!d.InitForRead(k)) return false;
      std::string s;
      d.Read(&s);
      auto g = d.ReadInPlace();
      if (g.ok() && g.size() > 0) {
        volatile char c = static_cast<const char*>(g.data())[g.size() - 1];
        (void)c;
      }
      return true;
    };
    t.write = [k] () -> bool {
      shmc::ShmDoubleBuf<POSIX> d;
      if (!d.InitForWrite(k, 4096, 4)) return false;
      d.Publish(std::string(2000, 'c'));
      return true;
    };
    ts.push_back(t);
  }
  {
    Target t;
    t.kind = "sorted_array";
    t.base = key("sa");
    using SA = shmc::ShmSortedArray<uint64_t, uint64_t, POSIX>;
    // Two builds: the published version is in slot 1.
    t.keys = {t.base, t.base + "1"};
    std::string k = t.base;
    auto recs = [] {
      std::vector<std::pair<uint64_t, uint64_t>> r;
      for (uint64_t i = 0; i < 400; ++i) r.push_back({i * 3, i});
      return r;
    };
    t.build = [k, recs] {
      SA a;
      if (!a.Build(k, recs())) std::abort();
      if (!a.Build(k, recs(), shmc::SortedLayout::kEytzinger)) std::abort();
    };
    t.read = [k] () -> bool {
      SA a;
      if (!a.InitForRead(k)) return false;
      for (uint64_t x = 0; x < 1300; x += 11) {
        (void)a.Find(x);
        auto r = a.EqualRange(x);
        (void)r;
      }
      auto r = a.Between(10, 200);
      uint64_t sum = 0;
      for (auto it = r.begin(); it != r.end(); ++it) sum += it.value();
      for (auto e : a) sum += e.value;
      (void)sum;
      a.Verify();
      a.Refresh();
      return true;
    };
    t.write = [k, recs] () -> bool {
      SA a;
      return a.Build(k, recs());
    };
    ts.push_back(t);
  }
  {
    Target t = One("percentile", key("pc"));
    std::string k = t.base;
    t.build = [k] {
      shmc::ShmPercentile<POSIX> p;
      if (!p.InitForWrite(k, 0.99, 4)) std::abort();
      for (int i = 0; i < 5000; ++i) p.Add(i % 977);
    };
    t.read = [k] () -> bool {
      shmc::ShmPercentile<POSIX> p;
      if (!p.InitForRead(k)) return false;
      (void)p.Merged();
      return true;
    };
    t.write = [k] () -> bool {
      shmc::ShmPercentile<POSIX> p;
      if (!p.InitForWrite(k, 0.99, 4)) return false;
      for (int i = 0; i < 100; ++i) p.Add(i);
      return true;
    };
    ts.push_back(t);
  }
  return ts;
}

// The tool's commands, as `shmc info|check|dump|check --fix` run them.
bool RunTool(const Target& t) {
  shmc_test::ScopedCreateFlags never_create(0);  // as the tool sets it
  shmc_tool::SegName name{shmc_tool::Backend::kPosix, t.base};
  shmc_tool::Container c;
  std::string err;
  Stage("tool resolve");
  if (shmc_tool::Resolve(name, &c, &err) != shmc_tool::kExitOk) return false;
  shmc_tool::Json out;
  Stage("tool info");
  shmc_tool::Info(c, &out, &err);
  Stage("tool check");
  bool clean = shmc_tool::Check(c, false, &out, &err) == shmc_tool::kExitOk;
  Stage("tool dump");
  shmc_tool::DumpOptions opt;
  opt.limit = 2000;
  size_t lines = 0;
  shmc_tool::Dump(c, opt, [&](const shmc_tool::Json&) { ++lines; }, &err);
  return clean;
}

// `shmc check --fix`, on its own copy of the damage.
void RunToolFix(const Target& t) {
  shmc_test::ScopedCreateFlags never_create(0);
  shmc_tool::SegName name{shmc_tool::Backend::kPosix, t.base};
  shmc_tool::Container c;
  std::string err;
  Stage("tool resolve (fix)");
  if (shmc_tool::Resolve(name, &c, &err) != shmc_tool::kExitOk) return;
  shmc_tool::Json out;
  Stage("tool check --fix");
  shmc_tool::Check(c, true, &out, &err);
}

struct Outcome {
  bool ok = true;
  std::string report;
  uint64_t done = 0, read_ok = 0, write_ok = 0, tool_ok = 0;
};

// Runs `inputs` damaged copies of `t` in a child; reports the first crash
// or hang with its input.
Outcome Fuzz(const Target& t, uint64_t seed, uint64_t inputs,
             int64_t only_index) {
  Outcome o;
  // Pristine segments, made by a child that then exits: nothing in them
  // points at a live creator or writer, as after a restart.
  pid_t b = fork();
  if (b == 0) {
    t.build();
    _exit(0);
  }
  int status = 0;
  waitpid(b, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    o.ok = false;
    o.report = t.kind + ": building the pristine segments failed";
    return o;
  }
  std::vector<std::vector<char>> pristine(t.keys.size());
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (!LoadBytes(t.keys[i], &pristine[i])) {
      o.ok = false;
      o.report = t.kind + ": cannot read " + t.keys[i];
      return o;
    }
  }
  auto* progress = static_cast<Progress*>(
      mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(progress, 0, sizeof(*progress));
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    g_progress = progress;
    bool verbose = EnvU64("SHMC_FUZZ_VERBOSE", 0) != 0;
    shmc::SetLogHandler(shmc::kError, nullptr);  // damage is expected
    for (uint64_t i = 0; i < inputs; ++i) {
      if (only_index >= 0 && i != static_cast<uint64_t>(only_index)) continue;
      Damager d(seed * 1000003 + i);
      size_t which = (seed + i) % t.keys.size();
      std::vector<char> bytes = pristine[which];
      std::string what = d.Apply(&bytes);
      progress->index = i;
      std::snprintf(progress->damage, sizeof(progress->damage), "%s: %s",
                    t.keys[which].c_str(), what.c_str());
      // Each role gets the damaged copy as it was made: a writer's
      // recovery or a repair must not hide the damage from the next one.
      auto restore = [&] {
        for (size_t s = 0; s < t.keys.size(); ++s) {
          if (!StoreBytes(t.keys[s], s == which ? bytes : pristine[s])) {
            _exit(2);
          }
        }
      };
      restore();
      alarm(30);  // a hang ends the child with SIGALRM
      Stage("reader");
      bool read_ok = t.read();
      progress->read_ok += read_ok;
      Stage("tool");
      bool clean = RunTool(t);
      progress->tool_ok += clean;
      if (verbose) {
        std::printf("%s input %" PRIu64 ": %s; reader %s, check %s\n",
                    t.kind.c_str(), i, progress->damage,
                    read_ok ? "attached" : "refused",
                    clean ? "clean" : "found damage");
      }
      restore();
      Stage("writer");
      bool write_ok = t.write();
      progress->write_ok += write_ok;
      if (verbose) {
        std::printf("%s input %" PRIu64 ": writer %s\n", t.kind.c_str(), i,
                    write_ok ? "attached" : "refused");
      }
      Stage("reader after writer");
      t.read();
      restore();
      RunToolFix(t);
      alarm(0);
      ++progress->done;
    }
    _exit(0);
  }
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    o.ok = false;
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s: input %" PRIu64 " (seed %" PRIu64 ") %s in %s: %s "
                  "(replay: SHMC_FUZZ_SEED=%" PRIu64 " SHMC_FUZZ_ONLY=%s:%"
                  PRIu64 ")",
                  t.kind.c_str(), progress->index, seed,
                  WIFSIGNALED(status)
                      ? (WTERMSIG(status) == SIGALRM ? "hung" : "crashed")
                      : "failed",
                  progress->stage, progress->damage, seed, t.kind.c_str(),
                  progress->index);
    o.report = buf;
  }
  o.done = progress->done;
  o.read_ok = progress->read_ok;
  o.write_ok = progress->write_ok;
  o.tool_ok = progress->tool_ok;
  munmap(progress, sizeof(Progress));
  for (const std::string& k : t.keys) shm_unlink(k.c_str());
  if (t.kind == "sorted_array") shm_unlink((t.base + "0").c_str());
  return o;
}

class SegmentFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(SegmentFuzz, DamageIsAnErrorNeverACrash) {
  uint64_t seed = EnvU64("SHMC_FUZZ_SEED", 20261123);
  uint64_t inputs = EnvU64("SHMC_FUZZ_INPUTS", SHMC_FUZZ_DEFAULT_INPUTS);
  int64_t only = -1;
  if (const char* o = std::getenv("SHMC_FUZZ_ONLY")) {
    std::string s = o;
    size_t colon = s.find(':');
    if (s.substr(0, colon) != GetParam()) GTEST_SKIP() << "not selected";
    if (colon != std::string::npos) {
      only = std::strtoll(s.c_str() + colon + 1, nullptr, 10);
    }
  }
  std::string prefix = "/shmc_test_" + std::to_string(getpid()) + "_fuzz_";
  for (const Target& t : Targets(prefix)) {
    if (t.kind != GetParam()) continue;
    Outcome o = Fuzz(t, seed, inputs, only);
    EXPECT_TRUE(o.ok) << o.report;
    std::printf("%s: %" PRIu64 " damaged inputs; reader attached %" PRIu64
                ", writer attached %" PRIu64 ", shmc check clean %" PRIu64
                "\n", t.kind.c_str(), o.done, o.read_ok, o.write_ok,
                o.tool_ok);
    RecordProperty("inputs", static_cast<int>(o.done));
    if (only < 0) {
      EXPECT_EQ(o.done, inputs);
      // A fuzzer whose every input is refused at the door tests nothing
      // past the header: damage must also reach the container's data.
      EXPECT_GE(o.read_ok * 5, inputs) << "too few inputs got past attach";
      EXPECT_GE(o.write_ok * 5, inputs) << "too few inputs got past attach";
      // And the checker must find most of it.
      EXPECT_LT(o.tool_ok, inputs) << "check found no damage at all";
    }
    return;
  }
  FAIL() << "no target " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    SHMC_FUZZ_SUITE, SegmentFuzz,
    ::testing::Values("array", "hash_table", "hash_table_m", "link_table",
                      "hash_map", "queue", "sync_buf", "double_buf",
                      "sorted_array", "percentile"),
    [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
