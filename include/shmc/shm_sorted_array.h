// ShmSortedArray<Key, Value, Alloc, Compare>: a read-only index of
// fixed-size records, built once into shared memory and searched in place by
// any number of processes (shmc addition; docs/layout/sorted_array.md).
//
//   builder:  Build(key, records)  or  BuildFromFile(key, path)
//             or BeginBuild(key, n) + Append(k, v) * n + CommitBuild()
//   readers:  InitForRead(key); Find(k); LowerBound(k); for (auto e : arr)
//             stale() / Refresh() to move to a newer build
//
// A build never touches the data readers are using. It fills a new data
// segment (key + "0" or key + "1", alternately), seals it, then publishes it
// by storing its generation in the directory segment at `key`; the previous
// data segment is unlinked, but readers that mapped it keep reading it,
// unchanged, until they Refresh(). version() is the generation a reader
// reads, latest_version() the one published. A builder that dies leaves the
// published data as it was; the next build takes over its lease and
// replaces the unfinished segment. Builds hold the directory's writer
// lease: a second concurrent builder gets kWriterBusy.
//
// Search: kSorted (the default) is a branch-free binary search over keys in
// order; kEytzinger lays keys out in BFS order and prefetches the line of
// descendants log2(64 / sizeof(Key)) levels down (3 for 8-byte keys),
// which wins on point lookups once the keys outgrow the caches but makes
// in-order iteration jump about (bench/RESULTS.md). Equal keys are
// allowed; Find and LowerBound return the first of them.
//
// Limits: Key and Value are trivially copyable, at most 1 MiB each; up to
// 2^40 records. Every process must use the same Compare (not recorded in
// the segment; the types' sizes and alignments are). Pointers and iterators
// stay valid until Refresh() or destruction of the reader object.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/detail/process.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/sorted_layout.h"
#include "shmc/detail/table_geometry.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

namespace detail {

// Keys some builder object of this process is building. The writer lease
// is per process, so it cannot tell two builders of one process apart.
// Entries are tagged with the pid: a child of fork() inherits none.
inline bool ClaimLocalBuild(const std::string& key, bool claim) {
  static std::mutex mu;
  static std::map<std::string, pid_t> keys;
  std::lock_guard<std::mutex> lock(mu);
  pid_t me = getpid();
  auto it = keys.find(key);
  if (!claim) {
    if (it != keys.end() && it->second == me) keys.erase(it);
    return true;
  }
  if (it != keys.end() && it->second == me) return false;
  keys[key] = me;
  return true;
}

}  // namespace detail

template <class Key, class Value, class Alloc = SVIPC,
          class Compare = std::less<Key>>
class ShmSortedArray {
  static_assert(std::is_trivially_copyable<Key>::value &&
                    std::is_trivially_copyable<Value>::value,
                "keys and values are stored in shared memory as bytes");
  static_assert(sizeof(Key) <= detail::kSortedMaxItemSize &&
                    sizeof(Value) <= detail::kSortedMaxItemSize,
                "keys and values are at most 1 MiB");

 public:
  static constexpr uint32_t kLayoutVersion = detail::kSortedLayoutVersion;
  static constexpr uint64_t kMaxRecords = detail::kSortedMaxRecords;

  struct Entry {
    const Key& key;
    const Value& value;
  };

  // Forward iterator over records in key order.
  class const_iterator {
   public:
    const_iterator() = default;
    Entry operator*() const { return {key(), value()}; }
    const Key& key() const { return a_->v_.keys[pos_]; }
    const Value& value() const { return a_->v_.values[pos_]; }
    const_iterator& operator++() {
      pos_ = a_->v_.eytz ? detail::EytzNext(pos_, a_->v_.n) : pos_ + 1;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return pos_ == o.pos_; }
    bool operator!=(const const_iterator& o) const { return pos_ != o.pos_; }

