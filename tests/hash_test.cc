// Golden vectors for the fixed hashes: where a key lives in a segment must
// not change between builds. The values were computed by an independent
// Python model of the algorithms (see docs/hash_table.md); Mix64(1) is the
// published MurmurHash3 fmix64 value.
#include "shmc/hash.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(FixedHash, Mix64GoldenVectors) {
  EXPECT_EQ(shmc::Mix64(0), 0x0ULL);
  EXPECT_EQ(shmc::Mix64(1), 0xb456bcfc34c2cb2cULL);
  EXPECT_EQ(shmc::Mix64(42), 0x810879608e4259ccULL);
  EXPECT_EQ(shmc::Mix64(~0ULL), 0x64b5720b4b825f21ULL);
}

TEST(FixedHash, HashBytesGoldenVectors) {
  EXPECT_EQ(shmc::HashBytes("", 0), 0x7acdbb98b1344213ULL);
  EXPECT_EQ(shmc::HashBytes("a", 1), 0x91cf60f8e11c1ca4ULL);
  EXPECT_EQ(shmc::HashBytes("a\0", 2), 0x91ce47400738a5d9ULL);
  EXPECT_EQ(shmc::HashBytes("shmc", 4), 0x44494516e230f66eULL);
  const std::string s = "0123456789abcdef-shared-memory";
  EXPECT_EQ(shmc::HashBytes(s.data(), s.size()), 0x0da8e638517c7bc6ULL);
}

struct Pod {
  uint32_t a;
  uint32_t b;
};
struct Opaque {  // not trivially copyable: only std::hash knows it
  std::string tag;
  int v;
  bool operator==(const Opaque& o) const { return v == o.v; }
};
enum class Color : uint8_t { kRed = 3 };

}  // namespace

template <>
struct std::hash<Opaque> {
  size_t operator()(const Opaque& o) const { return static_cast<size_t>(o.v); }
};

namespace {

TEST(FixedHash, KeyTypesPickTheirHash) {
  EXPECT_EQ(shmc::ShmHash<uint64_t>::kId, 1u);
  EXPECT_EQ(shmc::ShmHash<int32_t>::kId, 1u);
  EXPECT_EQ(shmc::ShmHash<Color>::kId, 1u);
  EXPECT_EQ(shmc::ShmHash<Color>()(Color::kRed), shmc::Mix64(3));
  EXPECT_EQ(shmc::ShmHash<std::string>::kId, 2u);
  EXPECT_EQ(shmc::ShmHash<std::string>()("shmc"), 0x44494516e230f66eULL);
  EXPECT_EQ(shmc::ShmHash<Pod>::kId, 2u);
  Pod p{1, 2};
  EXPECT_EQ(shmc::ShmHash<Pod>()(p), shmc::HashBytes(&p, sizeof(p)));
  EXPECT_EQ(shmc::ShmHash<Opaque>::kId, 3u);  // falls back to std::hash
  EXPECT_EQ(shmc::ShmHash<Opaque>()(Opaque{"x", 7}), shmc::Mix64(7));
}

}  // namespace
