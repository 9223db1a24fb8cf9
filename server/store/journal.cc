#include "server/store/journal.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shmc/hash.h"

namespace shmkv {

namespace {

constexpr uint64_t kJournalMagic = 0x316c6e6a766b6d73ULL;  // "smkvjnl1"
static_assert((Journal::kWatchSlots & (Journal::kWatchSlots - 1)) == 0,
              "a mask selects the version");

// The words are shared by every process; acquire/release pair the state
// and sequence words with the records and map writes they publish. The
// records after the words are plain bytes, written and read under the
// write lock.
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free &&
                  std::atomic_ref<uint64_t>::required_alignment <=
                      alignof(uint64_t),
              "the journal's words are shared between processes");
uint64_t LoadWord(const uint64_t* w) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(w))
      .load(std::memory_order_acquire);
}
void StoreWord(uint64_t* w, uint64_t v) {
  std::atomic_ref<uint64_t>(*w).store(v, std::memory_order_release);
}

}  // namespace

bool Journal::Open(const std::string& key, uint64_t bytes, bool master,
                   std::string* err) {
  // Only the header words are reserved when the journal is made: the
  // records' memory is reserved as commits need it (Commit), so a store
  // holds what its largest commit used, not --journal-size.
  if (!arr_.InitForWrite(key, kRecords + (bytes + 7) / 8, kRecords)) {
    *err = arr_.last_error().message;
    return false;
  }
  w_ = const_cast<uint64_t*>(&arr_[0]);
  cap_ = (arr_.size() - kRecords) * 8;
  if (LoadWord(&w_[kMagic]) == kJournalMagic) return true;
  if (!master) {
    *err = "journal segment " + key + " is not initialized";
    return false;
  }
  StoreWord(&w_[kState], kIdle);
  StoreWord(&w_[kMagic], kJournalMagic);
  return true;
}

uint64_t Journal::Seq() const { return LoadWord(&w_[kSeq]); }

bool Journal::SeqValid(uint64_t token) const {
  // The reads before this fence happen before the sequence load below
  // (the seqlock's acquire fence, pairing with the writer's release).
  std::atomic_thread_fence(std::memory_order_acquire);
  return std::atomic_ref<uint64_t>(w_[kSeq]).load(std::memory_order_relaxed) ==
         token;
}

void Journal::BeginUnjournaled() {
  StoreWord(&w_[kSeq], LoadWord(&w_[kSeq]) | 1);
  // The odd sequence is visible before the map writes that follow.
  std::atomic_thread_fence(std::memory_order_release);
}

void Journal::EndUnjournaled() {
  // No epoch bump: the writer bumped the versions of what it changed. A
  // writer killed in between leaves kSeq odd; recovery bumps the epoch.
  StoreWord(&w_[kSeq], LoadWord(&w_[kSeq]) + 1);
}

uint64_t Journal::Version(uint64_t hash) const {
  return LoadWord(&w_[kVersions + (hash & (kWatchSlots - 1))]);
}

void Journal::Bump(uint64_t hash) {
  // After the map write: a WATCH that read the old version (under the
  // lock) sees the change at EXEC.
  uint64_t* v = &w_[kVersions + (hash & (kWatchSlots - 1))];
  StoreWord(v, LoadWord(v) + 1);
}

uint64_t Journal::VersionSum() const {
  uint64_t sum = 0;
  for (size_t i = 0; i < kWatchSlots; ++i) sum += LoadWord(&w_[kVersions + i]);
  return sum;
}

uint64_t Journal::Epoch() const { return LoadWord(&w_[kEpoch]); }

uint64_t Journal::Counter(Word w) const { return LoadWord(&w_[w]); }

void Journal::SetWord(Word w, uint64_t v) { StoreWord(&w_[w], v); }

void Journal::Add(Word w) { StoreWord(&w_[w], LoadWord(&w_[w]) + 1); }

