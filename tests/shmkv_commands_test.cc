// shmkv's command table (server/commands/registry.h): every row belongs
// to a family whose test pins its statistics ids, so a change that would
// renumber counters kept in shared memory across a hot reload fails; the
// rows are coherent; docs/server.md names every command the table has.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "server/commands/registry.h"
#include "server/store/stats.h"
#include "tests/support/command_harness.h"

namespace {

using shmkv::cmd::Commands;
using shmkv::cmd::CommandRow;

// Each family's test pins its rows' ids (ExpectPinnedIds); a family
// is listed here once its test does, so no row goes unpinned.
const std::set<std::string> kFamiliesWithPins = {
    "string", "keyspace", "server", "connection", "transaction", "hash",
    "list", "set", "zset", "stream", "blocking", "script", "function",
    "pubsub", "hyperloglog", "geo", "standalone"};

TEST(CommandTable, EveryRowIsInAPinnedFamily) {
  for (const CommandRow* row : Commands().rows()) {
    EXPECT_TRUE(kFamiliesWithPins.count(
        std::string(Commands().FamilyOf(row))))
        << row->name << " is in family '" << Commands().FamilyOf(row)
        << "', whose test pins no ids";
  }
}

TEST(CommandTable, RowsAreCoherent) {
  std::set<int> ids;
  for (const CommandRow* row : Commands().rows()) {
    EXPECT_TRUE(ids.insert(row->id).second) << row->name;
    EXPECT_LT(row->id, shmkv::kMaxCommands) << row->name;
    EXPECT_NE(row->run, nullptr) << row->name;
    EXPECT_NE(row->arity, 0) << row->name;
    EXPECT_EQ(Commands().Find(row->name), row);
    EXPECT_STREQ(Commands().NameOfId(row->id), row->name);
    bool write = (row->flags & shmkv::cmd::kWrite) != 0;
    bool read = (row->flags & shmkv::cmd::kReadOnly) != 0;
    EXPECT_FALSE(write && read) << row->name;
  }
  EXPECT_EQ(Commands().Find("GeT"), Commands().Find("get"));
  EXPECT_EQ(Commands().Find("nosuch"), nullptr);
  EXPECT_EQ(Commands().Find(std::string(200, 'x')), nullptr);
}

// A row inserted anywhere in a family keeps every other command's id: the
// ids are the rows' own, not their positions.
TEST(CommandTable, InsertingARowRenumbersNothing) {
  static void (*const kNop)(const shmkv::cmd::Args&, shmkv::CommandContext*,
                            shmkv::Reply*) =
      [](const shmkv::cmd::Args&, shmkv::CommandContext*, shmkv::Reply* r) {
        r->Simple("OK");
      };
  static const CommandRow kBefore[] = {
      {"alpha", 1, 1, 0, 0, 0, 0, kNop},
      {"gamma", 3, 1, 0, 0, 0, 0, kNop},
  };
  static const CommandRow kAfter[] = {
      {"alpha", 1, 1, 0, 0, 0, 0, kNop},
      {"beta", 2, 1, 0, 0, 0, 0, kNop},  // inserted mid-table
      {"gamma", 3, 1, 0, 0, 0, 0, kNop},
  };
  shmkv::cmd::Registry before, after;
  before.Add(kBefore);
  after.Add(kAfter);
  for (const char* name : {"alpha", "gamma"}) {
    EXPECT_EQ(before.Find(name)->id, after.Find(name)->id) << name;
  }
  EXPECT_STREQ(after.NameOfId(3), "gamma");
}

TEST(CommandTableDeathTest, ADuplicateIdStopsTheStart) {
  static const CommandRow kRows[] = {
      {"one", 7, 1, 0, 0, 0, 0, nullptr},
      {"two", 7, 1, 0, 0, 0, 0, nullptr},
  };
  shmkv::cmd::Registry r;
  EXPECT_DEATH(r.Add(kRows), "'two' \\(id 7\\): id already taken");
}

// docs/server.md lists the commands; it cannot drift from the table.
TEST(CommandTable, TheManualNamesEveryCommand) {
  std::ifstream f(std::string(SHMKV_SOURCE_DIR) + "/docs/server.md");
  ASSERT_TRUE(f) << "docs/server.md";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  size_t from = doc.find("## Commands");
  ASSERT_NE(from, std::string::npos);
  size_t to = doc.find("\n## ", from + 1);
  std::string list = doc.substr(from, to - from);
  for (const CommandRow* row : Commands().rows()) {
    std::string upper(row->name);
    for (char& c : upper) c = static_cast<char>(std::toupper(c));
    EXPECT_NE(list.find("`" + upper), std::string::npos)
        << upper << " is missing from docs/server.md's command list";
  }
}

// The server's layers: store <- commands <- net, and rdb (Redis's
// serialization, which knows no store) under commands. A file includes
// its own layer and the ones below it, never one above.
TEST(ServerLayers, IncludesPointDownOnly) {
  const std::map<std::string, std::set<std::string>> allowed = {
      {"rdb", {"rdb"}},
      {"store", {"store"}},
      {"commands", {"store", "rdb", "commands"}},
      {"net", {"store", "rdb", "commands", "net"}},
  };
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& [layer, may] : allowed) {
    fs::path dir = fs::path(SHMKV_SOURCE_DIR) / "server" / layer;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream f(entry.path());
      std::string line;
      ++files;
      while (std::getline(f, line)) {
        const std::string inc = "#include \"server/";
        if (line.compare(0, inc.size(), inc) != 0) continue;
        std::string rest = line.substr(inc.size());
        std::string target = rest.substr(0, rest.find('/'));
        EXPECT_TRUE(may.count(target))
            << entry.path().filename() << " (" << layer << ") includes "
            << line << ": a layer above its own";
      }
    }
  }
  EXPECT_GT(files, 20);
}

TEST(CommandTable, HarnessRunsCommandsInProcess) {
  shmkv_test::CommandHarness h("table");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"set", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(h.Run({"nosuch", "a"}),
            "-ERR unknown command 'nosuch', with args beginning with: 'a' "
            "\r\n");
  EXPECT_EQ(h.Run({"get"}),
            "-ERR wrong number of arguments for 'get' command\r\n");
}

}  // namespace
