// The transaction family (server/commands/transaction_family.cc) in
// process, against redis-server: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

// The family's statistics ids, as first given: pin a new command's here.
TEST(TransactionFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("transaction", {
      {"multi", 52}, {"exec", 53}, {"discard", 54}, {"watch", 55},
      {"unwatch", 56},
  });
}

// MULTI / EXEC / DISCARD / WATCH / UNWATCH on one connection, with every
// error Redis gives, compared byte for byte.
TEST(TransactionFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("txndiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"EXEC"}, {"DISCARD"}, {"MULTI"}, {"MULTI"}, {"SET", "a", "1"},
      {"INCR", "a"}, {"GET", "a"}, {"MGET", "a", "b"}, {"EXEC"}, {"GET", "a"},
      // a runtime error inside EXEC does not stop the others
      {"MULTI"}, {"SET", "s", "x"}, {"INCR", "s"}, {"SET", "t", "y"},
      {"EXEC"}, {"MGET", "s", "t"},
      // a refused command dooms the transaction
      {"MULTI"}, {"SET", "u", "1"}, {"NOSUCH"}, {"EXEC"}, {"EXISTS", "u"},
      {"MULTI"}, {"SET", "u"}, {"SET", "u", "1"}, {"EXEC"}, {"EXISTS", "u"},
      {"MULTI"}, {"SET", "u", "1"}, {"DISCARD"}, {"EXISTS", "u"},
      // Inside EXEC DBSIZE, KEYS, SCAN and RANDOMKEY see the
      // transaction's own writes (they read the committed keys before)
      {"FLUSHALL"}, {"SET", "old", "1"}, {"MULTI"}, {"SET", "x", "1"},
      {"DBSIZE"}, {"KEYS", "x"}, {"DEL", "old"}, {"DBSIZE"}, {"KEYS", "old"},
      {"SCAN", "0", "COUNT", "1000000"}, {"RANDOMKEY"}, {"FLUSHALL"},
      {"DBSIZE"}, {"RANDOMKEY"}, {"KEYS", "*"}, {"SET", "q", "1"},
      {"DBSIZE"}, {"KEYS", "*"}, {"EXEC"}, {"DBSIZE"},
      // FLUSHALL fails a WATCH of a key it deleted, not of a missing one
      {"FLUSHALL"}, {"WATCH", "nokey"}, {"FLUSHALL"}, {"MULTI"},
      {"SET", "x", "1"}, {"EXEC"}, {"WATCH", "x"}, {"FLUSHALL"}, {"MULTI"},
      {"SET", "y", "1"}, {"EXEC"}, {"EXISTS", "x", "y"},
      // a key written inside EXEC with a time already past reads as gone
      {"MULTI"}, {"SET", "gone", "", "PXAT", "4102444801"},
      {"GETEX", "gone", "EXAT", "4102444801"}, {"GET", "gone"},
      {"DEL", "gone"}, {"KEYS", "gone"}, {"EXISTS", "gone"}, {"EXEC"},
      // EXEC with arguments: EXECABORT, and the transaction is gone
      {"EXEC", "x"}, {"MULTI"}, {"SET", "u", "1"}, {"EXEC", "y"},
      {"EXISTS", "u"}, {"EXEC"},
      {"MULTI"}, {"EXEC"},
      {"MULTI"}, {"WATCH", "a"}, {"SET", "w", "1"}, {"EXEC"},
      {"WATCH"}, {"UNWATCH"}, {"WATCH", "a", "b"}, {"GET", "a"},
      {"MULTI"}, {"SET", "a", "watched"}, {"EXEC"}, {"GET", "a"},
      // the watched key changes before EXEC: nothing runs
      {"WATCH", "a"}, {"SET", "a", "other"}, {"MULTI"}, {"SET", "a", "lost"},
      {"EXEC"}, {"GET", "a"},
      {"WATCH", "a"}, {"UNWATCH"}, {"SET", "a", "again"}, {"MULTI"},
      {"SET", "a", "kept"}, {"EXEC"}, {"GET", "a"},
      {"WATCH", "none"}, {"SET", "none", "1"}, {"MULTI"}, {"DEL", "none"},
      {"EXEC"}, {"EXISTS", "none"},
      {"WATCH", "a"}, {"FLUSHALL"}, {"MULTI"}, {"SET", "z", "1"}, {"EXEC"},
      {"MULTI"}, {"FLUSHALL"}, {"SET", "y", "1"}, {"RENAME", "y", "x"},
      {"EXEC"}, {"KEYS", "*"},
  });
}

}  // namespace
