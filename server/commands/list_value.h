// A list as the list commands see it, in either of its two forms
// (docs/server.md, "Lists"):
//
//  - packed (kListPacked): one blob, its elements packed in order
//    (server/commands/packed.h), while it has at most kChunkElements
//    elements of at most kChunkBytes bytes in all;
//  - in chunks (kListChunks), as Redis's quicklist is: a root under the
//    key and chunks held as parts of the collection (server/store/
//    blob.h), linked both ways. The root's bytes are
//      PartsRoot {id, chunks}  u64 elements  u64 head  u64 tail
//    and a chunk's
//      u64 prev  u64 next  (kNone at the ends)  then its elements, packed.
//    A push or a pop rewrites the end chunk and the root, whatever the
//    list's length. Chunk indexes stay 0 .. chunks-1: a chunk that
//    empties is unlinked and the last-indexed chunk moves into its index.
//
// Every count, index and link read from shared memory is checked before
// use (a walk longer than the chunks there are is damage): bytes that do
// not parse make the operation fail (ok() false), and the command answers
// the damaged-value error. Both forms read "quicklist" in OBJECT
// ENCODING, as every list does in Redis 7.0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/store/blob.h"

namespace shmkv {
namespace cmd {

constexpr uint8_t kListPacked = 0;
constexpr uint8_t kListChunks = kEncodingParts | 1;

class ListValue {
 public:
  static constexpr size_t kChunkElements = 128;
  static constexpr size_t kChunkBytes = 4096;
  static constexpr uint64_t kNone = ~0ULL;

  using Load = cmd::Load;
  Load Open(CommandContext* c, std::string_view key);
  bool exists() const { return exists_; }
  uint64_t size() const { return count_; }
  bool ok() const { return ok_; }

  // The views these give stay valid while this ListValue lives.
  void Push(bool front, std::string_view v);
  // Pops up to n elements from one end into *out, in popping order.
  bool Pop(bool front, uint64_t n, std::vector<std::string_view>* out);
  // Elements start .. stop (0 <= start <= stop < size()).
  bool Range(uint64_t start, uint64_t stop,
             std::vector<std::string_view>* out);
  bool Index(uint64_t i, std::string_view* v);
  bool SetAt(uint64_t i, std::string_view v);

  // The elements one by one from one end: f(element) returns how to go on.
  enum class Step { kNext, kRemove, kStop, kRemoveAndStop };
  template <class F>
  bool Edit(bool from_front, F f);
  // Inserts `v` before or after the first `pivot` from the head: false
  // when there is none.
  bool InsertAt(std::string_view pivot, bool after, std::string_view v,
                bool* found);

  // Writes what changed (an empty list deletes the key; the TTL is kept).
  Store::Status Save(CommandContext* c, std::string_view key);

  // A process's kept chunk heads of one list (list_value.cc).
  struct HeadTable;

 private:
  struct Chunk {
    uint64_t index = 0;
    uint64_t prev = kNone, next = kNone;
    std::vector<std::string_view> items;  // its elements (into arena_)
    // The packed bytes it was read from, and items[run_lo, run_hi): its
    // elements still in the order read, which Save copies as one block
    // (PackReusing, which checks them) when only the ends changed.
    std::string_view src;
    size_t run_lo = 0, run_hi = 0;
    void Reordered() { run_lo = run_hi = 0; }
    void Popped(bool front, size_t take);
    bool dirty = false;
    bool removed = false;  // unlinked: its index is freed at Save
  };
  Chunk* Get(uint64_t index);
  bool Peek(uint64_t index, uint64_t* prev, uint64_t* next, uint64_t* count);
  bool CheckHead(uint64_t p, uint64_t x, uint64_t n, uint64_t* prev,
                 uint64_t* next, uint64_t* count);
  Chunk* First(bool front);
  Chunk* Skip(bool front, uint64_t* skip);
  Chunk* Advance(const Chunk* ch, bool front);
  Chunk* NewChunk();
  void Unlink(Chunk* ch);
  bool Full(const Chunk& ch) const;
  bool ReadRoot(std::string_view bytes);
  Store::Status ToChunks(CommandContext* c);
  Store::Status Normalize(CommandContext* c);
  Store::Status Compact(CommandContext* c);

  CommandContext* c_ = nullptr;
  bool exists_ = false;
  bool ok_ = true;
  bool chunked_ = false;
  Value value_;
  uint64_t count_ = 0;
  uint64_t id_ = 0, chunks_ = 0, head_ = kNone, tail_ = kNone;
  bool root_dirty_ = false;
  Chunk packed_;                    // packed: the elements
  std::map<uint64_t, Chunk> loaded_;  // in chunks: those read or made
  // The bytes read, where every element view points: a deque never
  // moves what it holds, so views outlive any chunk's move or removal.
  std::deque<std::string> arena_;
  uint64_t steps_ = 0;                // links followed by this walk
  std::string peek_;                  // the chunk head Peek read last
  // The heads of this list this process keeps (list_value.cc, Heads),
  // for the store that stamped them.
  std::shared_ptr<HeadTable> heads_;
  uint64_t heads_store_ = 0;
};

template <class F>
bool ListValue::Edit(bool from_front, F f) {
  steps_ = 0;
  for (Chunk* ch = First(from_front); ch != nullptr;
       ch = Advance(ch, from_front)) {
    std::vector<std::string_view>& items = ch->items;
    // From the front: i is the next element; from the back: i - 1 is.
    size_t i = from_front ? 0 : items.size();
    while (from_front ? i < items.size() : i > 0) {
      size_t at = from_front ? i : i - 1;
      ListValue::Step s = f(items[at]);
      bool remove = s == ListValue::Step::kRemove ||
                    s == ListValue::Step::kRemoveAndStop;
      if (remove) {
        items.erase(items.begin() + static_cast<ptrdiff_t>(at));
        ch->Reordered();
        ch->dirty = true;
        --count_;
        root_dirty_ = true;
      }
      if (from_front) {
        if (!remove) ++i;
      } else {
        --i;
      }
      if (s == ListValue::Step::kStop ||
          s == ListValue::Step::kRemoveAndStop) {
        return true;
      }
    }
  }
  return ok_;
}

}  // namespace cmd
}  // namespace shmkv
