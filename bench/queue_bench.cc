// queue_bench: ShmQueue and ShmSyncBuf against a minimal single-producer
// ring of fixed 64-byte slots (the baseline), and each queue goal's floor,
// all in the same rounds.
//
//   queue_bench [--messages N] [--rounds R] [--batch B] [--write-ahead W]
//               [--sync-bytes S]
//
// --write-ahead W: every ShmQueue producer and SyncBuf writer claims lines
// W bytes ahead (SetWriteAhead; 0: no claims); default, the library's.
// --sync-bytes S: the SyncBuf's size (default 2^24; a size that is not a
// power of two maps positions by division instead of a mask).
//
// Throughput: a producer process and a consumer process pinned to CPUs 0 and
// 1 move N 64-byte messages. The ring, the floors, the queue and every wait
// and message check are bench/queue_util.h's, shared with
// machine/line_transfer: both sides spin on full/empty with a pause, and
// yield after 64 failed tries; every message is written ahead of its push;
// every consumer checks each message's sequence number and folds all 64
// bytes into a checksum. The floors:
//   ShmQueue's in-band protocol alone (72-byte records, a header word
//   stored last, the next header zeroed, the consumer's position stored
//   every message): Push/Pop's floor;
//   the ring with each index stored once per batch: the batches' floor.
// Two spinning processes on this 2-vCPU guest share what the host gives
// them, and a round's rates move together with it (2026-11-24: the ring at
// 8.6M and at 43M msg/s an hour apart), so every way runs R rounds (default
// 5) in a rotating order and the table gives medians of the rates and of
// each round's own ratio to the ring, with their range. Latency: ping-pong
// round trips over two queues. SyncBuf: push and read rates in one process.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shmc/shm_queue.h"
#include "shmc/shm_sync_buf.h"
#include "bench/queue_util.h"

