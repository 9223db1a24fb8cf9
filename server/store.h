// The key-value store of shmkv: Redis string semantics on one ShmHashMap
// shared by every worker process (docs/server.md, "Data").
//
// A Redis key is any byte string, a map key is fixed-size: the map is keyed
// by a 128-bit hash of the key, and each value blob carries the key itself,
// so a lookup confirms it found the right key. The blob:
//
//   u64 expire_at_ms (CLOCK_REALTIME; 0 = never)  u32 key_len  u32 reserved
//   key bytes  value bytes
//
// Reads never lock: they copy the blob out of the map (the map validates
// the copy) and check key and expiry. Writes from all workers are
// serialized by a robust process-shared mutex in the control segment; a
// worker that dies holding it is detected (EOWNERDEAD) and the next one to
// lock runs the map's crash recovery first. Every read-modify-write (INCR,
// APPEND, SET NX, ...) runs under that lock, so it is atomic across workers.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmkv {

enum class Backend { kPosix, kSysv, kFile };

struct StoreConfig {
  Backend backend = Backend::kPosix;
  std::string name = "/shmkv";  // map key (posix name, sysv key or path)
  uint64_t capacity = 1000000;  // keys
  uint64_t memory = 256ULL << 20;  // bytes for values (blobs)
  uint64_t max_value = 16ULL << 20;
  uint64_t max_key = 64ULL << 10;
};

// Shared by master and workers: the write lock and the master's identity.
// Plain integers used through __atomic builtins: the block lives in a
// ShmArray, whose node type must be trivially copyable.
struct ControlBlock {
  uint64_t magic;  // kControlMagic once initialized
  uint64_t master_pid;
  uint64_t master_start;
  uint64_t reloads;
  uint64_t workers;
  uint64_t http_port;
  uint64_t resp_port;
  uint64_t start_time_ms;
  pthread_mutex_t write_lock;
  uint64_t lock_recoveries;  // locks taken over from a dead worker
  uint64_t expired_keys;     // removed by lazy or active expiry
};
constexpr uint64_t kControlMagic = 0x31746c63766b6d73ULL;  // "smkvclt1"

int64_t NowMs();

// Name of the POSIX segment holding the control block (and, with
// ".stats" appended, the statistics) of a store.
std::string ControlKey(const StoreConfig& cfg);

// Removes every segment of the store `cfg` names (the map's two, the
// control block, the statistics); segments that do not exist are skipped.
// Processes still attached keep their mappings. Returns false with `err`
// set when a segment exists and cannot be removed.
bool RemoveStore(const StoreConfig& cfg, std::string* err);

class Store {
 public:
  virtual ~Store() = default;

  // Opens the map (created if missing) and the control block. The master
  // passes init_control to (re)initialize the lock.
  static std::unique_ptr<Store> Open(const StoreConfig& cfg, bool master,
                                     std::string* err);

  enum class SetMode { kAlways, kIfMissing, kIfExists };
  enum class Status {
    kOk,
    kNotFound,
    kExists,      // SET NX on an existing key
    kNotInteger,  // INCR on a non-integer, or overflow
    kTooLarge,    // key or value over the limits
    kFull,        // the map has no room left
    kCollision,   // two keys with one 128-bit hash (never seen in practice)
  };

  // Reads: lock-free.
  virtual bool Get(std::string_view key, std::string* value,
                   int64_t* expire_ms = nullptr) = 0;
  // As Get, without a copy: *value points into this Store's buffer and is
  // valid until its next call.
  virtual bool GetView(std::string_view key, std::string_view* value) = 0;
  virtual bool Exists(std::string_view key) = 0;

  // Writes. expire_ms: absolute, 0 = none; keep_ttl keeps an existing TTL.
  virtual Status Set(std::string_view key, std::string_view value,
                     int64_t expire_ms, SetMode mode, bool keep_ttl) = 0;
  // Sets every pair under one lock hold (MSET is atomic).
  virtual Status MSet(
      const std::vector<std::pair<std::string_view, std::string_view>>&
          pairs) = 0;
  virtual bool Del(std::string_view key) = 0;
  virtual Status IncrBy(std::string_view key, int64_t by, int64_t* out) = 0;
  virtual Status Append(std::string_view key, std::string_view tail,
                        size_t* new_len) = 0;
  // expire_ms 0 = persist. False when the key does not exist (or, for
  // persist, has no TTL).
  virtual bool SetExpire(std::string_view key, int64_t expire_ms) = 0;
  virtual uint64_t FlushAll() = 0;

  // Iteration: visits up to `count` slots from *cursor (0 = start), calls
  // f(key) for each live key; *cursor is 0 when the pass is complete.
  virtual void Scan(uint64_t* cursor, size_t count,
                    const std::function<void(std::string_view)>& f) = 0;
  // Active expiry: examines up to `count` slots, removes expired keys.
  virtual uint64_t Sweep(size_t count) = 0;

  virtual uint64_t Keys() = 0;
  virtual uint64_t Capacity() = 0;
  virtual uint64_t MemoryTotal() = 0;
  virtual uint64_t MemoryUsed() = 0;
  virtual ControlBlock* control() = 0;
  const StoreConfig& config() const { return cfg_; }

 protected:
  StoreConfig cfg_;
};

const char* StatusText(Store::Status s);

}  // namespace shmkv
