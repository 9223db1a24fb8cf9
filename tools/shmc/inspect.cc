#include "tools/shmc/inspect.h"

#include <sys/time.h>

#include <atomic>
#include <cinttypes>
#include <cstring>
#include <limits>
#include <memory>

#include "shmc/detail/link_table_impl.h"
#include "shmc/detail/segment.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/percentile.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sync_buf.h"
#include "shmc/svipc_shm_alloc.h"
#include "tools/shmc/fixed_view.h"
#include "tools/shmc/sorted_view.h"

namespace shmc_tool {

namespace sd = shmc::detail;
using shmc::ErrorCode;
using sd::ContainerKind;

// Errors that mean the segment itself is damaged (exit 3), as opposed to
// one the tool could not reach or does not understand (exit 1).
int ExitFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kCorrupted:
    case ErrorCode::kSizeMismatch:
    case ErrorCode::kNotReady:
      return kExitProblems;
    default:
      return kExitError;
  }
}

namespace {

int Fail(const shmc::Error& e, std::string* err) {
  *err = e.message;
  return ExitFor(e.code);
}

std::string Data(const std::string& bytes, bool hex) {
  return hex ? Hex(bytes.data(), bytes.size()) : bytes;
}

// ---------------------------------------------------------------------------

template <class Alloc>
struct Ops {
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

  static Json LinkInfo(const Links& lt) {
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
                           Json* problems, Json* fixed) {
    auto add = [&](size_t n, const char* what) {
      if (n > 0) problems->Push(std::to_string(n) + " " + what);
    };
    add(hs.leaked_nodes, "leaked nodes (neither free nor in a value)");
    add(hs.bad_linked_link_bufs, "values with a broken chain");
    add(hs.too_long_link_bufs, "values with more nodes than their length");
    add(hs.too_short_link_bufs, "values with fewer nodes than their length");
    add(hs.bad_free_list, "broken free list");
    add(hs.counter_mismatches, "header counters wrong");
    auto fixed_n = [&](size_t n, const char* what) {
      if (n > 0) fixed->Push(std::to_string(n) + " " + what);
    };
    fixed_n(hs.recycled_leaked_nodes, "leaked nodes returned to the pool");
    fixed_n(hs.cleared_link_bufs, "broken values cleared");
  }

  static Json LinkStats(const typename Links::HealthStat& hs) {
    Json j = Json::Object();
    j.Set("free_nodes", hs.total_free_nodes);
    j.Set("values", hs.total_link_bufs);
    j.Set("value_bytes", hs.total_link_buf_bytes);
    return j;
  }

