// shmkv's command layer in process: a Store in a segment of the test's own
// and a client, so a test runs commands as Run({"set", "k", "v"}) and gets
// their RESP replies, with no server, socket or child process.
#pragma once

#include <unistd.h>

#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "shmc/global_options.h"
#include "server/store/store.h"
#include "tests/support/test_protocol.h"
#include "tests/support/value_pool.h"

namespace shmkv_test {

class CommandHarness {
 public:
  // `tag` makes the segment's name unique to the test (with the pid and a
  // counter), so harnesses of parallel tests never meet.
  // `keys` and `memory` size the store (a test of large values asks for
  // more than the default).
  explicit CommandHarness(const std::string& tag = "h", uint64_t keys = 4096,
                          uint64_t memory = 8ULL << 20) {
    static std::atomic<int> seq{0};
    cfg_.backend = shmkv::Backend::kPosix;
    cfg_.name = "/shmkv_harness_" + tag + "_" + std::to_string(getpid()) +
                "_" + std::to_string(seq++);
    cfg_.capacity = keys;
    cfg_.memory = memory;
    cfg_.journal = memory > (8ULL << 20) ? 16ULL << 20 : 1ULL << 20;
    cfg_.max_value = 1ULL << 20;
    cfg_.extents = shmc_test::TestValuePoolExtents();
    std::string err;
    shmkv::RemoveStore(cfg_, &err);  // a leftover of a killed run of ours
    // Store::Open sets the process's default create flags (as every shmkv
    // process does); the test's own segments keep the defaults it had.
    int saved_flags = shmc::DefaultCreateFlags();
    store_ = shmkv::Store::Open(cfg_, true, &err);
    shmc::SetDefaultCreateFlags(saved_flags);
    error_ = err;
    info_.name = cfg_.name;
    info_.capacity = cfg_.capacity;
    info_.memory = cfg_.memory;
    info_.max_value = cfg_.max_value;
    info_.journal = cfg_.journal;
    ctx_.store = store_.get();
    ctx_.info = &info_;
    ctx_.client = &client_;
    client_.authed = true;
    client_.resp = TestProtocol();
  }
  ~CommandHarness() {
    store_.reset();
    std::string err;
    shmkv::RemoveStore(cfg_, &err);
  }
  CommandHarness(const CommandHarness&) = delete;
  CommandHarness& operator=(const CommandHarness&) = delete;

  bool ok() const { return store_ != nullptr; }
  const shmkv::StoreConfig& config() const { return cfg_; }
  const std::string& error() const { return error_; }
  shmkv::Store* store() { return store_.get(); }
  // What CONFIG GET and INFO report (a test may set, e.g., a port).
  shmkv::ServerInfo* info() { return &info_; }

  // Runs one command and returns its RESP reply.
  std::string Run(const std::vector<std::string>& args) {
    return RunAs(&client_, args);
  }
  std::string Run(std::initializer_list<std::string> args) {
    return Run(std::vector<std::string>(args));
  }

  // A second connection's state, for what two clients show (WATCH).
  using Client = shmkv::ClientState;
  Client NewClient() {
    Client c;
    c.authed = true;
    c.resp = TestProtocol();
    return c;
  }
  std::string RunAs(Client* client, const std::vector<std::string>& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    shmkv::Reply reply(&out);
    ctx_.client = client;
    shmkv::Execute(views, &ctx_, &reply);
    ctx_.client = &client_;
    return out;
  }

  // Writes a value of any type straight into the store, as a family of
  // that type would: for the typed paths of other families' commands.
  bool WriteTyped(const std::string& key, shmkv::ValueType type,
                  const std::string& bytes, uint8_t encoding = 0,
                  int64_t expire_ms = 0) {
    auto t = store_->Begin();
    return t->Write(key, type, encoding, bytes, expire_ms) ==
               shmkv::Store::Status::kOk &&
           t->Commit() == shmkv::Store::Status::kOk;
  }

 private:
  shmkv::StoreConfig cfg_;
  std::unique_ptr<shmkv::Store> store_;
  std::string error_;
  shmkv::ServerInfo info_;
  shmkv::ClientState client_;
  shmkv::CommandContext ctx_;
};

// The command layer over a store another process made, as a worker
// process has it: for tests that fork workers and kill them.
class CommandWorker {
 public:
  explicit CommandWorker(const shmkv::StoreConfig& cfg) {
    std::string err;
    store_ = shmkv::Store::Open(cfg, false, &err);
    info_.name = cfg.name;
    info_.capacity = cfg.capacity;
    ctx_.store = store_.get();
    ctx_.info = &info_;
    ctx_.client = &client_;
    client_.authed = true;
    client_.resp = TestProtocol();
  }
  bool ok() const { return store_ != nullptr; }
  std::string Run(const std::vector<std::string>& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    shmkv::Reply reply(&out);
    shmkv::Execute(views, &ctx_, &reply);
    return out;
  }

 private:
  std::unique_ptr<shmkv::Store> store_;
  shmkv::ServerInfo info_;
  shmkv::ClientState client_;
  shmkv::CommandContext ctx_;
};

}  // namespace shmkv_test
