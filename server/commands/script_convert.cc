// Values between Lua and replies (server/commands/script_convert.h).
#include "server/commands/script_convert.h"

#include <lua5.1/lua.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "server/commands/command_util.h"

namespace shmkv {
namespace cmd {

std::string Dashed(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 1);
  out.push_back('-');
  out.append(text);
  return out;
}

void PushError(lua_State* L, std::string_view text) {
  std::string code = "ERR", msg;
  if (!text.empty() && text[0] == '-') {
    size_t sp = text.find(' ');
    if (sp == std::string_view::npos) {
      msg = std::string(text.substr(1));
    } else {
      code = std::string(text.substr(1, sp - 1));
      msg = std::string(text.substr(sp + 1));
    }
  } else {
    msg = std::string(text);
  }
  while (!msg.empty() && (msg.back() == '\r' || msg.back() == '\n')) {
    msg.pop_back();
  }
  while (!msg.empty() && (msg.front() == '\r' || msg.front() == '\n')) {
    msg.erase(0, 1);
  }
  std::string full = code + " " + msg;
  lua_newtable(L);
  lua_pushlstring(L, full.data(), full.size());
  lua_setfield(L, -2, "err");
}

[[noreturn]] void RaiseError(lua_State* L, std::string_view text) {
  PushError(L, text);
  lua_error(L);
  std::abort();  // lua_error does not return
}

std::string NumberArg(double n) {
  char buf[64];
  int len = std::snprintf(buf, sizeof(buf), "%.17g", static_cast<double>(n));
  return std::string(buf, static_cast<size_t>(len));
}

namespace {

int64_t NumberToInt(lua_Number n) {
  // As the C cast Redis does on x86: out of range (and NaN) gives the
  // lowest value.
  if (!(n > -9223372036854775808.0 && n < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(n);
}

}  // namespace

size_t PushReply(lua_State* L, std::string_view s, int depth) {
  if (s.size() < 3 || depth > 64 || !lua_checkstack(L, 4)) return 0;
  size_t eol = s.find("\r\n");
  if (eol == std::string_view::npos) return 0;
  std::string_view line = s.substr(1, eol - 1);
  size_t used = eol + 2;
  switch (s[0]) {
    case '+':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "ok");
      return used;
    case '-':
      PushError(L, Dashed(line));
      return used;
    case ':': {
      int64_t v = 0;
      if (!ToInt(line, &v)) return 0;
      lua_pushnumber(L, static_cast<lua_Number>(v));
      return used;
    }
    case '$': {
      int64_t n = 0;
      if (!ToInt(line, &n)) return 0;
      if (n < 0) {
        lua_pushboolean(L, 0);
        return used;
      }
      if (static_cast<uint64_t>(n) + 2 > s.size() - used) return 0;
      lua_pushlstring(L, s.data() + used, static_cast<size_t>(n));
      return used + static_cast<size_t>(n) + 2;
    }
    case '*': {
      int64_t n = 0;
      if (!ToInt(line, &n)) return 0;
      if (n < 0) {
        lua_pushboolean(L, 0);
        return used;
      }
      lua_newtable(L);
      for (int64_t i = 1; i <= n; ++i) {
        size_t k = PushReply(L, s.substr(used), depth + 1);
        if (k == 0) return 0;
        used += k;
        lua_rawseti(L, -2, static_cast<int>(i));
      }
      return used;
    }
    // RESP3 (a script that said redis.setresp(3)), as Redis converts it.
    case '_':
      lua_pushnil(L);
      return used;
    case '#':
      if (line != "t" && line != "f") return 0;
      lua_pushboolean(L, line == "t");
      return used;
    case ',': {
      // {double = n}
      std::string text(line);
      char* end = nullptr;
      double d = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) return 0;
      lua_newtable(L);
      lua_pushnumber(L, d);
      lua_setfield(L, -2, "double");
      return used;
    }
    case '(':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "big_number");
      return used;
    case '=': {
      // {verbatim_string = {format = "txt", string = ...}}
      int64_t n = 0;
      if (!ToInt(line, &n) || n < 4) return 0;
      if (static_cast<uint64_t>(n) + 2 > s.size() - used) return 0;
      std::string_view body = s.substr(used, static_cast<size_t>(n));
      if (body[3] != ':') return 0;
      lua_newtable(L);
      lua_newtable(L);
      lua_pushlstring(L, body.data(), 3);
      lua_setfield(L, -2, "format");
      lua_pushlstring(L, body.data() + 4, body.size() - 4);
      lua_setfield(L, -2, "string");
      lua_setfield(L, -2, "verbatim_string");
      return used + static_cast<size_t>(n) + 2;
    }
    case '%':
    case '~': {
      // {map = {field = value}}, {set = {member = true}}
      int64_t n = 0;
      if (!ToInt(line, &n) || n < 0) return 0;
      lua_newtable(L);
      lua_newtable(L);
      for (int64_t i = 0; i < n; ++i) {
        size_t k = PushReply(L, s.substr(used), depth + 1);
        if (k == 0) return 0;
        used += k;
        if (s[0] == '%') {
          k = PushReply(L, s.substr(used), depth + 1);
          if (k == 0) return 0;
          used += k;
        } else {
          lua_pushboolean(L, 1);
        }
        // A nil key (a null in a map) cannot be a field: dropped.
        if (lua_isnil(L, -2)) {
          lua_pop(L, 2);
        } else {
          lua_rawset(L, -3);
        }
      }
      lua_setfield(L, -2, s[0] == '%' ? "map" : "set");
      return used;
    }
    default:
      return 0;
  }
}

