// HTTP/1.1 front end of shmkv: GET/PUT/DELETE /kv/<key> and GET /stats,
// keep-alive, Content-Length bodies (docs/server.md, "HTTP").
#pragma once

#include <cstddef>
#include <string>

#include "server/commands/command.h"

namespace shmkv {

enum class HttpResult {
  kDone,        // one request answered; *used bytes consumed
  kIncomplete,  // need more bytes
  kClose,       // answered (an error or Connection: close); then close
};

// Handles one request from data[0, n), appending the response to *out.
HttpResult HandleHttp(const char* data, size_t n, size_t max_body,
                      CommandContext* ctx, std::string* out, size_t* used);

// %XX decoding of a path component; false if malformed.
bool PercentDecode(const std::string& in, std::string* out);

}  // namespace shmkv
