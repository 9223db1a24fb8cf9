// What a fuzz test file built twice shares (a short run in the server
// suite, a long one labelled stress): the suite's name, Short or Long,
// and its inputs, SHMKV_FUZZ_DEFAULT_INPUTS unless SHMKV_FUZZ_INPUTS says.
// The including file defines SHMKV_FUZZ_DEFAULT_INPUTS first (the long
// build's compile definitions set both).
#pragma once

#include <cstdint>
#include <cstdlib>

#ifndef SHMKV_FUZZ_DEFAULT_INPUTS
#error "define SHMKV_FUZZ_DEFAULT_INPUTS before including fuzz_suite.h"
#endif
#ifndef SHMKV_FUZZ_SUITE
#define SHMKV_FUZZ_SUITE Short
#endif
#define SHMKV_FUZZ_NAME2(a, b) a##b
// The suite's name: SHMKV_FUZZ_NAME(RdbFuzz, SHMKV_FUZZ_SUITE).
#define SHMKV_FUZZ_NAME(a, b) SHMKV_FUZZ_NAME2(a, b)

namespace shmkv_test {

inline uint64_t FuzzInputs() {
  if (const char* e = std::getenv("SHMKV_FUZZ_INPUTS")) {
    return std::strtoull(e, nullptr, 10);
  }
  return SHMKV_FUZZ_DEFAULT_INPUTS;
}

}  // namespace shmkv_test
