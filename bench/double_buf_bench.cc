// ShmDoubleBuf read rates against a process-local baseline in the same run:
// a std::string behind a std::shared_mutex (what a program does without
// shared memory). In-place read = pin, sum the first and last word, unpin;
// copy read = Read() into a reused std::string. Blob sizes 64 B, 4 KiB,
// 64 KiB. No writer runs (the read path alone).
//
//   double_buf_bench [--runs N]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "shmc/shm_double_buf.h"

namespace {

double NsPerOp(const std::function<uint64_t()>& body, int ops) {
  auto t0 = std::chrono::steady_clock::now();
  volatile uint64_t sink = body();
  (void)sink;
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / ops;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  if (argc == 3 && std::strcmp(argv[1], "--runs") == 0) runs = std::atoi(argv[2]);
  const std::string key = "/shmc_double_buf_bench_" + std::to_string(getpid());
  std::printf("| size | run | in-place ns | copy ns | shared_mutex+copy ns | "
              "in-place vs baseline | copy vs baseline |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (size_t size : {size_t{64}, size_t{4096}, size_t{65536}}) {
    shmc::POSIX().Unlink(key);
    shmc::ShmDoubleBuf<shmc::POSIX> w, r;
    std::string blob(size, 'x');
    if (!w.InitForWrite(key, size) || !w.Publish(blob) || !r.InitForRead(key)) {
      std::fprintf(stderr, "init failed: %s %s\n", w.last_error().message.c_str(),
                   r.last_error().message.c_str());
      return 1;
    }
    std::string local = blob;
    std::shared_mutex mu;
    const int ops = size > 4096 ? 200000 : 2000000;
    for (int run = 1; run <= runs; ++run) {
      double inplace = NsPerOp([&] {
        uint64_t s = 0;
        for (int i = 0; i < ops; ++i) {
          auto g = r.ReadInPlace();
          const char* p = static_cast<const char*>(g.data());
          s += static_cast<unsigned char>(p[0]) +
               static_cast<unsigned char>(p[g.size() - 1]);
        }
        return s;
      }, ops);
      std::string out;
      double copy = NsPerOp([&] {
        uint64_t s = 0;
        for (int i = 0; i < ops; ++i) {
          r.Read(&out);
          s += out.size();
        }
        return s;
      }, ops);
      double base = NsPerOp([&] {
        uint64_t s = 0;
        for (int i = 0; i < ops; ++i) {
          std::shared_lock<std::shared_mutex> lock(mu);
          out.assign(local);
          s += out.size();
        }
        return s;
      }, ops);
      std::printf("| %zu | %d | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", size,
                  run, inplace, copy, base, base / inplace, base / copy);
    }
  }
  shmc::POSIX().Unlink(key);
  return 0;
}
