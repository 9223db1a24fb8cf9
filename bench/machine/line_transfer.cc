// How fast can one core hand another 64-byte messages on this machine,
// by each way of publishing them? The ceilings behind queue_bench's ratios,
// with ShmQueue measured in the same rounds.
//
// A producer process pinned to CPU 0 and a consumer pinned to CPU 1 move N
// messages of 64 bytes (the first 8 bytes the sequence number, written
// ahead of their pushes; the consumer checks it and folds all 64 bytes into
// a sum) through 1 MiB of ring, in these ways (all from bench/queue_util.h,
// which queue_bench uses too):
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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/queue_util.h"

namespace {

using shmc_bench::Median;
using shmc_bench::Ring;
using shmc_bench::Way;

const char* const kQueueKey = "/shmc_line_transfer";
long long g_write_ahead = -1;  // -1: ShmQueue's default

template <uint64_t kEvery>
Way Index(const char* name) {
  return {name, false, shmc_bench::RingProduce<kEvery>,
          shmc_bench::RingConsume<kEvery>};
}
template <uint64_t kStride, uint64_t kHeadEvery>
Way InBand(const char* name) {
  return {name, false, shmc_bench::InBandProduce<kStride>,
          shmc_bench::InBandConsume<kStride, kHeadEvery>};
}
Way Queue(const char* name, size_t batch) {
  return {name, true,
          [batch](Ring*, uint64_t n) {
            shmc_bench::ShmQueueProduce(kQueueKey, n, batch, g_write_ahead);
          },
          [batch](Ring*, uint64_t n) {
            shmc_bench::ShmQueueConsume(kQueueKey, n, batch);
          }};
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
  const std::vector<Way> ways = {
      Index<1>("ring (indices every message)"),
      Index<16>("index/16"),
      Index<256>("index/256"),
      InBand<64, 1>("seq-in-slot, head/1"),
      InBand<64, 16>("seq-in-slot, head/16"),
      InBand<72, 1>("72-byte in-band, head/1"),
      InBand<72, 16>("72-byte in-band, head/16"),
      Queue("ShmQueue Push/Pop", 1),
      Queue("ShmQueue batches of 16", 16),
  };
  const double trip_before = shmc_bench::LineRoundTripNs();
  std::vector<std::vector<double>> rate = shmc_bench::RotatingRounds(
      rounds, ways.size(),
      [&](size_t w) { return shmc_bench::Transfer(ways[w], kQueueKey, n); });
  const double trip_after = shmc_bench::LineRoundTripNs();
  std::printf("%llu messages of 64 bytes, %d rounds, ShmQueue write-ahead %s\n",
              static_cast<unsigned long long>(n), rounds,
              g_write_ahead < 0 ? "default"
                                : std::to_string(g_write_ahead).c_str());
  std::printf("a line's round trip CPU 0 <-> CPU 1: %.0f ns before the "
              "rounds, %.0f ns after\n", trip_before, trip_after);
  std::printf("| way | msg/s (median) | / ring (median) | / ring (range) |\n"
              "|---|---:|---:|---:|\n");
  for (size_t w = 0; w < ways.size(); ++w) {
    shmc_bench::Spread ratio = shmc_bench::RoundRatios(rate[w], rate[0]);
    std::printf("| %s | %.1fM | %.2f | %.2f-%.2f |\n", ways[w].name,
                Median(rate[w]) / 1e6, ratio.median, ratio.min, ratio.max);
  }
  return 0;
}