void Journal::AppendRecord(std::string* rec, uint64_t ha, uint64_t hb,
                           const std::string_view* next,
                           const std::string_view* old) {
  uint32_t nl = next != nullptr ? static_cast<uint32_t>(next->size())
                                : kNoBlob;
  uint32_t ol = old != nullptr ? static_cast<uint32_t>(old->size())
                               : kNoBlob;
  RecordHead head{ha, hb, nl, ol};
  rec->append(reinterpret_cast<const char*>(&head), sizeof(head));
  if (next != nullptr) rec->append(next->data(), next->size());
  if (old != nullptr) rec->append(old->data(), old->size());
  rec->resize((rec->size() + 7) & ~size_t{7}, '\0');
}

void Journal::AppendPatch(std::string* rec, uint64_t ha, uint64_t hb,
                          std::string_view pieces) {
  RecordHead head{ha, hb, static_cast<uint32_t>(pieces.size()) | kPatch, 0};
  rec->append(reinterpret_cast<const char*>(&head), sizeof(head));
  rec->append(pieces.data(), pieces.size());
  rec->resize((rec->size() + 7) & ~size_t{7}, '\0');
}

bool Journal::Diff(std::string_view before, std::string_view after,
                   size_t base, std::string* pieces) {
  const size_t n = after.size();
  if (before.size() != n || n == 0 || base + n > kNoBlob) return false;
  pieces->clear();
  const char* a = before.data();
  const char* b = after.data();
  constexpr size_t kGap = 16;
  size_t i = 0;
  while (i < n) {
    // Equal blocks pass by memcmp; then to the first difference.
    const size_t block = std::min<size_t>(64, n - i);
    if (std::memcmp(a + i, b + i, block) == 0) {
      i += block;
      continue;
    }
    while (a[i] == b[i]) ++i;
    // The piece ends at the last difference that has fewer than kGap
    // equal bytes before the next one.
    size_t end = i + 1;
    for (size_t j = end, same = 0; j < n && same < kGap; ++j) {
      if (a[j] == b[j]) {
        ++same;
      } else {
        end = j + 1;
        same = 0;
      }
    }
    const uint32_t head[2] = {static_cast<uint32_t>(base + i),
                              static_cast<uint32_t>(end - i)};
    pieces->append(reinterpret_cast<const char*>(head), sizeof(head));
    pieces->append(b + i, end - i);
    if (pieces->size() > n / 2) return false;
    i = end;
  }
  return !pieces->empty();
}

bool Journal::ReserveRecords(uint64_t bytes) {
  if (bytes > cap_) return true;  // no commit's: Parse refuses it
  const size_t words = (bytes + 7) / 8;
  if (words <= reserved_words_) return true;
  const size_t want = std::min(arr_.size() - kRecords,
                               std::max(words, reserved_words_ * 2));
  if (!arr_.Reserve(kRecords + reserved_words_, want - reserved_words_)) {
    return false;
  }
  reserved_words_ = want;
  return true;
}

bool Journal::Commit(const std::string& rec, uint64_t count,
                     const ApplyFn& apply) {
  // Records past what this process reserved before: reserve them first (a
  // full /dev/shm fails the commit here, before anything changed). Another
  // process may have reserved them already; reserving again keeps them.
  if (!ReserveRecords(rec.size())) return false;
  std::memcpy(&w_[kRecords], rec.data(), rec.size());
  StoreWord(&w_[kCount], count);
  StoreWord(&w_[kBytes], rec.size());
  StoreWord(&w_[kSum], shmc::HashBytes(rec.data(), rec.size()));
  StoreWord(&w_[kDone], 0);
  // Release: the records are complete before the journal says "applying".
  StoreWord(&w_[kState], kApplying);
  BeginUnjournaled();
  // The sum is for a commit someone else finishes (Recover): this writer
  // has just written the records it applies, and does not hash them again.
  return Finish(apply, false);
}

void Journal::Recover(const ApplyFn& apply) {
  if (LoadWord(&w_[kState]) != kIdle) Add(kRecovered);
  Finish(apply, true);
  Add(kEpoch);  // the dead writer's version bumps may be missing
}

