// The value pool the server tests give the stores they make: the default
// (extents), or with SHMKV_TEST_VALUE_POOL=nodes the 64-byte link nodes
// (`--value-pool nodes`), so that one suite covers both (.ci/run runs the
// server tests a second time so).
#pragma once

#include <cstdlib>
#include <cstring>

namespace shmc_test {

inline bool TestValuePoolExtents() {
  const char* v = std::getenv("SHMKV_TEST_VALUE_POOL");
  return v == nullptr || std::strcmp(v, "nodes") != 0;
}

}  // namespace shmc_test
