// shmkv's geospatial commands (GEOADD, GEODIST, GEOHASH, GEOPOS,
// GEORADIUS and GEORADIUSBYMEMBER with their _RO forms, GEOSEARCH,
// GEOSEARCHSTORE) with Redis 7's replies and error texts, over sorted
// sets whose scores are geohashes (server/commands/geo.h; docs/server.md,
// "Geospatial").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/geo.h"
#include "server/commands/reply.h"
#include "server/commands/zset_combine.h"
#include "server/commands/zset_range.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

void ZAdd(const Args& a, CommandContext* c, Reply* r);  // zset_family.cc

namespace {

void SyntaxError(Reply* r) { r->Error("ERR syntax error"); }

// A longitude and a latitude: false after replying Redis's error.
bool LonLat(std::string_view lon, std::string_view lat, double* x, double* y,
            Reply* r) {
  if (!ToScore(lon, x) || !ToScore(lat, y)) {
    r->Error("ERR value is not a valid float");
    return false;
  }
  if (*x < geo::kLonMin || *x > geo::kLonMax || *y < geo::kLatMin ||
      *y > geo::kLatMax) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "ERR invalid longitude,latitude pair %f,%f",
                  *x, *y);
    r->Error(buf);
    return false;
  }
  return true;
}

// Metres per unit (m, km, ft, mi); false after replying the error.
bool Unit(std::string_view u, double* to_meters, Reply* r) {
  if (Eq(u, "m")) {
    *to_meters = 1;
  } else if (Eq(u, "km")) {
    *to_meters = 1000;
  } else if (Eq(u, "ft")) {
    *to_meters = 0.3048;
  } else if (Eq(u, "mi")) {
    *to_meters = 1609.34;
  } else {
    r->Error("ERR unsupported unit provided. please use M, KM, FT, MI");
    return false;
  }
  return true;
}

bool Number(std::string_view arg, const char* what, double* v, Reply* r) {
  if (ToScore(arg, v)) return true;
  r->Error(std::string("ERR ") + what);
  return false;
}

// radius unit
bool Radius(const Args& a, size_t at, geo::Shape* s, Reply* r) {
  if (!Number(a[at], "need numeric radius", &s->radius, r)) return false;
  if (s->radius < 0) {
    r->Error("ERR radius cannot be negative");
    return false;
  }
  s->box = false;
  return Unit(a[at + 1], &s->to_meters, r);
}

// width height unit
bool Box(const Args& a, size_t at, geo::Shape* s, Reply* r) {
  if (!Number(a[at], "need numeric width", &s->width, r) ||
      !Number(a[at + 1], "need numeric height", &s->height, r)) {
    return false;
  }
  if (s->height < 0 || s->width < 0) {
    r->Error("ERR height or width cannot be negative");
    return false;
  }
  s->box = true;
  return Unit(a[at + 2], &s->to_meters, r);
}

// A coordinate as Redis prints one: RESP2 a bulk string, RESP3 a double,
// both of 17 decimals with the zeros cut.
void Coordinate(double v, Reply* r) {
  std::string text = LongDoubleText(static_cast<long double>(v));
  if (!r->resp3()) return r->Bulk(text);
  r->Raw("," + text + "\r\n");
}

// The member's point; false when it is not in the set.
bool MemberPoint(ZSetValue* z, std::string_view member, double* lon,
                 double* lat, double* score = nullptr) {
  double s = 0;
  if (!z->Score(member, &s)) return false;
  geo::Point(s, lon, lat);
  if (score != nullptr) *score = s;
  return true;
}