// The records, checked against the journal's bounds (and, with `sum`,
// against its checksum); false if damaged.
bool Journal::Parse(std::vector<Record>* out, bool sum) const {
  uint64_t count = LoadWord(&w_[kCount]);
  uint64_t bytes = LoadWord(&w_[kBytes]);
  if (bytes > cap_ || count > bytes / sizeof(RecordHead)) return false;
  const char* p = reinterpret_cast<const char*>(&w_[kRecords]);
  if (sum && shmc::HashBytes(p, bytes) != LoadWord(&w_[kSum])) return false;
  size_t off = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (bytes - off < sizeof(RecordHead)) return false;
    Record r;
    RecordHead head;
    std::memcpy(&head, p + off, sizeof(head));
    r.ha = head.ha;
    r.hb = head.hb;
    uint32_t nl = head.new_len, ol = head.old_len;
    off += sizeof(head);
    r.has_new = nl != kNoBlob;
    r.has_old = ol != kNoBlob;
    if (r.has_new && (nl & kPatch) != 0) {
      r.patch = true;
      nl &= ~kPatch;
      if (ol != 0) return false;  // a patch keeps nothing
    }
    size_t n = r.has_new ? nl : 0, o = r.has_old ? ol : 0;
    if (n > bytes - off || o > bytes - off - n) return false;
    r.next = std::string_view(p + off, n);
    r.old = std::string_view(p + off + n, o);
    off = (off + n + o + 7) & ~size_t{7};
    if (off > bytes) return false;
    out->push_back(r);
  }
  return true;
}

// Applies (or undoes) the records from where the journal stands; true when
// they were applied. Ends idle, with the sequence even.
bool Journal::Finish(const ApplyFn& apply, bool sum) {
  std::vector<Record> recs;
  bool applied = true;
  uint64_t state = LoadWord(&w_[kState]);
  // The records a dead writer left were reserved by it; a length it never
  // wrote (damage) is reserved before it is read, or read as damage.
  if (state != kIdle &&
      (!ReserveRecords(LoadWord(&w_[kBytes])) || !Parse(&recs, sum))) {
    std::fprintf(stderr, "shmkv: the commit journal is damaged; its commit "
                         "is dropped\n");
    Add(kDropped);
    state = kIdle;
    applied = false;
  }
  uint64_t done = std::min<uint64_t>(LoadWord(&w_[kDone]), recs.size());
  if (state == kApplying) {
    // A record a dead writer applied but had not counted is applied again:
    // each record sets its key's final state.
    for (; done < recs.size(); ++done) {
      const Record& r = recs[done];
      const Op op = r.patch ? Op::kPatch : r.has_new ? Op::kPut : Op::kErase;
      if (!apply(r.ha, r.hb, op, r.next)) break;
      StoreWord(&w_[kDone], done + 1);
    }
    if (done < recs.size()) {
      // The record that failed changed nothing: undo those before it.
      state = kUndoing;
      StoreWord(&w_[kState], kUndoing);
    }
  }
  if (state == kUndoing) {
    applied = false;
    Add(kUndone);
    // In reverse, so each old value gets back the room it had. A record
    // that kept no old blob (an empty one: no blob is empty) replaced a
    // key, and the store journals those after every key it adds, the only
    // records that can fail: none of them is among those undone.
    while (done > 0) {
      const Record& r = recs[done - 1];
      bool kept = !r.patch && (!r.has_old || !r.old.empty());
      if (!kept ||
          !apply(r.ha, r.hb, r.has_old ? Op::kPut : Op::kErase, r.old)) {
        std::fprintf(stderr, "shmkv: cannot undo a journal record\n");
      }
      StoreWord(&w_[kDone], --done);
    }
  }
  StoreWord(&w_[kState], kIdle);
  uint64_t s = LoadWord(&w_[kSeq]);
  if (s & 1) StoreWord(&w_[kSeq], s + 1);
  return applied;
}

}  // namespace shmkv
