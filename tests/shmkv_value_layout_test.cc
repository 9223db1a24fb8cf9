// Golden layouts of the collections held in parts (docs/server.md,
// "Collections in parts"): a hash, a list, a set, a sorted set and a
// stream built by fixed commands give these exact root and part bytes. A
// hot restart onto a new build reads the blobs the old one wrote, so a
// change here is a new encoding number that reads the old one, never an
// edit of these figures.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "server/commands/hash_value.h"
#include "server/commands/list_value.h"
#include "server/commands/stream_value.h"
#include "server/commands/zset_value.h"
#include "tests/support/command_harness.h"

namespace {

using shmkv_test::CommandHarness;
using Cmd = std::vector<std::string>;

uint64_t Fnv(uint64_t h, std::string_view bytes) {
  for (unsigned char ch : bytes) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

struct Layout {
  uint8_t encoding = 0;
  uint64_t parts = 0;    // the root's count of part indexes
  uint64_t present = 0;  // of them, parts in the map
  uint64_t digest = 0;   // the root's bytes after the id, then each part's
};

// The layout of the collection at `key`; the id (a counter) left out.
Layout Read(CommandHarness* h, const std::string& key) {
  Layout out;
  shmkv::Value v;
  EXPECT_TRUE(h->store()->Get(key, &v)) << key;
  shmkv::PartsRoot root{};
  EXPECT_GE(v.bytes.size(), sizeof(root));
  std::memcpy(&root, v.bytes.data(), sizeof(root));
  out.encoding = v.encoding;
  out.parts = root.parts;
  out.digest = Fnv(0xcbf29ce484222325ULL,
                   std::string_view(v.bytes).substr(sizeof(uint64_t)));
  for (uint64_t i = 0; i < root.parts; ++i) {
    std::string part;
    if (!h->store()->GetPart(root.id, i, &part)) continue;
    ++out.present;
    char index[8];
    std::memcpy(index, &i, 8);
    out.digest = Fnv(Fnv(out.digest, std::string_view(index, 8)), part);
  }
  return out;
}

void Build(CommandHarness* h, int n, const std::function<Cmd(int)>& cmd) {
  for (int i = 0; i < n; ++i) h->Run(cmd(i));
}

TEST(ValueLayoutGolden, CollectionsInParts) {
  CommandHarness h("valuelayout", 50000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Build(&h, 700, [](int i) {
    return Cmd{"HSET", "h", "f" + std::to_string(i), "v" + std::to_string(i)};
  });
  Build(&h, 600, [](int i) { return Cmd{"RPUSH", "l", "e" + std::to_string(i)}; });
  Build(&h, 30, [](int) { return Cmd{"LPOP", "l"}; });
  Build(&h, 700, [](int i) { return Cmd{"SADD", "s", "m" + std::to_string(i)}; });
  Build(&h, 3000, [](int i) {
    return Cmd{"ZADD", "z", std::to_string((i * 7919) % 1000), "m" + std::to_string(i)};
  });
  Build(&h, 500, [](int i) {
    return Cmd{"ZREM", "z", "m" + std::to_string(i * 3)};
  });
  Build(&h, 500, [](int i) {
    return Cmd{"XADD", "x", std::to_string(i + 1) + "-" + std::to_string(i % 3),
               "f", "v" + std::to_string(i)};
  });
  Build(&h, 50, [](int i) {
    return Cmd{"XDEL", "x", std::to_string(i * 7 + 1) + "-" +
                                std::to_string((i * 7) % 3)};
  });
  // A stream with groups (no consumer left: their seen times are the
  // clock's): the longer root, the groups in part 0, the pending
  // entries' tree on even parts from 2.
  Build(&h, 150, [](int i) {
    return Cmd{"XADD", "y", std::to_string(i + 1) + "-1", "f", "v"};
  });
  h.Run({"XGROUP", "CREATE", "y", "g1", "0"});
  h.Run({"XGROUP", "CREATE", "y", "g2", "$", "ENTRIESREAD", "150"});
  h.Run({"XREADGROUP", "GROUP", "g1", "c", "COUNT", "40", "STREAMS", "y",
         ">"});
  h.Run({"XGROUP", "DELCONSUMER", "y", "g1", "c"});
  struct Want {
    const char* key;
    uint8_t encoding;
    uint64_t parts, present, digest;
  };
  const Want want[] = {
      {"h", shmkv::cmd::kHashBuckets, 256, 256, 0x40f5038b3a430e42ULL},
      {"l", shmkv::cmd::kListChunks, 5, 5, 0x697ea28f0be6be26ULL},
      {"s", shmkv::cmd::kSetBuckets, 88, 88, 0xcc8fc18bae51c135ULL},
      // 375 table buckets on even parts, 279 tree nodes on odd ones.
      {"z", shmkv::cmd::kZSetTree, 750, 654, 0xc030b7ba85d5ac6dULL},
      // Tree nodes on odd parts, the even ones unused; the counters after
      // the tree's shape in the root.
      {"x", shmkv::cmd::kStreamTree, 74, 37, 0x7d8d60c595fe317eULL},
      // Groups in part 0, entries on odd parts, pending entries on even
      // ones from 2.
      {"y", shmkv::cmd::kStreamTree, 26, 18, 0x2eafb89917660bb0ULL},
  };
  for (const Want& w : want) {
    Layout got = Read(&h, w.key);
    EXPECT_EQ(got.encoding, w.encoding) << w.key;
    EXPECT_EQ(got.parts, w.parts) << w.key;
    EXPECT_EQ(got.present, w.present) << w.key;
    EXPECT_EQ(got.digest, w.digest) << w.key << " digest 0x" << std::hex
                                    << got.digest;
  }
}

}  // namespace
