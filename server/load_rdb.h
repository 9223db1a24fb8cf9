// shmkv --load-rdb FILE: an RDB file's keys into an empty store, with no
// server running on it (docs/server.md, "Moving values").
#pragma once

#include "server/options.h"
#include "server/store/store.h"

namespace shmkv {

// The exit code: 0 loaded, 1 refused (the reason printed; the store as it
// was when the file does not read whole, is not empty, or is served).
int LoadRdbFile(const Options& o, const StoreConfig& sc);

}  // namespace shmkv
