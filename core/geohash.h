// Geohash math of Redis' GEO commands (geohash.c / geohash_helper.c / geo.c in Redis 7.0),
// reimplemented so that scores, coordinates, distances and search results match Redis bit for bit.
//
// A position is stored as a sorted-set score: the 26-bit longitude and latitude cell indexes over
// the Web-Mercator-safe box (lon +-180, lat +-85.05112878) interleaved into 52 bits (longitude on
// the odd bits), an integer that a double holds exactly. A search covers the shape with the cell
// of the centre plus its 8 neighbours at a step (precision) chosen from the radius, scans each
// cell's score range in the sorted set and filters the candidates by exact distance.
#pragma once

#include <cstdint>
#include <string>

namespace shardis::core::geohash {

inline constexpr double kLonMin = -180, kLonMax = 180;
inline constexpr double kLatMin = -85.05112878, kLatMax = 85.05112878;
inline constexpr int kStepMax = 26;  // 26 bits per coordinate: 52-bit scores
// Redis' EARTH_RADIUS_IN_METERS (the quadratic mean radius of WGS-84).
inline constexpr double kEarthRadiusM = 6372797.560856;

struct Bits {
  uint64_t bits = 0;
  uint8_t step = 0;  // bits per coordinate
  bool IsZero() const { return bits == 0 && step == 0; }
};
struct Range {
  double min = 0, max = 0;
};
struct Area {
  Bits hash;
  Range lon, lat;
};
struct Neighbors {
  Bits north, east, west, south, north_east, south_east, north_west, south_west;
};

// Encodes lon/lat in the given ranges at `step` bits per coordinate; false when outside
// [kLonMin, kLonMax] x [kLatMin, kLatMax] or outside the ranges.
bool Encode(Range lon_range, Range lat_range, double lon, double lat, int step, Bits* out);
// Encode over the WGS-84 box above.
bool EncodeWGS84(double lon, double lat, int step, Bits* out);
// The cell of `hash` in the given ranges; false for a zero hash.
bool Decode(Range lon_range, Range lat_range, Bits hash, Area* out);
// The centre of a WGS-84 cell, clamped to the box; xy = {lon, lat}.
bool DecodeToLonLat(Bits hash, double xy[2]);
// The 52-bit score of a hash (left-aligned when step < 26).
uint64_t Align52(Bits hash);
// The 8 cells around `hash` at its step (wrapping around at the edges as Redis does).
Neighbors GetNeighbors(Bits hash);

// A sorted-set score as Redis' decodeGeohash reads it: converted to uint64_t the way x86-64 does
// (scores that are not geohashes still decode, to clamped garbage, as in Redis). xy = {lon, lat}.
bool ScoreToLonLat(double score, double xy[2]);
// The score GEOADD stores for a valid position.
uint64_t LonLatToScore(double lon, double lat);

// GEOHASH's 11-character base32 string of a position: Redis re-encodes the decoded position with
// the standard latitude range +-90 (52 bits, the 11th character is always '0').
std::string HashString(double lon, double lat);

// Redis' geohashEstimateStepsByRadius: the step whose cells cover a radius at a latitude.
int EstimateStepsByRadius(double range_m, double lat);
// Haversine distance in meters (Redis 7.0's geohashGetDistance).
double Distance(double lon1, double lat1, double lon2, double lat2);

// The search shape of GEOSEARCH/GEORADIUS. Radius, width and height are in the unit of
// `conversion` (meters per unit).
struct Shape {
  enum Type : uint8_t { kCircle, kBox };
  Type type = kCircle;
  double xy[2] = {0, 0};  // centre lon, lat
  double conversion = 1;
  double radius = 0;
  double width = 0, height = 0;
  double bounds[4] = {0, 0, 0, 0};  // min lon, min lat, max lon, max lat (filled by AreasByShape)
};
// Redis' geohashBoundingBox.
void BoundingBox(const Shape& shape, double bounds[4]);

// The centre cell and the neighbours to scan (useless ones zeroed), Redis'
// geohashCalculateAreasByShapeWGS84. Fills shape->bounds.
struct SearchArea {
  Bits hash;
  Neighbors neighbors;
  Area area;
};
SearchArea AreasByShape(Shape* shape);

// Redis' geoWithinShape: decodes the score into xy and, when the point is inside the shape, sets
// *dist_m (meters from the centre) and returns true.
bool WithinShape(const Shape& shape, double score, double xy[2], double* dist_m);

}  // namespace shardis::core::geohash
