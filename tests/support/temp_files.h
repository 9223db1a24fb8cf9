// A directory of one test's own, removed with what it holds, and whole
// files read and written: for the tests of files the server writes and
// reads (RDB files, a background save's log).
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace shmkv_test {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/shmkv_test_dir_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// The file's bytes ("" when it cannot be read).
inline std::string ReadAll(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Replaces the file with `bytes`; false when it cannot.
inline bool WriteAll(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace shmkv_test
