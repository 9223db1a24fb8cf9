// The `shmc` commands' handlers for each kind of container, one table row
// per kind (FindKind): what info shows, what check checks and repairs,
// what dump prints. inspect.cc dispatches to them and does the parts every
// kind shares. Included by inspect.cc only.
#pragma once

#include <atomic>
#include <cstring>
#include <functional>
#include <string>

#include "shmc/detail/double_table_layout.h"
#include "shmc/detail/link_table_impl.h"
#include "shmc/detail/segment.h"
#include "shmc/percentile.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sync_buf.h"
#include "tools/shmc/fixed_view.h"
#include "tools/shmc/inspect.h"
#include "tools/shmc/json.h"
#include "tools/shmc/sorted_view.h"

namespace shmc_tool {
namespace kinds {

namespace sd = shmc::detail;
using sd::ContainerKind;

inline int Fail(const shmc::Error& e, std::string* err) {
  *err = e.message;
  return ExitFor(e.code);
}

inline std::string Data(const std::string& bytes, bool hex) {
  return hex ? Hex(bytes.data(), bytes.size()) : bytes;
}

// What `check` found in one container.
struct Findings {
  Json problems = Json::Array();
  Json fixed = Json::Array();
  Json stats = Json::Object();
};

// Where `dump` sends its records, and whether it wants more.
struct Sink {
  const DumpOptions& opt;
  const std::function<void(const Json&)>& emit;
  size_t emitted = 0;
  bool more() const { return opt.limit == 0 || emitted < opt.limit; }
  void out(Json j) {
    emit(j);
    ++emitted;
  }
};

// The handlers of every kind, for one backend. Each reads only through
// the container's own read path (or, for the fixed-node kinds, the
// library's layout description) after the header has been validated.
template <class Alloc>
struct Kinds {
  using Links = shmc::ShmLinkTable<Alloc>;

  static int OpenLinks(const SegName& n, Links* lt, std::string* err) {
    if (!lt->InitForRead(n.key)) return Fail(lt->last_error(), err);
    return kExitOk;
  }

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

  static Json LinkFacts(const Links& lt) {
    Json j = Json::Object();
    j.Set("node_num", lt.total_nodes());
    j.Set("node_data_bytes", lt.node_capacity());
    j.Set("free_nodes", lt.free_nodes());
    j.Set("used_nodes", lt.total_nodes() - lt.free_nodes());
    j.Set("values", lt.link_bufs());
    j.Set("value_bytes", lt.link_buf_bytes());
    return j;
  }

  static void LinkProblems(const typename Links::HealthStat& hs,
                           Findings* f) {
    auto add = [](Json* list, size_t n, const char* what) {
      if (n > 0) list->Push(std::to_string(n) + " " + what);
    };
    add(&f->problems, hs.leaked_nodes,
        "leaked nodes (neither free nor in a value)");
    add(&f->problems, hs.bad_linked_link_bufs, "values with a broken chain");
    add(&f->problems, hs.too_long_link_bufs,
        "values with more nodes than their length");
    add(&f->problems, hs.too_short_link_bufs,
        "values with fewer nodes than their length");
    add(&f->problems, hs.bad_free_list, "broken free list");
    add(&f->problems, hs.counter_mismatches, "header counters wrong");
    add(&f->fixed, hs.recycled_leaked_nodes,
        "leaked nodes returned to the pool");
    add(&f->fixed, hs.cleared_link_bufs, "broken values cleared");
    f->stats.Set("free_nodes", hs.total_free_nodes);
    f->stats.Set("values", hs.total_link_bufs);
    f->stats.Set("value_bytes", hs.total_link_buf_bytes);
  }

  // For --fix: the link table opened as its writer (the lease, and the
  // recovery of an interrupted write), a damaged intent record dropped.
  static int OpenLinksToRepair(const SegName& n, const HeaderPeek& peek,
                               const sd::LinkSlotResolver* resolve, Links* lt,
                               std::string* err) {
    if (!sd::LinkTableWriter<Alloc>::InitForWrite(
            *lt, n.key, peek.param(sd::kLinkParamDataWords) * 8,
            peek.param(sd::kLinkParamNodeNum), resolve, true)) {
      return Fail(lt->last_error(), err);
    }
    return kExitOk;
  }