namespace {

// Reads field `name` of the table at the top: pushes it, returns its type.
int Field(lua_State* L, const char* name) {
  lua_pushstring(L, name);
  lua_rawget(L, -2);
  return lua_type(L, -1);
}

}  // namespace

void ToReply(lua_State* L, int script_resp, Reply* r) {
  if (!lua_checkstack(L, 4)) return r->Error("ERR reached lua stack limit");
  switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      size_t n = 0;
      const char* p = lua_tolstring(L, -1, &n);
      return r->Bulk(std::string_view(p, n));
    }
    case LUA_TBOOLEAN:
      // A script that said redis.setresp(3) returns booleans as such; one
      // in RESP2 returns true as 1 and false as a null (Redis's rules).
      if (script_resp == 3) return r->Bool(lua_toboolean(L, -1) != 0);
      return lua_toboolean(L, -1) ? r->Int(1) : r->Null();
    case LUA_TNUMBER:
      return r->Int(NumberToInt(lua_tonumber(L, -1)));
    case LUA_TTABLE:
      break;
    default:
      return r->Null();
  }
  size_t n = 0;
  if (Field(L, "err") == LUA_TSTRING) {
    const char* p = lua_tolstring(L, -1, &n);
    r->Error(std::string_view(p, n));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (Field(L, "ok") == LUA_TSTRING) {
    const char* p = lua_tolstring(L, -1, &n);
    std::string s(p, n);
    for (char& ch : s) {
      if (ch == '\r' || ch == '\n') ch = ' ';
    }
    r->Simple(s);
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (Field(L, "double") == LUA_TNUMBER) {
    r->Double(lua_tonumber(L, -1));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (Field(L, "big_number") == LUA_TSTRING) {
    const char* p = lua_tolstring(L, -1, &n);
    r->BigNumber(std::string_view(p, n));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  bool is_map = Field(L, "map") == LUA_TTABLE;
  if (!is_map) lua_pop(L, 1);
  if (is_map || Field(L, "set") == LUA_TTABLE) {
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pop(L, 1);
      ++count;
    }
    is_map ? r->Map(count) : r->Set(count);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pushvalue(L, -2);
      ToReply(L, script_resp, r);  // the key (a set's member)
      lua_pop(L, 1);
      if (is_map) ToReply(L, script_resp, r);  // the value
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (Field(L, "verbatim_string") == LUA_TTABLE) {
    if (Field(L, "string") == LUA_TSTRING) {
      const char* p = lua_tolstring(L, -1, &n);
      std::string text(p, n);
      lua_pop(L, 1);
      std::string format = "txt";
      if (Field(L, "format") == LUA_TSTRING) {
        const char* f = lua_tolstring(L, -1, &n);
        if (n == 3) format.assign(f, n);
      }
      lua_pop(L, 2);
      return r->Verbatim(text, format);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  // An array: elements 1, 2, ... up to the first nil. The count is
  // known only at the end: the elements go to a buffer first.
  std::string items;
  Reply sub(r, &items);
  size_t count = 0;
  for (int j = 1;; ++j) {
    lua_rawgeti(L, -1, j);
    if (lua_type(L, -1) == LUA_TNIL) {
      lua_pop(L, 1);
      break;
    }
    ToReply(L, script_resp, &sub);
    lua_pop(L, 1);
    ++count;
  }
  r->Array(count);
  r->Raw(items);
}

// Where it was raised: the raising function, or its caller when that is
// a C function (error, redis.call).
int ErrorHandler(lua_State* L) {
  lua_Debug ar;
  bool where = false;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar)) {
    where = true;
    if (std::strcmp(ar.what, "C") == 0) {
      where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
    }
  }
  if (lua_type(L, 1) != LUA_TTABLE) {
    const char* s = lua_tostring(L, 1);
    std::string msg = "ERR ";
    if (s != nullptr) {
      msg += s;
    } else if (lua_isnil(L, 1)) {
      msg += "nil";
    } else if (lua_isboolean(L, 1)) {
      msg += lua_toboolean(L, 1) ? "true" : "false";
    } else {
      msg += luaL_typename(L, 1);
    }
    lua_newtable(L);
    lua_pushlstring(L, msg.data(), msg.size());
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
  }
  lua_settop(L, 1);
  if (where) {
    lua_pushstring(L, ar.source);
    lua_setfield(L, 1, "source");
    lua_pushnumber(L, ar.currentline);
    lua_setfield(L, 1, "line");
  }
  return 1;
}


}  // namespace cmd
}  // namespace shmkv
