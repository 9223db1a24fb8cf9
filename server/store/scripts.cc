// The shared script cache (server/store/scripts.h).
#include "server/store/scripts.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/store/key_hash.h"
#include "shmc/global_options.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_map.h"

namespace shmkv {

namespace {
constexpr size_t kShaLen = 40;
constexpr size_t kNodeBytes = 64;
}  // namespace

std::string ScriptsKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".scripts";
}

std::string FunctionsKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".functions";
}

struct ScriptCache::Impl {
  shmc::ShmHashMap<KeyHash, shmc::POSIX> map;
};

ScriptCache::ScriptCache(std::string (*key)(const StoreConfig&))
    : impl_(new Impl), key_(key) {}
ScriptCache::~ScriptCache() { delete impl_; }

bool ScriptCache::Open(const StoreConfig& cfg, std::string* err) {
  int flags = shmc::DefaultCreateFlags();
  // Its value pool reserves memory as entries arrive (kGrowInSteps).
  shmc::SetDefaultCreateFlags(shmc::kSharedWriters | shmc::kCreateIfNotExist |
                              shmc::kGrowInSteps);
  constexpr uint64_t kNodeCost =
      shmc::ShmLinkTable<shmc::POSIX>::NodeCost(kNodeBytes);
  bool ok = impl_->map.InitForWrite(key_(cfg), kCapacity, kNodeBytes,
                                    kMemory / kNodeCost);
  shmc::SetDefaultCreateFlags(flags);
  if (!ok) *err = impl_->map.last_error().message;
  return ok;
}

bool ScriptCache::Get(std::string_view sha, std::string* body) const {
  std::string v;
  if (sha.size() != kShaLen || !impl_->map.Find(HashKey(sha), &v)) {
    return false;
  }
  if (v.size() < kShaLen || std::string_view(v).substr(0, kShaLen) != sha) {
    return false;  // another script's, or not one: missing
  }
  body->assign(v, kShaLen, std::string::npos);
  return true;
}

bool ScriptCache::Has(std::string_view sha) const {
  // The digits alone: the map copies no more than asked for.
  char buf[kShaLen];
  size_t len = sizeof(buf);
  if (sha.size() != kShaLen || !impl_->map.Find(HashKey(sha), buf, &len)) {
    return false;
  }
  return len >= kShaLen && std::string_view(buf, kShaLen) == sha;
}

bool ScriptCache::Head(std::string_view sha, size_t n,
                       std::string* head) const {
  char buf[kShaLen + 64];
  size_t len = kShaLen + n;
  if (n > 64 || sha.size() != kShaLen ||
      !impl_->map.Find(HashKey(sha), buf, &len) || len < kShaLen + n ||
      std::string_view(buf, kShaLen) != sha) {
    return false;
  }
  head->assign(buf + kShaLen, n);
  return true;
}

bool ScriptCache::Put(std::string_view sha, std::string_view body,
                      std::string* err) {
  if (!impl_->map.Recover()) {
    *err = "ERR the script cache is damaged: " +
           impl_->map.last_error().message;
    return false;
  }
  if (Has(sha)) return true;
  return Set(sha, body, err);
}

bool ScriptCache::Set(std::string_view sha, std::string_view body,
                      std::string* err) {
  if (!impl_->map.Recover()) {
    *err = "ERR the script cache is damaged: " +
           impl_->map.last_error().message;
    return false;
  }
  std::string v;
  v.reserve(kShaLen + body.size());
  v.append(sha);
  v.append(body);
  // Replace: a slot of this hash holding something else (damage, or
  // another script of the same 128-bit hash) gives way.
  if (!impl_->map.Replace(HashKey(sha), v)) {
    *err = "ERR the script cache is full (" + std::to_string(kCapacity) +
           " scripts, " + std::to_string(kMemory >> 20) +
           " MiB): SCRIPT FLUSH empties it";
    return false;
  }
  return true;
}

uint64_t ScriptCache::Flush() {
  impl_->map.Recover();
  std::vector<KeyHash> keys;
  impl_->map.Travel(
      [&](const KeyHash& k, const std::string&) { keys.push_back(k); });
  uint64_t n = 0;
  for (const KeyHash& k : keys) n += impl_->map.Erase(k) ? 1 : 0;
  return n;
}

ScriptCache* Store::Scripts(std::string* err) {
  if (scripts_ == nullptr) {
    auto s = std::make_shared<ScriptCache>();
    if (!s->Open(cfg_, err)) return nullptr;
    scripts_ = std::move(s);
  }
  return scripts_.get();
}

ScriptCache* Store::Functions(std::string* err) {
  if (functions_ == nullptr) {
    auto s = std::make_shared<ScriptCache>(FunctionsKey);
    if (!s->Open(cfg_, err)) return nullptr;
    functions_ = std::move(s);
  }
  return functions_.get();
}

uint64_t ScriptCache::Count() const { return impl_->map.size(); }

uint64_t ScriptCache::MemoryUsed() const {
  const auto& links = impl_->map.link_table();
  return (links.total_nodes() - links.free_nodes()) * kNodeBytes;
}

}  // namespace shmkv
