// CRC-64 as Redis computes it over RDB files and DUMP payloads: the Jones
// polynomial (0xad93d23594c935a9), reflected in and out, initial value 0,
// no final xor. Check value: "123456789" -> 0xe9c6d914c4b8d9ca.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shmkv {
namespace rdb {

// The CRC of `n` bytes at `p`, continuing from `crc` (0 to start).
uint64_t Crc64(uint64_t crc, const void* p, size_t n);

}  // namespace rdb
}  // namespace shmkv
