#include "server/net/http.h"

#include <cctype>
#include <cstring>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"

namespace shmkv {

namespace {

constexpr size_t kMaxHead = 16 << 10;

void Respond(std::string* out, int code, const char* reason,
             std::string_view body, bool close,
             const char* type = "text/plain") {
  *out += "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\n";
  *out += std::string("Content-Type: ") + type + "\r\n";
  *out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (close) *out += "Connection: close\r\n";
  *out += "\r\n";
  out->append(body.data(), body.size());
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Runs one command through the command layer, as a RESP client's would
// run, and returns its RESP reply.
std::string RunCommand(CommandContext* ctx,
                       std::initializer_list<std::string_view> args) {
  std::string out;
  Reply reply(&out);
  Execute(std::vector<std::string_view>(args), ctx, &reply);
  return out;
}

// The HTTP answer to an error reply of the command layer.
void RespondError(std::string* out, std::string_view resp, bool close) {
  std::string text(resp.substr(1, resp.size() - 3));  // "-...\r\n"
  if (text.compare(0, 9, "WRONGTYPE") == 0) {
    Respond(out, 409, "Conflict", text + "\n", close);
  } else if (text.compare(0, 3, "OOM") == 0) {
    Respond(out, 507, "Insufficient Storage", text + "\n", close);
  } else if (text.find("exceeds") != std::string::npos) {
    Respond(out, 413, "Payload Too Large", text + "\n", close);
  } else {
    Respond(out, 500, "Internal Server Error", text + "\n", close);
  }
}

// GET /kv/KEY: GET. A bulk reply is the body, nil is 404.
void KvGet(CommandContext* ctx, const std::string& key, bool close,
           std::string* out) {
  std::string resp = RunCommand(ctx, {"GET", key});
  if (resp[0] == '-') return RespondError(out, resp, close);
  if (resp == "$-1\r\n") {
    return Respond(out, 404, "Not Found", "no such key\n", close);
  }
  size_t start = resp.find("\r\n") + 2;
  Respond(out, 200, "OK",
          std::string_view(resp).substr(start, resp.size() - start - 2),
          close, "application/octet-stream");
}

// PUT /kv/KEY: SET, but only over a string (or no value): the key's type
// is checked and the value written in one transaction, as MULTI would.
void KvPut(CommandContext* ctx, const std::string& key, std::string_view body,
           bool close, std::string* out) {
  auto txn = ctx->store->Begin();
  ctx->txn = txn.get();
  std::string type = RunCommand(ctx, {"TYPE", key});
  std::string resp;
  if (type == "+string\r\n" || type == "+none\r\n") {
    resp = RunCommand(ctx, {"SET", key, body});
  } else {
    Reply reply(&resp);
    cmd::WrongType(&reply);
  }
  ctx->txn = nullptr;
  if (resp[0] == '-') return RespondError(out, resp, close);
  Store::Status st = txn->Commit();
  if (st != Store::Status::kOk) {
    std::string err;
    Reply reply(&err);
    cmd::StoreError(st, &reply);
    return RespondError(out, err, close);
  }
  Respond(out, 204, "No Content", "", close);
}

// The request's route: false when the connection must close.
bool Route(std::string_view method, const std::string& target,
           std::string_view body, bool have_length, bool close,
           CommandContext* ctx, std::string* out) {
  if (target == "/stats" && method == "GET") {
    Respond(out, 200, "OK", StatsJson(ctx) + "\n", close, "application/json");
    return true;
  }
  if (target.compare(0, 4, "/kv/") != 0 || target.size() <= 4) {
    Respond(out, 404, "Not Found", "try /kv/<key> or /stats\n", close);
    return true;
  }
  std::string key;
  if (!PercentDecode(target.substr(4), &key)) {
    Respond(out, 400, "Bad Request", "malformed %-escape in key\n", true);
    return false;
  }
  if (method == "GET") {
    KvGet(ctx, key, close, out);
  } else if (method == "PUT" || method == "POST") {
    if (!have_length) {
      Respond(out, 411, "Length Required", "Content-Length required\n", true);
      return false;
    }
    KvPut(ctx, key, body, close, out);
  } else if (method == "DELETE") {
    std::string resp = RunCommand(ctx, {"DEL", key});
    if (resp[0] == '-') {
      RespondError(out, resp, close);
    } else if (resp == ":1\r\n") {
      Respond(out, 204, "No Content", "", close);
    } else {
      Respond(out, 404, "Not Found", "no such key\n", close);
    }
  } else {
    Respond(out, 405, "Method Not Allowed", "GET, PUT, POST or DELETE\n", close);
  }
  return true;
}

}  // namespace

bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // needs two hex digits
    int hi = Hex(in[i + 1]), lo = Hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

HttpResult HandleHttp(const char* data, size_t n, size_t max_body,
                      CommandContext* ctx, std::string* out, size_t* used) {
  std::string_view in(data, n);
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (n > kMaxHead) {
      Respond(out, 431, "Request Header Fields Too Large", "headers too large\n", true);
      return HttpResult::kClose;
    }
    return HttpResult::kIncomplete;
  }
  if (head_end > kMaxHead) {  // the limit holds however the head arrived
    Respond(out, 431, "Request Header Fields Too Large", "headers too large\n", true);
    return HttpResult::kClose;
  }
  std::string_view head = in.substr(0, head_end);
  size_t le = head.find("\r\n");
  std::string_view reqline = head.substr(0, le);
  size_t sp1 = reqline.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : reqline.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      reqline.substr(sp2 + 1, 7) != "HTTP/1.") {
    Respond(out, 400, "Bad Request", "malformed request line\n", true);
    return HttpResult::kClose;
  }
  std::string_view method = reqline.substr(0, sp1);
  std::string target(reqline.substr(sp1 + 1, sp2 - sp1 - 1));
  bool http10 = reqline.substr(sp2 + 1) == "HTTP/1.0";
  bool close = http10;
  size_t content_length = 0;
  bool have_length = false;
  std::string_view authorization;
  size_t pos = le == std::string_view::npos ? head.size() : le + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      Respond(out, 400, "Bad Request", "malformed header\n", true);
      return HttpResult::kClose;
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (cmd::EqualFold(name, "content-length")) {
      size_t v = 0;
      if (value.empty() || value.size() > 12) {
        Respond(out, 400, "Bad Request", "bad Content-Length\n", true);
        return HttpResult::kClose;
      }
      for (char c : value) {
        if (c < '0' || c > '9') {
          Respond(out, 400, "Bad Request", "bad Content-Length\n", true);
          return HttpResult::kClose;
        }
        v = v * 10 + static_cast<size_t>(c - '0');
      }
      if (have_length && v != content_length) {
        // Two lengths that disagree: whichever a proxy believed, the other
        // reading would smuggle a request (RFC 9112, 6.3).
        Respond(out, 400, "Bad Request", "conflicting Content-Length\n",
                true);
        return HttpResult::kClose;
      }
      content_length = v;
      have_length = true;
    } else if (cmd::EqualFold(name, "transfer-encoding")) {
      Respond(out, 501, "Not Implemented", "chunked bodies are not supported; send Content-Length\n", true);
      return HttpResult::kClose;
    } else if (cmd::EqualFold(name, "authorization")) {
      authorization = value;
    } else if (cmd::EqualFold(name, "connection")) {
      if (cmd::EqualFold(value, "close")) close = true;
      if (cmd::EqualFold(value, "keep-alive")) close = false;
    }
  }
  if (content_length > max_body) {
    Respond(out, 413, "Payload Too Large", "value too large\n", true);
    return HttpResult::kClose;
  }
  size_t body_start = head_end + 4;
  if (n < body_start + content_length) return HttpResult::kIncomplete;
  std::string_view body = in.substr(body_start, content_length);
  *used = body_start + content_length;
  ++ctx->http_requests;
  if (ctx->password != nullptr && !ctx->password->empty() &&
      authorization != "Bearer " + *ctx->password) {
    Respond(out, 401, "Unauthorized",
            "send Authorization: Bearer <requirepass>\n", close);
    return close ? HttpResult::kClose : HttpResult::kDone;
  }
  ctx->client->authed = true;  // this request carried the password

  if (!Route(method, target, body, have_length, close, ctx, out)) {
    return HttpResult::kClose;
  }
  return close ? HttpResult::kClose : HttpResult::kDone;
}

}  // namespace shmkv