template <class F>
void ReadGeo(CommandContext* c, std::string_view key, Reply* r, F body) {
  ReadConsistently(c, r, [&] {
    ZSetValue z;
    if (!Opened(z.Open(c, key), r)) return;
    size_t mark = r->Mark();
    body(&z);
    if (!z.ok()) {
      r->Retry(mark);
      Damaged(r);
    }
  });
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD of the
// members' geohashes, with ZADD's options, reply and event.
void GeoAdd(const Args& a, CommandContext* c, Reply* r) {
  bool nx = false, xx = false;
  size_t at = 2;
  for (; at < a.size(); ++at) {
    if (Eq(a[at], "nx")) {
      nx = true;
    } else if (Eq(a[at], "xx")) {
      xx = true;
    } else if (!Eq(a[at], "ch")) {
      break;
    }
  }
  if ((a.size() - at) % 3 != 0 || (nx && xx)) return SyntaxError(r);
  std::vector<std::string> scores;
  for (size_t i = at; i < a.size(); i += 3) {
    double lon, lat, score;
    if (!LonLat(a[i], a[i + 1], &lon, &lat, r)) return;
    geo::Score(lon, lat, &score);
    scores.push_back(std::to_string(static_cast<uint64_t>(score)));
  }
  Args zadd(a.begin(), a.begin() + static_cast<ptrdiff_t>(at));
  zadd[0] = "zadd";
  for (size_t i = at, k = 0; i < a.size(); i += 3, ++k) {
    zadd.push_back(scores[k]);
    zadd.push_back(a[i + 2]);
  }
  ZAdd(zadd, c, r);
}

// GEODIST key member1 member2 [M|KM|FT|MI]
void GeoDist(const Args& a, CommandContext* c, Reply* r) {
  double to_meters = 1;
  if (a.size() == 5) {
    if (!Unit(a[4], &to_meters, r)) return;
  } else if (a.size() > 5) {
    return SyntaxError(r);
  }
  ReadGeo(c, a[1], r, [&](ZSetValue* z) {
    double x1, y1, x2, y2;
    if (!z->exists() || !MemberPoint(z, a[2], &x1, &y1) ||
        !MemberPoint(z, a[3], &x2, &y2)) {
      return r->Null();
    }
    r->Bulk(geo::DistanceText(geo::Distance(x1, y1, x2, y2) / to_meters));
  });
}

// GEOHASH key [member ...]
void GeoHash(const Args& a, CommandContext* c, Reply* r) {
  ReadGeo(c, a[1], r, [&](ZSetValue* z) {
    r->Array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      double score = 0;
      if (!z->exists() || !z->Score(a[i], &score)) {
        r->Null();
      } else {
        r->Bulk(geo::HashText(score));
      }
    }
  });
}

// GEOPOS key [member ...]
void GeoPos(const Args& a, CommandContext* c, Reply* r) {
  ReadGeo(c, a[1], r, [&](ZSetValue* z) {
    r->Array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      double lon, lat;
      if (!z->exists() || !MemberPoint(z, a[i], &lon, &lat)) {
        r->NullArray();
      } else {
        r->Array(2);
        Coordinate(lon, r);
        Coordinate(lat, r);
      }
    }
  });
}

// What GEORADIUS* and GEOSEARCH* take.
enum SearchFlags : int {
  kFromCoords = 1,    // GEORADIUS: longitude latitude radius unit
  kFromMember = 2,    // GEORADIUSBYMEMBER: member radius unit
  kNoStore = 4,       // the _RO forms
  kSearch = 8,        // GEOSEARCH's options
  kSearchStore = 16,  // GEOSEARCHSTORE destination source ...
};

struct Found {
  std::string_view member;  // the set's, while it is open
  double lon, lat, dist, score;
  size_t order;  // found so many before it: ties keep this order
};

// The members within the shape, cell by cell in Redis's order; at most
// `limit` (0: all).
void Collect(ZSetValue* z, const geo::Shape& s, uint64_t limit,
             std::vector<Found>* out) {
  geo::Cell cells[9];
  geo::Cells(s, cells);
  auto full = [&] {
    return !out->empty() && limit != 0 && out->size() >= limit;
  };
  int last = 0;  // the last cell read (0 also stands for none)
  for (int i = 0; i < 9; ++i) {
    if (cells[i].none()) continue;
    // A cell read just before is not read again (the centre never
    // counts as read before: Redis compares with the last neighbour).
    if (last != 0 && cells[i].bits == cells[last].bits &&
        cells[i].step == cells[last].step) {
      continue;
    }
    if (full()) break;
    double min, max;
    geo::CellScores(cells[i], &min, &max);
    uint64_t rank = z->Count([&](const ZEntry& e) { return e.score < min; });
    z->Walk(rank, true, [&](const ZEntry& e) {
      if (!(e.score < max)) return false;
      Found f;
      if (geo::Within(s, e.score, &f.lon, &f.lat, &f.dist)) {
        f.member = e.member;
        f.order = out->size();
        f.score = e.score;
        out->push_back(std::move(f));
      }
      return !full();
    });
    last = i;
  }
}

