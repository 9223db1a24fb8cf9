// How fast can one core hand another 64-byte messages on this machine,
// by each way of publishing them? The ceilings behind queue_bench's ratios,
// with ShmQueue measured in the same rounds.
//
// A producer process pinned to CPU 0 and a consumer pinned to CPU 1 move N
// messages of 64 bytes (the first 8 bytes the sequence number, as in
// queue_bench; the consumer checks it and folds all 64 bytes into a sum)
// through 1 MiB of ring, in these ways:
//   ring           queue_bench's baseline: fixed 64-byte slots, both
//                  indices stored every message, each side caching the
//                  other's;
//   index/16, index/256
//                  the same slots, each index stored once per 16 (256)
//                  messages, and by a side about to wait;
//   seq-in-slot    64-byte slots whose first word is the publication
//                  (release store after the rest), polled by the consumer;
//                  no producer index; the consumer's index stored every
//                  message (/1) or every 16 (/16);
//   72-byte in-band
//                  ShmQueue's protocol with nothing else: an 8-byte header
//                  word per record, stored last with release, the word
//                  after the record zeroed first; the payload's 8-byte
//                  words wrap with the ring (no pad records); the
//                  consumer's index stored every message (/1) or every 16;
//   ShmQueue       Push/Pop, and PushBatch/PopBatch of 16 (POSIX segment,
//                  the library's write-ahead unless told otherwise).
// Every index and message is stored by exactly one side, so what separates
// the ways is how many lines cross between the cores per message and how
// often a side waits on a line the other is writing. The rounds rotate the
// order; the table gives medians of msg/s and of each round's ratio to the
// ring. Results: bench/RESULTS.md (Floors).
//
// Build (from the repository root; one line), then run:
//   g++ -O2 -DNDEBUG -std=c++17 -I. -Iinclude bench/machine/line_transfer.cc
//   -o line_transfer -lrt -pthread
//   ./line_transfer [messages] [rounds] [write-ahead bytes for ShmQueue]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/queue_util.h"
#include "shmc/shm_queue.h"

namespace {

constexpr uint64_t kSlots = 1 << 14;  // 16K x 64 bytes = 1 MiB, as the ring
constexpr uint64_t kRingBytes = kSlots * 64;
const char* const kQueueKey = "/shmc_line_transfer";
long long g_write_ahead = -1;  // -1: ShmQueue's default

struct alignas(64) Region {
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) char bytes[kRingBytes];
};

using shmc_bench::Median;
using shmc_bench::Received;  // queue_bench's check of each message
using shmc_bench::Retry;     // queue_bench's wait

// Message `seq` as 8 words.
void Message(uint64_t seq, uint64_t (&w)[8]) {
  w[0] = seq;
  for (int k = 1; k < 8; ++k) w[k] = seq * k;
}

// Fixed slots, indices stored every BATCH messages and by a side about to
// wait whose last messages are not covered yet (BATCH 1: the ring).
template <uint64_t kBatch>
void IndexProducer(Region* r, uint64_t n) {
  uint64_t tail = 0, cached_head = 0;
  while (tail < n) {
    if (tail - cached_head >= kSlots) {
      if (tail % kBatch != 0) r->tail.store(tail, std::memory_order_release);
      Retry([&] {
        cached_head = r->head.load(std::memory_order_acquire);
        return tail - cached_head < kSlots;
      });
    }
    uint64_t w[8];
    Message(tail, w);
    std::memcpy(r->bytes + (tail & (kSlots - 1)) * 64, w, 64);
    ++tail;
    if (tail % kBatch == 0 || tail == n) {
      r->tail.store(tail, std::memory_order_release);
    }
  }
}

template <uint64_t kBatch>
void IndexConsumer(Region* r, uint64_t n) {
  Received got;
  uint64_t head = 0, cached_tail = 0;
  while (head < n) {
    if (head == cached_tail) {
      if (head % kBatch != 0) r->head.store(head, std::memory_order_release);
      Retry([&] {
        cached_tail = r->tail.load(std::memory_order_acquire);
        return head != cached_tail;
      });
    }
    uint64_t w[8];
    std::memcpy(w, r->bytes + (head & (kSlots - 1)) * 64, 64);
    got.Take(w, sizeof(w));
    ++head;
    if (head % kBatch == 0) r->head.store(head, std::memory_order_release);
  }
}

