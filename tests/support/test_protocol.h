// The protocol shmkv's differential tests speak: RESP3 when
// SHMKV_TEST_RESP=3 (ctest runs every *VsRedis* test a second time so,
// tests/CMakeLists.txt), else RESP2. The test clients of both servers and
// the command harness's clients start in it.
#pragma once

#include <cstdlib>
#include <string>

namespace shmkv_test {

inline int TestProtocol() {
  const char* v = std::getenv("SHMKV_TEST_RESP");
  return v != nullptr && std::string(v) == "3" ? 3 : 2;
}

}  // namespace shmkv_test
