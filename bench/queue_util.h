// What the queue benchmarks (queue_bench, machine/line_transfer) share: the
// one spin-wait every queue is measured with, the one source of messages
// every producer pushes, the check every consumer makes of every message,
// the baseline ring and the floors' protocols, and the timed producer ->
// consumer transfer between two pinned processes.
#pragma once

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "shmc/shm_queue.h"

namespace shmc_bench {

inline double NowSeconds() { return NowNs() / 1e9; }

// Pins the calling process to one CPU.
inline void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// Tells the core this thread is spinning.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Calls f until it returns true: a pause after each failed try, a yield
// after every 64. Without the pause, a consumer polling an empty queue
// takes the producer's index line from it several times per message and
// halves the producer's rate (measured: 5.5M against 19M msg/s for the
// ring), so a queue's rate said more about who waited than about the queue.
// Always inlined, so that every way's first try runs in its caller's loop:
// GCC inlined it for the ring's small Push but called it per message for
// ShmQueue's, and the call's stores (return address, saved registers) wait
// behind the ring line's transfer like the record's own; that cost
// ShmQueue's producer a third of its rate (0.45-0.51 against 0.76-0.78 of
// a plain in-band producer on ShmQueue's segment, same rounds).
template <class F>
__attribute__((always_inline)) inline void Retry(F&& f) {
  for (int tries = 0; !f(); ++tries) {
    CpuRelax();
    if (tries % 64 == 63) sched_yield();
  }
}

// The messages every producer pushes: message i is 64 bytes, its first word
// i, the rest a fixed pattern. They are written 64 at a time, ahead of their
// pushes. A message written just before its push made each queue's copy
// wait for that write to leave the store buffer behind the previous
// messages' stores to lines the consumer holds, which cost more than the
// queue itself (the ring ran at 0.3 of its rate with messages written
// ahead), and it cost each way differently.
class Messages {
 public:
  static constexpr uint64_t kBlock = 64;

  Messages() : recs_(kBlock, std::string(64, '\0')) {
    for (std::string& r : recs_) {
      for (size_t k = 8; k < 64; ++k) r[k] = static_cast<char>(k * 7);
    }
    Stamp(0);
  }
  // Message i; i never goes back, and moves on by at most kBlock.
  const char* At(uint64_t i) { return Ensure(i)->data(); }
  // Messages i .. i + *n - 1, consecutive; lowers *n to what the block
  // still holds.
  const std::string* Run(uint64_t i, size_t* n) {
    const std::string* first = Ensure(i);
    *n = static_cast<size_t>(std::min<uint64_t>(*n, start_ + kBlock - i));
    return first;
  }

 private:
  const std::string* Ensure(uint64_t i) {
    if (i >= start_ + kBlock) Stamp(i);
    return &recs_[i - start_];
  }
  void Stamp(uint64_t from) {
    start_ = from;
    for (uint64_t j = 0; j < kBlock; ++j) {
      uint64_t seq = from + j;
      std::memcpy(&recs_[j][0], &seq, sizeof(seq));
    }
  }
  std::vector<std::string> recs_;
  uint64_t start_ = 0;
};

// What every consumer does with a message: check that it is 64 bytes
// starting with its sequence number, and read all of it into a checksum
// (so no compiler can drop the copy). A wrong message ends the program.
struct Received {
  uint64_t next = 0;
  uint64_t sum = 0;
  // The length is checked before the copy, so that the copy is of a
  // constant 64 bytes for every queue (a copy of a variable length was a
  // loop, charged only to the queues that return a length).
  void Take(const void* m, size_t len) {
    uint64_t w[8];
    if (len != sizeof(w)) Wrong(len, m);
    std::memcpy(w, m, sizeof(w));
    if (w[0] != next) Wrong(len, m);
    ++next;
    for (uint64_t x : w) sum += x;
  }
  [[noreturn]] void Wrong(size_t len, const void* m) {
    uint64_t first = 0;
    if (len >= sizeof(first)) std::memcpy(&first, m, sizeof(first));
    std::fprintf(stderr, "message %llu arrived as %llu (%zu bytes)\n",
                 static_cast<unsigned long long>(next),
                 static_cast<unsigned long long>(first), len);
    std::exit(1);
  }
  ~Received() { sink = sum; }
  static inline volatile uint64_t sink = 0;
};

// The baseline ring: 16K fixed 64-byte slots (1 MiB, the size every queue
// gets), the producer's and the consumer's index each on its own line.
struct alignas(64) Ring {
  static constexpr uint64_t kSlots = 1 << 14;
  static constexpr uint64_t kBytes = kSlots * 64;
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) char bytes[kBytes];
  char* Slot(uint64_t i) { return bytes + (i & (kSlots - 1)) * 64; }
};

