// Commands the server runs itself, not for a client: loading an RDB file
// (RESTORE per key), a save point's BGSAVE, the replication link's. A context over the store with
// the server's settings and a client of its own, already authenticated.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/reply.h"
#include "server/store/store.h"

namespace shmkv {

class LocalCommands {
 public:
  LocalCommands(Store* store, ServerInfo info) : info_(std::move(info)) {
    client_.authed = true;
    ctx_.store = store;
    ctx_.info = &info_;
    ctx_.client = &client_;
    // The server's own commands run on a replica too (which refuses
    // clients' writes): the replication link's, a file it loads.
    ctx_.from_master = true;
  }
  LocalCommands(const LocalCommands&) = delete;
  ClientState* client() { return &client_; }
  CommandContext* context() { return &ctx_; }
  LocalCommands& operator=(const LocalCommands&) = delete;

  // Runs one command; its reply, as RESP.
  std::string Run(const std::vector<std::string_view>& args) {
    std::string out;
    Reply reply(&out);
    Execute(args, &ctx_, &reply);
    return out;
  }

 private:
  ServerInfo info_;
  ClientState client_;
  CommandContext ctx_;
};

}  // namespace shmkv
