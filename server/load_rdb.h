// shmkv --load-rdb FILE: an RDB file's keys into an empty store, with no
// server running on it (docs/server.md, "Moving values").
#pragma once

#include "server/options.h"
#include "server/store/store.h"

namespace shmkv {

// The exit code: 0 loaded, 1 refused (the reason printed; the store as it
// was when the file does not read whole, is not empty, or is served).
int LoadRdbFile(const Options& o, const StoreConfig& sc);

struct LoadCounts {
  uint64_t loaded = 0;
  uint64_t expired = 0;  // past their expiry: left out
};
// Loads the RDB file `file` into `store`, which must hold no key (the
// caller makes sure no other process writes it): the whole file is read
// and checked first, then each key goes in. False with *why: nothing was
// written unless the file read whole and a key could not be stored
// (*why says how many were).
bool LoadRdbInto(Store* store, const Options& o, const std::string& file,
                 LoadCounts* n, std::string* why);

}  // namespace shmkv
