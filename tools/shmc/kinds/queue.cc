// `shmc` on a queue: records peeked without consuming them.
#include "tools/shmc/kinds/kind.h"

#include <string>

#include "shmc/shm_queue.h"

namespace shmc_tool {
namespace kinds {
namespace {

template <class Alloc>
struct QueueKind {
  using Queue = shmc::ShmQueue<Alloc>;

  static int QueueInfo(const Container& c, Json* j, std::string* err) {
    Queue q;
    if (!q.InitForInspect(c.segments[0].key)) {
      return Fail(q.last_error(), err);
    }
    Json qj = Json::object();
    qj["capacity"] = q.capacity();
    qj["used_bytes"] = q.used_bytes();
    uint64_t pending = 0;
    q.Peek(0, [&](const std::string&) { ++pending; });
    qj["pending_records"] = pending;
    qj["pushed"] = q.pushed();
    qj["popped"] = q.popped();
    qj["high_water_bytes"] = q.high_water();
    qj["full_spins"] = q.full_spins();
    (*j)["queue"] = std::move(qj);
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
      f->problems.push_back("damaged record header at ring position " +
                       std::to_string(bad) +
                       " (the consumer will stop there)");
    }
    uint64_t bad_tail = 0;
    int64_t past = q.PublishedPastTail(&bad_tail);
    if (past < 0) {
      f->problems.push_back("damaged ring at position " +
                       std::to_string(bad_tail) +
                       ": the word at the tail is not zero (the consumer "
                       "may read it as a record)");
    }
    f->stats["pending_records"] = records;
    f->stats["records_past_tail"] = past < 0 ? 0 : past;
    return kExitOk;
  }

  static int QueueDump(const Container& c, Sink* sink, std::string* err) {
    Queue q;
    if (!q.InitForInspect(c.segments[0].key)) {
      return Fail(q.last_error(), err);
    }
    uint64_t bad = 0, index = 0;
    auto r = q.Peek(sink->opt.limit, [&](const std::string& rec) {
      Json j = Json::object();
      j["index"] = index++;
      j["len"] = static_cast<uint64_t>(rec.size());
      j["data"] = Data(rec, sink->opt.hex);
      sink->out(std::move(j));
    }, &bad);
    if (r == Queue::kPeekCorrupted) {
      *err = c.segments[0].Display() + ": damaged record at ring position " +
             std::to_string(bad) + "; records before it were dumped";
      return kExitProblems;
    }
    return kExitOk;
  }
};

}  // namespace

template <class Alloc>
KindOps<Alloc> QueueOps() {
  using K = QueueKind<Alloc>;
  return {K::QueueInfo, K::QueueCheck, K::QueueDump};
}
SHMC_TOOL_INSTANTIATE_KIND(QueueOps)

}  // namespace kinds
}  // namespace shmc_tool
