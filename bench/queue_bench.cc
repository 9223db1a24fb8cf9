// queue_bench: ShmQueue and ShmSyncBuf against a minimal single-producer
// ring of fixed 64-byte slots written here (the baseline), same run.
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
// 1 move N 64-byte messages. Both sides spin on full/empty and yield after
// 64 failed tries (the same policy for every queue). Latency: ping-pong
// round trips over two queues. SyncBuf: push and read rates in one process.
// Two spinning processes on this 2-vCPU guest get about one core between
// them, so one transfer says little: the ring and both queue forms run R
// rounds (default 5), in a rotating order, and the table gives medians of
// the rates and of each round's own ratio to the ring, with their range.
// Every message carries its sequence number and every consumer checks it and
// folds all 64 bytes into a checksum (Received): a consumer whose copy the
// compiler could drop would measure only the index traffic (it did, until
// 2026-11-23: the ring's consumer copied into a buffer nobody read).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "shmc/shm_queue.h"
#include "shmc/shm_sync_buf.h"
#include "bench/queue_util.h"

namespace {

using shmc_bench::Median;
using shmc_bench::NowSeconds;
using shmc_bench::Pin;
using shmc_bench::Received;
using shmc_bench::Retry;
using shmc_bench::TransferRate;

// --write-ahead for every writer; -1: the library's default.
long long g_write_ahead = -1;
template <class W>
void ApplyWriteAhead(W& w) {
  if (g_write_ahead >= 0) w.SetWriteAhead(static_cast<uint64_t>(g_write_ahead));
}

// Stamps message I with its sequence number.
inline void Stamp(char* msg, uint64_t i) { std::memcpy(msg, &i, sizeof(i)); }

// The baseline: fixed 64-byte slots, head/tail on their own lines, each side
// caching the other's index.
struct alignas(64) Ring {
  static constexpr uint64_t kSlots = 1 << 14;
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) char slots[kSlots][64];
};