// In band: records of kStride bytes at byte positions; word 0 of a record
// is its header (sequence + 1, stored last with release), then the 64-byte
// message. kStride 64: the header is the message's first word (seq-in-
// slot); kStride 72: a separate header word, as in ShmQueue, which also
// zeroes the word after the record before publishing it (so the consumer
// finds zero there, never an older lap's word, until the next header).
std::atomic<uint64_t>* WordAt(Region* r, uint64_t pos) {
  return reinterpret_cast<std::atomic<uint64_t>*>(
      r->bytes + (pos & (kRingBytes - 1)));
}

template <uint64_t kStride>
void InBandProducer(Region* r, uint64_t n) {
  constexpr uint64_t kData = kStride == 64 ? 8 : 0;  // where w[] starts
  uint64_t cached_head = 0;
  for (uint64_t i = 0, pos = 0; i < n; ++i, pos += kStride) {
    if (pos + kStride + 8 - cached_head > kRingBytes) {
      Retry([&] {
        cached_head = r->head.load(std::memory_order_acquire);
        return pos + kStride + 8 - cached_head <= kRingBytes;
      });
    }
    uint64_t w[8];
    Message(i, w);
    for (uint64_t k = kData / 8; k < 8; ++k) {
      WordAt(r, pos + kStride - 64 + 8 * k)
          ->store(w[k], std::memory_order_relaxed);
    }
    if (kStride != 64) {
      WordAt(r, pos + kStride)->store(0, std::memory_order_relaxed);
    }
    WordAt(r, pos)->store(i + 1, std::memory_order_release);
  }
}

template <uint64_t kStride, uint64_t kHeadEvery>
void InBandConsumer(Region* r, uint64_t n) {
  Received got;
  for (uint64_t i = 0, pos = 0; i < n; ++i) {
    Retry([&] {
      return WordAt(r, pos)->load(std::memory_order_acquire) == i + 1;
    });
    uint64_t w[8];
    for (uint64_t k = 0; k < 8; ++k) {
      w[k] = WordAt(r, pos + kStride - 64 + 8 * k)
                 ->load(std::memory_order_relaxed);
    }
    if (kStride == 64) w[0] = i;  // the word held i + 1
    got.Take(w, sizeof(w));
    pos += kStride;
    if ((i + 1) % kHeadEvery == 0) {
      r->head.store(pos, std::memory_order_release);
    }
  }
}

void ShmQueueProducer(uint64_t n, bool batched) {
  shmc::ShmQueue<shmc::POSIX> q;
  if (!q.InitForWrite(kQueueKey, kRingBytes)) _exit(1);
  if (g_write_ahead >= 0) q.SetWriteAhead(static_cast<uint64_t>(g_write_ahead));
  uint64_t w[8];
  if (!batched) {
    for (uint64_t i = 0; i < n; ++i) {
      Message(i, w);
      Retry([&] { return q.Push(w, sizeof(w)); });
    }
    return;
  }
  std::vector<std::string> recs(16, std::string(64, '\0'));
  for (uint64_t i = 0; i < n;) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(16, n - i));
    for (size_t j = 0; j < want; ++j) {
      Message(i + j, w);
      std::memcpy(&recs[j][0], w, 64);
    }
    size_t done = 0;
    Retry([&] { return (done = q.PushBatch(recs.data(), want)) > 0; });
    i += done;
  }
}

