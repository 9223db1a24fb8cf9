// `shmc` on a sync buffer: records read from the oldest kept.
#include "tools/shmc/kinds/kind.h"

#include <string>

#include "shmc/shm_sync_buf.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct SyncKind {
  using SyncBuf = shmc::ShmSyncBuf<Alloc>;

  static Json When(const shmc::SyncMeta& m) {
    Json t = Json::object();
    t["seq"] = m.seq;
    t["time"] = static_cast<double>(m.time.tv_sec) + m.time.tv_usec / 1e6;
    return t;
  }

  static int SyncInfo(const Container& c, Json* j, std::string* err) {
    SyncBuf sb;
    if (!sb.InitForRead(c.segments[0].key)) {
      return Fail(sb.last_error(), err);
    }
    Json s = Json::object();
    s["capacity"] = sb.sync_buf_size();
    s["used_bytes"] = sb.used_size();
    s["pushed"] = sb.pushed();
    s["recycled"] = sb.recycled();
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
    s["records"] = records;
    s["first"] = have_first ? When(first) : Json();
    s["last"] = have_last ? When(last) : Json();
    (*j)["sync_buf"] = std::move(s);
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
        f->problems.push_back("damaged record at ring position " +
                         std::to_string(it.pos));
        break;
      }
      if (expect_seq != 0 && m.seq != expect_seq) {
        f->problems.push_back("sequence jumps from " +
                         std::to_string(expect_seq - 1) + " to " +
                         std::to_string(m.seq));
        break;
      }
      expect_seq = m.seq + 1;
      ++records;
      if (!sb.Next(&it)) break;
    }
    f->stats["records"] = records;
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
      j["len"] = static_cast<uint64_t>(data.size());
      j["data"] = Data(data, sink->opt.hex);
      sink->out(std::move(j));
      if (!sb.Next(&it)) break;
    }
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> SyncOps() {
  using K = SyncKind<Alloc>;
  return {K::SyncInfo, K::SyncCheck, K::SyncDump};
}
SHMC_TOOL_INSTANTIATE_KIND(SyncOps)

}  // namespace kinds
}  // namespace shmc_tool