   private:
    friend class ShmSortedArray;
    const_iterator(const ShmSortedArray* a, uint64_t pos) : a_(a), pos_(pos) {}
    const ShmSortedArray* a_ = nullptr;
    uint64_t pos_ = 0;  // array index; end() is n (kSorted) or 0 (kEytzinger)
  };
  using iterator = const_iterator;

  // [first, last) for range-for.
  struct Range {
    const_iterator first, last;
    const_iterator begin() const { return first; }
    const_iterator end() const { return last; }
    bool empty() const { return first == last; }
  };

  ShmSortedArray() = default;
  explicit ShmSortedArray(Compare cmp) : cmp_(std::move(cmp)) {}
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmSortedArray);
  ~ShmSortedArray() { AbortBuild(); }

  // --- building -------------------------------------------------------
  // Publishes `records` (sorted here, stably, if they are not) as the next
  // version under `shm_key`; afterwards this object reads that version.
  // Errors: create errors of the directory and the data segment;
  // kWriterBusy (another live builder); kInvalidArgument for too many
  // records; kAlreadyInitialized when a build is under way on this object.
  bool Build(const std::string& shm_key,
             std::vector<std::pair<Key, Value>> records,
             SortedLayout layout = SortedLayout::kSorted) {
    auto less = [this](const std::pair<Key, Value>& a,
                       const std::pair<Key, Value>& b) {
      return cmp_(a.first, b.first);
    };
    if (!std::is_sorted(records.begin(), records.end(), less)) {
      std::stable_sort(records.begin(), records.end(), less);
    }
    if (!BeginBuild(shm_key, records.size(), layout)) return false;
    for (const auto& r : records) {
      if (!Append(r.first, r.second)) return AbortAfterError();
    }
    return CommitBuild();
  }

  // Builds from a file of packed records, each sizeof(Key) key bytes then
  // sizeof(Value) value bytes, already in key order (checked).
  // Errors: as Build, and kNotFound, kPermissionDenied or kSystem for
  // the file; kInvalidArgument for a size that is not whole records, or
  // records out of order.
  bool BuildFromFile(const std::string& shm_key, const std::string& path,
                     SortedLayout layout = SortedLayout::kSorted) {
    const char* who = "ShmSortedArray::BuildFromFile";
    error_.Clear();
    constexpr size_t kRecord = sizeof(Key) + sizeof(Value);
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"),
                                            &std::fclose);
    struct stat st;
    if (!f || fstat(fileno(f.get()), &st) != 0) {
      int e = errno;
      return detail::Segment<Alloc>::Fail(
          &error_, e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kSystem, e,
          shm_key, who, "cannot open %s", path.c_str());
    }
    uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size % kRecord != 0) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "%s: %" PRIu64 " bytes is not a whole number of %zu-byte records "
          "(%" PRIu64 " bytes left over)", path.c_str(), size, kRecord,
          size % kRecord);
    }
    uint64_t n = size / kRecord;
    if (!BeginBuild(shm_key, n, layout)) return false;
    std::vector<char> buf(kRecord * 4096);
    for (uint64_t done = 0; done < n;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(n - done, 4096));
      size_t got = std::fread(buf.data(), kRecord, want, f.get());
      if (got == 0) {
        int e = std::ferror(f.get()) ? errno : 0;
        Fail(e != 0 ? ErrorCode::kSystem : ErrorCode::kInvalidArgument, who,
             e, "%s ended after %" PRIu64 " of %" PRIu64 " records (changed "
             "while reading?)", path.c_str(), done, n);
        return AbortAfterError();
      }
      for (size_t i = 0; i < got; ++i) {
        const char* r = buf.data() + i * kRecord;
        if (!AppendBytes(r, r + sizeof(Key))) return AbortAfterError();
      }
      done += got;
    }
    return CommitBuild();
  }

  // Streaming build of exactly `records` records, appended in key order.
  bool BeginBuild(const std::string& shm_key, uint64_t records,
                  SortedLayout layout = SortedLayout::kSorted) {
    const char* who = "ShmSortedArray::BeginBuild";
    error_.Clear();
    if (build_) {
      return Fail(ErrorCode::kAlreadyInitialized, who, 0,
                  "a build of %s is already in progress on this object",
                  build_->key.c_str());
    }
    if (records > kMaxRecords ||
        static_cast<uint64_t>(layout) > 1) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "records must be at most 2^40 and layout kSorted or kEytzinger");
    }
    auto b = std::make_unique<BuildState>();
    b->key = shm_key;
    if (!detail::ClaimLocalBuild(shm_key, true)) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kWriterBusy, 0, shm_key, who,
          "another object of this process is building it");
    }
    b->claimed = true;
    // Never kSharedWriters: two builders would fill the same slot.
    int flags = DefaultCreateFlags() & ~kSharedWriters;
    if (!b->dir.OpenForWrite(shm_key, DirSpec(), flags, nullptr, who,
                             &error_) ||
        !b->dir.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    b->dir_hdr = DirHeader(b->dir.base());
    b->prev = b->dir_hdr->current.load(std::memory_order_acquire);
    b->gen = (b->prev >> 1) + 1;
    b->slot = b->prev == 0 ? 0 : (b->prev & 1) ^ 1;
    b->geo = Geometry(records, static_cast<uint64_t>(layout));
    std::string data_key = detail::SortedDataKey(shm_key, b->slot);
    // Whatever holds the slot is an unfinished build or a version two
    // builds old; processes that mapped it keep their mapping.
    // Only a sorted array's data segment is removed from the slot: a
    // foreign or empty file of that name is left alone and stops the build.
    Alloc alloc;
    detail::RemoveResult rr = detail::RemoveOwnSegment(
        data_key, &alloc, detail::ContainerKind::kSortedArray);
    if (rr == detail::RemoveResult::kForeign) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kAlreadyExists, 0, data_key, who,
          "the data slot's name holds something that is not a sorted "
          "array's data segment; it is left alone (remove or rename it)");
    }
    if (rr == detail::RemoveResult::kFailed) {
      return detail::Segment<Alloc>::Fail(
          &error_, detail::AllocErrorCode(alloc.last_errno()),
          alloc.sys_errno(), data_key, who, "cannot remove the old data "
          "segment: %s", detail::AllocErrorText(alloc.last_errno()));
    }
    if (!b->data.OpenForWrite(data_key, DataSpec(b->geo, b->gen),
                              kCreateIfNotExist, nullptr, who, &error_)) {
      return false;
    }
    if (!b->data.newly_created()) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kAlreadyExists, 0, data_key, who,
          "another process created the data segment while this one held "
          "the build lease");
    }
    char* base = b->data.base();
    b->keys = reinterpret_cast<Key*>(base + b->geo.keys_offset());
    b->values = reinterpret_cast<Value*>(base + b->geo.values_offset());
    // The slot no record uses is part of the checksum: make it zero.
    uint64_t unused = b->geo.eytzinger() ? 0 : records;
    std::memset(static_cast<void*>(b->keys + unused), 0, sizeof(Key));
    std::memset(static_cast<void*>(b->values + unused), 0, sizeof(Value));
    b->next = b->geo.eytzinger() ? detail::EytzFirst(records) : 0;
    b->start_ns = detail::MonotonicNs();
    build_ = std::move(b);
    return true;
  }

  // Appends the next record; it must not be smaller than the previous one.
  bool Append(const Key& k, const Value& v) {
    return AppendBytes(reinterpret_cast<const char*>(&k),
                       reinterpret_cast<const char*>(&v));
  }

  // Seals and publishes the build, then reads it (as InitForRead would).
  bool CommitBuild() {
    const char* who = "ShmSortedArray::CommitBuild";
    if (!build_) {
      return Fail(ErrorCode::kNotInitialized, who, 0, "no build in progress");
    }
    BuildState& b = *build_;
    if (b.appended != b.geo.records) {
      return Fail(ErrorCode::kInvalidArgument, who, 0,
                  "%" PRIu64 " of the %" PRIu64 " announced records were "
                  "appended", b.appended, b.geo.records);
    }
    char* base = b.data.base();
    auto* hdr = DataHeader(base);
    hdr->checksum = detail::SortedChecksum(base, b.geo);
    hdr->build_ns = detail::MonotonicNs() - b.start_ns;
    // SYNC POINT (release): the arrays and checksum are complete before any
    // reader can see the segment sealed (acquire in AttachData).
    hdr->sealed.store(b.gen, std::memory_order_release);
    if (!b.data.Sync()) {
      return Fail(ErrorCode::kSystem, who, errno,
                  "cannot flush the data segment to its file");
    }
    b.dir_hdr->publish_time_ns.store(detail::RealtimeNs(),
                                     std::memory_order_relaxed);
    b.dir_hdr->builds.fetch_add(1, std::memory_order_relaxed);
    // SYNC POINT (release): publishes the new generation; readers load it
    // with acquire before attaching the slot it names.
    b.dir_hdr->current.store(b.gen << 1 | b.slot, std::memory_order_release);
    b.dir.Sync();
    if (b.prev != 0) {
      // Readers of the previous version keep their mappings; new ones
      // follow the directory to the new slot.
      Alloc alloc;
      std::string old_key = detail::SortedDataKey(b.key, b.prev & 1);
      detail::RemoveResult rr = detail::RemoveOwnSegment(
          old_key, &alloc, detail::ContainerKind::kSortedArray);
      if (rr == detail::RemoveResult::kFailed ||
          rr == detail::RemoveResult::kForeign) {
        detail::Log(kWarning, "%s(%s): published version %" PRIu64
                    " but could not remove %s: %s\n", who, b.key.c_str(),
                    b.gen, old_key.c_str(),
                    detail::AllocErrorText(alloc.last_errno()));
      }
    }
    std::string key = b.key;
    build_.reset();  // releases the lease and the writable mappings
    Detach();
    return AttachReader(key, who);
  }

  // Drops a build in progress: the published version is untouched.
  void AbortBuild() {
    if (!build_) return;
    std::string data_key = build_->data.key();
    bool created = build_->data.attached();
    build_->data.Reset();
    if (created) {
      Alloc alloc;
      detail::RemoveOwnSegment(data_key, &alloc,
                               detail::ContainerKind::kSortedArray);
    }
    build_.reset();
  }

  // --- reading --------------------------------------------------------
  // Attaches the published version read-only.
  // Errors: attach errors of the directory and of the data segment it
  // names; kNotReady when nothing was published yet.
  bool InitForRead(const std::string& shm_key) {
    const char* who = "ShmSortedArray::InitForRead";
    error_.Clear();
    if (dir_.attached()) {
      return Fail(ErrorCode::kAlreadyInitialized, who, 0,
                  "already reading %s", dir_.key().c_str());
    }
    return AttachReader(shm_key, who);
  }

  // Moves to the latest published version if this one is stale. On
  // failure the current version stays readable. *changed tells whether
  // pointers and iterators from before were invalidated.
  bool Refresh(bool* changed = nullptr) {
    const char* who = "ShmSortedArray::Refresh";
    if (changed != nullptr) *changed = false;
    if (!dir_.attached()) {
      return Fail(ErrorCode::kNotInitialized, who, 0, "not initialized");
    }
    if (!stale()) return true;
    error_.Clear();
    std::unique_ptr<detail::Segment<Alloc>> seg;
    View v;
    if (!AttachData(who, &seg, &v)) return false;
    data_ = std::move(seg);
    v_ = v;
    if (changed != nullptr) *changed = true;
    return true;
  }

  // Generation this object reads (0: none), and the latest published.
  uint64_t version() const { return v_.gen; }
  uint64_t latest_version() const {
    if (!dir_.attached()) return 0;
    return DirHeader(dir_.base())->current.load(std::memory_order_acquire) >>
           1;
  }
  // A newer version was published since this object attached.
  bool stale() const { return latest_version() > v_.gen; }

  size_t size() const { return static_cast<size_t>(v_.n); }
  bool empty() const { return v_.n == 0; }
  SortedLayout layout() const {
    return v_.eytz ? SortedLayout::kEytzinger : SortedLayout::kSorted;
  }

  // The value of the first record whose key equals k, or nullptr.
  const Value* Find(const Key& k) const {
    uint64_t i = LowerIndex(k);
    if (i == EndIndex() || cmp_(k, v_.keys[i])) return nullptr;
    return &v_.values[i];
  }
  // First record with key >= k / key > k.
  const_iterator LowerBound(const Key& k) const {
    return const_iterator(this, LowerIndex(k));
  }
  const_iterator UpperBound(const Key& k) const {
    return const_iterator(this, Search<true>(k));
  }
  // Records with lo <= key < hi; all records equal to k.
  Range Between(const Key& lo, const Key& hi) const {
    if (!cmp_(lo, hi)) return Range{end(), end()};
    return Range{LowerBound(lo), LowerBound(hi)};
  }
  Range EqualRange(const Key& k) const {
    return Range{LowerBound(k), UpperBound(k)};
  }

  const_iterator begin() const {
    return const_iterator(this, v_.eytz ? detail::EytzFirst(v_.n) : 0);
  }
  const_iterator end() const { return const_iterator(this, EndIndex()); }

  // Reads every byte: the checksum written at build time, and the key
  // order under this Compare. kCorrupted with the first problem found.
  bool Verify() {
    const char* who = "ShmSortedArray::Verify";
    if (!data_) return Fail(ErrorCode::kNotInitialized, who, 0, "not read");
    detail::SortedGeometry g = Geometry(v_.n, v_.eytz ? 1 : 0);
    uint64_t want = DataHeader(data_->base())->checksum;
    uint64_t have = detail::SortedChecksum(data_->base(), g);
    if (want != have) {
      return Fail(ErrorCode::kCorrupted, who, 0, "version %" PRIu64
                  ": checksum %016" PRIx64 ", stored %016" PRIx64, v_.gen,
                  have, want);
    }
    uint64_t rank = 0;
    const Key* prev = nullptr;
    for (const_iterator it = begin(); it != end(); ++it, ++rank) {
      if (prev != nullptr && cmp_(it.key(), *prev)) {
        return Fail(ErrorCode::kCorrupted, who, 0, "version %" PRIu64
                    ": record %" PRIu64 " is smaller than the one before "
                    "(another Compare?)", v_.gen, rank);
      }
      prev = &it.key();
    }
    return true;
  }

  const Error& last_error() const { return error_; }

 private:
  struct View {
    const Key* keys = nullptr;
    const Value* values = nullptr;
    uint64_t n = 0;
    uint64_t gen = 0;
    bool eytz = false;
  };

  struct BuildState {
    BuildState() = default;
    BuildState(const BuildState&) = delete;
    BuildState& operator=(const BuildState&) = delete;
    ~BuildState() {
      if (claimed) detail::ClaimLocalBuild(key, false);
    }
    std::string key;
    bool claimed = false;
    detail::Segment<Alloc> dir;   // read-write, holding the lease
    detail::Segment<Alloc> data;  // the new version, read-write
    detail::SortedDirHeader* dir_hdr = nullptr;
    detail::SortedGeometry geo;
    uint64_t prev = 0, gen = 0, slot = 0;
    uint64_t appended = 0, next = 0, last = 0;
    uint64_t start_ns = 0;
    Key* keys = nullptr;
    Value* values = nullptr;
  };

  // Elements per cache line: Eytzinger node k's descendants log2(this)
  // levels down are contiguous from index k * kStride.
  static constexpr uint64_t kStride =
      sizeof(Key) >= 32 ? 2 : 64 / sizeof(Key);

  static detail::SortedDirHeader* DirHeader(char* base) {
    return reinterpret_cast<detail::SortedDirHeader*>(
        base + sizeof(detail::SegmentHeader));
  }
  static detail::SortedDataHeader* DataHeader(char* base) {
    return reinterpret_cast<detail::SortedDataHeader*>(
        base + sizeof(detail::SegmentHeader));
  }

  static detail::SortedGeometry Geometry(uint64_t records, uint64_t layout) {
    detail::SortedGeometry g;
    g.key_size = sizeof(Key);
    g.key_align = alignof(Key);
    g.value_size = sizeof(Value);
    g.value_align = alignof(Value);
    g.records = records;
    g.layout = layout;
    return g;
  }

  static detail::SegmentSpec DirSpec() {
    return detail::SortedDirSpec(Geometry(0, 0));
  }
  static detail::SegmentSpec DataSpec(const detail::SortedGeometry& g,
                                      uint64_t gen) {
    return detail::SortedDataSpec(g, gen);
  }

  __attribute__((format(printf, 5, 6))) bool Fail(ErrorCode code,
                                                  const char* who,
                                                  int sys_errno,
                                                  const char* fmt, ...) {
    char msg[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);
    std::string key = build_ ? build_->key : dir_.key();
    return detail::Segment<Alloc>::Fail(&error_, code, sys_errno, key, who,
                                        "%s", msg);
  }

  bool AbortAfterError() {
    AbortBuild();
    return false;
  }

  bool AppendBytes(const char* k, const char* v) {
    const char* who = "ShmSortedArray::Append";
    if (!build_) {
      return Fail(ErrorCode::kNotInitialized, who, 0, "no build in progress");
    }
    BuildState& b = *build_;
    if (b.appended == b.geo.records) {
      return Fail(ErrorCode::kInvalidArgument, who, 0,
                  "more records than the %" PRIu64 " announced",
                  b.geo.records);
    }
    uint64_t pos = b.geo.eytzinger() ? b.next : b.appended;
    std::memcpy(static_cast<void*>(b.keys + pos), k, sizeof(Key));
    if (b.appended > 0 && cmp_(b.keys[pos], b.keys[b.last])) {
      return Fail(ErrorCode::kInvalidArgument, who, 0,
                  "record %" PRIu64 " is out of order (smaller than the one "
                  "before)", b.appended);
    }
    std::memcpy(static_cast<void*>(b.values + pos), v, sizeof(Value));
    b.last = pos;
    b.next = b.geo.eytzinger() ? detail::EytzNext(pos, b.geo.records) : 0;
    ++b.appended;
    return true;
  }

  void Detach() {
    data_.reset();
    dir_.Reset();
    v_ = View();
  }

  bool AttachReader(const std::string& shm_key, const char* who) {
    if (!dir_.OpenForRead(shm_key, DirSpec(), false, who, &error_)) {
      return false;
    }
    std::unique_ptr<detail::Segment<Alloc>> seg;
    View v;
    if (!AttachData(who, &seg, &v)) {
      dir_.Reset();
      return false;
    }
    data_ = std::move(seg);
    v_ = v;
    return true;
  }

  // Maps the data segment the directory names. A build may publish and
  // unlink between reading the directory and attaching; that shows as a
  // missing or unsealed segment while the directory moved on, and is
  // retried quietly. Failures with the directory unchanged are real.
  bool AttachData(const char* who,
                  std::unique_ptr<detail::Segment<Alloc>>* out, View* v) {
    const detail::SortedDirHeader* dh = DirHeader(dir_.base());
    for (int attempt = 0;; ++attempt) {
      uint64_t cur = dh->current.load(std::memory_order_acquire);
      if (cur == 0) {
        return Fail(ErrorCode::kNotReady, who, 0,
                    "no version has been built yet");
      }
      std::string data_key = detail::SortedDataKey(dir_.key(), cur & 1);
      auto seg = std::make_unique<detail::Segment<Alloc>>();
      Error e;
      bool ok;
      {
        detail::LogMute quiet;
        ok = TryAttachData(data_key, who, seg.get(), v, &e);
      }
      if (ok && v->gen >= (cur >> 1)) {
        *out = std::move(seg);
        return true;
      }
      if (ok) {
        e.code = ErrorCode::kCorrupted;
        e.message = std::string(who) + "(" + data_key + "): corrupted: holds "
                    "version " + std::to_string(v->gen) + ", the directory "
                    "names " + std::to_string(cur >> 1);
      }
      bool moved = dh->current.load(std::memory_order_acquire) != cur;
      if (!moved || attempt >= 100) {
        error_ = e;
        detail::Log(kError, "%s\n", e.message.c_str());
        return false;
      }
    }
  }

  bool TryAttachData(const std::string& data_key, const char* who,
                     detail::Segment<Alloc>* seg, View* v, Error* e) {
    detail::SortedGeometry g;
    uint64_t gen = 0;
    if (!detail::OpenSortedData(data_key, Geometry(0, 0), who, seg, &g, &gen,
                                e)) {
      return false;
    }
    // SYNC POINT (acquire): pairs with the builder's release of `sealed`.
    uint64_t sealed =
        DataHeader(seg->base())->sealed.load(std::memory_order_acquire);
    if (sealed != gen) {
      return detail::Segment<Alloc>::Fail(
          e, ErrorCode::kNotReady, 0, data_key, who,
          "version %" PRIu64 " is not sealed (its build is running or died)",
          gen);
    }
    char* base = seg->base();
    v->keys = reinterpret_cast<const Key*>(base + g.keys_offset());
    v->values = reinterpret_cast<const Value*>(base + g.values_offset());
    v->n = g.records;
    v->gen = gen;
    v->eytz = g.eytzinger();
    return true;
  }

  uint64_t EndIndex() const { return v_.eytz ? 0 : v_.n; }

  // Whether the search goes right of `key`: key < x for a lower bound,
  // key <= x for an upper bound.
  template <bool kUpper>
  bool Right(const Key& key, const Key& x) const {
    return kUpper ? !cmp_(x, key) : cmp_(key, x);
  }

  uint64_t LowerIndex(const Key& x) const { return Search<false>(x); }

  // Array index of the first record with key >= x (kUpper: key > x), or
  // EndIndex().
  template <bool kUpper>
  uint64_t Search(const Key& x) const {
    const Key* a = v_.keys;
    if (v_.eytz) {
      uint64_t k = 1;
      while (k <= v_.n) {
        // Prefetch never faults: past the array end it is a no-op.
        detail::PrefetchLine(reinterpret_cast<const void*>(
            reinterpret_cast<uintptr_t>(a) + k * kStride * sizeof(Key)));
        k = 2 * k + static_cast<uint64_t>(Right<kUpper>(a[k], x));
      }
      // Undo the right turns taken after the last left one.
      return k >> __builtin_ffsll(static_cast<long long>(~k));
    }
    uint64_t len = v_.n;
    if (len == 0) return 0;
    const Key* base = a;
    while (len > 1) {
      uint64_t half = len / 2;
      // Both candidates of the next step, fetched while this one compares
      // (a threshold on `half` was tried and measured no faster).
      detail::PrefetchLine(base + half / 2);
      detail::PrefetchLine(base + half + half / 2);
      base = Right<kUpper>(base[half], x) ? base + half : base;  // a cmov
      len -= half;
    }
    return static_cast<uint64_t>(base - a) +
           static_cast<uint64_t>(Right<kUpper>(*base, x));
  }

  Compare cmp_;
  Error error_;
  detail::Segment<Alloc> dir_;                     // read-only directory
  std::unique_ptr<detail::Segment<Alloc>> data_;  // read-only version
  View v_;
  std::unique_ptr<BuildState> build_;
};

}  // namespace shmc