  // --- info -----------------------------------------------------------
  static int Info(const Container& c, Json* out, std::string* err) {
    const SegName& n = c.segments[0];
    const HeaderPeek& peek = c.peeks[0];
    Json j = Json::Object();
    j.Set("name", c.name.Display());
    j.Set("kind", c.kind);
    Json segs = Json::Array();
    for (size_t i = 0; i < c.segments.size(); ++i) {
      if (c.peeks[i].status == HeaderPeek::kOk) {
        segs.Push(HeaderSummary(c.segments[i], c.peeks[i]));
      } else {  // e.g. a sorted array's damaged leftover data segment
        Json bad = Json::Object();
        bad.Set("segment", c.segments[i].Display());
        bad.Set("note", c.peeks[i].message);
        segs.Push(std::move(bad));
      }
    }
    ContainerKind kind = static_cast<ContainerKind>(peek.header()->kind);
    if (c.kind == "hash_map") {
      MapView mv;
      int rc = mv.Open(c, err);
      if (rc != kExitOk) return rc;
      Json idx = TableInfo(mv.index, "keys");
      j.Set("keys", *idx.Get("keys"));
      j.Set("index", std::move(idx));
      j.Set("values", LinkInfo(mv.lt));
    } else if (sd::FixedLayout::IsFixed(kind)) {
      sd::Segment<Alloc> seg;
      FixedView v;
      int rc = OpenFixed(n, peek, false, &seg, &v, err);
      if (rc != kExitOk) return rc;
      if (kind == ContainerKind::kArray) {
        Json a = Json::Object();
        a.Set("node_size", v.lay.node_size());
        a.Set("node_num", v.lay.slots());
        uint64_t nz = 0;
        for (uint64_t i = 0; i < v.lay.slots(); ++i) nz += v.RawNodeUsed(i);
        a.Set("nonzero_nodes", nz);
        j.Set("array", std::move(a));
      } else {
        // The tool cannot call a user's Node::Key(): "used" means a node
        // with any non-zero byte (erased nodes are cleared by convention).
        j.Set("table", TableInfo(v, "nonzero_nodes"));
      }
    } else if (kind == ContainerKind::kLinkTable) {
      Links lt;
      int rc = OpenLinks(n, &lt, err);
      if (rc != kExitOk) return rc;
      j.Set("link_table", LinkInfo(lt));
    } else if (kind == ContainerKind::kQueue) {
      shmc::ShmQueue<Alloc> q;
      if (!q.InitForInspect(n.key)) return Fail(q.last_error(), err);
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
      j.Set("queue", std::move(qj));
    } else if (kind == ContainerKind::kSyncBuf) {
      shmc::ShmSyncBuf<Alloc> sb;
      if (!sb.InitForRead(n.key)) return Fail(sb.last_error(), err);
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
      auto when = [](const shmc::SyncMeta& m) {
        Json t = Json::Object();
        t.Set("seq", m.seq);
        t.Set("time", static_cast<double>(m.time.tv_sec) +
                          m.time.tv_usec / 1e6);
        return t;
      };
      s.Set("first", have_first ? when(first) : Json());
      s.Set("last", have_last ? when(last) : Json());
      j.Set("sync_buf", std::move(s));
    } else if (kind == ContainerKind::kDoubleBuf) {
      shmc::ShmDoubleBuf<Alloc> db;
      if (!db.InitForInspect(n.key)) return Fail(db.last_error(), err);
      Json d = Json::Object();
      d.Set("version", db.version());
      d.Set("max_bytes", db.max_bytes());
      d.Set("reader_slots", db.reader_slots());
      d.Set("readers", db.readers());
      d.Set("pins", db.pins());
      j.Set("double_buf", std::move(d));
    } else if (c.kind == "sorted_array") {
      SortedView<Alloc> sv;
      int rc = sv.Open(c, err);
      if (rc != kExitOk) return rc;
      j.Set("sorted_array", SortedInfo(sv.bytes, sv.current, sv.have_dir));
    } else if (kind == ContainerKind::kPercentile) {
      shmc::ShmPercentile<Alloc> sp;
      if (!sp.InitForRead(n.key)) return Fail(sp.last_error(), err);
      shmc::PercentileEstimator all = sp.Merged();
      Json d = Json::Object();
      d.Set("p", all.p());
      d.Set("group_size", all.group_size());
      d.Set("slots", sp.slots());
      d.Set("samples", all.count());
      d.Set("groups", all.groups());
      d.Set("estimate", all.count() > 0 ? Json(all.Estimate()) : Json());
      j.Set("percentile", std::move(d));
    } else {
      *err = n.Display() + ": a " + c.kind + " segment; this shmc knows its "
             "header only";
    }
    j.Set("segments", std::move(segs));
    *out = std::move(j);
    return kExitOk;
  }

