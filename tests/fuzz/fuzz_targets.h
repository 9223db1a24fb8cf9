// The containers segment_fuzz_test damages: how each is built pristine, and
// what its reader and writer do with a damaged copy. One Target per kind,
// named as `shmc` names the kind.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shmc/percentile.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_double_table.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sorted_array.h"
#include "shmc/shm_sync_buf.h"

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

// --- one container under test ----------------------------------------------
struct Target {
  std::string kind;
  std::string base;                  // the name the container is given
  std::vector<std::string> keys;     // its segments (POSIX names)
  std::function<void()> build;       // makes the pristine segments
  std::function<bool()> read;        // every read call; false: refused
  std::function<bool()> write;       // attach as writer, recover, write
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
      m.Prefetch(keys, 32);
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
    // A map over an extent table: values of many sizes, some freed, so
    // that damage meets live extents, free lists and the top.
    Target t;
    t.kind = "extent_map";
    t.base = key("em");
    t.keys = {t.base + "0", t.base + "1"};
    std::string k = t.base;
    using EM = shmc::ShmHashMap<uint64_t, POSIX, shmc::ShmExtentTable<POSIX>>;
    t.build = [k] {
      EM m;
      if (!m.InitForWrite(k, 300, 32, 600)) std::abort();
      for (uint64_t i = 1; i <= 150; ++i) {
        if (!m.Insert(i, std::string(i % 100, static_cast<char>('a' + i % 26)))) {
          std::abort();
        }
      }
      for (uint64_t i = 5; i <= 150; i += 9) m.Erase(i);
    };
    t.read = [k] () -> bool {
      EM m;
      if (!m.InitForRead(k)) return false;
      std::string v;
      for (uint64_t i = 1; i <= 160; ++i) m.Find(i, &v);
      uint64_t keys[32];
      for (uint64_t i = 0; i < 32; ++i) keys[i] = i * 3 + 1;
      std::vector<char> bufs(32 * 128);
      std::vector<size_t> lens(32);
      m.FindMany(keys, 32, bufs.data(), 128, lens.data());
      m.Prefetch(keys, 32);
      m.Travel([](const uint64_t&, const std::string&) {});
      EM::HealthStat hs;
      m.HealthCheck(&hs, false);
      return true;
    };
    t.write = [k] () -> bool {
      EM m;
      if (!m.InitForWrite(k, 300, 32, 600)) return false;
      for (uint64_t i = 151; i <= 160; ++i) m.Insert(i, std::string(200, 'n'));
      for (uint64_t i = 140; i <= 150; ++i) m.Replace(i, std::string(60, 'r'));
      for (uint64_t i = 1; i <= 10; ++i) m.Erase(i);
      for (uint64_t i = 20; i <= 40; ++i) m.Replace(i, std::string(i, 's'));
      EM::HealthStat hs;
      m.HealthCheck(&hs, true);
      std::string v;
      for (uint64_t i = 1; i <= 160; ++i) m.Find(i, &v);
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
    Target t = One("double_table", key("dt"));
    std::string k = t.base;
    using DT = shmc::ShmDoubleTable<uint64_t, Node16, POSIX>;
    // Two versions: half 0 holds keys 1..150, half 1 (current) 1..300.
    t.build = [k] {
      DT d;
      if (!d.InitForWrite(k, 400, 4)) std::abort();
      DT::Table* b = d.BeginBuild(DT::kEmpty);
      if (b == nullptr || !FillTable(b, 1, 150) || d.Commit() != 1) {
        std::abort();
      }
      b = d.BeginBuild();
      if (b == nullptr || !FillTable(b, 151, 300) || d.Commit() != 2) {
        std::abort();
      }
    };
    t.read = [k] () -> bool {
      DT d;
      if (!d.InitForRead(k)) return false;
      auto pin = d.Pin();
      uint64_t sum = 0;
      for (uint64_t i = 0; i <= 320 && pin.ok(); ++i) {
        const volatile Node16* n = pin.Find(i);
        sum += n != nullptr ? n->val : 0;
      }
      pin.Release();
      Node16 copy;
      d.Get(7, &copy);
      d.Verify();
      volatile uint64_t keep = sum + d.version() + d.readers() + d.pins();
      (void)keep;
      return true;
    };
    t.write = [k] () -> bool {
      DT d;
      if (!d.InitForWrite(k, 400, 4)) return false;
      d.set_publish_wait_ms(50);
      DT::Table* b = d.BeginBuild();
      if (b == nullptr) b = d.BeginBuild(DT::kEmpty);
      if (b != nullptr) {
        FillTable(b, 301, 320);
        d.Commit();
      }
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

}  // namespace
