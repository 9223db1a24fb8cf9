// Geospatial indexes (docs/server.md, "Geospatial"): a sorted set whose
// scores are 52-bit geohashes, as Redis keeps them, so the GEO commands'
// values are sorted sets both ways (ZRANGE of a GEOADDed key, GEOPOS of a
// ZADDed score, DUMP/RESTORE to and from redis-server).
//
// A point's score interleaves 26 bits of latitude (the even bits, over
// -85.05112878..85.05112878) with 26 bits of longitude (the odd bits,
// over -180..180). A search around a point covers the cell of the step
// (cell size) its radius asks for and that cell's eight neighbours, each
// cell one range of scores, and keeps the members within the shape by
// the haversine distance on a sphere of 6372797.560856 m, as Redis's
// search does, in the same order of cells and members, so unsorted
// results come out in Redis's order.
#pragma once

#include <cstdint>
#include <string>

namespace shmkv {
namespace cmd {
namespace geo {

constexpr double kLatMin = -85.05112878;
constexpr double kLatMax = 85.05112878;
constexpr double kLonMin = -180;
constexpr double kLonMax = 180;
constexpr int kStepMax = 26;

// A cell: its interleaved bits at `step` bits per coordinate (step 0
// with no bits: no cell).
struct Cell {
  uint64_t bits = 0;
  int step = 0;
  bool none() const { return bits == 0 && step == 0; }
};

// The score of a point (false when it is out of the ranges above).
bool Score(double lon, double lat, double* score);
// The point a score stands for (the middle of its cell).
void Point(double score, double* lon, double* lat);
// GEOHASH's 11-character text of a score.
std::string HashText(double score);
// The great-circle distance in metres.
double Distance(double lon1, double lat1, double lon2, double lat2);
// A distance as Redis prints one: rounded to 4 decimals.
std::string DistanceText(double d);

// What a search covers: a circle (radius) or a box (width, height), in
// metres once multiplied by `to_meters`, around (lon, lat).
struct Shape {
  bool box = false;
  double lon = 0, lat = 0;
  double to_meters = 1;
  double radius = 0, width = 0, height = 0;
};
// The cells to read, in Redis's order (the centre, then N, S, E, W, NE,
// NW, SE, SW; a neighbour the shape does not reach is none()).
void Cells(const Shape& s, Cell out[9]);
// The range of scores of a cell: [min, max).
void CellScores(const Cell& c, double* min, double* max);
// Whether the point of `score` is within the shape, and its distance in
// metres from the centre.
bool Within(const Shape& s, double score, double* lon, double* lat,
            double* dist);

}  // namespace geo
}  // namespace cmd
}  // namespace shmkv