  // --- check ----------------------------------------------------------
  static int Check(const Container& c, bool fix, Json* out,
                   std::string* err) {
    const SegName& n = c.segments[0];
    const HeaderPeek& peek = c.peeks[0];
    Json problems = Json::Array();
    Json fixed = Json::Array();
    Json stats = Json::Object();
    ContainerKind kind = static_cast<ContainerKind>(peek.header()->kind);
    if (c.kind == "hash_map") {
      sd::Segment<Alloc> seg;
      FixedView index;
      int rc = OpenFixed(n, peek, fix, &seg, &index, err);
      if (rc != kExitOk) return rc;
      index.map_index = true;
      auto handle = [&index](uint64_t slot) {
        return sd::MapHandleWord(index.base, index.lay, slot);
      };
      Links lt;
      if (fix) {
        // Writer side: the lease, and recovery of an interrupted write.
        sd::LinkSlotResolver resolve =
            sd::MapResolver(index.lay.slots(), handle);
        uint64_t words = c.peeks[1].param(sd::kLinkParamDataWords);
        uint64_t nodes = c.peeks[1].param(sd::kLinkParamNodeNum);
        if (!sd::LinkTableWriter<Alloc>::InitForWrite(
                lt, c.segments[1].key, words * 8, nodes, &resolve, true)) {
          return Fail(lt.last_error(), err);
        }
      } else if ((rc = OpenLinks(c.segments[1], &lt, err)) != kExitOk) {
        return rc;
      }
      CheckTable(index, fix, &problems, &fixed);
      typename shmc::ShmHashMap<uint64_t, Alloc>::HealthStat hs;
      auto each_slot =
          [&](const std::function<void(std::atomic<uint64_t>*)>& f) {
            for (uint64_t i = 0; i < index.lay.slots(); ++i) {
              if (index.MapNodeUsed(i)) f(handle(i));
            }
            return true;
          };
      if (!sd::MapHealthCheck(lt, each_slot, &hs, fix)) {
        *err = n.Display() + ": health check could not run";
        return kExitError;
      }
      LinkProblems(hs.lt_stat, &problems, &fixed);
      if (hs.bad_key_values > 0) {
        problems.Push(std::to_string(hs.bad_key_values) +
                      " keys pointing at no valid value");
      }
      if (hs.leaked_values > 0) {
        problems.Push(std::to_string(hs.leaked_values) +
                      " values no key points to (leaked)");
      }
      if (hs.cleared_key_values > 0) {
        fixed.Push(std::to_string(hs.cleared_key_values) +
                   " keys with bad values dropped");
      }
      if (hs.recycled_leaked_values > 0) {
        fixed.Push(std::to_string(hs.recycled_leaked_values) +
                   " leaked values freed");
      }
      stats = LinkStats(hs.lt_stat);
      stats.Set("keys", hs.total_key_values);
    } else if (sd::FixedLayout::IsFixed(kind)) {
      sd::Segment<Alloc> seg;
      FixedView v;
      int rc = OpenFixed(n, peek, fix, &seg, &v, err);
      if (rc != kExitOk) return rc;
      CheckTable(v, fix, &problems, &fixed);
    } else if (kind == ContainerKind::kLinkTable) {
      Links lt;
      if (fix) {
        if (!sd::LinkTableWriter<Alloc>::InitForWrite(
                lt, n.key, peek.param(sd::kLinkParamDataWords) * 8,
                peek.param(sd::kLinkParamNodeNum), nullptr, true)) {
          return Fail(lt.last_error(), err);
        }
      } else {
        int rc = OpenLinks(n, &lt, err);
        if (rc != kExitOk) return rc;
      }
      typename Links::HealthStat hs;
      if (!lt.HealthCheck(&hs, fix)) {
        *err = n.Display() + ": health check could not run";
        return kExitError;
      }
      LinkProblems(hs, &problems, &fixed);
      stats = LinkStats(hs);
    } else if (kind == ContainerKind::kQueue) {
      shmc::ShmQueue<Alloc> q;
      if (!q.InitForInspect(n.key)) return Fail(q.last_error(), err);
      uint64_t records = 0, bad = 0;
      auto r = q.Peek(0, [&](const std::string&) { ++records; }, &bad);
      if (r == shmc::ShmQueue<Alloc>::kPeekCorrupted) {
        problems.Push("damaged record header at ring position " +
                      std::to_string(bad) + " (the consumer will stop there)");
      }
      uint64_t bad_tail = 0;
      int64_t past = q.PublishedPastTail(&bad_tail);
      if (past < 0) {
        problems.Push("damaged ring at position " + std::to_string(bad_tail) +
                      ": the word at the tail is not zero (the consumer "
                      "may read it as a record)");
      }
      stats.Set("pending_records", records);
      stats.Set("records_past_tail", past < 0 ? 0 : past);
    } else if (kind == ContainerKind::kSyncBuf) {
      shmc::ShmSyncBuf<Alloc> sb;
      if (!sb.InitForRead(n.key)) return Fail(sb.last_error(), err);
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
          problems.Push("damaged record at ring position " +
                        std::to_string(it.pos));
          break;
        }
        if (expect_seq != 0 && m.seq != expect_seq) {
          problems.Push("sequence jumps from " +
                        std::to_string(expect_seq - 1) + " to " +
                        std::to_string(m.seq));
          break;
        }
        expect_seq = m.seq + 1;
        ++records;
        if (!sb.Next(&it)) break;
      }
      stats.Set("records", records);
    } else if (c.kind == "sorted_array") {
      // Read-only data: a damaged version is rebuilt, not repaired.
      SortedView<Alloc> sv;
      int rc = sv.Open(c, err);
      if (rc != kExitOk) return rc;
      SortedCheck(sv.bytes, sv.current, sv.have_dir, &problems, &stats);
    } else if (kind == ContainerKind::kDoubleBuf) {
      // Attaching checks the header and the geometry (an inspecting
      // handle pins nothing, so it does not read the data itself).
      shmc::ShmDoubleBuf<Alloc> db;
      if (!db.InitForInspect(n.key)) return Fail(db.last_error(), err);
      stats.Set("version", db.version());
      stats.Set("readers", static_cast<uint64_t>(db.readers()));
    } else if (kind == ContainerKind::kPercentile) {
      shmc::ShmPercentile<Alloc> sp;
      if (!sp.InitForRead(n.key)) return Fail(sp.last_error(), err);
      stats.Set("samples", sp.Merged().count());
    } else {
      // Resolve admits only kinds this build knows; one without a check
      // here is a gap in the tool, not a clean segment.
      *err = n.Display() + ": no check for a " + c.kind + " segment";
      return kExitError;
    }
    if (fix && !problems.empty() && fixed.empty()) {
      // Nothing could be repaired: say so rather than imply success.
      fixed.Push("nothing repairable");
    }
    bool ok = problems.empty();
    Json j = Json::Object();
    j.Set("name", c.name.Display());
    j.Set("kind", c.kind);
    j.Set("ok", ok);
    j.Set("problems", std::move(problems));
    if (fix) j.Set("fixed", std::move(fixed));
    j.Set("stats", std::move(stats));
    *out = std::move(j);
    if (ok) return kExitOk;
    // With --fix, a clean second pass means everything was repaired.
    if (fix) {
      Json again;
      std::string e2;
      int rc = Check(c, false, &again, &e2);
      out->Set("after_fix_ok", rc == kExitOk);
      return rc;
    }
    return kExitProblems;
  }

  // --- dump -----------------------------------------------------------
  static int Dump(const Container& c, const DumpOptions& opt,
                  const std::function<void(const Json&)>& emit,
                  std::string* err) {
    const SegName& n = c.segments[0];
    const HeaderPeek& peek = c.peeks[0];
    size_t emitted = 0;
    auto more = [&] { return opt.limit == 0 || emitted < opt.limit; };
    auto out = [&](Json j) {
      emit(j);
      ++emitted;
    };
    ContainerKind kind = static_cast<ContainerKind>(peek.header()->kind);
    if (c.kind == "hash_map") {
      MapView mv;
      int rc = mv.Open(c, err);
      if (rc != kExitOk) return rc;
      const FixedView& index = mv.index;
      const Links& lt = mv.lt;
      uint64_t key_bytes = index.map_key_bytes();
      std::string val;
      for (uint64_t i = 0; i < index.lay.slots() && more(); ++i) {
        // Read as the map does: handle, key, value, handle again.
        for (int attempt = 0; attempt < 8; ++attempt) {
          uint64_t l = index.MapLink(i);
          if (static_cast<uint32_t>(l) == 0) break;
          std::string key = CopyBytes(index.node(i), key_bytes);
          bool ok = lt.Read(shmc::link_buf_t::Unpack(l), &val);
          if (index.MapLink(i) != l) continue;  // changed: read again
          Json j = Json::Object();
          if (key_bytes == 8) {
            uint64_t k;
            std::memcpy(&k, key.data(), 8);
            j.Set("key", k);
          } else {
            j.Set("key", Data(key, opt.hex));
          }
          if (ok) {
            j.Set("value", Data(val, opt.hex));
          } else {
            j.Set("value", Json());
            j.Set("error", "value unreadable (damaged: run shmc check)");
          }
          out(std::move(j));
          break;
        }
      }
    } else if (sd::FixedLayout::IsFixed(kind)) {
      sd::Segment<Alloc> seg;
      FixedView v;
      int rc = OpenFixed(n, peek, false, &seg, &v, err);
      if (rc != kExitOk) return rc;
      bool table = kind != ContainerKind::kArray;
      for (size_t r = 0; r < v.lay.row_count() && more(); ++r) {
        sd::RowSpan span = v.lay.row(r);
        for (uint64_t s = 0; s < span.slots && more(); ++s) {
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
                             opt.hex));
          out(std::move(j));
        }
      }
    } else if (kind == ContainerKind::kLinkTable) {
      Links lt;
      int rc = OpenLinks(n, &lt, err);
      if (rc != kExitOk) return rc;
      std::string val;
      lt.Travel([&](shmc::link_buf_t lb) {
        if (!more()) return;
        Json j = Json::Object();
        j.Set("head", lb.head());
        j.Set("tag", lb.tag());
        if (lt.Read(lb, &val)) {
          j.Set("value", Data(val, opt.hex));
        } else {
          j.Set("value", Json());
          j.Set("error", "value unreadable (changed or damaged)");
        }
        out(std::move(j));
      });
    } else if (kind == ContainerKind::kQueue) {
      shmc::ShmQueue<Alloc> q;
      if (!q.InitForInspect(n.key)) return Fail(q.last_error(), err);
      uint64_t bad = 0, index = 0;
      auto r = q.Peek(opt.limit, [&](const std::string& rec) {
        Json j = Json::Object();
        j.Set("index", index++);
        j.Set("len", static_cast<uint64_t>(rec.size()));
        j.Set("data", Data(rec, opt.hex));
        out(std::move(j));
      }, &bad);
      if (r == shmc::ShmQueue<Alloc>::kPeekCorrupted) {
        *err = n.Display() + ": damaged record at ring position " +
               std::to_string(bad) + "; records before it were dumped";
        return kExitProblems;
      }
    } else if (kind == ContainerKind::kSyncBuf) {
      shmc::ShmSyncBuf<Alloc> sb;
      if (!sb.InitForRead(n.key)) return Fail(sb.last_error(), err);
      shmc::SyncIter it = sb.Head();
      shmc::SyncMeta m{};
      std::string data;
      while (more()) {
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
          *err = n.Display() + ": damaged record at ring position " +
                 std::to_string(it.pos);
          return kExitProblems;
        }
        Json j = Json::Object();
        j.Set("seq", m.seq);
        j.Set("time", static_cast<double>(m.time.tv_sec) +
                          m.time.tv_usec / 1e6);
        j.Set("len", static_cast<uint64_t>(data.size()));
        j.Set("data", Data(data, opt.hex));
        out(std::move(j));
        if (!sb.Next(&it)) break;
      }
    } else if (c.kind == "sorted_array") {
      SortedView<Alloc> sv;
      int rc = sv.Open(c, err);
      if (rc != kExitOk) return rc;
      SortedDump(sv.bytes, opt, more, out);
    } else {
      *err = n.Display() + ": cannot dump a " + c.kind + " segment";
      return kExitError;
    }
    return kExitOk;
  }
};