void SearchGeneric(const Args& a, CommandContext* c, Reply* r, size_t src,
                   int flags) {
  ReadGeo(c, a[src], r, [&](ZSetValue* z) {
    geo::Shape shape;
    std::string_view store;
    bool has_store = false, store_dist = false;
    size_t base = 0;
    if (flags & kFromCoords) {
      base = 6;
      if (!LonLat(a[2], a[3], &shape.lon, &shape.lat, r) ||
          !Radius(a, 4, &shape, r)) {
        return;
      }
    } else if ((flags & kFromMember) && !z->exists()) {
      base = 5;
    } else if (flags & kFromMember) {
      base = 5;
      if (!MemberPoint(z, a[2], &shape.lon, &shape.lat)) {
        return r->Error("ERR could not decode requested zset member");
      }
      if (!Radius(a, 3, &shape, r)) return;
    } else {
      base = 2;
      if (flags & kSearchStore) {
        base = 3;
        store = a[1];
        has_store = true;
      }
    }
    bool withdist = false, withhash = false, withcoord = false, any = false;
    bool from_member = false, from_lonlat = false, by_radius = false,
         by_box = false;
    int sort = 0;  // 1 ascending, 2 descending
    int64_t count = 0;
    const size_t n = a.size();
    for (size_t i = base; i < n; ++i) {
      const std::string_view w = a[i];
      const size_t left = n - i - 1;  // words after this one
      if (Eq(w, "withdist")) {
        withdist = true;
      } else if (Eq(w, "withhash")) {
        withhash = true;
      } else if (Eq(w, "withcoord")) {
        withcoord = true;
      } else if (Eq(w, "any")) {
        any = true;
      } else if (Eq(w, "asc")) {
        sort = 1;
      } else if (Eq(w, "desc")) {
        sort = 2;
      } else if (Eq(w, "count") && left >= 1) {
        if (!ToInt(a[i + 1], &count)) return NotInt(r);
        if (count <= 0) return r->Error("ERR COUNT must be > 0");
        ++i;
      } else if ((Eq(w, "store") || Eq(w, "storedist")) && left >= 1 &&
                 !(flags & (kNoStore | kSearch))) {
        store = a[i + 1];
        has_store = true;
        store_dist = Eq(w, "storedist");
        ++i;
      } else if (Eq(w, "storedist") && (flags & kSearchStore)) {
        store_dist = true;
      } else if (Eq(w, "frommember") && left >= 1 && (flags & kSearch) &&
                 !from_lonlat) {
        if (z->exists() && !MemberPoint(z, a[i + 1], &shape.lon, &shape.lat)) {
          return r->Error("ERR could not decode requested zset member");
        }
        from_member = true;
        ++i;
      } else if (Eq(w, "fromlonlat") && left >= 2 && (flags & kSearch) &&
                 !from_member) {
        if (!LonLat(a[i + 1], a[i + 2], &shape.lon, &shape.lat, r)) return;
        from_lonlat = true;
        i += 2;
      } else if (Eq(w, "byradius") && left >= 2 && (flags & kSearch) &&
                 !by_box) {
        if (!Radius(a, i + 1, &shape, r)) return;
        by_radius = true;
        i += 2;
      } else if (Eq(w, "bybox") && left >= 3 && (flags & kSearch) &&
                 !by_radius) {
        if (!Box(a, i + 1, &shape, r)) return;
        by_box = true;
        i += 3;
      } else {
        return SyntaxError(r);
      }
    }
    if (has_store && (withdist || withhash || withcoord)) {
      return r->Error(std::string("ERR ") +
                      ((flags & kSearchStore) ? "GEOSEARCHSTORE"
                                              : "STORE option in GEORADIUS") +
                      " is not compatible with WITHDIST, WITHHASH and "
                      "WITHCOORD options");
    }
    if ((flags & kSearch) && !(from_member || from_lonlat)) {
      return r->Error(
          "ERR exactly one of FROMMEMBER or FROMLONLAT can be "
          "specified for " +
          std::string(a[0]));
    }
    if ((flags & kSearch) && !(by_radius || by_box)) {
      return r->Error(
          "ERR exactly one of BYRADIUS and BYBOX can be "
          "specified for " +
          std::string(a[0]));
    }
    if (any && count == 0) {
      return r->Error("ERR the ANY argument requires COUNT argument");
    }
    const char* event = (flags & kSearch) ? "geosearchstore" : "georadiusstore";
    if (!z->exists()) {
      if (has_store) {
        StoreEntries(c, store, {}, event, r);
        return;
      }
      return r->Array(0);
    }
    if (count != 0 && sort == 0 && !any) sort = 1;
    std::vector<Found> found;
    Collect(z, shape, any ? static_cast<uint64_t>(count) : 0, &found);
    if (found.empty() && !has_store) return r->Array(0);
    size_t returned = found.size();
    if (count != 0 && static_cast<uint64_t>(count) < returned) {
      returned = static_cast<size_t>(count);
    }
    if (sort != 0) {
      // By distance, ties in the order found; only the first `returned`
      // need their places (Redis sorts as little).
      const bool asc = sort == 1;
      // (A distance of antipodes may come out NaN: it sorts as +inf, so
      // the order stays a total one.)
      auto key = [](double d) { return std::isnan(d) ? INFINITY : d; };
      auto before = [asc, key](const Found& x, const Found& y) {
        const double a = key(x.dist), b = key(y.dist);
        if (a != b) return asc ? a < b : a > b;
        return x.order < y.order;
      };
      std::partial_sort(found.begin(),
                        found.begin() + static_cast<ptrdiff_t>(returned),
                        found.end(), before);
    }
    found.resize(returned);
    for (Found& f : found) f.dist /= shape.to_meters;
    if (has_store) {
      std::vector<ZEntry> es;
      for (const Found& f : found) {
        es.push_back(ZEntry{f.member, store_dist ? f.dist : f.score});
      }
      StoreEntries(c, store, es, event, r);
      return;
    }
    const size_t extra =
        (withdist ? 1 : 0) + (withhash ? 1 : 0) + (withcoord ? 1 : 0);
    r->Array(found.size());
    for (const Found& f : found) {
      if (extra != 0) r->Array(extra + 1);
      r->Bulk(f.member);
      if (withdist) r->Bulk(geo::DistanceText(f.dist));
      if (withhash) r->Int(static_cast<int64_t>(f.score));
      if (withcoord) {
        r->Array(2);
        Coordinate(f.lon, r);
        Coordinate(f.lat, r);
      }
    }
  });
}

