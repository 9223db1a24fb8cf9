// shmkv --load-rdb FILE (server/load_rdb.h).
//
// The file is read whole first (server/rdb/codec.h: every key decoded and
// checked, the CRC matched) and nothing is written unless all of it reads.
// Its function libraries go in first, as one FUNCTION RESTORE ... FLUSH
// (the store's libraries become the file's). Then each key goes in as a
// RESTORE ... ABSTTL through the command layer,
// one commit per key, in its database; keys whose expiry is past are left
// out, as Redis leaves them out when it loads a file.
#include "server/load_rdb.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/local_commands.h"
#include "server/master.h"
#include "server/rdb/codec.h"
#include "server/store/dbs.h"

namespace shmkv {

namespace {

// A read-only mapping of a whole file.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err_ = std::strerror(errno);
      return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      err_ = "not a regular file";
      close(fd);
      return;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        err_ = std::strerror(errno);
        size_ = 0;
      } else {
        data_ = static_cast<const char*>(p);
      }
    }
    close(fd);
  }
  ~Mapped() {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const std::string& error() const { return err_; }
  std::string_view bytes() const { return {data_ == nullptr ? "" : data_, size_}; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string err_;
};

int Refuse(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "shmkv --load-rdb %s: %s\n", file.c_str(),
               why.c_str());
  return 1;
}

}  // namespace

bool LoadRdbInto(Store* store, const Options& o, const std::string& file,
                 LoadCounts* n, std::string* why) {
  Mapped m(file);
  if (!m.error().empty()) {
    *why = m.error();
    return false;
  }
  // First the whole file, read and checked: nothing is written before.
  // Its function libraries are kept to go in first (FUNCTION RESTORE
  // checks each).
  auto count = [&](rdb::Entry&, std::string*) { return true; };
  std::vector<std::string> libraries;
  auto library = [&](std::string_view code, std::string*) {
    libraries.emplace_back(code);
    return true;
  };
  if (!rdb::ReadFile(m.bytes(), o.max_value, count, why, library)) {
    *why += "; nothing was loaded";
    return false;
  }
  for (uint32_t db = 0; db < kDatabases; ++db) {
    uint64_t expires = 0;
    const uint64_t keys = store->KeysIn(store->Physical(db), &expires, false);
    if (keys != 0) {
      *why = SegName(store->config()) + " holds " + std::to_string(keys) +
             " keys in database " + std::to_string(db) +
             ": a file loads into an empty store only";
      return false;
    }
  }
  LocalCommands local(store, ServerInfoFrom(o, store->config()));
  {
    // The store's libraries become the file's (none if it has none), as
    // a Redis replica's become its master's.
    const std::string out = local.Run(
        {"FUNCTION", "RESTORE", rdb::DumpFunctions(libraries), "FLUSH"});
    if (out != "+OK\r\n") {
      *why = "the file's function libraries were not loaded: " +
             out.substr(0, out.find('\r')) + "; nothing was loaded";
      return false;
    }
  }
  uint32_t db = 0;
  const int64_t now = NowMs();
  auto apply = [&](rdb::Entry& e, std::string* stop) {
    if (e.expire_ms != 0 && e.expire_ms <= now) {
      ++n->expired;
      return true;
    }
    if (e.db != db) {
      local.Run({"SELECT", std::to_string(e.db)});
      db = e.db;
    }
    const std::string payload = rdb::Dump(e.value);
    const std::string ttl = std::to_string(e.expire_ms);
    const std::string out =
        local.Run({"RESTORE", e.key, ttl, payload, "ABSTTL"});
    if (out != "+OK\r\n") {
      *stop = "not loaded: " + out.substr(0, out.find('\r')) + " (" +
              std::to_string(n->loaded) + " keys before it were)";
      return false;
    }
    ++n->loaded;
    return true;
  };
  auto skip = [](std::string_view, std::string*) { return true; };
  return rdb::ReadFile(m.bytes(), o.max_value, apply, why, skip);
}

int LoadRdbFile(const Options& o, const StoreConfig& sc) {
  const std::string& file = o.load_rdb;
  if (uint64_t pid = MasterRunning(sc)) {
    return Refuse(file, "a server is running on " + SegName(sc) +
                            " (master pid " + std::to_string(pid) +
                            "): stop it first");
  }
  std::string err;
  std::unique_ptr<Store> store = Store::Open(sc, true, &err);
  if (store == nullptr) return Refuse(file, err);
  LoadCounts n;
  if (!LoadRdbInto(store.get(), o, file, &n, &err)) return Refuse(file, err);
  std::printf("shmkv: loaded %" PRIu64 " keys from %s into %s (%" PRIu64
              " already expired, left out)\n",
              n.loaded, file.c_str(), SegName(sc).c_str(), n.expired);
  return 0;
}

}  // namespace shmkv
