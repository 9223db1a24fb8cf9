// A sorted set as the sorted-set commands see it (docs/server.md,
// "Sorted sets"): its members ordered by (score, member bytes), as
// Redis orders them.
//
// This build keeps every sorted set packed in one blob: members and
// scores in order (server/commands/packed.h; a score is its 8 IEEE-754
// bytes, little-endian). The encoding byte says what Redis would hold it
// as: kZSetListpack while it has at most 128 members of at most 64 bytes
// (zset-max-listpack-entries / -value), kZSetSkiplist once past either,
// for good. A write rewrites the blob, so its cost grows with the set
// (docs/server.md says so; a form in parts comes with issue 44's next
// step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/store/blob.h"

namespace shmkv {
namespace cmd {

constexpr uint8_t kZSetListpack = 0;
constexpr uint8_t kZSetSkiplist = 1;

struct ZEntry {
  std::string_view member;
  double score;
};

// Redis's order: by score, then by member bytes.
inline bool ZLess(const ZEntry& a, const ZEntry& b) {
  return a.score < b.score || (a.score == b.score && a.member < b.member);
}

class ZSetValue {
 public:
  static constexpr size_t kListpackEntries = 128;
  static constexpr size_t kListpackValue = 64;

  using Load = cmd::Load;
  Load Open(CommandContext* c, std::string_view key);
  bool exists() const { return exists_; }
  size_t size() const { return entries_.size(); }
  // In order; views valid while this lives (members set here must
  // outlive Save).
  const std::vector<ZEntry>& entries() const { return entries_; }

  // The rank of `member` (-1: absent).
  ptrdiff_t Rank(std::string_view member) const;
  // Sets a member's score (inserted when new): true when new.
  bool Set(std::string_view member, double score);
  bool Remove(std::string_view member);
  // Removes ranks [from, to).
  void RemoveRanks(size_t from, size_t to);

  Store::Status Save(CommandContext* c, std::string_view key);

 private:
  static bool UniqueMembers(const std::vector<ZEntry>& es);
  bool exists_ = false;
  bool changed_ = false;
  Value value_;
  uint8_t encoding_ = kZSetListpack;
  std::vector<ZEntry> entries_;
};

// Redis's text for a score (d2string): integers within 2^52 as integers,
// else %.17g; "inf", "-inf", "0" and "-0" as such.
std::string ScoreText(double v);

}  // namespace cmd
}  // namespace shmkv