template <class F>
int WithBackend(Backend b, const F& f) {
  switch (b) {
    case Backend::kPosix: return f(Ops<shmc::POSIX>());
    case Backend::kSysv: return f(Ops<shmc::SVIPC>());
    case Backend::kFile: return f(Ops<shmc::MAPFILE>());
  }
  return kExitError;
}

int PeekExit(const HeaderPeek& p) {
  switch (p.status) {
    case HeaderPeek::kOk: return kExitOk;
    case HeaderPeek::kTruncated: return kExitProblems;
    default: return kExitError;
  }
}

}  // namespace

int Resolve(const SegName& name, Container* out, std::string* err) {
  out->name = name;
  HeaderPeek p = PeekHeader(name);
  if (p.status == HeaderPeek::kNotFound) {
    // A hash map is the pair NAME0 (index) + NAME1 (values).
    HeaderPeek p0 = PeekHeader(name.Suffixed(shmc::kMapIndexSuffix));
    HeaderPeek p1 = PeekHeader(name.Suffixed(shmc::kMapValuesSuffix));
    bool idx = p0.status == HeaderPeek::kOk &&
               p0.kind() == static_cast<uint32_t>(ContainerKind::kHashTable);
    bool vals = p1.status == HeaderPeek::kOk &&
                p1.kind() == static_cast<uint32_t>(ContainerKind::kLinkTable);
    if (idx && vals) {
      bool found = false;
      uint64_t node_size = p0.param(sd::kParamNodeSize, &found);
      if (found && sd::MapIndexNodeOk(node_size)) {
        out->kind = "hash_map";
        out->segments = {name.Suffixed(shmc::kMapIndexSuffix), name.Suffixed(shmc::kMapValuesSuffix)};
        out->peeks = {p0, p1};
        return kExitOk;
      }
    }
    if (p0.status != HeaderPeek::kNotFound ||
        p1.status != HeaderPeek::kNotFound) {
      *err = name.Display() + ": no such segment; " +
             name.Suffixed(shmc::kMapIndexSuffix).Display() + " and " +
             name.Suffixed(shmc::kMapValuesSuffix).Display() +
             " are not the index and values of one hash map";
      return kExitError;
    }
    *err = p.message;
    return kExitError;
  }
  if (p.status != HeaderPeek::kOk) {
    *err = p.message;
    return PeekExit(p);
  }
  if (p.kind() == 0) {
    *err = name.Display() + ": unknown container kind " +
           std::to_string(p.header()->kind) + " (a newer shmc made it?)";
    return kExitError;
  }
  out->kind = sd::KindName(static_cast<ContainerKind>(p.kind()));
  out->segments = {name};
  out->peeks = {p};
  if (p.kind() == static_cast<uint32_t>(ContainerKind::kSortedDir)) {
    // A sorted array: its directory and whichever data segments exist.
    out->kind = "sorted_array";
    for (const char* slot : {"0", "1"}) {
      // Only a sorted array's data segment (or a damaged shmc one) in a
      // slot's name is part of it; anything else there is someone else's.
      HeaderPeek d = PeekHeader(name.Suffixed(slot));
      bool data = (d.status == HeaderPeek::kOk &&
                   d.kind() ==
                       static_cast<uint32_t>(ContainerKind::kSortedArray)) ||
                  d.status == HeaderPeek::kTruncated;
      if (!data) continue;
      out->segments.push_back(name.Suffixed(slot));
      out->peeks.push_back(d);
    }
  }
  return kExitOk;
}

