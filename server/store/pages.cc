#include "server/store/pages.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shmc/shm_hash_map.h"

namespace shmkv {

long SysvPageKib(pid_t pid, const std::string& key) {
  char want[32];
  std::snprintf(want, sizeof(want), "/SYSV%08lx",
                std::strtoul(key.c_str(), nullptr, 0));
  std::string path = "/proc/" + std::to_string(pid) + "/smaps";
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return 0;
  char line[512];
  bool in = false;
  long kib = 0;
  while (kib == 0 && std::fgets(line, sizeof(line), f) != nullptr) {
    // A mapping's first line starts with its range: "7f00-7f20 rw-s ...".
    const char* dash = std::strchr(line, '-');
    const char* space = std::strchr(line, ' ');
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && dash != nullptr &&
        space != nullptr && dash < space) {
      in = std::strstr(line, want) != nullptr;
    } else if (in) {
      std::sscanf(line, "KernelPageSize: %ld kB", &kib);
    }
  }
  std::fclose(f);
  return kib;
}

std::vector<std::string> SmallPageWarnings(const StoreConfig& cfg) {
  std::vector<std::string> lines;
  if (!cfg.hugepages || cfg.backend != Backend::kSysv) return lines;
  for (const char* part : {shmc::kMapIndexSuffix, shmc::kMapValuesSuffix}) {
    std::string key = cfg.name + part;
    long kib = SysvPageKib(getpid(), key);
    if (kib != 0 && kib < 2048) {
      lines.push_back("--hugepages: sysv:" + key + " was made on " +
                      std::to_string(kib) + " KiB pages and stays on them; "
                      "to move the data to hugepages, remove the store and "
                      "restore it (docs/server.md, Hugepages)");
    }
  }
  return lines;
}

}  // namespace shmkv
