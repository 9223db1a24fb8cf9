// shmkv's connection commands (PING, ECHO, QUIT, RESET, SELECT, AUTH,
// HELLO, CLIENT): what a client asks of its own connection.
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/pubsub_hub.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

void DiscardTransaction(ClientState* cl);  // transaction_family.cc

// PING [message]
void Ping(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 2) {
    r->Error("ERR wrong number of arguments for 'ping' command");
  } else if (c->client->subscribed() && c->client->resp == 2) {
    // A subscribed client's PING is answered in a message's shape (in
    // RESP2, where replies and messages look alike).
    r->Array(2);
    r->Bulk("pong");
    r->Bulk(a.size() == 2 ? a[1] : "");
  } else if (a.size() == 2) {
    r->Bulk(a[1]);
  } else {
    r->Simple("PONG");
  }
}

// ECHO message
void Echo(const Args& a, CommandContext*, Reply* r) {
  r->Bulk(a[1]);
}

// QUIT
void Quit(const Args&, CommandContext* c, Reply* r) {
  c->quit = true;
  r->Simple("OK");
}

// SELECT index
void Select(const Args& a, CommandContext* c, Reply* r) {
  uint32_t db = 0;
  if (!ParseDb(a[1], &db, r)) return;
  c->client->db = db;
  r->Simple("OK");
}

bool PasswordSet(const CommandContext* c) {
  return c->password != nullptr && !c->password->empty();
}

// Compares in time that depends on the lengths only.
bool SamePassword(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

constexpr const char kWrongPass[] =
    "WRONGPASS invalid username-password pair or user is disabled.";

// AUTH [username] password, and HELLO's AUTH option: the only user is
// "default", as in a Redis without ACL rules.
bool CheckAuth(std::string_view user, std::string_view pass,
               CommandContext* c) {
  if (user != "default") return false;
  if (!PasswordSet(c)) return true;  // default user has no password
  if (!SamePassword(pass, *c->password)) return false;
  c->client->authed = true;
  return true;
}

// AUTH [username] password
void Auth(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 3) return r->Error("ERR syntax error");
  if (a.size() == 2 && !PasswordSet(c)) {
    return r->Error("ERR AUTH <password> called without any password "
                     "configured for the default user. Are you sure your "
                     "configuration is correct?");
  }
  std::string_view user = a.size() == 3 ? a[1] : std::string_view("default");
  if (!CheckAuth(user, a.back(), c)) return r->Error(kWrongPass);
  r->Simple("OK");
}

// CLIENT SETNAME's rule: printable, no spaces.
bool ValidClientName(std::string_view name) {
  for (char ch : name) {
    if (ch <= ' ' || ch > '~') return false;
  }
  return true;
}
void BadClientName(Reply* r) {
  r->Error("ERR Client names cannot contain spaces, newlines or special "
           "characters.");
}

// HELLO [protover [AUTH username password] [SETNAME name]]: protover 2 or
// 3 switches the connection's protocol (its reply is already in the new
// one), as Redis.
void Hello(const Args& a, CommandContext* c, Reply* r) {
  size_t i = 1;
  int64_t ver = 0;
  if (a.size() > 1) {
    if (!ToInt(a[1], &ver)) {
      return r->Error("ERR Protocol version is not an integer or out of "
                       "range");
    }
    if (ver < 2 || ver > 3) {
      return r->Error("NOPROTO unsupported protocol version");
    }
    i = 2;
  }
  std::string_view name;
  bool set_name = false;
  for (; i < a.size(); ++i) {
    if (Eq(a[i], "auth") && i + 2 < a.size()) {
      if (!CheckAuth(a[i + 1], a[i + 2], c)) return r->Error(kWrongPass);
      i += 2;
    } else if (Eq(a[i], "setname") && i + 1 < a.size()) {
      name = a[++i];
      set_name = true;
    } else {
      return r->Error("ERR Syntax error in HELLO option '" +
                           std::string(a[i].substr(0, 128)) + "'");
    }
  }
  if (PasswordSet(c) && !c->client->authed) {
    return r->Error("NOAUTH HELLO must be called with the client already "
                     "authenticated, otherwise the HELLO AUTH <user> <pass> "
                     "option can be used to authenticate the client and "
                     "select the RESP protocol version at the same time");
  }
  if (set_name) {
    if (!ValidClientName(name)) return BadClientName(r);
    c->client->name = std::string(name);
  }
  if (ver != 0) {
    c->client->resp = static_cast<int>(ver);
    r->SetProtocol(c->client->resp);
  }
  r->Map(7);
  r->Bulk("server");
  r->Bulk("redis");
  r->Bulk("version");
  r->Bulk("7.0.0");
  r->Bulk("proto");
  r->Int(c->client->resp);
  r->Bulk("id");
  r->Int(static_cast<int64_t>(c->client->id));
  r->Bulk("mode");
  r->Bulk("standalone");
  r->Bulk("role");
  r->Bulk("master");
  r->Bulk("modules");
  r->Array(0);
}