int Info(const Container& c, Json* out, std::string* err) {
  return WithBackend(c.segments[0].backend,
                     [&](auto ops) { return ops.Info(c, out, err); });
}

int Check(const Container& c, bool fix, Json* out, std::string* err) {
  return WithBackend(c.segments[0].backend,
                     [&](auto ops) { return ops.Check(c, fix, out, err); });
}

int Dump(const Container& c, const DumpOptions& opt,
         const std::function<void(const Json&)>& emit, std::string* err) {
  return WithBackend(c.segments[0].backend,
                     [&](auto ops) { return ops.Dump(c, opt, emit, err); });
}

namespace {

// Whether `rm` may remove a segment: it must prove to be shmc's. A header
// with shmc's magic (whole or truncated) does; with --force, so does a
// whole-sized header whose magic is damaged in at most two of its eight
// bytes. Empty files, device nodes and other programs' data never do.
bool Removable(const HeaderPeek& p, bool force, std::string* why) {
  if (p.status == HeaderPeek::kOk || p.status == HeaderPeek::kTruncated) {
    return true;
  }
  if (p.status != HeaderPeek::kForeign) {
    *why = p.message;
    return false;
  }
  int differ = 0;
  for (size_t i = 0; i < sizeof(sd::kSegmentMagic); ++i) {
    differ += p.bytes[i] != static_cast<unsigned char>(sd::kSegmentMagic[i]);
  }
  bool damaged_magic = p.mapped >= sizeof(sd::SegmentHeader) && differ <= 2;
  if (force && damaged_magic) return true;
  *why = p.message + (damaged_magic
                          ? "; its magic is damaged: --force removes it"
                          : "; left alone");
  return false;
}

// Unlinks a segment `rm` has judged removable. One whose magic was intact
// when peeked is checked again as it is unlinked (RemoveOwnSegment), so a
// file put in its place meanwhile is left alone.
bool Unlink(const SegName& s, const HeaderPeek& p, std::string* err) {
  auto alloc = MakeAlloc(s.backend);
  bool ok;
  if (p.status == HeaderPeek::kForeign) {  // --force, damaged magic
    ok = alloc->Unlink(s.key);
  } else {
    sd::RemoveResult r = sd::RemoveOwnSegment(s.key, alloc.get());
    if (r == sd::RemoveResult::kForeign) {
      *err = s.Display() + ": changed since it was read: not a shmc "
             "segment now; left alone";
      return false;
    }
    ok = r != sd::RemoveResult::kFailed;
  }
  if (!ok) {
    *err = s.Display() + ": cannot remove: " +
           sd::AllocErrorText(alloc->last_errno());
    if (alloc->sys_errno() != 0) {
      *err += std::string(" (") + std::strerror(alloc->sys_errno()) + ")";
    }
  }
  return ok;
}

}  // namespace