namespace {

using shmc_bench::Median;
using shmc_bench::Messages;
using shmc_bench::NowSeconds;
using shmc_bench::Pin;
using shmc_bench::Received;
using shmc_bench::Retry;
using shmc_bench::Ring;
using shmc_bench::Way;

// --write-ahead for every writer; -1: the library's default.
long long g_write_ahead = -1;
template <class W>
void ApplyWriteAhead(W& w) {
  if (g_write_ahead >= 0) w.SetWriteAhead(static_cast<uint64_t>(g_write_ahead));
}

// Round trips between two processes over two ShmQueues (request on KEY_a,
// reply on KEY_b); microseconds per round trip.
double PingPongUs(const std::string& key, uint64_t trips) {
  char msg[64] = "shmc-queue-ping";
  shmc::POSIX().Unlink(key + "_a");
  shmc::POSIX().Unlink(key + "_b");
  {
    shmc::ShmQueue<shmc::POSIX> a, b;
    a.InitForWrite(key + "_a", 4096);
    b.InitForWrite(key + "_b", 4096);
  }
  pid_t pid = fork();
  if (pid == 0) {
    Pin(0);
    shmc::ShmQueue<shmc::POSIX> in, out;
    if (!in.InitForRead(key + "_a") || !out.InitForWrite(key + "_b", 4096)) {
      _exit(1);
    }
    ApplyWriteAhead(out);
    char buf[64];
    for (uint64_t i = 0; i < trips; ++i) {
      size_t len = sizeof(buf);
      Retry([&] { return in.Pop(buf, &len); });
      Retry([&] { return out.Push(buf, len); });
    }
    _exit(0);
  }
  Pin(1);
  shmc::ShmQueue<shmc::POSIX> out, in;
  if (!out.InitForWrite(key + "_a", 4096) || !in.InitForRead(key + "_b")) {
    std::fprintf(stderr, "queue_bench: cannot attach the ping-pong queues\n");
    std::exit(1);
  }
  ApplyWriteAhead(out);
  double t0 = NowSeconds();
  char buf[64];
  for (uint64_t i = 0; i < trips; ++i) {
    Retry([&] { return out.Push(msg, sizeof(msg)); });
    size_t len = sizeof(buf);
    Retry([&] { return in.Pop(buf, &len); });
  }
  double us = (NowSeconds() - t0) / static_cast<double>(trips) * 1e6;
  waitpid(pid, nullptr, 0);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 5000000;
  int rounds = 5;
  size_t batch = 16;  // records per PushBatch / PopBatch
  size_t sync_bytes = size_t{1} << 24;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--messages") {
      n = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (i + 1 < argc && a == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (i + 1 < argc && a == "--batch") {
      batch = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (i + 1 < argc && a == "--sync-bytes") {
      sync_bytes = std::strtoull(argv[i + 1], nullptr, 10);
      if (sync_bytes < 4096) n = 0;
    } else if (i + 1 < argc && a == "--write-ahead") {
      g_write_ahead = std::strtoll(argv[i + 1], nullptr, 10);
      if (g_write_ahead < 0) n = 0;
    } else {
      n = 0;
    }
    if (n == 0 || rounds < 1 || batch < 1 || batch > 128 ||
        (batch & (batch - 1)) != 0) {
      std::fprintf(stderr,
                   "usage: %s [--messages N] [--rounds R] [--batch 1|2|4..128] "
                   "[--write-ahead BYTES] [--sync-bytes 4096..]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::string key = "/shmc_queue_bench_" + std::to_string(getpid());
  const std::string batched =
      "ShmQueue PushBatch/PopBatch (" + std::to_string(batch) + ")";
  const std::string batch_floor =
      "floor: ring, indices once per " + std::to_string(batch);
  auto queue = [&](const char* name, size_t b) {
    return Way{name, true,
               [&key, b](Ring*, uint64_t m) {
                 shmc_bench::ShmQueueProduce(key, m, b, g_write_ahead);
               },
               [&key, b](Ring*, uint64_t m) {
                 shmc_bench::ShmQueueConsume(key, m, b);
               }};
  };
  // The batches' floor stores each index once per `batch` messages; the
  // ring's classes take that count as a template argument.
  auto every = [&](uint64_t k) -> Way {
    switch (k) {
      case 1: return {"", false, shmc_bench::RingProduce<1>, shmc_bench::RingConsume<1>};
      case 2: return {"", false, shmc_bench::RingProduce<2>, shmc_bench::RingConsume<2>};
      case 4: return {"", false, shmc_bench::RingProduce<4>, shmc_bench::RingConsume<4>};
      case 8: return {"", false, shmc_bench::RingProduce<8>, shmc_bench::RingConsume<8>};
      case 16: return {"", false, shmc_bench::RingProduce<16>, shmc_bench::RingConsume<16>};
      case 32: return {"", false, shmc_bench::RingProduce<32>, shmc_bench::RingConsume<32>};
      case 64: return {"", false, shmc_bench::RingProduce<64>, shmc_bench::RingConsume<64>};
      default: return {"", false, shmc_bench::RingProduce<128>, shmc_bench::RingConsume<128>};  // 128
    }
  };
  Way ring_way = every(1);
  ring_way.name = "64-byte-slot ring (baseline)";
  Way floor_batch = every(batch);
  floor_batch.name = batch_floor.c_str();
  // k: 0 ring, 1 ShmQueue, 2 batched ShmQueue, 3 and 4 their floors.
  const std::vector<Way> ways = {
      ring_way,
      queue("ShmQueue Push/Pop", 1),
      queue(batched.c_str(), batch),
      {"floor: ShmQueue's in-band protocol alone", false,
       shmc_bench::InBandProduce<72>, shmc_bench::InBandConsume<72, 1>},
      floor_batch,
  };
  const double trip_before = shmc_bench::LineRoundTripNs();
  std::vector<std::vector<double>> rates = shmc_bench::RotatingRounds(
      rounds, ways.size(),
      [&](size_t k) { return shmc_bench::Transfer(ways[k], key, n); });
  const double trip_after = shmc_bench::LineRoundTripNs();

  // Ping-pong: request on one queue, reply on another.
  std::vector<double> rtts;
  for (int r = 0; r < rounds; ++r) rtts.push_back(PingPongUs(key, 100000));

  // SyncBuf rates, one process, against the ring's single-process rate.
  std::printf("messages %llu of 64 bytes, producer on CPU 0, consumer on "
              "CPU 1, %d rounds, write-ahead %s\n\n",
              static_cast<unsigned long long>(n), rounds,
              g_write_ahead < 0 ? "default"
                                : std::to_string(g_write_ahead).c_str());
  std::printf("a line's round trip CPU 0 <-> CPU 1: %.0f ns before the "
              "rounds, %.0f ns after\n\n", trip_before, trip_after);
  std::printf("| queue | messages/s (median) | ratio to ring (median of "
              "rounds) | ratio range |\n|---|---:|---:|---:|\n");
  for (size_t k = 0; k < ways.size(); ++k) {
    shmc_bench::Spread ratio = shmc_bench::RoundRatios(rates[k], rates[0]);
    std::printf("| %s | %.0f | %.2f | %.2f-%.2f |\n", ways[k].name,
                Median(rates[k]), ratio.median, ratio.min, ratio.max);
  }
  // Each goal beside its floor, both as ratios to the ring, and the queue
  // as a share of its floor (median of the rounds' own shares).
  struct Goal {
    size_t queue, floor;
    double goal;
  };
  for (Goal g : {Goal{1, 3, 0.9}, Goal{2, 4, 1.3}}) {
    shmc_bench::Spread q = shmc_bench::RoundRatios(rates[g.queue], rates[0]);
    shmc_bench::Spread f = shmc_bench::RoundRatios(rates[g.floor], rates[0]);
    shmc_bench::Spread share =
        shmc_bench::RoundRatios(rates[g.queue], rates[g.floor]);
    std::printf("%s: %.2fx ring [goal >= %.1f], its floor %.2fx; %.0f%% of "
                "the floor (range %.0f-%.0f%%)\n",
                ways[g.queue].name, q.median, g.goal, f.median,
                100 * share.median, 100 * share.min, 100 * share.max);
  }
  std::printf("\nping-pong round trip (ShmQueue, two processes): median "
              "%.2f us, range %.2f-%.2f us\n\n",
              Median(rtts), *std::min_element(rtts.begin(), rtts.end()),
              *std::max_element(rtts.begin(), rtts.end()));
  auto ring = std::make_unique<Ring>();
  shmc_bench::RingProducer<1> rp{ring.get()};
  shmc_bench::RingConsumer<1> rc{ring.get()};
  const uint64_t m = 1000000;
  double t0 = NowSeconds();
  char tmp[64];
  Received local;
  Messages msgs;
  for (uint64_t i = 0; i < m; ++i) {
    rp.Push(msgs.At(i));
    rc.Pop(tmp);
    local.Take(tmp, sizeof(tmp));
  }
  double ring_local = m / (NowSeconds() - t0);
  std::printf("| SyncBuf record | push/s | read/s | push vs ring push+pop (1 process) |\n|---|---:|---:|---:|\n");
  for (size_t len : {10, 100, 1000}) {
    shmc::POSIX().Unlink(key + "_s");
    shmc::ShmSyncBuf<shmc::POSIX> w, r;
    w.InitForWrite(key + "_s", sync_bytes);
    ApplyWriteAhead(w);
    r.InitForRead(key + "_s");
    std::string rec(len, 'r');
    timeval tv{1, 0};
    t0 = NowSeconds();
    for (uint64_t i = 0; i < m; ++i) w.Push(rec.data(), len, tv);
    double push_rate = m / (NowSeconds() - t0);
    shmc::SyncIter it = r.Head();
    shmc::SyncMeta meta;
    char out2[1024];
    uint64_t reads = 0;
    t0 = NowSeconds();
    for (;;) {
      size_t l = sizeof(out2);
      if (r.Read(it, &meta, out2, &l) != 1 || !r.Next(&it)) break;
      shmc_bench::Keep(out2);  // the copy counts as read
      ++reads;
    }
    double read_rate = reads / (NowSeconds() - t0);
    std::printf("| %zu bytes | %.0f | %.0f | %.2f |\n", len, push_rate,
                read_rate, push_rate / ring_local);
    shmc::POSIX().Unlink(key + "_s");
  }
  shmc::POSIX().Unlink(key);
  shmc::POSIX().Unlink(key + "_a");
  shmc::POSIX().Unlink(key + "_b");
  return 0;
}
