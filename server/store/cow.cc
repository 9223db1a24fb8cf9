#include "server/store/cow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "shmc/detail/process.h"

namespace shmkv {

namespace {

constexpr const char* kPrefix = "temp-shmkv-";

bool WriteAll(int fd, const char* p, size_t n, uint64_t off) {
  while (n > 0) {
    const ssize_t w = pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return true;
}

}  // namespace

std::string SnapshotLogPath(const std::string& dir, pid_t pid) {
  return dir + "/" + kPrefix + std::to_string(pid) + ".cow";
}

std::string SnapshotRdbPath(const std::string& dir, pid_t pid) {
  return dir + "/" + kPrefix + std::to_string(pid) + ".rdb";
}

bool ProcessRuns(pid_t pid, int64_t started_s) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  // A zombie (killed, not reaped yet) is gone; a pid used again since
  // is another process (the one asked about began at started_s).
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "re");
  if (f == nullptr) return true;  // no /proc: kill's answer
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') return true;
  if (p[2] == 'Z' || p[2] == 'X') return false;
  if (started_s <= 0) return true;
  const uint64_t ticks = shmc::detail::ProcessStartTime(
      static_cast<uint64_t>(pid));
  const long hz = sysconf(_SC_CLK_TCK);
  int64_t boot = 0;
  if (std::FILE* st = std::fopen("/proc/stat", "re")) {
    char line[256];
    while (std::fgets(line, sizeof(line), st) != nullptr) {
      long long b = 0;
      if (std::sscanf(line, "btime %lld", &b) == 1) boot = b;
    }
    std::fclose(st);
  }
  if (ticks == 0 || hz <= 0 || boot == 0) return true;
  const int64_t began = boot + static_cast<int64_t>(ticks) / hz;
  return began >= started_s - 2 && began <= started_s + 2;
}

size_t RemoveStaleSnapshotFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  size_t removed = 0;
  const size_t plen = std::strlen(kPrefix);
  while (struct dirent* e = readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= plen + 4 || name.substr(0, plen) != kPrefix) continue;
    const std::string_view ext = name.substr(name.size() - 4);
    if (ext != ".cow" && ext != ".rdb") continue;
    const std::string_view digits = name.substr(plen, name.size() - plen - 4);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(std::string(digits)));
    if (pid == getpid() || ProcessRuns(pid, 0)) continue;
    if (unlink((dir + "/" + std::string(name)).c_str()) == 0) ++removed;
  }
  closedir(d);
  return removed;
}

void CowLog::Attach(uint64_t s) {
  if (fd_ >= 0) close(fd_);
  fd_ = s == 0 ? -1
               : open(SnapshotLogPath(dir_, SnapshotPid(s)).c_str(),
                      O_WRONLY | O_CLOEXEC);
  attached_ = s;
  std::unordered_set<KeyHash, KeyHashHasher>().swap(logged_);
}

void CowLog::Record(const KeyHash& h, const std::string* old) {
  uint64_t w = j_->Counter(Journal::kSnapshotLog);
  if ((w & kLogFailed) != 0) return;  // the save fails anyway
  std::string rec(sizeof(CowRecordHead), '\0');
  CowRecordHead head{h.a, h.b,
                     old != nullptr ? static_cast<uint32_t>(old->size())
                                    : Journal::kNoBlob,
                     0};
  std::memcpy(rec.data(), &head, sizeof(head));
  if (old != nullptr) rec.append(*old);
  rec.resize((rec.size() + 7) & ~size_t{7}, '\0');
  const uint64_t at = w & kLogLength;
  if (fd_ < 0 || !WriteAll(fd_, rec.data(), rec.size(), at)) {
    j_->SetWord(Journal::kSnapshotLog, w | kLogFailed);
    return;
  }
  j_->SetWord(Journal::kSnapshotLog, (w & ~kLogLength) | (at + rec.size()));
}

CowReader::~CowReader() {
  if (fd_ >= 0) close(fd_);
}

bool CowReader::Open(const std::string& path, const Journal* j,
                     std::string* err) {
  j_ = j;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool CowReader::ReadAt(uint64_t off, size_t n, std::string* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(fd_, out->data() + got, n - got,
                            static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

void CowReader::Refresh() {
  const uint64_t end = j_->Counter(Journal::kSnapshotLog) & kLogLength;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::string buf;
  uint64_t buf_at = 0;
  while (!damaged_ && read_ + sizeof(CowRecordHead) <= end) {
    // Heads are read a chunk at a time; the blobs are skipped.
    if (read_ < buf_at || read_ + sizeof(CowRecordHead) > buf_at + buf.size()) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(end - read_, uint64_t{1} << 20));
      if (!ReadAt(read_, n, &buf)) {
        damaged_ = true;
        break;
      }
      buf_at = read_;
    }
    CowRecordHead head;
    std::memcpy(&head, buf.data() + (read_ - buf_at), sizeof(head));
    const uint64_t body = head.len == Journal::kNoBlob ? 0 : head.len;
    const uint64_t next = read_ + ((sizeof(head) + body + 7) & ~uint64_t{7});
    if (head.zero != 0 || next > end) {  // not a record this log wrote
      damaged_ = true;
      break;
    }
    first_.try_emplace(KeyHash{head.ha, head.hb},
                       At{head.len == Journal::kNoBlob ? kAbsentAt
                                                       : read_ + sizeof(head),
                          head.len});
    read_ = next;
  }
  if (read_ != end) damaged_ = true;
}

CowReader::Found CowReader::Find(const KeyHash& h, std::string* blob) {
  auto it = first_.find(h);
  if (it == first_.end()) return Found::kNone;
  if (it->second.off == kAbsentAt) return Found::kAbsent;
  if (!ReadAt(it->second.off, it->second.len, blob)) {
    damaged_ = true;
    return Found::kAbsent;
  }
  return Found::kBlob;
}

void CowReader::Each(
    const std::function<void(const KeyHash&, const std::string&)>& f) {
  // f may read through the log, which takes in new records: the ones
  // known now are visited.
  std::vector<std::pair<KeyHash, At>> known;
  for (const auto& [h, at] : first_) {
    if (at.off != kAbsentAt) known.emplace_back(h, at);
  }
  std::string blob;
  for (const auto& [h, at] : known) {
    if (!ReadAt(at.off, at.len, &blob)) {
      damaged_ = true;
      return;
    }
    f(h, blob);
  }
}

}  // namespace shmkv
