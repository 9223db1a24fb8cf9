// The segments of a store (server/store/store.h): their names, and their
// removal (only segments that prove to be shmc's).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "server/store/key_hash.h"
#include "server/store/pubsub_shared.h"
#include "server/store/scripts.h"
#include "server/store/store.h"
#include "shmc/hash.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/remove_segment.h"
#include "shmc/shm_hash_map.h"
#include "shmc/svipc_shm_alloc.h"

namespace shmkv {

std::string ControlKey(const StoreConfig& cfg) {
  if (cfg.backend == Backend::kPosix) return cfg.name + ".ctl";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/shmkv-%016" PRIx64 ".ctl",
                shmc::HashBytes(cfg.name.data(), cfg.name.size()));
  return buf;
}

std::string JournalKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".journal";
}

std::string WaitsKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".waits";
}

std::string DbsKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".dbs";
}

std::string ReplKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".repl";
}

std::string SettingsKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".settings";
}

namespace {

template <class Alloc>
bool UnlinkIfPresent(const std::string& key, std::string* err) {
  std::string why;
  switch (shmc::RemoveSegment<Alloc>(key, &why)) {
    case shmc::RemoveStatus::kRemoved:
    case shmc::RemoveStatus::kAbsent:
      return true;
    case shmc::RemoveStatus::kForeign:
      *err = key + " is not a shmc segment; it was left alone";
      return false;
    case shmc::RemoveStatus::kFailed:
      break;
  }
  *err = "cannot remove segment " + key + ": " + why;
  return false;
}

template <class Alloc>
bool RemoveT(const StoreConfig& cfg, std::string* err) {
  auto keys = shmc::ShmHashMap<KeyHash, Alloc>::SegmentKeys(cfg.name);
  auto scripts =
      shmc::ShmHashMap<KeyHash, shmc::POSIX>::SegmentKeys(ScriptsKey(cfg));
  auto functions =
      shmc::ShmHashMap<KeyHash, shmc::POSIX>::SegmentKeys(FunctionsKey(cfg));
  auto pubsub =
      shmc::ShmHashMap<KeyHash, shmc::POSIX>::SegmentKeys(PubSubKey(cfg));
  return UnlinkIfPresent<Alloc>(keys.first, err) &&
         UnlinkIfPresent<Alloc>(keys.second, err) &&
         UnlinkIfPresent<shmc::POSIX>(ControlKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(JournalKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(ControlKey(cfg) + ".stats", err) &&
         UnlinkIfPresent<shmc::POSIX>(ControlKey(cfg) + ".latency", err) &&
         UnlinkIfPresent<shmc::POSIX>(WaitsKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(DbsKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(ReplKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(SettingsKey(cfg), err) &&
         UnlinkIfPresent<shmc::POSIX>(SettingsKey(cfg) + ".more", err) &&
         UnlinkIfPresent<shmc::POSIX>(scripts.first, err) &&
         UnlinkIfPresent<shmc::POSIX>(scripts.second, err) &&
         UnlinkIfPresent<shmc::POSIX>(functions.first, err) &&
         UnlinkIfPresent<shmc::POSIX>(functions.second, err) &&
         UnlinkIfPresent<shmc::POSIX>(pubsub.first, err) &&
         UnlinkIfPresent<shmc::POSIX>(pubsub.second, err) &&
         UnlinkIfPresent<shmc::POSIX>(PubSubRingKey(cfg), err);
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

}  // namespace shmkv