// Each side caches the other's index and stores its own every kEvery
// messages, and before it reports full (empty) so that the other side
// never waits on messages already written (read). kEvery 1: the ring.
template <uint64_t kEvery = 1>
struct RingProducer {
  Ring* r;
  uint64_t tail = 0, cached_head = 0, published = 0;
  bool Push(const void* m) {
    if (tail - cached_head >= Ring::kSlots) {
      cached_head = r->head.load(std::memory_order_acquire);
      if (tail - cached_head >= Ring::kSlots) {
        Flush();
        return false;
      }
    }
    std::memcpy(r->Slot(tail), m, 64);
    if (++tail % kEvery == 0) Flush();
    return true;
  }
  void Flush() {
    if (published == tail) return;
    r->tail.store(tail, std::memory_order_release);
    published = tail;
  }
};

template <uint64_t kEvery = 1>
struct RingConsumer {
  Ring* r;
  uint64_t head = 0, cached_tail = 0, released = 0;
  bool Pop(void* m) {
    if (head == cached_tail) {
      cached_tail = r->tail.load(std::memory_order_acquire);
      if (head == cached_tail) {
        if (released != head) {
          r->head.store(head, std::memory_order_release);
          released = head;
        }
        return false;
      }
    }
    std::memcpy(m, r->Slot(head), 64);
    if (++head % kEvery == 0) {
      r->head.store(head, std::memory_order_release);
      released = head;
    }
    return true;
  }
};

template <uint64_t kEvery>
void RingProduce(Ring* r, uint64_t n) {
  RingProducer<kEvery> p{r};
  Messages msgs;
  for (uint64_t i = 0; i < n; ++i) {
    const char* m = msgs.At(i);
    Retry([&] { return p.Push(m); });
  }
  p.Flush();
}

template <uint64_t kEvery>
void RingConsume(Ring* r, uint64_t n) {
  RingConsumer<kEvery> c{r};
  Received got;
  char out[64];
  for (uint64_t i = 0; i < n; ++i) {
    Retry([&] { return c.Pop(out); });
    got.Take(out, sizeof(out));
  }
}

// In band, a floor under ShmQueue: records of kStride bytes at byte
// positions in the ring's bytes; word 0 of a record is its header
// (sequence + 1, stored last with release), then the 64-byte message.
// kStride 64: the header is the message's first word (seq-in-slot);
// kStride 72: a separate header word, as in ShmQueue, which also zeroes
// the word after the record before publishing it (so the consumer finds
// zero there, never an older lap's word, until the next header); the
// payload's words wrap with the ring (no pad records). No producer index;
// the consumer stores its position every kHeadEvery records.
inline std::atomic<uint64_t>* WordAt(Ring* r, uint64_t pos) {
  return reinterpret_cast<std::atomic<uint64_t>*>(
      r->bytes + (pos & (Ring::kBytes - 1)));
}