int Remove(const Container& c, bool force, Json* out, std::string* err) {
  // Refuse to pull a segment from under a live writer unless forced.
  for (size_t i = 0; i < c.segments.size(); ++i) {
    if (c.peeks[i].status != HeaderPeek::kOk) continue;  // no lease to read
    const sd::SegmentHeader* h = c.peeks[i].header();
    uint64_t pid = h->lease_pid.load(std::memory_order_acquire);
    if (!force && sd::LeaseHolderAlive(h, pid)) {
      *err = c.segments[i].Display() + ": its writer (pid " +
             std::to_string(pid) + ") is alive; stop it first, or use "
             "--force (attached processes keep their mapping)";
      return kExitError;
    }
  }
  Json removed = Json::Array();
  Json left = Json::Array();
  std::vector<size_t> doomed;
  for (size_t i = 0; i < c.segments.size(); ++i) {
    std::string why;
    if (Removable(c.peeks[i], force, &why)) {
      doomed.push_back(i);
    } else {
      Json l = Json::Object();
      l.Set("segment", c.segments[i].Display());
      l.Set("why", why);
      left.Push(std::move(l));
    }
  }
  if (doomed.empty() || (!force && !left.items().empty())) {
    // Without --force a container goes whole or not at all.
    *err = c.name.Display() + (doomed.empty()
                                   ? ": nothing that proves to be shmc's"
                                   : ": not removed, not all of it proves "
                                     "to be shmc's (--force removes the "
                                     "rest)");
    for (const Json& l : left.items()) {
      *err += "; " + l.Get("why")->Plain();
    }
    return kExitError;
  }
  for (size_t i : doomed) {
    if (!Unlink(c.segments[i], c.peeks[i], err)) return kExitError;
    removed.Push(c.segments[i].Display());
  }
  Json j = Json::Object();
  j.Set("name", c.name.Display());
  j.Set("kind", c.kind);
  j.Set("removed", std::move(removed));
  if (!left.items().empty()) {
    for (const Json& l : left.items()) {  // a warning: the rest is done
      if (!err->empty()) *err += "; ";
      *err += "left " + l.Get("segment")->Plain() + ": " +
              l.Get("why")->Plain();
    }
    j.Set("left", std::move(left));
  }
  *out = std::move(j);
  return kExitOk;
}

}  // namespace shmc_tool
