// Geohash scores, cells and distances (geo.h). Every figure is worked out
// in the order of operations Redis uses, so that each bit of a score, each
// distance and each cell chosen is the one redis-server gives.
#include "server/commands/geo.h"

#include <climits>
#include <cmath>
#include <cstdio>

namespace shmkv {
namespace cmd {
namespace geo {

namespace {

constexpr double kEarthRadius = 6372797.560856;  // metres (Redis's)
constexpr double kMercatorMax = 20037726.37;
constexpr double kDegToRad = M_PI / 180.0;

double DegRad(double deg) { return deg * kDegToRad; }
double RadDeg(double rad) { return rad / kDegToRad; }

struct Range {
  double min, max;
};
const Range kLonRange = {kLonMin, kLonMax};
const Range kLatRange = {kLatMin, kLatMax};

struct Area {
  Range lon, lat;
};

// Spreads the 32 bits of x over the even places of a word (bit i to bit
// 2i), and gathers them back.
uint64_t Spread(uint32_t x) {
  uint64_t v = x;
  v = (v | (v << 16)) & 0x0000FFFF0000FFFFULL;
  v = (v | (v << 8)) & 0x00FF00FF00FF00FFULL;
  v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  v = (v | (v << 2)) & 0x3333333333333333ULL;
  v = (v | (v << 1)) & 0x5555555555555555ULL;
  return v;
}
uint32_t Gather(uint64_t v) {
  v &= 0x5555555555555555ULL;
  v = (v | (v >> 1)) & 0x3333333333333333ULL;
  v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  v = (v | (v >> 4)) & 0x00FF00FF00FF00FFULL;
  v = (v | (v >> 8)) & 0x0000FFFF0000FFFFULL;
  v = (v | (v >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(v);
}

// Latitude's bits at the even places, longitude's at the odd ones.
uint64_t Interleave(uint32_t lat, uint32_t lon) {
  return Spread(lat) | (Spread(lon) << 1);
}
void Deinterleave(uint64_t bits, uint32_t* lat, uint32_t* lon) {
  *lat = Gather(bits);
  *lon = Gather(bits >> 1);
}

bool Encode(Range lon_r, Range lat_r, double lon, double lat, int step,
            Cell* out) {
  if (lon > kLonMax || lon < kLonMin || lat > kLatMax || lat < kLatMin) {
    return false;
  }
  out->bits = 0;
  out->step = step;
  if (lat < lat_r.min || lat > lat_r.max || lon < lon_r.min ||
      lon > lon_r.max) {
    return false;
  }
  double lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min);
  double lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min);
  lat_off *= static_cast<double>(1ULL << step);
  lon_off *= static_cast<double>(1ULL << step);
  out->bits = Interleave(static_cast<uint32_t>(lat_off),
                         static_cast<uint32_t>(lon_off));
  return true;
}

Area Decode(Range lon_r, Range lat_r, const Cell& c) {
  uint32_t ilat, ilon;
  Deinterleave(c.bits, &ilat, &ilon);
  const double cells = static_cast<double>(1ULL << c.step);
  const double lat_scale = lat_r.max - lat_r.min;
  const double lon_scale = lon_r.max - lon_r.min;
  const uint32_t lat_next = ilat + 1, lon_next = ilon + 1;  // may wrap
  Area a;
  a.lat.min = lat_r.min + (ilat * 1.0 / cells) * lat_scale;
  a.lat.max = lat_r.min + (lat_next * 1.0 / cells) * lat_scale;
  a.lon.min = lon_r.min + (ilon * 1.0 / cells) * lon_scale;
  a.lon.max = lon_r.min + (lon_next * 1.0 / cells) * lon_scale;
  return a;
}

// The cell `dlon`, `dlat` cells away at the same step (wrapping). A
// coordinate that moves keeps its low `step` bits; one that does not is
// left whole, a bit past the step included (a point on the 180th
// meridian or the top latitude has one), as Redis leaves it.
Cell Move(const Cell& c, int dlon, int dlat) {
  const uint64_t mask = (1ULL << c.step) - 1;
  uint64_t bits = c.bits;
  uint32_t lat, lon;
  if (dlon != 0) {
    Deinterleave(bits, &lat, &lon);
    lon = static_cast<uint32_t>((lon + static_cast<uint64_t>(dlon)) & mask);
    bits = (bits & 0x5555555555555555ULL) |
           (Interleave(0, lon) & 0xaaaaaaaaaaaaaaaaULL);
  }
  if (dlat != 0) {
    Deinterleave(bits, &lat, &lon);
    lat = static_cast<uint32_t>((lat + static_cast<uint64_t>(dlat)) & mask);
    bits = (bits & 0xaaaaaaaaaaaaaaaaULL) |
           (Interleave(lat, 0) & 0x5555555555555555ULL);
  }
  Cell out = c;
  out.bits = bits;
  return out;
}

// A score's bits, as the C conversion Redis uses gives them on x86-64
// (a score that no GEOADD wrote may be negative or past 2^64).
uint64_t ScoreBits(double d) {
  const double two63 = 9223372036854775808.0;
  const uint64_t indefinite = 0x8000000000000000ULL;
  if (std::isnan(d)) return indefinite;
  if (d < two63) {
    if (d <= -two63) return indefinite;
    return static_cast<uint64_t>(static_cast<int64_t>(d));
  }
  double rest = d - two63;
  if (rest >= two63) return 0;  // indefinite ^ the top bit
  return static_cast<uint64_t>(static_cast<int64_t>(rest)) ^ indefinite;
}

double LatDistance(double lat1, double lat2) {
  return kEarthRadius * std::fabs(DegRad(lat2) - DegRad(lat1));
}

int EstimateSteps(double meters, double lat) {
  if (meters == 0) return kStepMax;
  int step = 1;
  while (meters < kMercatorMax) {
    meters *= 2;
    ++step;
  }
  step -= 2;
  if (lat > 66 || lat < -66) {
    --step;
    if (lat > 80 || lat < -80) --step;
  }
  if (step < 1) step = 1;
  if (step > kStepMax) step = kStepMax;
  return step;
}

// min lon, min lat, max lon, max lat of the shape's box.
void Bounds(const Shape& s, double b[4]) {
  const double height = s.to_meters * (s.box ? s.height / 2 : s.radius);
  const double width = s.to_meters * (s.box ? s.width / 2 : s.radius);
  const double lat_delta = RadDeg(height / kEarthRadius);
  const double lon_top =
      RadDeg(width / kEarthRadius / std::cos(DegRad(s.lat + lat_delta)));
  const double lon_bottom =
      RadDeg(width / kEarthRadius / std::cos(DegRad(s.lat - lat_delta)));
  const bool south = s.lat < 0;
  b[0] = south ? s.lon - lon_bottom : s.lon - lon_top;
  b[2] = south ? s.lon + lon_bottom : s.lon + lon_top;
  b[1] = s.lat - lat_delta;
  b[3] = s.lat + lat_delta;
}

}  // namespace

bool Score(double lon, double lat, double* score) {
  Cell c;
  if (!Encode(kLonRange, kLatRange, lon, lat, kStepMax, &c)) return false;
  *score = static_cast<double>(c.bits << (52 - 2 * kStepMax));
  return true;
}

void Point(double score, double* lon, double* lat) {
  Cell c;
  c.bits = ScoreBits(score);
  c.step = kStepMax;
  Area a = Decode(kLonRange, kLatRange, c);
  *lon = (a.lon.min + a.lon.max) / 2;
  if (*lon > kLonMax) *lon = kLonMax;
  if (*lon < kLonMin) *lon = kLonMin;
  *lat = (a.lat.min + a.lat.max) / 2;
  if (*lat > kLatMax) *lat = kLatMax;
  if (*lat < kLatMin) *lat = kLatMin;
}

std::string HashText(double score) {
  static const char kAlphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  double lon, lat;
  Point(score, &lon, &lat);
  Cell c;
  Encode({-180, 180}, {-90, 90}, lon, lat, kStepMax, &c);
  std::string out(11, '0');
  for (int i = 0; i < 10; ++i) {
    out[i] = kAlphabet[(c.bits >> (52 - (i + 1) * 5)) & 0x1f];
  }
  return out;
}

double Distance(double lon1, double lat1, double lon2, double lat2) {
  const double lon1r = DegRad(lon1), lon2r = DegRad(lon2);
  const double v = std::sin((lon2r - lon1r) / 2);
  if (v == 0.0) return LatDistance(lat1, lat2);
  const double lat1r = DegRad(lat1), lat2r = DegRad(lat2);
  const double u = std::sin((lat2r - lat1r) / 2);
  const double a = u * u + std::cos(lat1r) * std::cos(lat2r) * v * v;
  return 2.0 * kEarthRadius * std::asin(std::sqrt(a));
}

std::string DistanceText(double d) {
  if (d == 0) return "0.0000";
  const long long scaled = std::llrint(d * 10000.0);
  const bool negative = scaled < 0;
  const unsigned long long v =
      !negative             ? static_cast<unsigned long long>(scaled)
      : scaled == LLONG_MIN ? static_cast<unsigned long long>(LLONG_MAX) + 1
                            : static_cast<unsigned long long>(-scaled);
  // At least one digit before the point: 5 -> "0.0005".
  char digits[32];
  int n = std::snprintf(digits, sizeof(digits), "%05llu", v);
  std::string out;
  if (negative) out.push_back('-');
  out.append(digits, static_cast<size_t>(n) - 4);
  out.push_back('.');
  out.append(digits + n - 4, 4);
  return out;
}

void Cells(const Shape& s, Cell out[9]) {
  double b[4];
  Bounds(s, b);
  double meters = s.box ? std::sqrt((s.width / 2) * (s.width / 2) +
                                    (s.height / 2) * (s.height / 2))
                        : s.radius;
  meters *= s.to_meters;
  int steps = EstimateSteps(meters, s.lat);
  Cell centre;
  // Order: N, S, E, W, NE, NW, SE, SW after the centre.
  static const int kMoves[8][2] = {{0, 1}, {0, -1}, {1, 0},  {-1, 0},
                                   {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
  auto fill = [&] {
    Encode(kLonRange, kLatRange, s.lon, s.lat, steps, &centre);
    out[0] = centre;
    for (int i = 0; i < 8; ++i) {
      out[1 + i] = Move(centre, kMoves[i][0], kMoves[i][1]);
    }
  };
  fill();
  // A step whose neighbours do not reach the box's edges is one too fine.
  const Area north = Decode(kLonRange, kLatRange, out[1]);
  const Area south = Decode(kLonRange, kLatRange, out[2]);
  const Area east = Decode(kLonRange, kLatRange, out[3]);
  const Area west = Decode(kLonRange, kLatRange, out[4]);
  const bool coarser = north.lat.max < b[3] || south.lat.min > b[1] ||
                       east.lon.max < b[2] || west.lon.min > b[0];
  if (steps > 1 && coarser) {
    --steps;
    fill();
  }
  if (steps >= 2) {
    // Neighbours on a side the box does not reach past the centre cell.
    const Area a = Decode(kLonRange, kLatRange, centre);
    auto drop = [&](int i, int j, int k) { out[i] = out[j] = out[k] = Cell(); };
    if (a.lat.min < b[1]) drop(2, 8, 7);  // S, SW, SE
    if (a.lat.max > b[3]) drop(1, 5, 6);  // N, NE, NW
    if (a.lon.min < b[0]) drop(4, 8, 6);  // W, SW, NW
    if (a.lon.max > b[2]) drop(3, 7, 5);  // E, SE, NE
  }
}

void CellScores(const Cell& c, double* min, double* max) {
  const int shift = 52 - c.step * 2;
  *min = static_cast<double>(c.bits << shift);
  *max = static_cast<double>((c.bits + 1) << shift);
}

bool Within(const Shape& s, double score, double* lon, double* lat,
            double* dist) {
  Point(score, lon, lat);
  if (!s.box) {
    *dist = Distance(s.lon, s.lat, *lon, *lat);
    return !(*dist > s.radius * s.to_meters);
  }
  if (LatDistance(*lat, s.lat) > s.height * s.to_meters / 2) return false;
  if (Distance(*lon, *lat, s.lon, *lat) > s.width * s.to_meters / 2) {
    return false;
  }
  *dist = Distance(s.lon, s.lat, *lon, *lat);
  return true;
}

}  // namespace geo
}  // namespace cmd
}  // namespace shmkv