void GeoRadius(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 1, kFromCoords);
}
void GeoRadiusRo(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 1, kFromCoords | kNoStore);
}
void GeoRadiusByMember(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 1, kFromMember);
}
void GeoRadiusByMemberRo(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 1, kFromMember | kNoStore);
}
void GeoSearch(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 1, kSearch);
}
void GeoSearchStore(const Args& a, CommandContext* c, Reply* r) {
  SearchGeneric(a, c, r, 2, kSearch | kSearchStore);
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kGeoRows[] = {
    {"geoadd", 214, -5, kWrite | kDenyOom, 1, 1, 1, GeoAdd},
    {"geodist", 215, -4, kReadOnly, 1, 1, 1, GeoDist},
    {"geohash", 216, -2, kReadOnly, 1, 1, 1, GeoHash},
    {"geopos", 217, -2, kReadOnly, 1, 1, 1, GeoPos},
    {"georadius", 218, -6, kWrite | kDenyOom | kMovableKeys, 1, 1, 1,
     GeoRadius},
    {"georadius_ro", 219, -6, kReadOnly, 1, 1, 1, GeoRadiusRo},
    {"georadiusbymember", 220, -5, kWrite | kDenyOom | kMovableKeys, 1, 1, 1,
     GeoRadiusByMember},
    {"georadiusbymember_ro", 221, -5, kReadOnly, 1, 1, 1, GeoRadiusByMemberRo},
    {"geosearch", 222, -7, kReadOnly, 1, 1, 1, GeoSearch},
    {"geosearchstore", 223, -8, kWrite | kDenyOom, 1, 2, 1, GeoSearchStore},
};

}  // namespace

void RegisterGeoFamily(Registry* r) { r->Add(kGeoRows, "geo"); }

}  // namespace cmd
}  // namespace shmkv