void ShmQueueConsumer(uint64_t n, bool batched) {
  shmc::ShmQueue<shmc::POSIX> q;
  if (!q.InitForRead(kQueueKey)) {
    std::fprintf(stderr, "line_transfer: %s\n", q.last_error().message.c_str());
    std::exit(1);
  }
  Received got;
  char out[64];
  for (uint64_t i = 0; i < n;) {
    if (!batched) {
      size_t len = 0;
      Retry([&] {
        len = sizeof(out);
        return q.Pop(out, &len);
      });
      got.Take(out, len);
      ++i;
      continue;
    }
    size_t done = 0;
    Retry([&] {
      done = q.PopBatch([&](const void* d, size_t l) { got.Take(d, l); }, 16);
      return done > 0;
    });
    i += done;
  }
}

struct Way {
  const char* name;
  bool shm_queue;  // needs the ShmQueue segment created
  void (*producer)(Region*, uint64_t);
  void (*consumer)(Region*, uint64_t);
};
const Way kWays[] = {
    {"ring (indices every message)", false, IndexProducer<1>, IndexConsumer<1>},
    {"index/16", false, IndexProducer<16>, IndexConsumer<16>},
    {"index/256", false, IndexProducer<256>, IndexConsumer<256>},
    {"seq-in-slot, head/1", false, InBandProducer<64>, InBandConsumer<64, 1>},
    {"seq-in-slot, head/16", false, InBandProducer<64>, InBandConsumer<64, 16>},
    {"72-byte in-band, head/1", false, InBandProducer<72>, InBandConsumer<72, 1>},
    {"72-byte in-band, head/16", false, InBandProducer<72>, InBandConsumer<72, 16>},
    {"ShmQueue Push/Pop", true,
     [](Region*, uint64_t n) { ShmQueueProducer(n, false); },
     [](Region*, uint64_t n) { ShmQueueConsumer(n, false); }},
    {"ShmQueue batches of 16", true,
     [](Region*, uint64_t n) { ShmQueueProducer(n, true); },
     [](Region*, uint64_t n) { ShmQueueConsumer(n, true); }},
};
constexpr int kWayCount = sizeof(kWays) / sizeof(kWays[0]);

// Messages per second of one transfer of N messages.
double Transfer(const Way& way, uint64_t n) {
  void* p = mmap(nullptr, sizeof(Region), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("line_transfer: mmap");
    std::exit(1);
  }
  auto* r = new (p) Region();
  std::memset(r->bytes, 0, sizeof(r->bytes));  // fault the pages in
  if (way.shm_queue) {
    shmc::POSIX().Unlink(kQueueKey);
    shmc::ShmQueue<shmc::POSIX> create;
    if (!create.InitForWrite(kQueueKey, kRingBytes)) {
      std::fprintf(stderr, "line_transfer: %s\n",
                   create.last_error().message.c_str());
      std::exit(1);
    }
  }
  double rate = shmc_bench::TransferRate(n, [&] { way.producer(r, n); },
                                         [&] { way.consumer(r, n); });
  munmap(p, sizeof(Region));
  if (way.shm_queue) shmc::POSIX().Unlink(kQueueKey);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5000000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (argc > 3) g_write_ahead = std::atoll(argv[3]);
  if (n == 0 || rounds < 1 || argc > 4) {
    std::fprintf(stderr, "usage: %s [messages] [rounds] [write-ahead bytes]\n",
                 argv[0]);
    return 2;
  }
  std::vector<std::vector<double>> rate = shmc_bench::RotatingRounds(
      rounds, kWayCount, [&](size_t w) { return Transfer(kWays[w], n); });
  std::printf("%llu messages of 64 bytes, %d rounds, ShmQueue write-ahead %s\n",
              static_cast<unsigned long long>(n), rounds,
              g_write_ahead < 0 ? "default"
                                : std::to_string(g_write_ahead).c_str());
  std::printf("| way | msg/s (median) | / ring (median) | / ring (range) |\n"
              "|---|---:|---:|---:|\n");
  for (int w = 0; w < kWayCount; ++w) {
    shmc_bench::Spread ratio = shmc_bench::RoundRatios(rate[w], rate[0]);
    std::printf("| %s | %.1fM | %.2f | %.2f-%.2f |\n", kWays[w].name,
                Median(rate[w]) / 1e6, ratio.median, ratio.min, ratio.max);
  }
  return 0;
}
