// A sorted set as the sorted-set commands see it (docs/server.md,
// "Sorted sets"): its members ordered by (score, member bytes), as
// Redis orders them, in either of two forms:
//
//  - packed (kZSetListpack): one blob, members and scores in order
//    (server/commands/packed.h; a score is its 8 IEEE-754 bytes), while
//    it has at most 128 members of at most 64 bytes, Redis's listpack
//    limits (zset-max-listpack-entries / -value). kZSetSkiplist is the
//    same bytes past those limits, as a build before wrote large sets:
//    read as they are, made a tree at their next write;
//  - in parts (kZSetTree), as Redis keeps a skiplist and a dict: a B+tree
//    of the entries counting ranks (server/commands/zset_tree.h, the odd
//    parts) and a member table of scores in buckets (server/commands/
//    hash_value.h, the even parts). The root's bytes are
//      PartsRoot {id, parts}  u64 buckets  u64 nodes  u64 top  u64 free
//      u64 height
//    with parts = 2 * max(buckets, nodes). A write costs a table bucket
//    and one path of the tree, whatever the set's size.
//
// A set converts from packed to parts once it passes either limit, and
// never back, as Redis converts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/zset_tree.h"
#include "server/store/blob.h"

namespace shmkv {
namespace cmd {

constexpr uint8_t kZSetListpack = 0;
constexpr uint8_t kZSetSkiplist = 1;
constexpr uint8_t kZSetTree = kEncodingParts | 1;

class ZSetValue {
 public:
  // Redis's default listpack limits (zset-max-listpack-entries /
  // -value): CONFIG SET changes them (EncodingLimits).
  static constexpr size_t kListpackEntries = 128;
  static constexpr size_t kListpackValue = 64;

  using Load = cmd::Load;
  Load Open(CommandContext* c, std::string_view key);
  bool exists() const { return exists_; }
  // False once a read met bytes that did not parse.
  bool ok() const { return ok_ && tree_.ok() && dict_.ok(); }
  uint64_t size();

  // Views given stay valid while this lives; members passed in must
  // outlive Save.
  bool Score(std::string_view member, double* score);
  // The rank of `member` (-1: absent).
  int64_t Rank(std::string_view member);
  // Sets a member's score (inserted when new): true when new.
  bool Set(std::string_view member, double score);
  // Adds every entry to a value that holds none of their members, no two
  // alike (a value decoded whole), in O(n log n) rather than n look-ups
  // and inserts into a growing packed value.
  void SetAllNew(const std::vector<ZEntry>& entries);
  bool Remove(std::string_view member);
  bool At(uint64_t rank, ZEntry* e);
  // How many entries `less` holds for (true for a prefix of the order).
  uint64_t Count(const std::function<bool(const ZEntry&)>& less);
  // Entries from `rank` up (forward) or down while f returns true.
  bool Walk(uint64_t rank, bool forward,
            const std::function<bool(const ZEntry&)>& f);
  // Every entry, in order.
  bool All(std::vector<ZEntry>* out);
  // ZSCAN's page from *cursor (0 when done): a packed set is one page;
  // one in parts pages its member table bucket by bucket.
  bool Page(uint64_t* cursor, size_t count, std::vector<ZEntry>* out);

  Store::Status Save(CommandContext* c, std::string_view key);

 private:
  static bool UniqueMembers(const std::vector<ZEntry>& es);
  bool ReadRoot(std::string_view bytes);
  ptrdiff_t Find(std::string_view member) const;  // packed
  std::string_view ScoreBytes(double score);

  CommandContext* c_ = nullptr;
  bool exists_ = false;
  bool ok_ = true;
  bool changed_ = false;
  bool added_ = false;   // a member was added (packed)
  size_t longest_ = 0;   // the longest member added (packed)
  bool in_parts_ = false;
  Value value_;
  uint8_t encoding_ = kZSetListpack;
  std::vector<ZEntry> entries_;  // packed
  uint64_t id_ = 0, buckets_ = 0;  // in parts, as read
  ZTree::Shape shape_;             // as read
  ZTree tree_;
  HashValue dict_;
  std::deque<std::string> scores_;  // scores written to the table
};

// Redis's text for a score (d2string): integers within 2^52 as integers,
// else %.17g; "inf", "-inf", "0" and "-0" as such.
std::string ScoreText(double v);

}  // namespace cmd
}  // namespace shmkv
