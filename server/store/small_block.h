// A small POSIX segment holding one block of shared words (the databases'
// words, server/store/dbs.h; the settings, server/store/settings.h),
// made by whichever process of the store opens it first. A new segment
// is all zero: its block is claimed by storing its magic, and a block
// holding another magic (another layout) is refused.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

// Maps the block of segment `key` (made when missing): null with *err
// when it cannot be mapped or holds another layout (`holds` names what it
// should hold, for the message).
template <class Block>
Block* OpenSmallBlock(shmc::ShmArray<Block, shmc::POSIX>* arr,
                      const std::string& key, uint64_t magic,
                      const char* holds, std::string* err) {
  int flags = shmc::DefaultCreateFlags();
  shmc::SetDefaultCreateFlags(flags | shmc::kCreateIfNotExist);
  bool ok = arr->InitForWrite(key, 1);
  shmc::SetDefaultCreateFlags(flags);
  if (!ok) {
    *err = arr->last_error().message;
    return nullptr;
  }
  Block* b = const_cast<Block*>(&(*arr)[0]);
  uint64_t zero = 0;
  b->magic.compare_exchange_strong(zero, magic, std::memory_order_acq_rel);
  if (b->magic.load(std::memory_order_acquire) != magic) {
    *err = "segment " + key + " holds no shmkv " + holds + " (made by "
           "another version?): stop that server, then remove its "
           "segments (docs/server.md)";
    return nullptr;
  }
  return b;
}

}  // namespace shmkv