struct RingProducer {
  Ring* r;
  uint64_t tail = 0, cached_head = 0;
  bool Push(const void* m) {
    if (tail - cached_head >= Ring::kSlots) {
      cached_head = r->head.load(std::memory_order_acquire);
      if (tail - cached_head >= Ring::kSlots) return false;
    }
    std::memcpy(r->slots[tail & (Ring::kSlots - 1)], m, 64);
    r->tail.store(++tail, std::memory_order_release);
    return true;
  }
};
struct RingConsumer {
  Ring* r;
  uint64_t head = 0, cached_tail = 0;
  bool Pop(void* m) {
    if (head == cached_tail) {
      cached_tail = r->tail.load(std::memory_order_acquire);
      if (head == cached_tail) return false;
    }
    std::memcpy(m, r->slots[head & (Ring::kSlots - 1)], 64);
    r->head.store(++head, std::memory_order_release);
    return true;
  }
};

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
    if (n == 0 || rounds < 1 || batch < 1 || batch > 4096) {
      std::fprintf(stderr,
                   "usage: %s [--messages N] [--rounds R] [--batch 1-4096] "
                   "[--write-ahead BYTES] [--sync-bytes 4096..]\n",
                   argv[0]);
      return 2;
    }
  }
  char msg[64] = "shmc-queue-bench";
  const std::string key = "/shmc_queue_bench";
  const size_t bytes = 1 << 20;  // the baseline ring holds 16K x 64 = 1 MiB

  // Baseline ring in a shared anonymous mapping.
  auto* ring = static_cast<Ring*>(mmap(nullptr, sizeof(Ring),
                                       PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (ring) Ring();
  auto ring_rate = [&] {
    ring->head.store(0);
    ring->tail.store(0);
    return TransferRate(
        n,
        [&] {
          RingProducer p{ring};
          for (uint64_t i = 0; i < n; ++i) {
            Stamp(msg, i);
            Retry([&] { return p.Push(msg); });
          }
        },
        [&] {
          RingConsumer c{ring};
          char out[64];
          Received got;
          for (uint64_t i = 0; i < n; ++i) {
            Retry([&] { return c.Pop(out); });
            got.Take(out, sizeof(out));
          }
        });
  };

  auto queue_rate = [&](bool batched) {
    shmc::POSIX().Unlink(key);
    { shmc::ShmQueue<shmc::POSIX> create; create.InitForWrite(key, bytes); }
    return TransferRate(
        n,
        [&] {
          shmc::ShmQueue<shmc::POSIX> q;
          if (!q.InitForWrite(key, bytes)) _exit(1);
          ApplyWriteAhead(q);
          if (!batched) {
            for (uint64_t i = 0; i < n; ++i) {
              Stamp(msg, i);
              Retry([&] { return q.Push(msg, sizeof(msg)); });
            }
          } else {
            std::vector<std::string> recs(batch, std::string(msg, sizeof(msg)));
            for (uint64_t i = 0; i < n;) {
              size_t want = std::min<uint64_t>(batch, n - i);
              for (size_t j = 0; j < want; ++j) Stamp(&recs[j][0], i + j);
              size_t done = 0;
              Retry([&] {
                done = q.PushBatch(recs.data(), want);
                return done > 0;
              });
              i += done;
            }
          }
        },
        [&] {
          shmc::ShmQueue<shmc::POSIX> q;
          if (!q.InitForRead(key)) std::exit(1);
          char out[64];
          Received rec;
          if (!batched) {
            for (uint64_t i = 0; i < n; ++i) {
              size_t len = 0;
              Retry([&] {
                len = sizeof(out);
                return q.Pop(out, &len);
              });
              rec.Take(out, len);
            }
          } else {
            for (uint64_t i = 0; i < n;) {
              size_t got = 0;
              Retry([&] {
                got = q.PopBatch([&](const void* d, size_t l) {
                  std::memcpy(out, d, l);
                  rec.Take(out, l);
                }, batch);
                return got > 0;
              });
              i += got;
            }
          }
        });
  };
  // rates[k][round]: k = 0 ring, 1 ShmQueue, 2 batched ShmQueue.
  std::vector<std::vector<double>> rates =
      shmc_bench::RotatingRounds(rounds, 3, [&](size_t k) {
        return k == 0 ? ring_rate() : queue_rate(k == 2);
      });

  // Ping-pong: request on one queue, reply on another.
  std::vector<double> rtts;
  for (int r = 0; r < rounds; ++r) rtts.push_back(PingPongUs(key, 100000));

  // SyncBuf rates, one process, against the ring's single-process rate.
  std::printf("messages %llu of 64 bytes, producer on CPU 0, consumer on "
              "CPU 1, %d rounds, write-ahead %s\n\n",
              static_cast<unsigned long long>(n), rounds,
              g_write_ahead < 0 ? "default"
                                : std::to_string(g_write_ahead).c_str());
  std::printf("| queue | messages/s (median) | ratio to ring (median of "
              "rounds) | ratio range |\n|---|---:|---:|---:|\n");
  const std::string batched =
      "ShmQueue PushBatch/PopBatch (" + std::to_string(batch) + ")";
  const char* names[3] = {"64-byte-slot ring (baseline)", "ShmQueue Push/Pop",
                          batched.c_str()};
  const char* goals[3] = {"", " [goal >= 1.2]", " [goal >= 2]"};
  for (int k = 0; k < 3; ++k) {
    shmc_bench::Spread ratio = shmc_bench::RoundRatios(rates[k], rates[0]);
    std::printf("| %s | %.0f | %.2f%s | %.2f-%.2f |\n", names[k],
                Median(rates[k]), ratio.median, goals[k], ratio.min,
                ratio.max);
  }
  std::printf("\nping-pong round trip (ShmQueue, two processes): median "
              "%.2f us, range %.2f-%.2f us\n\n",
              Median(rtts), *std::min_element(rtts.begin(), rtts.end()),
              *std::max_element(rtts.begin(), rtts.end()));
  RingProducer rp{ring};
  RingConsumer rc{ring};
  ring->head = 0;
  ring->tail = 0;
  const uint64_t m = 1000000;
  double t0 = NowSeconds();
  char tmp[64];
  Received local;
  for (uint64_t i = 0; i < m; ++i) {
    Stamp(msg, i);
    rp.Push(msg);
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
