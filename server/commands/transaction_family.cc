// shmkv's transaction commands: MULTI, EXEC, DISCARD, WATCH, UNWATCH
// (docs/server.md, "Transactions"). Queueing itself is dispatch's
// (server/commands/dispatch.cc): a command that arrives inside MULTI is
// checked and queued there.
#include <string>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"

namespace shmkv {
namespace cmd {

namespace {

void ClearTransaction(ClientState* cl) {
  cl->in_multi = false;
  cl->multi_failed = false;
  cl->queued.clear();
  cl->watched.clear();
  cl->watch_lost = false;
}

// MULTI
void Multi(const Args&, CommandContext* c, Reply* r) {
  if (c->client->in_multi) return r->Error("ERR MULTI calls can not be nested");
  c->client->in_multi = true;
  r->Simple("OK");
}

// DISCARD
void Discard(const Args&, CommandContext* c, Reply* r) {
  if (!c->client->in_multi) return r->Error("ERR DISCARD without MULTI");
  ClearTransaction(c->client);
  r->Simple("OK");
}

// WATCH key [key ...]
void Watch(const Args& a, CommandContext* c, Reply* r) {
  if (c->client->in_multi) {
    return r->Error("ERR WATCH inside MULTI is not allowed");
  }
  for (size_t i = 1; i < a.size(); ++i) {
    c->client->watched.emplace_back(std::string(a[i]), c->store->Watch(a[i]));
  }
  r->Simple("OK");
}

// UNWATCH
void Unwatch(const Args&, CommandContext* c, Reply* r) {
  c->client->watched.clear();
  c->client->watch_lost = false;
  r->Simple("OK");
}

// EXEC
// Runs the queued commands in one write transaction: the watches are
// checked under its lock, every command sees the ones before it, and the
// commit applies all of their writes or none (Store::Txn).
void Exec(const Args&, CommandContext* c, Reply* r) {
  ClientState* cl = c->client;
  if (!cl->in_multi) return r->Error("ERR EXEC without MULTI");
  if (cl->multi_failed) {
    ClearTransaction(cl);
    return r->Error("EXECABORT Transaction discarded because of previous "
                    "errors.");
  }
  std::vector<std::vector<std::string>> queued;
  queued.swap(cl->queued);
  auto watched = std::move(cl->watched);
  bool lost = cl->watch_lost;
  ClearTransaction(cl);
  auto txn = c->store->Begin();
  bool unchanged = !lost;
  for (const auto& w : watched) {
    if (unchanged) unchanged = txn->Unchanged(w.first, w.second);
  }
  if (!unchanged) return r->NullArray();  // a watched key changed: nothing ran
  size_t mark = r->Mark();
  r->Array(queued.size());
  c->txn = txn.get();
  c->deny_blocking = true;  // a blocking command in EXEC answers at once
  Args args;
  for (const auto& cmd : queued) {
    args.assign(cmd.begin(), cmd.end());
    Reply inner(r);  // one command's error does not fail EXEC
    Execute(args, c, &inner);
  }
  c->deny_blocking = false;
  c->txn = nullptr;
  Store::Status st = txn->Commit();
  if (st != Store::Status::kOk) {
    r->Rewind(mark);
    StoreError(st, r);
  } else {
    PublishEvents(c);  // the queued commands' keyspace events, still locked
  }
  c->events.clear();
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kTransactionRows[] = {
    {"multi", 52, 1, kNoScript | kLoading | kStale | kFast | kAllowBusy | kNotQueued, 0, 0, 0, Multi},
    {"exec", 53, 1, kNoScript | kLoading | kStale | kSkipSlowlog | kNotQueued, 0, 0, 0, Exec},
    {"discard", 54, 1, kNoScript | kLoading | kStale | kFast | kAllowBusy | kNotQueued, 0, 0, 0, Discard},
    {"watch", 55, -2, kNoScript | kLoading | kStale | kFast | kAllowBusy | kNotQueued, 1, -1, 1, Watch},
    {"unwatch", 56, 1, kNoScript | kLoading | kStale | kFast | kAllowBusy, 0, 0, 0, Unwatch},
};

}  // namespace

void RegisterTransactionFamily(Registry* r) {
  r->Add(kTransactionRows, "transaction");
}

// Exported for dispatch: a refused EXEC discards the transaction.
void DiscardTransaction(ClientState* cl) { ClearTransaction(cl); }

void TransactionWhileBusy(const Args& a, Store* store, ClientState* cl,
                          std::string_view busy, Reply* r) {
  const CommandRow* row = Commands().Find(a[0]);
  const std::string_view name = row != nullptr ? row->name : "";
  const int n = static_cast<int>(a.size());
  const bool fits = row != nullptr && ((row->arity > 0 && n == row->arity) ||
                                       (row->arity < 0 && n >= -row->arity));
  if (fits && cl->in_multi && (row->flags & kAllowBusy) != 0 &&
      (row->flags & kNotQueued) == 0) {
    cl->queued.emplace_back(a.begin(), a.end());  // UNWATCH, AUTH, HELLO
    return r->Simple("QUEUED");
  }
  if (fits && (name == "multi" || name == "discard" || name == "watch" ||
               name == "unwatch")) {
    CommandContext c;
    c.store = store;
    c.client = cl;
    // The script's database is the store's now: WATCH stamps the
    // client's, and gives the script its own back.
    const uint32_t was = store->db();
    store->UseDb(store->Physical(cl->db));
    row->run(a, &c, r);
    store->UseDb(was);
    return;
  }
  if (name == "exec") {
    ClearTransaction(cl);
    return r->Error("EXECABORT Transaction discarded because of: " +
                    std::string(busy));
  }
  if (cl->in_multi) cl->multi_failed = true;
  r->Error(busy);
}

}  // namespace cmd
}  // namespace shmkv