// CLIENT ID | SETNAME | GETNAME | SETINFO | INFO | LIST | NO-EVICT | ...:
// the subcommands clients send on connect; anything else is Redis's
// unknown-subcommand error, never a silent OK.
// CLIENT ID | GETNAME | SETNAME name | LIST | INFO | ...
void Client(const Args& a, CommandContext* c, Reply* r) {
  std::string sub = Lower(a[1]);
  auto arity = [&](size_t n) {
    if (a.size() == n) return true;
    SubcommandArityError("client", sub, r);
    return false;
  };
  if (sub == "id") {
    if (arity(2)) r->Int(static_cast<int64_t>(c->client->id));
  } else if (sub == "getname") {
    if (!arity(2)) return;
    if (c->client->name.empty()) return r->Null();
    r->Bulk(c->client->name);
  } else if (sub == "setname") {
    if (!arity(3)) return;
    if (!ValidClientName(a[2])) return BadClientName(r);
    c->client->name = std::string(a[2]);
    r->Simple("OK");
  } else if (sub == "setinfo") {
    if (!arity(4)) return;
    std::string what = Lower(a[2]);
    if (what != "lib-name" && what != "lib-ver") {
      return r->Error("ERR Unrecognized option '" + std::string(a[2]) +
                           "'");
    }
    r->Simple("OK");
  } else if (sub == "unblock") {
    // CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client of this worker blocked
    // in a pop gets its timeout's reply or the UNBLOCKED error; one held
    // by another worker is not reached (docs/server.md).
    if (a.size() < 3) return void(arity(3));
    if (a.size() > 4) {
      return r->Error("ERR unknown subcommand or wrong number of arguments "
                      "for '" + std::string(a[1].substr(0, 128)) +
                      "'. Try CLIENT HELP.");
    }
    bool error = false;
    if (a.size() == 4) {
      if (Eq(a[3], "error")) {
        error = true;
      } else if (!Eq(a[3], "timeout")) {
        return r->Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or "
                        "ERROR");
      }
    }
    int64_t id = 0;
    if (!ToInt(a[2], &id)) return NotInt(r);
    const bool ended = id > 0 && c->unblock_client &&
                       c->unblock_client(static_cast<uint64_t>(id), error);
    r->Int(ended ? 1 : 0);
  } else if (sub == "reply") {
    // CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing (Execute
    // drops their replies and the next ones); SKIP does nothing while OFF.
    if (!arity(3)) return;
    if (Eq(a[2], "on")) {
      c->client->reply_off = false;
      c->client->reply_skip_next = false;
      r->Simple("OK");
    } else if (Eq(a[2], "off")) {
      c->client->reply_off = true;
    } else if (Eq(a[2], "skip")) {
      if (!c->client->reply_off) c->client->reply_skip_next = true;
    } else {
      r->Error("ERR syntax error");
    }
  } else if (sub == "help") {
    if (!arity(2)) return;
    HelpReply(r, "CLIENT",
              {"ID", "    Return the ID of this connection.",
               "GETNAME", "    Return the name of this connection.",
               "SETNAME <name>", "    Name this connection.",
               "SETINFO <LIB-NAME|LIB-VER> <value>",
               "    Accept the client library's name or version.",
               "UNBLOCK <clientid> [TIMEOUT|ERROR]",
               "    Unblock the specified blocked client (of this worker).",
               "REPLY <ON|OFF|SKIP>",
               "    ON: reply to every command; OFF: to none; SKIP: not to "
               "the next one.",
               "INFO", "    Return this connection's details.",
               "LIST", "    Return this connection's details (only this "
               "one's: docs/server.md)."});
  } else if (sub == "info" || sub == "list") {
    std::string line = "id=" + std::to_string(c->client->id) +
                       " addr=" + c->client->addr + " name=" +
                       c->client->name + " db=" +
                       std::to_string(c->client->db) + " cmd=client|" + sub +
                       "\n";
    // LIST: this connection only (docs/server.md).
    r->Verbatim(line);
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
                  "'. Try CLIENT HELP.");
  }
}

// RESET: the connection as it was when it connected (Redis 6.2's):
// MULTI discarded, WATCH dropped, every subscription gone, database 0,
// RESP2, no name, and authenticated only if no password is set.
void ResetConnection(const Args&, CommandContext* c, Reply* r) {
  ClientState* cl = c->client;
  DiscardTransaction(cl);
  if (cl->subscribed()) {
    if (c->pubsub != nullptr) {
      c->pubsub->Drop(cl);
    } else {
      cl->channels.clear();
      cl->patterns.clear();
      cl->shards.clear();
    }
  }
  cl->db = 0;
  cl->resp = 2;
  cl->name.clear();
  cl->reply_off = false;
  cl->reply_skip_next = false;
  cl->authed = !PasswordSet(c);
  r->SetProtocol(2);
  r->Simple("RESET");
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kConnectionRows[] = {
    {"ping", 1, -1, kFast, 0, 0, 0, Ping},
    {"echo", 2, 2, kLoading | kStale | kFast, 0, 0, 0, Echo},
    {"quit", 61, -1, kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy | kNotQueued, 0, 0, 0, Quit},
    {"reset", 173, 1, kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy | kNotQueued, 0, 0, 0, ResetConnection},
    {"select", 62, 2, kLoading | kStale | kFast, 0, 0, 0, Select},
    {"client", 63, -2, kNoScript | kLoading | kStale | kContainer, 0, 0, 0, Client},
    {"auth", 64, -2, kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy, 0, 0, 0, Auth},
    {"hello", 65, -1, kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy, 0, 0, 0, Hello},
};

void RegisterConnectionFamily(Registry* r) {
  r->Add(kConnectionRows, "connection");
}

}  // namespace cmd
}  // namespace shmkv
