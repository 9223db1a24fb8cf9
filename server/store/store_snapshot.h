// The background save's side of the store (StoreT's snapshot members:
// docs/server.md, "Persistence"): the fork and the save's instant, the
// reads as of that instant, and its end, whoever ends it. Part of
// store.cc, which includes it inside its own anonymous namespace after
// StoreT; no other file includes it.

template <class Alloc, class Values>
pid_t StoreT<Alloc, Values>::ForkSnapshot(bool locked, SnapshotPoint* at,
                                          bool* busy, std::string* err) {
  *busy = false;
  auto running = [&](uint64_t s) {
    return s != 0 && ProcessRuns(SnapshotPid(s), SnapshotStart(s));
  };
  if (running(journal_.Counter(Journal::kSnapshot))) {  // spares a fork
    *busy = true;
    *err = "a background save is in progress";
    return -1;
  }
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) {
    *err = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  // The child is forked before the write lock is taken (a fork takes
  // milliseconds); the instant is taken under the lock after, and the
  // child is told it through the pipe before it reads anything.
  struct Go {
    char ok;
    SnapshotPoint at;
  };
  static_assert(std::is_trivially_copyable<Go>::value &&
                    sizeof(Go) <= PIPE_BUF,
                "one write, whole");
  const pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    Go g{};
    size_t got = 0;
    while (got < sizeof(g)) {
      const ssize_t n = read(go[0], reinterpret_cast<char*>(&g) + got,
                             sizeof(g) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(go[0]);
    if (got != sizeof(g) || g.ok != 1) _exit(1);
    *at = g.at;
    return 0;
  }
  close(go[0]);
  Go g{};
  if (pid < 0) {
    *err = std::string("fork: ") + std::strerror(errno);
  } else {
    if (!locked) Lock();
    const uint64_t s = journal_.Counter(Journal::kSnapshot);
    if (running(s)) {
      *busy = true;
      *err = "a background save is in progress";
    } else {
      if (s != 0) EndDeadSnapshot(s);
      g.ok = MarkSnapshot(pid, &g.at, err) ? 1 : 0;
    }
    if (!locked) Unlock();
    while (write(go[1], &g, sizeof(g)) < 0 && errno == EINTR) {
    }
  }
  close(go[1]);
  if (pid > 0 && g.ok != 1) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return -1;
  }
  *at = g.at;
  return pid;
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::ReadAsOfSnapshot(const SnapshotPoint& at,
                                             std::string* err) {
  cow_.Forget();
  if (SnapshotPid(journal_.Counter(Journal::kSnapshot)) != getpid()) {
    *err = "the save was ended by another process";
    return false;
  }
  auto r = std::make_unique<CowReader>();
  if (!r->Open(SnapshotLogPath(cfg_.dir, getpid()), &journal_, err)) {
    return false;
  }
  asof_ = std::move(r);
  asof_ms_ = at.ms;
  return true;
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::SnapshotKeys(
    uint32_t physical, const std::function<void(std::string_view)>& f) {
  if (asof_ == nullptr) return false;
  // The keys the map holds, each read as of the instant; then those
  // logged (changed or removed since) that the walk did not meet.
  std::vector<KeyHash> seen;
  std::string key;
  map_.Travel([&](const KeyHash& h, const std::string& blob) {
    Blob b;
    if (!b.Parse(blob.data(), blob.size()) || b.part() || b.db != physical) {
      return;
    }
    seen.push_back(h);
    key.assign(b.key.data(), b.key.size());
    f(key);
  });
  auto less = [](const KeyHash& x, const KeyHash& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  };
  std::sort(seen.begin(), seen.end(), less);
  asof_->Refresh();
  asof_->Each([&](const KeyHash& h, const std::string& blob) {
    Blob b;
    if (!b.Parse(blob.data(), blob.size()) || b.part() || b.db != physical ||
        std::binary_search(seen.begin(), seen.end(), h, less)) {
      return;
    }
    key.assign(b.key.data(), b.key.size());
    f(key);
  });
  return !asof_->damaged();
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::EndSnapshot(
    const std::function<bool()>& publish) {
  bool ok = asof_ != nullptr && !asof_->damaged();
  {
    Locked lock(this);
    if (SnapshotPid(journal_.Counter(Journal::kSnapshot)) == getpid()) {
      // The file goes in place, the outcome is written, then the save
      // stops being in progress: a reader that sees it ended sees its
      // outcome and its file (the words are stored in that order).
      const uint64_t w = journal_.Counter(Journal::kSnapshotLog);
      ok = ok && (w & kLogFailed) == 0 && publish != nullptr && publish();
      journal_.SetWord(Journal::kSnapshotLog,
                       ok ? (w & ~kSaveFailed) : (w | kSaveFailed));
      journal_.SetWord(Journal::kSnapshot, 0);
    } else {
      // Ended by another process, which recorded it failed: its log
      // is gone.
      ok = false;
    }
  }
  unlink(SnapshotLogPath(cfg_.dir, getpid()).c_str());
  asof_.reset();
  return ok;
}

template <class Alloc, class Values>
Store::SnapshotState StoreT<Alloc, Values>::Snapshot() {
  SnapshotState st;
  const uint64_t s = journal_.Counter(Journal::kSnapshot);
  const uint64_t w = journal_.Counter(Journal::kSnapshotLog);
  if (s != 0) {
    st.pid = SnapshotPid(s);
    st.started_s = SnapshotStart(s);
  }
  st.log_bytes = w & kLogLength;
  st.last_failed = (w & kSaveFailed) != 0;
  return st;
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::ReapSnapshot() {
  const uint64_t s = journal_.Counter(Journal::kSnapshot);
  if (s == 0 || ProcessRuns(SnapshotPid(s), SnapshotStart(s))) return false;
  Locked lock(this);
  if (journal_.Counter(Journal::kSnapshot) != s) return false;
  EndDeadSnapshot(s);
  return true;
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::AsOf(const KeyHash& h, bool found) {
  asof_->Refresh();
  switch (asof_->Find(h, &asof_blob_)) {
    case CowReader::Found::kNone: return found;
    case CowReader::Found::kAbsent: return false;
    case CowReader::Found::kBlob: break;
  }
  if (scratch_.size() < asof_blob_.size()) scratch_.resize(asof_blob_.size());
  std::memcpy(scratch_.data(), asof_blob_.data(), asof_blob_.size());
  scratch_len_ = asof_blob_.size();
  return true;
}

template <class Alloc, class Values>
bool StoreT<Alloc, Values>::MarkSnapshot(pid_t pid, SnapshotPoint* at,
                                         std::string* err) {
  at->ms = WallMs();
  const uint64_t parts = journal_.Counter(Journal::kParts);
  for (uint32_t l = 0; l < kDatabases; ++l) {
    const uint32_t p = dbs_.Physical(l);
    at->physical[l] = p;
    at->keys[p] = dbs_.KeysOf(p, map_.size(), parts);
    at->expires[p] = dbs_.Expires(p);
  }
  const std::string log = SnapshotLogPath(cfg_.dir, pid);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                      0600);
  if (fd < 0) {
    *err = log + ": " + std::strerror(errno);
    return false;
  }
  close(fd);
  // The last save's outcome stays until this one's is known.
  journal_.SetWord(Journal::kSnapshotLog,
                   journal_.Counter(Journal::kSnapshotLog) & kSaveFailed);
  journal_.SetWord(Journal::kSnapshot, SnapshotWord(at->ms / 1000, pid));
  return true;
}

template <class Alloc, class Values>
void StoreT<Alloc, Values>::EndDeadSnapshot(uint64_t s) {
  journal_.SetWord(Journal::kSnapshot, 0);
  journal_.SetWord(Journal::kSnapshotLog,
                   journal_.Counter(Journal::kSnapshotLog) | kSaveFailed);
  unlink(SnapshotLogPath(cfg_.dir, SnapshotPid(s)).c_str());
  unlink(SnapshotRdbPath(cfg_.dir, SnapshotPid(s)).c_str());
}
