#include "server/store.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>

#include "shmc/hash.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_hash_map.h"
#include "shmc/svipc_shm_alloc.h"

namespace shmkv {

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

const char* StatusText(Store::Status s) {
  switch (s) {
    case Store::Status::kOk: return "ok";
    case Store::Status::kNotFound: return "not found";
    case Store::Status::kExists: return "exists";
    case Store::Status::kNotInteger:
      return "value is not an integer or out of range";
    case Store::Status::kTooLarge: return "key or value too large";
    case Store::Status::kFull: return "out of memory: the store is full";
    case Store::Status::kCollision:
      return "key hash collision with another key";
  }
  return "?";
}

std::string ControlKey(const StoreConfig& cfg) {
  if (cfg.backend == Backend::kPosix) return cfg.name + ".ctl";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/shmkv-%016" PRIx64 ".ctl",
                shmc::HashBytes(cfg.name.data(), cfg.name.size()));
  return buf;
}

namespace {

struct KeyHash {
  uint64_t a, b;
  bool operator==(const KeyHash& o) const { return a == o.a && b == o.b; }
};

// A second 64-bit hash, independent of shmc::HashBytes (other constants).
uint64_t Hash2(const char* p, size_t n) {
  uint64_t h = 0x9ae16a3b2f90404fULL ^ (n * 0xc2b2ae3d27d4eb4fULL);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = shmc::Mix64(h ^ (w * 0x87c37b91114253d5ULL)) + 0x52dce729;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  return shmc::Mix64(h ^ tail ^ (static_cast<uint64_t>(n) << 59));
}

KeyHash HashKey(std::string_view k) {
  return KeyHash{shmc::HashBytes(k.data(), k.size()), Hash2(k.data(), k.size())};
}

constexpr size_t kBlobHeader = 16;
constexpr size_t kNodeBytes = 64;  // value node payload

// A parsed blob (views into a buffer).
struct Blob {
  int64_t expire_ms = 0;
  std::string_view key, value;
  bool Parse(const char* p, size_t n) {
    if (n < kBlobHeader) return false;
    uint64_t e;
    uint32_t klen;
    std::memcpy(&e, p, 8);
    std::memcpy(&klen, p + 8, 4);
    if (klen > n - kBlobHeader) return false;
    expire_ms = static_cast<int64_t>(e);
    key = std::string_view(p + kBlobHeader, klen);
    value = std::string_view(p + kBlobHeader + klen, n - kBlobHeader - klen);
    return true;
  }
  bool Expired(int64_t now) const { return expire_ms != 0 && expire_ms <= now; }
};

void MakeBlob(std::string* out, std::string_view key, std::string_view value,
              int64_t expire_ms) {
  out->resize(kBlobHeader + key.size() + value.size());
  char* p = &(*out)[0];
  uint64_t e = static_cast<uint64_t>(expire_ms);
  uint32_t klen = static_cast<uint32_t>(key.size());
  uint32_t reserved = 0;
  std::memcpy(p, &e, 8);
  std::memcpy(p + 8, &klen, 4);
  std::memcpy(p + 12, &reserved, 4);
  std::memcpy(p + kBlobHeader, key.data(), key.size());
  if (!value.empty()) {
    std::memcpy(p + kBlobHeader + key.size(), value.data(), value.size());
  }
}

// Redis's rule: an optional '-', digits, no leading zeros or spaces, and
// within int64.
bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return false;
  if (s[i] == '0' && s.size() > i + 1) return false;
  if (neg && s[i] == '0') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = v == static_cast<uint64_t>(INT64_MAX) + 1
               ? INT64_MIN : -static_cast<int64_t>(v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

template <class Alloc>
class StoreT : public Store {
 public:
  using Map = shmc::ShmHashMap<KeyHash, Alloc>;

  bool Init(const StoreConfig& cfg, bool master, std::string* err) {
    cfg_ = cfg;
    // Every process writes: the program serializes writers (the lock).
    int flags = shmc::kSharedWriters |
                (master ? shmc::kCreateIfNotExist : shmc::kNoCreate);
    shmc::SetDefaultCreateFlags(flags);
    uint64_t nodes = cfg.memory / (kNodeBytes + 16);
    if (nodes < 16) nodes = 16;
    if (!map_.InitForWrite(cfg.name, cfg.capacity, kNodeBytes, nodes)) {
      *err = map_.last_error().message;
      return false;
    }
    if (!ctl_arr_.InitForWrite(ControlKey(cfg), 1)) {
      *err = ctl_arr_.last_error().message;
      return false;
    }
    ctl_ = const_cast<ControlBlock*>(&ctl_arr_[0]);
    if (master && __atomic_load_n(&ctl_->magic, __ATOMIC_ACQUIRE) !=
                      kControlMagic) {
      pthread_mutexattr_t attr;
      pthread_mutexattr_init(&attr);
      pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
      pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
      int rc = pthread_mutex_init(&ctl_->write_lock, &attr);
      pthread_mutexattr_destroy(&attr);
      if (rc != 0) {
        *err = std::string("cannot initialize the write lock: ") +
               std::strerror(rc);
        return false;
      }
      __atomic_store_n(&ctl_->magic, kControlMagic, __ATOMIC_RELEASE);
    } else if (__atomic_load_n(&ctl_->magic, __ATOMIC_ACQUIRE) !=
               kControlMagic) {
      *err = "control segment " + ControlKey(cfg) + " is not initialized";
      return false;
    }
    if (master) {
      // A write interrupted by kill -9 of every process: finish it now.
      Locked lock(this);
      if (!map_.Recover()) {
        *err = map_.last_error().message;
        return false;
      }
    }
    return true;
  }

  bool Get(std::string_view key, std::string* value,
           int64_t* expire_ms) override {
    Blob b;
    if (!Lookup(key, &b)) return false;
    value->assign(b.value.data(), b.value.size());
    if (expire_ms != nullptr) *expire_ms = b.expire_ms;
    return true;
  }

  bool GetView(std::string_view key, std::string_view* value) override {
    Blob b;
    if (!Lookup(key, &b)) return false;
    *value = b.value;
    return true;
  }

  bool Exists(std::string_view key) override {
    Blob b;
    return Lookup(key, &b);
  }

  Status Set(std::string_view key, std::string_view value, int64_t expire_ms,
             SetMode mode, bool keep_ttl) override {
    if (key.size() > cfg_.max_key || value.size() > cfg_.max_value) {
      return Status::kTooLarge;
    }
    Locked lock(this);
    KeyHash h = HashKey(key);
    Blob old;
    Status st = ReadLocked(h, key, &old);
    if (st == Status::kCollision) return st;
    bool exists = st == Status::kOk;
    if (mode == SetMode::kIfMissing && exists) return Status::kExists;
    if (mode == SetMode::kIfExists && !exists) return Status::kNotFound;
    if (keep_ttl && exists) expire_ms = old.expire_ms;
    return Write(h, key, value, expire_ms);
  }

  Status MSet(const std::vector<std::pair<std::string_view, std::string_view>>&
                  pairs) override {
    for (const auto& kv : pairs) {
      if (kv.first.size() > cfg_.max_key ||
          kv.second.size() > cfg_.max_value) {
        return Status::kTooLarge;
      }
    }
    Locked lock(this);
    for (const auto& kv : pairs) {
      KeyHash h = HashKey(kv.first);
      Blob old;
      Status st = ReadLocked(h, kv.first, &old);
      if (st == Status::kCollision) return st;
      st = Write(h, kv.first, kv.second, 0);
      if (st != Status::kOk) return st;
    }
    return Status::kOk;
  }

  bool Del(std::string_view key) override {
    Locked lock(this);
    KeyHash h = HashKey(key);
    Blob old;
    Status st = ReadLocked(h, key, &old);
    if (st == Status::kCollision) return false;
    if (st != Status::kOk) return false;
    map_.Erase(h);
    return true;
  }

  Status IncrBy(std::string_view key, int64_t by, int64_t* out) override {
    Locked lock(this);
    KeyHash h = HashKey(key);
    Blob old;
    Status st = ReadLocked(h, key, &old);
    if (st == Status::kCollision) return st;
    int64_t v = 0, expire = 0;
    if (st == Status::kOk) {
      if (!ParseInt64(old.value, &v)) return Status::kNotInteger;
      expire = old.expire_ms;
    }
    if ((by > 0 && v > INT64_MAX - by) || (by < 0 && v < INT64_MIN - by)) {
      return Status::kNotInteger;
    }
    v += by;
    char buf[32];
    int n = std::snprintf(buf, sizeof(buf), "%" PRId64, v);
    st = Write(h, key, std::string_view(buf, static_cast<size_t>(n)), expire);
    if (st == Status::kOk) *out = v;
    return st;
  }

  Status Append(std::string_view key, std::string_view tail,
                size_t* new_len) override {
    Locked lock(this);
    KeyHash h = HashKey(key);
    Blob old;
    Status st = ReadLocked(h, key, &old);
    if (st == Status::kCollision) return st;
    std::string v;
    int64_t expire = 0;
    if (st == Status::kOk) {
      v.assign(old.value.data(), old.value.size());
      expire = old.expire_ms;
    }
    if (v.size() + tail.size() > cfg_.max_value) return Status::kTooLarge;
    v.append(tail.data(), tail.size());
    st = Write(h, key, v, expire);
    if (st == Status::kOk) *new_len = v.size();
    return st;
  }

  bool SetExpire(std::string_view key, int64_t expire_ms) override {
    Locked lock(this);
    KeyHash h = HashKey(key);
    Blob old;
    if (ReadLocked(h, key, &old) != Status::kOk) return false;
    if (expire_ms == 0 && old.expire_ms == 0) return false;  // PERSIST
    if (expire_ms != 0 && expire_ms <= NowMs()) {
      map_.Erase(h);  // a deadline in the past deletes, as in Redis
      return true;
    }
    std::string v(old.value);
    return Write(h, key, v, expire_ms) == Status::kOk;
  }

  uint64_t FlushAll() override {
    Locked lock(this);
    std::vector<KeyHash> all;
    map_.Travel([&](const KeyHash& h, const std::string&) { all.push_back(h); });
    uint64_t n = 0;
    for (const KeyHash& h : all) n += map_.Erase(h);
    return n;
  }

  // COUNT is in keys, as in Redis: slots are walked until `count` keys
  // were seen or 100 x count (at least 4096) slots were, whichever comes
  // first, so a sparse table still answers quickly. A cursor that is not a
  // position of the table ends the scan (cursor 0; Redis would mask it into
  // its table instead: docs/server.md).
  void Scan(uint64_t* cursor, size_t count,
            const std::function<void(std::string_view)>& f) override {
    typename Map::TravelPos pos;
    pos.row = static_cast<uint32_t>(*cursor >> 32);
    pos.col = static_cast<uint32_t>(*cursor);
    int64_t now = NowMs();
    size_t want = count == 0 ? 1 : count;
    size_t budget = std::max<size_t>(want * 100, 4096);
    size_t seen = 0, slots = 0;
    do {
      size_t step = std::min<size_t>(want, budget - slots);
      if (!map_.Travel(&pos, step,
                       [&](const KeyHash&, const std::string& blob) {
                         Blob b;
                         if (b.Parse(blob.data(), blob.size()) &&
                             !b.Expired(now)) {
                           f(b.key);
                         }
                         ++seen;
                       })) {
        pos.row = 0;  // not a position of this table
        pos.col = 0;
        break;
      }
      slots += step;
    } while (seen < want && slots < budget && (pos.row != 0 || pos.col != 0));
    *cursor = static_cast<uint64_t>(pos.row) << 32 | pos.col;
  }

  uint64_t Sweep(size_t count) override {
    std::vector<std::string> expired;
    int64_t now = NowMs();
    map_.Travel(&sweep_pos_, count,
                [&](const KeyHash&, const std::string& blob) {
                  Blob b;
                  if (b.Parse(blob.data(), blob.size()) && b.Expired(now)) {
                    expired.emplace_back(b.key);
                  }
                });
    uint64_t n = 0;
    for (const std::string& k : expired) n += ExpireNow(k);
    return n;
  }

  uint64_t Keys() override { return map_.size(); }
  uint64_t Capacity() override { return cfg_.capacity; }
  uint64_t MemoryTotal() override {
    return map_.link_table().total_nodes() * kNodeBytes;
  }
  uint64_t MemoryUsed() override {
    const auto& lt = map_.link_table();
    return (lt.total_nodes() - lt.free_nodes()) * kNodeBytes;
  }
  ControlBlock* control() override { return ctl_; }

 private:
  class Locked {
   public:
    explicit Locked(StoreT* s) : s_(s) { s_->Lock(); }
    ~Locked() { s_->Unlock(); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    StoreT* s_;
  };

  void Lock() {
    int rc = pthread_mutex_lock(&ctl_->write_lock);
    if (rc == EOWNERDEAD) {
      // A worker died holding the lock, maybe in the middle of a write.
      if (!map_.Recover()) {
        // Damaged intent record: nothing was touched; the next write
        // replaces the record, and `shmc check --fix` repairs the pool.
        std::fprintf(stderr, "shmkv: %s\n", map_.last_error().message.c_str());
      }
      __atomic_add_fetch(&ctl_->lock_recoveries, 1, __ATOMIC_RELAXED);
      pthread_mutex_consistent(&ctl_->write_lock);
    } else if (rc != 0) {
      std::fprintf(stderr, "shmkv: write lock failed: %s\n",
                   std::strerror(rc));
      std::abort();
    }
  }
  void Unlock() { pthread_mutex_unlock(&ctl_->write_lock); }

  // The live blob of `key` (in scratch_); an expired one is removed.
  bool Lookup(std::string_view key, Blob* b) {
    if (!Read(key, b)) return false;
    if (b->Expired(NowMs())) {
      ExpireNow(key);
      return false;
    }
    return true;
  }

  // Copies the blob of `key` into scratch_; false if absent or not this key.
  bool Read(std::string_view key, Blob* b) {
    KeyHash h = HashKey(key);
    if (!ReadBlob(h)) return false;
    return b->Parse(scratch_.data(), scratch_len_) && b->key == key;
  }

  bool ReadBlob(const KeyHash& h) {
    if (scratch_.size() < 4096) scratch_.resize(4096);
    for (int i = 0; i < 4; ++i) {
      size_t len = scratch_.size();
      if (!map_.Find(h, scratch_.data(), &len)) return false;
      if (len <= scratch_.size()) {
        scratch_len_ = len;
        return true;
      }
      scratch_.resize(len);  // a bigger value: read again
    }
    return false;
  }

  // Under the lock: the current, unexpired blob of `key`.
  Status ReadLocked(const KeyHash& h, std::string_view key, Blob* b) {
    if (!ReadBlob(h)) return Status::kNotFound;
    if (!b->Parse(scratch_.data(), scratch_len_)) return Status::kNotFound;
    if (b->key != key) return Status::kCollision;
    if (b->Expired(NowMs())) {
      map_.Erase(h);
      __atomic_add_fetch(&ctl_->expired_keys, 1, __ATOMIC_RELAXED);
      return Status::kNotFound;
    }
    return Status::kOk;
  }

  Status Write(const KeyHash& h, std::string_view key, std::string_view value,
               int64_t expire_ms) {
    MakeBlob(&blob_, key, value, expire_ms);
    return map_.Replace(h, blob_) ? Status::kOk : Status::kFull;
  }

  // Removes `key` if it is (still) expired.
  bool ExpireNow(std::string_view key) {
    Locked lock(this);
    KeyHash h = HashKey(key);
    if (!ReadBlob(h)) return false;
    Blob b;
    if (!b.Parse(scratch_.data(), scratch_len_) || b.key != key ||
        !b.Expired(NowMs())) {
      return false;
    }
    map_.Erase(h);
    __atomic_add_fetch(&ctl_->expired_keys, 1, __ATOMIC_RELAXED);
    return true;
  }

  Map map_;
  shmc::ShmArray<ControlBlock, shmc::POSIX> ctl_arr_;
  ControlBlock* ctl_ = nullptr;
  std::vector<char> scratch_;
  size_t scratch_len_ = 0;
  std::string blob_;
  typename Map::TravelPos sweep_pos_;
};

template <class Alloc>
std::unique_ptr<Store> OpenT(const StoreConfig& cfg, bool master,
                             std::string* err) {
  auto s = std::make_unique<StoreT<Alloc>>();
  if (!s->Init(cfg, master, err)) return nullptr;
  return s;
}

template <class Alloc>
bool UnlinkIfPresent(const std::string& key, std::string* err) {
  Alloc a;
  switch (shmc::detail::RemoveOwnSegment(key, &a)) {
    case shmc::detail::RemoveResult::kRemoved:
    case shmc::detail::RemoveResult::kAbsent:
      return true;
    case shmc::detail::RemoveResult::kForeign:
      *err = key + " is not a shmc segment; it was left alone";
      return false;
    case shmc::detail::RemoveResult::kFailed:
      break;
  }
  *err = "cannot remove segment " + key + ": " +
         shmc::detail::AllocErrorText(a.last_errno());
  return false;
}

template <class Alloc>
bool RemoveT(const StoreConfig& cfg, std::string* err) {
  return UnlinkIfPresent<Alloc>(cfg.name + "0", err) &&
         UnlinkIfPresent<Alloc>(cfg.name + "1", err) &&
         UnlinkIfPresent<shmc::POSIX>(ControlKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(ControlKey(cfg) + ".stats", err);
}

}  // namespace

bool RemoveStore(const StoreConfig& cfg, std::string* err) {
  switch (cfg.backend) {
    case Backend::kPosix: return RemoveT<shmc::POSIX>(cfg, err);
    case Backend::kSysv: return RemoveT<shmc::SVIPC>(cfg, err);
    case Backend::kFile: return RemoveT<shmc::MAPFILE>(cfg, err);
  }
  return false;
}

std::unique_ptr<Store> Store::Open(const StoreConfig& cfg, bool master,
                                   std::string* err) {
  switch (cfg.backend) {
    case Backend::kPosix: return OpenT<shmc::POSIX>(cfg, master, err);
    case Backend::kSysv: return OpenT<shmc::SVIPC>(cfg, master, err);
    case Backend::kFile: return OpenT<shmc::MAPFILE>(cfg, master, err);
  }
  return nullptr;
}

}  // namespace shmkv