template <uint64_t kStride>
void InBandProduce(Ring* r, uint64_t n) {
  constexpr uint64_t kData = kStride == 64 ? 8 : 0;  // where the copy starts
  Messages msgs;
  uint64_t cached_head = 0;
  for (uint64_t i = 0, pos = 0; i < n; ++i, pos += kStride) {
    if (pos + kStride + 8 - cached_head > Ring::kBytes) {
      Retry([&] {
        cached_head = r->head.load(std::memory_order_acquire);
        return pos + kStride + 8 - cached_head <= Ring::kBytes;
      });
    }
    uint64_t w[8];
    std::memcpy(w, msgs.At(i), sizeof(w));
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
void InBandConsume(Ring* r, uint64_t n) {
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

// ShmQueue's producer and consumer over the POSIX segment `key` (created
// by the caller), one record per call (batch 1) or PushBatch/PopBatch of
// `batch`. write_ahead < 0: the library's default.
inline void ShmQueueProduce(const std::string& key, uint64_t n, size_t batch,
                            long long write_ahead) {
  shmc::ShmQueue<shmc::POSIX> q;
  if (!q.InitForWrite(key, Ring::kBytes)) _exit(1);
  if (write_ahead >= 0) q.SetWriteAhead(static_cast<uint64_t>(write_ahead));
  Messages msgs;
  for (uint64_t i = 0; i < n;) {
    if (batch == 1) {
      const char* m = msgs.At(i);
      Retry([&] { return q.Push(m, 64); });
      ++i;
      continue;
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(batch, n - i));
    const std::string* recs = msgs.Run(i, &want);
    size_t done = 0;
    Retry([&] { return (done = q.PushBatch(recs, want)) > 0; });
    i += done;
  }
}

inline void ShmQueueConsume(const std::string& key, uint64_t n,
                            size_t batch) {
  shmc::ShmQueue<shmc::POSIX> q;
  if (!q.InitForRead(key)) {
    std::fprintf(stderr, "%s: %s\n", key.c_str(),
                 q.last_error().message.c_str());
    std::exit(1);
  }
  Received got;
  char out[64];
  for (uint64_t i = 0; i < n;) {
    if (batch == 1) {
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
      done = q.PopBatch([&](const void* d, size_t l) { got.Take(d, l); },
                        batch);
      return done > 0;
    });
    i += done;
  }
}

// Runs producer() in a child pinned to CPU 0 and consumer() in this process
// pinned to CPU 1; returns n / the consumer's seconds. A producer that
// fails (exits non-zero or dies) ends the program.
inline double TransferRate(uint64_t n, const std::function<void()>& producer,
                           const std::function<void()>& consumer) {
  pid_t pid = fork();
  if (pid == 0) {
    Pin(0);
    producer();
    _exit(0);
  }
  Pin(1);
  double t0 = NowSeconds();
  consumer();
  double dt = NowSeconds() - t0;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the producer process failed\n");
    std::exit(1);
  }
  return static_cast<double>(n) / dt;
}

// Nanoseconds for one cache line to go from CPU 0 to CPU 1 and back: two
// pinned processes take turns incrementing a shared word. On a guest whose
// two vCPUs the host places at will, this moves by 4x from hour to hour
// (2026-11-24: the ring ran at 43M msg/s and at 8.6M), and every rate above
// moves with it; the benches print it before and after their rounds so a
// table says which placement it was measured on.
inline double LineRoundTripNs(uint64_t trips = 200000) {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  auto* word = new (p) std::atomic<uint64_t>(0);
  pid_t pid = fork();
  if (pid == 0) {
    Pin(0);
    for (uint64_t i = 0; i < trips; ++i) {
      while (word->load(std::memory_order_acquire) != 2 * i) CpuRelax();
      word->store(2 * i + 1, std::memory_order_release);
    }
    _exit(0);
  }
  Pin(1);
  double t0 = NowNs();
  for (uint64_t i = 0; i < trips; ++i) {
    while (word->load(std::memory_order_acquire) != 2 * i + 1) CpuRelax();
    word->store(2 * i + 2, std::memory_order_release);
  }
  double ns = (NowNs() - t0) / static_cast<double>(trips);
  waitpid(pid, nullptr, 0);
  munmap(p, 4096);
  return ns;
}

// One way of moving messages, timed by Transfer: over a fresh Ring, or
// (shm_queue) over a fresh ShmQueue segment of Ring::kBytes at `key`.
struct Way {
  const char* name;
  bool shm_queue;
  std::function<void(Ring*, uint64_t)> producer, consumer;
};

// Messages per second of one transfer of n messages.
inline double Transfer(const Way& way, const std::string& key, uint64_t n) {
  void* p = mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* r = new (p) Ring();
  std::memset(r->bytes, 0, sizeof(r->bytes));  // fault the pages in
  if (way.shm_queue) {
    shmc::POSIX().Unlink(key);
    shmc::ShmQueue<shmc::POSIX> create;
    if (!create.InitForWrite(key, Ring::kBytes)) {
      std::fprintf(stderr, "%s: %s\n", key.c_str(),
                   create.last_error().message.c_str());
      std::exit(1);
    }
  }
  double rate = TransferRate(n, [&] { way.producer(r, n); },
                             [&] { way.consumer(r, n); });
  munmap(p, sizeof(Ring));
  if (way.shm_queue) shmc::POSIX().Unlink(key);
  return rate;
}

}  // namespace shmc_bench