  // --- hash_map: index NAME0 + values NAME1 ---------------------------
  static int MapInfo(const Container& c, Json* j, std::string* err) {
    MapView mv;
    int rc = mv.Open(c, err);
    if (rc != kExitOk) return rc;
    Json idx = TableInfo(mv.index, "keys");
    j->Set("keys", *idx.Get("keys"));
    j->Set("index", std::move(idx));
    j->Set("values", LinkFacts(mv.lt));
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
    typename shmc::ShmHashMap<uint64_t, Alloc>::HealthStat hs;
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
      if (n > 0) list->Push(std::to_string(n) + " " + what);
    };
    add(&f->problems, hs.bad_key_values, "keys pointing at no valid value");
    add(&f->problems, hs.leaked_values, "values no key points to (leaked)");
    add(&f->fixed, hs.cleared_key_values, "keys with bad values dropped");
    add(&f->fixed, hs.recycled_leaked_values, "leaked values freed");
    f->stats.Set("keys", hs.total_key_values);
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
        Json j = Json::Object();
        if (key_bytes == 8) {
          uint64_t k;
          std::memcpy(&k, key.data(), 8);
          j.Set("key", k);
        } else {
          j.Set("key", Data(key, sink->opt.hex));
        }
        if (ok) {
          j.Set("value", Data(val, sink->opt.hex));
        } else {
          j.Set("value", Json());
          j.Set("error", "value unreadable (damaged: run shmc check)");
        }
        sink->out(std::move(j));
        break;
      }
    }
    return kExitOk;
  }

  // --- array, hash_table, hash_table_m: nodes read as bytes ------------
  static int FixedInfo(const Container& c, Json* j, std::string* err) {
    sd::Segment<Alloc> seg;
    FixedView v;
    int rc = OpenFixed(c.segments[0], c.peeks[0], false, &seg, &v, err);
    if (rc != kExitOk) return rc;
    if (v.lay.kind() == ContainerKind::kArray) {
      Json a = Json::Object();
      a.Set("node_size", v.lay.node_size());
      a.Set("node_num", v.lay.slots());
      uint64_t nz = 0;
      for (uint64_t i = 0; i < v.lay.slots(); ++i) nz += v.RawNodeUsed(i);
      a.Set("nonzero_nodes", nz);
      j->Set("array", std::move(a));
    } else {
      // The tool cannot call a user's Node::Key(): "used" means a node
      // with any non-zero byte (erased nodes are cleared by convention).
      j->Set("table", TableInfo(v, "nonzero_nodes"));
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

  // An array's nodes by index, a table's nodes in use by row and slot.
  static void DumpNodes(const FixedView& v, Sink* sink) {
    bool table = v.lay.kind() != ContainerKind::kArray;
    for (size_t r = 0; r < v.lay.row_count() && sink->more(); ++r) {
      sd::RowSpan span = v.lay.row(r);
      for (uint64_t s = 0; s < span.slots && sink->more(); ++s) {
        uint64_t i = span.first + s;
        if (table && !v.RawNodeUsed(i)) continue;
        Json j = Json::Object();
        if (table) {
          j.Set("row", static_cast<uint64_t>(r));
          j.Set("slot", s);
        } else {
          j.Set("index", i);
        }
        j.Set("data", Data(CopyBytes(v.node(i), v.lay.node_size()),
                           sink->opt.hex));
        sink->out(std::move(j));
      }
    }
  }

  // --- link_table ----------------------------------------------------
  static int LinkInfo(const Container& c, Json* j, std::string* err) {
    Links lt;
    int rc = OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    j->Set("link_table", LinkFacts(lt));
    return kExitOk;
  }

  static int LinkCheck(const Container& c, bool fix, Findings* f,
                       std::string* err) {
    Links lt;
    int rc = fix ? OpenLinksToRepair(c.segments[0], c.peeks[0], nullptr,
                                     &lt, err)
                 : OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    typename Links::HealthStat hs;
    if (!lt.HealthCheck(&hs, fix)) {
      *err = c.segments[0].Display() + ": health check could not run";
      return kExitError;
    }
    LinkProblems(hs, f);
    return kExitOk;
  }

  static int LinkDump(const Container& c, Sink* sink, std::string* err) {
    Links lt;
    int rc = OpenLinks(c.segments[0], &lt, err);
    if (rc != kExitOk) return rc;
    std::string val;
    lt.Travel([&](shmc::link_buf_t lb) {
      if (!sink->more()) return;
      Json j = Json::Object();
      j.Set("head", lb.head());
      j.Set("tag", lb.tag());
      if (lt.Read(lb, &val)) {
        j.Set("value", Data(val, sink->opt.hex));
      } else {
        j.Set("value", Json());
        j.Set("error", "value unreadable (changed or damaged)");
      }
      sink->out(std::move(j));
    });
    return kExitOk;
  }

  // --- queue ---------------------------------------------------------
  using Queue = shmc::ShmQueue<Alloc>;

  static int QueueInfo(const Container& c, Json* j, std::string* err) {
    Queue q;
    if (!q.InitForInspect(c.segments[0].key)) {
      return Fail(q.last_error(), err);
    }
    Json qj = Json::Object();
    qj.Set("capacity", q.capacity());
    qj.Set("used_bytes", q.used_bytes());
    uint64_t pending = 0;
    q.Peek(0, [&](const std::string&) { ++pending; });
    qj.Set("pending_records", pending);
    qj.Set("pushed", q.pushed());
    qj.Set("popped", q.popped());
    qj.Set("high_water_bytes", q.high_water());
    qj.Set("full_spins", q.full_spins());
    j->Set("queue", std::move(qj));
    return kExitOk;
  }

  static int QueueCheck(const Container& c, bool, Findings* f,
                        std::string* err) {
    Queue q;
    if (!q.InitForInspect(c.segments[0].key)) {
      return Fail(q.last_error(), err);
    }
    uint64_t records = 0, bad = 0;
    auto r = q.Peek(0, [&](const std::string&) { ++records; }, &bad);
    if (r == Queue::kPeekCorrupted) {
      f->problems.Push("damaged record header at ring position " +
                       std::to_string(bad) +
                       " (the consumer will stop there)");
    }
    uint64_t bad_tail = 0;
    int64_t past = q.PublishedPastTail(&bad_tail);
    if (past < 0) {
      f->problems.Push("damaged ring at position " +
                       std::to_string(bad_tail) +
                       ": the word at the tail is not zero (the consumer "
                       "may read it as a record)");
    }
    f->stats.Set("pending_records", records);
    f->stats.Set("records_past_tail", past < 0 ? 0 : past);
    return kExitOk;
  }

  static int QueueDump(const Container& c, Sink* sink, std::string* err) {
    Queue q;
    if (!q.InitForInspect(c.segments[0].key)) {
      return Fail(q.last_error(), err);
    }
    uint64_t bad = 0, index = 0;
    auto r = q.Peek(sink->opt.limit, [&](const std::string& rec) {
      Json j = Json::Object();
      j.Set("index", index++);
      j.Set("len", static_cast<uint64_t>(rec.size()));
      j.Set("data", Data(rec, sink->opt.hex));
      sink->out(std::move(j));
    }, &bad);
    if (r == Queue::kPeekCorrupted) {
      *err = c.segments[0].Display() + ": damaged record at ring position " +
             std::to_string(bad) + "; records before it were dumped";
      return kExitProblems;
    }
    return kExitOk;
  }

  // --- sync_buf ------------------------------------------------------
  using SyncBuf = shmc::ShmSyncBuf<Alloc>;

  static Json When(const shmc::SyncMeta& m) {
    Json t = Json::Object();
    t.Set("seq", m.seq);
    t.Set("time", static_cast<double>(m.time.tv_sec) + m.time.tv_usec / 1e6);
    return t;
  }

  static int SyncInfo(const Container& c, Json* j, std::string* err) {
    SyncBuf sb;
    if (!sb.InitForRead(c.segments[0].key)) {
      return Fail(sb.last_error(), err);
    }
    Json s = Json::Object();
    s.Set("capacity", sb.sync_buf_size());
    s.Set("used_bytes", sb.used_size());
    s.Set("pushed", sb.pushed());
    s.Set("recycled", sb.recycled());
    shmc::SyncMeta first{}, last{};
    shmc::SyncIter it = sb.Head();
    bool have_first = sb.Read(it, &first) == 1;
    uint64_t records = 0;
    bool have_last = false;
    while (sb.Read(it, &last) == 1) {
      have_last = true;
      ++records;
      if (!sb.Next(&it)) break;
    }
    s.Set("records", records);
    s.Set("first", have_first ? When(first) : Json());
    s.Set("last", have_last ? When(last) : Json());
    j->Set("sync_buf", std::move(s));
    return kExitOk;
  }

  static int SyncCheck(const Container& c, bool, Findings* f,
                       std::string* err) {
    SyncBuf sb;
    if (!sb.InitForRead(c.segments[0].key)) {
      return Fail(sb.last_error(), err);
    }
    shmc::SyncIter it = sb.Head();
    uint64_t records = 0, expect_seq = 0;
    shmc::SyncMeta m{};
    for (;;) {
      int rc = sb.Read(it, &m);
      if (rc == 0) break;
      if (rc < 0) {
        if (sb.IsOverrun(it)) {  // the writer moved on: start again
          it = sb.Head();
          records = 0;
          expect_seq = 0;
          continue;
        }
        f->problems.Push("damaged record at ring position " +
                         std::to_string(it.pos));
        break;
      }
      if (expect_seq != 0 && m.seq != expect_seq) {
        f->problems.Push("sequence jumps from " +
                         std::to_string(expect_seq - 1) + " to " +
                         std::to_string(m.seq));
        break;
      }
      expect_seq = m.seq + 1;
      ++records;
      if (!sb.Next(&it)) break;
    }
    f->stats.Set("records", records);
    return kExitOk;
  }

  static int SyncDump(const Container& c, Sink* sink, std::string* err) {
    SyncBuf sb;
    if (!sb.InitForRead(c.segments[0].key)) {
      return Fail(sb.last_error(), err);
    }
    shmc::SyncIter it = sb.Head();
    shmc::SyncMeta m{};
    std::string data;
    while (sink->more()) {
      int rc = sb.Read(it, &m, &data);
      if (rc == 0) break;
      if (rc < 0) {
        if (sb.IsOverrun(it)) {
          // Recycled while dumping: go on from the oldest record left.
          shmc::SyncIter head = sb.Head();
          if (head.pos > it.pos) {
            it = head;
            continue;
          }
        }
        *err = c.segments[0].Display() +
               ": damaged record at ring position " + std::to_string(it.pos);
        return kExitProblems;
      }
      Json j = When(m);
      j.Set("len", static_cast<uint64_t>(data.size()));
      j.Set("data", Data(data, sink->opt.hex));
      sink->out(std::move(j));
      if (!sb.Next(&it)) break;
    }
    return kExitOk;
  }

  // --- double_buf ----------------------------------------------------
  // Attaching checks the header and the geometry (an inspecting handle
  // pins nothing, so it does not read the data itself).
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

  // --- double_table: two hash-table halves behind one state word -----
  // Each half is read as a table segment laid out from its first byte
  // (detail/double_table_layout.h): a FixedView there sees it all. The
  // published half is read-only data: a damaged one is rebuilt (a build
  // from kEmpty), not repaired, so check --fix changes nothing.
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
    Json d = Json::Object();
    d.Set("version", dv.version());
    d.Set("current_half", static_cast<uint64_t>(dv.current()));
    d.Set("reader_slots", dv.lay.reader_slots());
    d.Set("readers", dv.Count(false));
    d.Set("pins", dv.Count(true));
    d.Set("half_bytes", dv.lay.half_bytes());
    Json halves = Json::Array();
    for (uint32_t h = 0; h < 2; ++h) {
      const sd::DoubleTableHalf* hh = dv.HalfHeader(h);
      uint64_t sealed = hh->sealed.load(std::memory_order_relaxed);
      Json one = Json::Object();
      one.Set("half", static_cast<uint64_t>(h));
      one.Set("sealed_version", sealed);
      one.Set("checksum_ok", sealed != 0 ? Json(dv.SumOk(h)) : Json());
      halves.Push(std::move(one));
    }
    d.Set("halves", std::move(halves));
    if (dv.version() != 0) {
      d.Set("table", TableInfo(dv.Half(dv.current()), "nonzero_nodes"));
    }
    j->Set("double_table", std::move(d));
    return kExitOk;
  }

  static int DoubleTableCheck(const Container& c, bool, Findings* f,
                              std::string* err) {
    DoubleTableView dv;
    int rc = dv.Open(c, err);
    if (rc != kExitOk) return rc;
    f->stats.Set("version", dv.version());
    f->stats.Set("readers", dv.Count(false));
    if (dv.version() == 0) return kExitOk;  // nothing published
    std::string bad = dv.CurrentProblem();
    if (!bad.empty()) {
      f->problems.Push(bad);
      return kExitOk;
    }
    // The spare half serves nobody: a damaged one is a fact, not a problem.
    uint32_t spare = dv.current() ^ 1;
    if (dv.HalfHeader(spare)->sealed.load(std::memory_order_relaxed) != 0) {
      f->stats.Set("spare_checksum_ok", dv.SumOk(spare));
    }
    Json fixed = Json::Array();
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

  // --- sorted_array: directory NAME + data NAME0/NAME1 ---------------
  static int SortedArrayInfo(const Container& c, Json* j, std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    j->Set("sorted_array", SortedInfo(sv.bytes, sv.current, sv.have_dir));
    return kExitOk;
  }

  // Read-only data: a damaged version is rebuilt, not repaired.
  static int SortedArrayCheck(const Container& c, bool, Findings* f,
                              std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    SortedCheck(sv.bytes, sv.current, sv.have_dir, &f->problems, &f->stats);
    return kExitOk;
  }

  static int SortedArrayDump(const Container& c, Sink* sink,
                             std::string* err) {
    SortedView<Alloc> sv;
    int rc = sv.Open(c, err);
    if (rc != kExitOk) return rc;
    SortedDump(sv.bytes, sink->opt, [sink] { return sink->more(); },
               [sink](Json j) { sink->out(std::move(j)); });
    return kExitOk;
  }

  // --- percentile ----------------------------------------------------
  static int PercentileInfo(const Container& c, Json* j, std::string* err) {
    shmc::ShmPercentile<Alloc> sp;
    if (!sp.InitForRead(c.segments[0].key)) {
      return Fail(sp.last_error(), err);
    }
    shmc::PercentileEstimator all = sp.Merged();
    Json d = Json::Object();
    d.Set("p", all.p());
    d.Set("group_size", all.group_size());
    d.Set("slots", sp.slots());
    d.Set("samples", all.count());
    d.Set("groups", all.groups());
    d.Set("estimate", all.count() > 0 ? Json(all.Estimate()) : Json());
    j->Set("percentile", std::move(d));
    return kExitOk;
  }

  static int PercentileCheck(const Container& c, bool, Findings* f,
                             std::string* err) {
    shmc::ShmPercentile<Alloc> sp;
    if (!sp.InitForRead(c.segments[0].key)) {
      return Fail(sp.last_error(), err);
    }
    f->stats.Set("samples", sp.Merged().count());
    return kExitOk;
  }
};

// What each kind of container answers to each command, by the kind name
// Resolve gives it. A null dump: the kind has no records to print.
template <class Alloc>
struct KindOps {
  const char* kind;
  int (*info)(const Container&, Json*, std::string*);
  int (*check)(const Container&, bool, Findings*, std::string*);
  int (*dump)(const Container&, Sink*, std::string*);
};

template <class Alloc>
const KindOps<Alloc>* FindKind(const std::string& kind) {
  using K = Kinds<Alloc>;
  static const KindOps<Alloc> kTable[] = {
      {"hash_map", K::MapInfo, K::MapCheck, K::MapDump},
      {"array", K::FixedInfo, K::FixedCheck, K::FixedDump},
      {"hash_table", K::FixedInfo, K::FixedCheck, K::FixedDump},
      {"hash_table_m", K::FixedInfo, K::FixedCheck, K::FixedDump},
      {"link_table", K::LinkInfo, K::LinkCheck, K::LinkDump},
      {"queue", K::QueueInfo, K::QueueCheck, K::QueueDump},
      {"sync_buf", K::SyncInfo, K::SyncCheck, K::SyncDump},
      {"double_buf", K::DoubleInfo, K::DoubleCheck, nullptr},
      {"double_table", K::DoubleTableInfo, K::DoubleTableCheck,
       K::DoubleTableDump},
      {"sorted_array", K::SortedArrayInfo, K::SortedArrayCheck,
       K::SortedArrayDump},
      {"percentile", K::PercentileInfo, K::PercentileCheck, nullptr},
  };
  for (const KindOps<Alloc>& k : kTable) {
    if (kind == k.kind) return &k;
  }
  return nullptr;
}

}  // namespace kinds
}  // namespace shmc_tool
