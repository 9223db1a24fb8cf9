#include "server/rdb/crc64.h"

#include <array>

namespace shmkv {
namespace rdb {

namespace {

// The reflected form of the Jones polynomial.
constexpr uint64_t kPoly = 0x95ac9329ac4bc9b5ULL;

// Eight tables: a byte's CRC, then the same shifted on by 1..7 bytes, so
// the loop takes eight bytes a step.
struct Tables {
  std::array<std::array<uint64_t, 256>, 8> t{};
  Tables() {
    for (uint64_t b = 0; b < 256; ++b) {
      uint64_t c = b;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][b] = c;
    }
    for (size_t b = 0; b < 256; ++b) {
      for (size_t k = 1; k < 8; ++k) {
        t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
      }
    }
  }
};

const Tables& Table() {
  static const Tables tables;
  return tables;
}

}  // namespace

uint64_t Crc64(uint64_t crc, const void* data, size_t n) {
  const auto& t = Table().t;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  while (n >= 8) {
    uint64_t w = crc;
    for (int k = 0; k < 8; ++k) w ^= static_cast<uint64_t>(p[k]) << (8 * k);
    crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^
          t[4][(w >> 24) & 0xff] ^ t[3][(w >> 32) & 0xff] ^
          t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

}  // namespace rdb
}  // namespace shmkv
